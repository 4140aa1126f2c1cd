/* fa2bwd.c - the fa2bwd family (FlashAttention-2 backward): axes, parameters, validity, FLOP
 * and byte counts, tensors, path tags, and the case dimensions shared with the emulation
 * (fa2bwd_emulate.c), the references (fa2bwd_cpu_ref.c) and the CUDA adapter
 * (fa2bwd_cuda.cu). What the kernels can run is fa2bwd_limits.h's rule.
 *
 * Inputs by `dist` (as the fa2 forward's): normal / uniform: q, k, v and dout from that base
 * distribution, scale 1; large_logits: q and k scaled by 4 (near one-hot softmax).
 *
 * FLOPs: the FlashAttention convention for the backward, 2.5 times the forward's 4 d per
 * visible pair (five matrix products: S, dP, dV, dK, dQ; causal self-attention counts half the
 * pairs). The two-pass variants' kernels recompute S and dP in the dQ pass; that work is not
 * counted.
 * Reduction length of the tolerance: max(seqlen, headdim), the longest of the sums. */
#include <math.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "numerics/ulp.h"
#include "families/fa2bwd/fa2bwd.h"
#include "families/fa2bwd/fa2bwd_limits.h"

#define FA2BWD_LOG2E 1.4426950408889634074

static const char *const fa2bwd_dists[] = {"normal", "uniform", "large_logits", NULL};
static const char *const fa2bwd_variants[] = {"kval-wgmma", "kval-wgmma-fused", "kval-mma", NULL};
/* dqkv's three gradients, each batch x seqlen x heads rows (fa2bwd_tensors) */
static const char *const fa2bwd_parts[] = {"dq", "dk", "dv", NULL};

static const kv_axis_desc fa2bwd_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-wgmma-fused kval-mma", fa2bwd_variants, 0, 0,
     "kernel: kval-wgmma (Hopper wgmma + TMA: dK/dV pass and dQ pass), kval-wgmma-fused (one pass, dQ's shares "
     "added in a fixed order) or kval-mma (mma.sync, two passes); all deterministic"},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"headdim", KV_AXIS_INT, "64 128", NULL, 64, 128, "head dimension (kernels: 64, 128)"},
    {"seqlen", KV_AXIS_INT, "512 1024 2048", NULL, 1, 1048576, "sequence length (queries and keys)"},
    {"causal", KV_AXIS_INT, "0 1", NULL, 0, 1, "1: causal mask"},
    {"batch", KV_AXIS_INT, "0", NULL, 0, 65536, "batch size; 0: max(1, tokens / seqlen)"},
    {"heads", KV_AXIS_INT, "16", NULL, 1, 1024, "attention heads"},
    {"dist", KV_AXIS_STR, "normal", fa2bwd_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or large_logits (q, k scaled by 4: near one-hot softmax)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const kv_param_desc fa2bwd_params[] = {
    {"tokens", 16384, 1, 2147483648.0, "tokens per batch when the batch axis is 0: batch = max(1, tokens / seqlen)"},
    {"scale", 0, 0, 1e6, "softmax scale; 0: 1 / sqrt(headdim)"},
    {NULL, 0, 0, 0, NULL}};

void kv_fa2bwd_dims_of(const kv_case *c, kv_fa2bwd_dims *d) {
  const long long tokens = (long long)kv_case_param(c, "tokens");
  const double scale = kv_case_param(c, "scale");
  d->variant = kv_fa2bwd_variant_of(kv_case_str(c, "variant"));
  d->headdim = kv_case_int(c, "headdim");
  d->seqlen = kv_case_int(c, "seqlen");
  d->causal = kv_case_int(c, "causal") != 0;
  d->heads = kv_case_int(c, "heads");
  d->batch = kv_case_int(c, "batch");
  if (d->batch == 0) d->batch = tokens / d->seqlen > 1 ? tokens / d->seqlen : 1;
  d->scale = scale > 0 ? scale : 1.0 / sqrt((double)d->headdim);
  d->scale_f = (float)d->scale;
  d->scale_log2 = (float)(d->scale * FA2BWD_LOG2E);
}

long long kv_fa2bwd_keys(const kv_fa2bwd_dims *d, long long i) { return d->causal ? i + 1 : d->seqlen; }

static double red_len_of(const kv_fa2bwd_dims *d) {
  return (double)(d->headdim > d->seqlen ? d->headdim : d->seqlen);
}

void kv_fa2bwd_mag_terms(const kv_case *c, double *rho, double *eta) {
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(c, &d);
  const double unit = kv_dtype_unit_roundoff(c->prec.accum) * sqrt(red_len_of(&d));
  *rho = kv_dtype_unit_roundoff(c->prec.storage) / unit;
  *eta = 0.5 * kv_ulp_at(0.0, c->prec.storage) / unit;
}

static const char *fa2bwd_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  const char *why = kv_precision_invalid_reason(c->prec);
  if (!why) why = kv_fa2bwd_unsupported(kv_fa2bwd_variant_of(kv_case_str(c, "variant")), kv_case_int(c, "headdim"), c->prec);
  return why;
}

