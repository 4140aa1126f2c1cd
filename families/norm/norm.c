/* norm.c - the layernorm and rmsnorm families: descriptors (shared axes and eps), validity,
 * FLOP and byte counts and input tensors. Their cpu-backend kernels (the precision model of
 * the CUDA kernels) are in norm_emulate.c, the fp64 CPU references in norm_cpu_ref.c.
 *
 * Inputs: x [rows, hidden] normal (scale 1), uniform on [-1,1), or offset (100 + normal:
 * |mean| >> std); weight [hidden] = 1 + 0.1 normal; bias [hidden] (layernorm) = 0.1 normal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/norm/norm.h"
#include "families/norm/norm_limits.h"
#include "input/plan.h"

static const char *const norm_dists[] = {"normal", "uniform", "offset", NULL};

static const kv_axis_desc norm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32 fp32:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"rows", KV_AXIS_INT, "1024", NULL, 1, 1LL << 26, "rows normalised independently"},
    {"hidden", KV_AXIS_INT, "1024 4096", NULL, 1, 65536, "row length (the normalised dimension)"},
    {"dist", KV_AXIS_STR, "normal", norm_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or offset (100 + normal: |mean| >> std)"},
    {"eps", KV_AXIS_REAL, "1e-5", NULL, 0.0, 1.0, "added to the variance before the square root"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

/* The general path is the kernel of unaligned tensors (a view that starts off a 16-byte
 * boundary) and of rows beyond the register-resident table; kval's tensors are aligned, so a
 * deck reaches it at ordinary lengths only through this parameter. */
static const kv_param_desc norm_params[] = {
    {"general", 0, 0, 1,
     "1: fp32-accumulation rows take the general path (the kernel of unaligned tensors) at any "
     "length; 0: the dispatcher's choice"},
    {NULL, 0, 0, 0, NULL}};

int kv_norm_general_forced(const kv_case *c) { return kv_case_param(c, "general") != 0; }


void kv_norm_dims_of(const kv_case *c, kv_norm_dims *d) {
  d->rows = kv_case_int(c, "rows");
  d->hidden = kv_case_int(c, "hidden");
  d->eps = kv_case_real(c, "eps");
}

static const char *norm_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  const char *why = kv_precision_invalid_reason(c->prec);
  return why ? why : kv_norm_unsupported(c->prec);
}

static void norm_cost(const kv_case *c, kv_cost *o, int ln) {
  kv_norm_dims d;
  kv_norm_dims_of(c, &d);
  double n = (double)d.rows * (double)d.hidden, s = (double)kv_dtype_size(c->prec.storage);
  /* documented counts: layernorm 8 per element (two sums, centre, square, scale, affine),
   * rmsnorm 5 (square, sum, scale, weight) */
  o->flops = (ln ? 8.0 : 5.0) * n;
  o->bytes = (2.0 * n + (ln ? 2.0 : 1.0) * (double)d.hidden) * s;
  o->red_len = (double)d.hidden;
  o->ref_flops = (ln ? 12.0 : 8.0) * n;
  o->device_bytes = o->bytes + 2.0 * sizeof(double) * n;
  o->rows = (size_t)d.rows;
  o->row_len = (size_t)d.hidden;
}

static void norm_tensors(const kv_case *c, kv_tensors *t, int ln) {
  kv_norm_dims d;
  kv_norm_dims_of(c, &d);
  kv_dtype st = c->prec.storage;
  const char *dist = kv_case_str(c, "dist");
  size_t n = (size_t)d.rows * (size_t)d.hidden, h = (size_t)d.hidden;
  memset(t, 0, sizeof *t);
  t->n_in = ln ? 3 : 2;
  t->n_out = 1;
  if (strcmp(dist, "uniform") == 0)
    kv_spec_in(&t->in[0], "x", st, n, KV_DIST_UNIFORM, 1.0, 0.0);
  else
    kv_spec_in(&t->in[0], "x", st, n, KV_DIST_NORMAL, 1.0, strcmp(dist, "offset") == 0 ? 100.0 : 0.0);
  kv_spec_in(&t->in[1], "weight", st, h, KV_DIST_NORMAL, 0.1, 1.0);
  if (t->n_in == 3) kv_spec_in(&t->in[2], "bias", st, h, KV_DIST_NORMAL, 0.1, 0.0);
  kv_spec_out(&t->out[0], "y", st, n);
}

static void layernorm_cost(const kv_case *c, kv_cost *o) {
  norm_cost(c, o, 1);
}
static void rmsnorm_cost(const kv_case *c, kv_cost *o) {
  norm_cost(c, o, 0);
}
static void layernorm_tensors(const kv_case *c, kv_tensors *t) {
  norm_tensors(c, t, 1);
}
static void rmsnorm_tensors(const kv_case *c, kv_tensors *t) {
  norm_tensors(c, t, 0);
}
/* The serial kernels (fp16/bf16 accumulation) follow the emulation's model operation by
 * operation; the fp32-accumulation kernels sum in another order. */
static int norm_emulation_exact(const kv_case *c) { return c->prec.accum != KV_FP32; }

/* fp32 statistics and an fp32 affine step: the output's one rounding must be to nearest. */
static int norm_unbiased(const kv_case *c) { return c->prec.accum == KV_FP32; }

/* A kernel path's name: the register-resident configuration kv_norm_choice names (fast or
 * peeled, TPR threads x NV vectors per row), else the general (fp32 accumulation) or serial
 * (reduced accumulators) path. */
