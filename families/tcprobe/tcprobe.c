/* tcprobe.c - the tcprobe family: tensor-core arithmetic probes. A case is one probe (axis
 * `probe`) for fp16, bf16, e4m3 or e5m2 inputs with fp32 accumulation (axis `precision`)
 * through one instruction (axis `instruction`: mma.sync m16n8k16 or Hopper wgmma m64n8k16; for
 * FP8 mma.sync m16n8k32 or wgmma m64n8k32). It has no
 * input tensors: its sub-tests' operands are fixed (tcprobe_inputs.c); its output d holds
 * D[0][0] of each sub-test as fp32, checked against the exact value with the default
 * tolerance, and decoded (tcprobe_decode.c) into the case's outcome, which the file records
 * and which fails the case when it contradicts the precision model. Descriptor: axes,
 * validity, counts, tensors, path tags, outcome. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"

static const char *const tcp_instructions[] = {"mma", "wgmma", NULL};
static const char *const tcp_storages[] = {"fp16", "bf16", "e4m3", "e5m2", NULL};

static const kv_axis_desc tcp_axes[] = {
    {"probe", KV_AXIS_STR,
     "products align_bits acc_round final_round normalisation subnormal_in subnormal_out block monotone",
     kv_tcp_probe_names, 0, 0, "the arithmetic property measured (docs/NUMERICS.md, tensor-core probes)"},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0,
     "input type : accumulator (fp32); also e4m3:fp32 e5m2:fp32"},
    {"instruction", KV_AXIS_STR, "mma wgmma", tcp_instructions, 0, 0,
     "tensor-core instruction: mma.sync m16n8k16 or Hopper wgmma m64n8k16 (FP8: m16n8k32, m64n8k32)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const char *tcp_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  const char *why = kv_precision_invalid_reason(c->prec);
  return why ? why : kv_tcp_unsupported(c->prec);
}

static int subtests_of(const kv_case *c) {
  return kv_tcp_subtests(kv_tcp_probe_of(kv_case_str(c, "probe")), c->prec.storage);
}

static void tcp_cost(const kv_case *c, kv_cost *o) {
  const double n = (double)subtests_of(c), k = kv_tcp_k(c->prec.storage);
  o->flops = 2.0 * k * n; /* the probed dot products D[0][0] */
  o->bytes = 4.0 * n;
  o->red_len = k;
  o->ref_flops = 2.0 * k * n;
  o->device_bytes = n * (4.0 + 2.0 * sizeof(double) + sizeof(kv_tcp_operands));
  o->rows = 1;
  o->row_len = (size_t)n;
}

static void tcp_tensors(const kv_case *c, kv_tensors *t) {
  memset(t, 0, sizeof *t);
  t->n_in = 0;
  t->n_out = 1;
  kv_spec_out(&t->out[0], "d", KV_FP32, (size_t)subtests_of(c));
}

static void tcp_path(const kv_case *c, char *b, size_t n) {
  const char *ins = kv_case_str(c, "instruction");
  b[0] = '\0';
  kv_tag(b, n, "tcprobe:%s:%s", ins, kv_case_str(c, "precision"));
  kv_tag(b, n, "tcprobe:%s:probe=%s", ins, kv_case_str(c, "probe"));
}

static int tcp_path_tag(int i, char *b, size_t n) {
  for (int ins = 0; tcp_instructions[ins]; ins++) {
    for (int s = 0; tcp_storages[s]; s++)
      if (kv_tag_at(&i, b, n, "tcprobe:%s:%s:fp32", tcp_instructions[ins], tcp_storages[s])) return 1;
    for (int p = 0; kv_tcp_probe_names[p]; p++)
      if (kv_tag_at(&i, b, n, "tcprobe:%s:probe=%s", tcp_instructions[ins], kv_tcp_probe_names[p])) return 1;
  }
  return 0;
}

/* The decoded outcome of the case's output, in words; a contradiction of the model says what
 * the model needs. */
static long long tcp_outcome(const kv_case *c, const void *out, int *contradicts, char *words, size_t n) {
  int probe, ns;
  kv_tcp_operands *ops = kv_tcp_case_subtests(c, &probe, &ns);
  *contradicts = 1;
  if (!ops) {
    snprintf(words, n, "tcprobe: no memory to decode the probe");
    return -1;
  }
  const int o = kv_tcp_decode(probe, c->prec.storage, ops, out, ns);
  free(ops);
  char name[64];
  kv_tcp_outcome_name(probe, c->prec.storage, o, name, sizeof name);
  *contradicts = !kv_tcp_model_allows(probe, c->prec.storage, o);
  if (*contradicts)
    snprintf(words, n, "%s: %s; the model needs %s", kv_tcp_probe_names[probe], name,
             kv_tcp_model_requires(probe, c->prec.storage));
  else
    snprintf(words, n, "%s: %s", kv_tcp_probe_names[probe], name);
  return o;
}

const kv_family kv_family_tcprobe = {
    .name = "tcprobe",
    .summary = "tensor-core arithmetic probes (mma.sync, wgmma; fp16, bf16, FP8): crafted inputs, decoded result bits",
    .axes = tcp_axes,
    .invalid = tcp_invalid,
    .cost = tcp_cost,
    .tensors = tcp_tensors,
    .emulate = kv_tcp_emulate,
    .reference = kv_tcp_cpu_reference,
    .reference_dd = kv_tcp_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_tcprobe),
    .path = tcp_path,
    .path_tag = tcp_path_tag,
    .outcome = tcp_outcome,
};