/* The cross-check's floor rows: dQ of the first token row, and dQ, dK and dV of the first and
 * the last token of the last (batch, head) - under a causal mask the dK and dV rows of both
 * ends of the key range (all queries see key 0, one sees the last), for the CPU cost of one
 * head's softmax statistics (the dQ row of the first head needs its own row only). */
static void floor_rows(const kv_fa2bwd_dims *d, kv_cost *o) {
  const size_t tokens = (size_t)(d->batch * d->seqlen * d->heads);
  if (tokens == 0) return;
  const size_t first = (size_t)((d->batch - 1) * d->seqlen * d->heads + d->heads - 1), last = tokens - 1;
  const size_t want[] = {0, last, tokens + first, tokens + last, 2 * tokens + first, 2 * tokens + last};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (o->n_floor_rows == 0 || want[i] > o->floor_rows[o->n_floor_rows - 1]) o->floor_rows[o->n_floor_rows++] = want[i];
}

static void fa2bwd_cost(const kv_case *c, kv_cost *o) {
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(c, &d);
  const double bh = (double)d.batch * (double)d.heads, hd = (double)d.headdim, l = (double)d.seqlen;
  const double s = (double)kv_dtype_size(c->prec.storage), elems = bh * l * hd, rows = bh * l;
  const double visible = d.causal ? l * (l + 1.0) / 2.0 : l * l;
  o->flops = 10.0 * bh * (d.causal ? l * l / 2.0 : l * l) * hd;
  /* read q, k, v, o, dout, lse and D; write dq, dk, dv */
  o->bytes = 8.0 * elems * s + 8.0 * rows;
  o->red_len = red_len_of(&d);
  /* per visible pair: S, |Q||K|, dP, |dO||V| (8 d) and the six products of the gradients and
   * their magnitudes (12 d), the exponential and the weights */
  o->ref_flops = bh * visible * (20.0 * hd + 30.0);
  /* a dK or dV row alone: the softmax statistics of its whole head (S, A, dP, B of every
   * visible pair) before its own column */
  o->ref_row_flops = visible * (8.0 * hd + 10.0) + l * (12.0 * hd + 30.0);
  /* GPU reference workspace (fa2bwd_gpu_ref.cu, kv_fa2bwd_gpu_reference_workspace): fp64 K,
   * |K|, V, |V| of one head, Q, |Q|, dO, |dO| of nr query rows and four nr x L work matrices,
   * nr = min(seqlen, 2^25 / seqlen) */
  double nr = floor(33554432.0 / (l > 0 ? l : 1.0));
  if (nr < 1.0) nr = 1.0;
  if (nr > l) nr = l;
  const double ref_work = sizeof(double) * (4.0 * l * hd + 4.0 * nr * hd + 4.0 * nr * l);
  /* the case's own o, lse and D beside the tensors; the fp64 reference and magnitude */
  o->device_bytes = o->bytes + elems * s + 2.0 * sizeof(double) * 3.0 * elems + ref_work;
  o->rows = (size_t)(3.0 * rows);
  o->row_len = (size_t)d.headdim;
  floor_rows(&d, o);
}