static void kind_name(int config, kv_dtype accum, char *b, size_t n) {
  const kv_norm_config k = kv_norm_config_of(config);
  if (config >= 0) snprintf(b, n, "%s-%dx%d", k.kind == KV_NORM_PEELED ? "peeled" : "fast", k.tpr, k.nv);
  else snprintf(b, n, "%s", accum == KV_FP32 ? "general" : "serial");
}

/* Rows per block of a path: resident rows of fewer than 128 threads share a 128-thread block;
 * the serial path runs KV_NORM_SERIAL_BLOCK rows (a thread each) per block. */
static long long rows_per_block(int config, kv_dtype accum) {
  if (config < 0) return accum == KV_FP32 ? 1 : KV_NORM_SERIAL_BLOCK;
  const int tpr = kv_norm_config_of(config).tpr;
  return tpr < 128 ? 128 / tpr : 1;
}

/* The kernel path the dispatcher takes for 16-byte aligned tensors (cudaMalloc's; the
 * general path where the case's parameter asks for it): its configuration, a partial last
 * block of rows, the input distribution, an eps that matters at the storage precision
 * (> 1e-3). */
static void norm_path(const kv_case *c, char *b, size_t n) {
  const char *f = c->fp->family->name;
  const int ln = strcmp(f, "layernorm") == 0;
  const int config =
      kv_norm_general_forced(c) ? -1 : kv_norm_choice(ln, c->prec.storage, c->prec.accum, kv_case_int(c, "hidden"));
  char kind[32];
  kind_name(config, c->prec.accum, kind, sizeof kind);
  b[0] = '\0';
  kv_tag(b, n, "%s:%s:%s", f, kv_case_str(c, "precision"), kind);
  if (kv_case_int(c, "rows") % rows_per_block(config, c->prec.accum)) kv_tag(b, n, "%s:rows-tail", f);
  kv_tag(b, n, "%s:dist=%s", f, kv_case_str(c, "dist"));
  if (kv_case_real(c, "eps") > 1e-3) kv_tag(b, n, "%s:large-eps", f);
}

/* Every path kv_norm_choice can take for hidden sizes 1..65536 (the axis range), per
 * precision, then the branches. */
static int norm_path_tag(int ln, int i, char *b, size_t n) {
  static unsigned long long reach[2][8]; /* bit c: configuration c, bit 63: -1 */
  static int done[2];
  const char *f = ln ? "layernorm" : "rmsnorm";
  if (!done[ln]) {
    for (int p = 0; kv_precision_pairs[p]; p++) {
      kv_precision prec;
      kv_precision_parse(kv_precision_pairs[p], &prec);
      if (kv_norm_unsupported(prec)) continue;
      for (long long h = 1; h <= 65536; h++) {
        const int c = kv_norm_choice(ln, prec.storage, prec.accum, h);
        reach[ln][p] |= c >= 0 ? 1ULL << c : 1ULL << 63;
      }
    }
    done[ln] = 1;
  }
  for (int p = 0; kv_precision_pairs[p]; p++) {
    kv_precision prec;
    kv_precision_parse(kv_precision_pairs[p], &prec);
    for (int c = -1; c < KV_NORM_N_CONFIGS; c++) {
      if (!(reach[ln][p] & (c >= 0 ? 1ULL << c : 1ULL << 63))) continue;
      char kind[32];
      kind_name(c, prec.accum, kind, sizeof kind);
      if (kv_tag_at(&i, b, n, "%s:%s:%s", f, kv_precision_pairs[p], kind)) return 1;
    }
  }
  if (kv_tag_at(&i, b, n, "%s:rows-tail", f)) return 1;
  for (int d = 0; norm_dists[d]; d++)
    if (kv_tag_at(&i, b, n, "%s:dist=%s", f, norm_dists[d])) return 1;
  return kv_tag_at(&i, b, n, "%s:large-eps", f);
}
static int layernorm_path_tag(int i, char *b, size_t n) { return norm_path_tag(1, i, b, n); }
static int rmsnorm_path_tag(int i, char *b, size_t n) { return norm_path_tag(0, i, b, n); }

const kv_family kv_family_layernorm = {
    .name = "layernorm",
    .summary = "LayerNorm forward y = (x - mean) / sqrt(var + eps) * weight + bias over each row",
    .axes = norm_axes,
    .params = norm_params,
    .invalid = norm_invalid,
    .cost = layernorm_cost,
    .tensors = layernorm_tensors,
    .emulate = kv_layernorm_emulate,
    .emulation_exact = norm_emulation_exact,
    .unbiased = norm_unbiased,
    .reference = kv_layernorm_cpu_reference,
    .reference_dd = kv_layernorm_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_layernorm),
    .path = norm_path,
    .path_tag = layernorm_path_tag,
};

const kv_family kv_family_rmsnorm = {
    .name = "rmsnorm",
    .summary = "RMSNorm forward y = x / sqrt(mean(x^2) + eps) * weight over each row",
    .axes = norm_axes,
    .params = norm_params,
    .invalid = norm_invalid,
    .cost = rmsnorm_cost,
    .tensors = rmsnorm_tensors,
    .emulate = kv_rmsnorm_emulate,
    .emulation_exact = norm_emulation_exact,
    .unbiased = norm_unbiased,
    .reference = kv_rmsnorm_cpu_reference,
    .reference_dd = kv_rmsnorm_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_rmsnorm),
    .path = norm_path,
    .path_tag = rmsnorm_path_tag,
};