static void fa2bwd_tensors(const kv_case *c, kv_tensors *t) {
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(c, &d);
  const kv_dtype st = c->prec.storage;
  const char *dist = kv_case_str(c, "dist");
  const int base = strcmp(dist, "uniform") == 0 ? KV_DIST_UNIFORM : KV_DIST_NORMAL;
  const double qk_scale = strcmp(dist, "large_logits") == 0 ? 4.0 : 1.0;
  const size_t n = (size_t)d.batch * (size_t)d.heads * (size_t)d.seqlen * (size_t)d.headdim;
  memset(t, 0, sizeof *t);
  t->n_in = 4;
  t->n_out = 1;
  kv_spec_in(&t->in[0], "q", st, n, base, qk_scale, 0.0);
  kv_spec_in(&t->in[1], "k", st, n, base, qk_scale, 0.0);
  kv_spec_in(&t->in[2], "v", st, n, base, 1.0, 0.0);
  kv_spec_in(&t->in[3], "dout", st, n, base, 1.0, 0.0);
  kv_spec_out(&t->out[0], "dqkv", st, 3 * n);
}

/* fp32 accumulation, P and dS rounded to nearest: no systematic sign in the errors - except
 * under a near one-hot softmax (large_logits), where a gradient's error comes from a few
 * shared per-row quantities (the dominant key's P, dP - D cancelling) rather than from many
 * independent roundings, so its mean error is a random offset the standard error does not
 * cover: the emulation itself (the precision model) measured +0.095 ulp (limit 0.1) over
 * dqkv and +0.184 ulp in dk alone at seqlen 512, headdim 128, bf16 (docs/NUMERICS.md). */
static int fa2bwd_unbiased(const kv_case *c) {
  return c->prec.accum == KV_FP32 && strcmp(kv_case_str(c, "dist"), "large_logits") != 0;
}

/* The kernel path (fa2bwd_limits.h's tiles): the instantiation, partial query and key blocks,
 * several blocks walked by each pass, kval-wgmma-fused's rotated walks over several key blocks
 * and, in the instantiation that has them, the plain walks of a longer sequence
 * (kv_fa2bwd_rotated), a softmax scale the deck sets (the kernels must use the
 * one they are given, not 1/sqrt(headdim)), several sequences of another number of heads (a
 * sequence's stride written with the batch count where the head count belongs is right when
 * batch is 1 or equals heads), the input distribution. */
static void fa2bwd_path(const kv_case *c, char *b, size_t n) {
  const char *v = kv_case_str(c, "variant");
  const long long d = kv_case_int(c, "headdim"), l = kv_case_int(c, "seqlen");
  b[0] = '\0';
  kv_tag(b, n, "fa2bwd:%s:d%lld:%s:%s", v, d, kv_case_str(c, "precision"), kv_case_int(c, "causal") ? "causal" : "full");
  long long qb[2], kb[2];
  kv_fa2bwd_blocks(kv_fa2bwd_variant_of(v), d, qb, kb);
  if (l % qb[0] || l % qb[1]) kv_tag(b, n, "fa2bwd:%s:q-tail", v);
  if (l % kb[0] || l % kb[1]) kv_tag(b, n, "fa2bwd:%s:k-tail", v);
  if (l > qb[0] && l > qb[1] && l > kb[0] && l > kb[1]) kv_tag(b, n, "fa2bwd:%s:blocks", v);
  if (kv_case_param(c, "scale") > 0) kv_tag(b, n, "fa2bwd:%s:scale=set", v);
  const int causal = (int)kv_case_int(c, "causal"), variant = kv_fa2bwd_variant_of(v);
  if (kv_fa2bwd_rotated(variant, d, causal, l) && l > KV_FA2BWD_WGMMA_KEYS)
    kv_tag(b, n, "fa2bwd:%s:walk=rotated", v);
  else if (!kv_fa2bwd_rotated(variant, d, causal, l) && kv_fa2bwd_rotated(variant, d, causal, 1))
    kv_tag(b, n, "fa2bwd:%s:walk=unrotated", v);
  kv_fa2bwd_dims dims;
  kv_fa2bwd_dims_of(c, &dims);
  if (kv_batch_stride_path(dims.batch, dims.heads)) kv_tag(b, n, "fa2bwd:%s:batch-stride", v);
  kv_tag(b, n, "fa2bwd:%s:dist=%s", v, kv_case_str(c, "dist"));
}

/* Every instantiation kv_fa2bwd_unsupported allows, then each variant's branches. */
static int fa2bwd_path_tag(int i, char *b, size_t n) {
  static const int dims[] = {64, 128};
  static const char *const what[] = {"q-tail", "k-tail", "blocks", "scale=set", "batch-stride", NULL};
  for (int v = 0; fa2bwd_variants[v]; v++) {
    for (int k = 0; k < 2; k++)
      for (int p = 0; kv_precision_pairs[p]; p++) {
        kv_precision prec;
        if (kv_precision_parse(kv_precision_pairs[p], &prec) != 0 ||
            kv_fa2bwd_unsupported(kv_fa2bwd_variant_of(fa2bwd_variants[v]), dims[k], prec))
          continue;
        for (int causal = 0; causal < 2; causal++)
          if (kv_tag_at(&i, b, n, "fa2bwd:%s:d%d:%s:%s", fa2bwd_variants[v], dims[k], kv_precision_pairs[p],
                        causal ? "causal" : "full"))
            return 1;
      }
    for (int w = 0; what[w]; w++)
      if (kv_tag_at(&i, b, n, "fa2bwd:%s:%s", fa2bwd_variants[v], what[w])) return 1;
    if (kv_fa2bwd_rotated(kv_fa2bwd_variant_of(fa2bwd_variants[v]), KV_FA2BWD_ROTATED_HEADDIM, 0, 1) &&
        (kv_tag_at(&i, b, n, "fa2bwd:%s:walk=rotated", fa2bwd_variants[v]) ||
         kv_tag_at(&i, b, n, "fa2bwd:%s:walk=unrotated", fa2bwd_variants[v])))
      return 1;
    for (int d = 0; fa2bwd_dists[d]; d++)
      if (kv_tag_at(&i, b, n, "fa2bwd:%s:dist=%s", fa2bwd_variants[v], fa2bwd_dists[d])) return 1;
  }
  return 0;
}

const kv_family kv_family_fa2bwd = {
    .name = "fa2bwd",
    .summary = "FlashAttention-2 backward (dQ, dK, dV from q, k, v, dout and the forward's o and LSE), deterministic",
    .axes = fa2bwd_axes,
    .params = fa2bwd_params,
    .invalid = fa2bwd_invalid,
    .cost = fa2bwd_cost,
    .tensors = fa2bwd_tensors,
    .emulate = kv_fa2bwd_emulate,
    .unbiased = fa2bwd_unbiased,
    .out_parts = fa2bwd_parts,
    .reference = kv_fa2bwd_cpu_reference,
    .reference_dd = kv_fa2bwd_cpu_reference_dd,
    .ref_splits_within = 1,
    .cuda = KV_CUDA_FAMILY(kv_cuda_fa2bwd),
    .path = fa2bwd_path,
    .path_tag = fa2bwd_path_tag,
};
