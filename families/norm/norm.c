/* norm.c - the layernorm and rmsnorm families: descriptors (shared axes and eps), validity,
 * FLOP and byte counts and input tensors. Their cpu-backend kernels (the precision model of
 * the CUDA kernels) are in norm_emulate.c, the fp64 CPU references in norm_cpu_ref.c.
 *
 * Inputs: x [rows, hidden] normal (scale 1), uniform on [-1,1), or offset (100 + normal:
 * |mean| >> std); weight [hidden] = 1 + 0.1 normal; bias [hidden] (layernorm) = 0.1 normal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/norm/norm.h"

static const char *const norm_dists[] = {"normal", "uniform", "offset", NULL};

static const kv_axis_desc norm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32 fp32:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"rows", KV_AXIS_INT, "1024", NULL, 1, 1LL << 26, "rows normalised independently"},
    {"hidden", KV_AXIS_INT, "1024 4096", NULL, 1, 65536, "row length (the normalised dimension)"},
    {"dist", KV_AXIS_STR, "normal", norm_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or offset (100 + normal: |mean| >> std)"},
    {"eps", KV_AXIS_REAL, "1e-5", NULL, 0.0, 1.0, "added to the variance before the square root"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};


void kv_norm_dims_of(const kv_case *c, kv_norm_dims *d) {
  d->rows = kv_case_int(c, "rows");
  d->hidden = kv_case_int(c, "hidden");
  d->eps = kv_case_real(c, "eps");
}

static const char *norm_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  return kv_precision_invalid_reason(c->prec);
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

const kv_family kv_family_layernorm = {
    .name = "layernorm",
    .summary = "LayerNorm forward y = (x - mean) / sqrt(var + eps) * weight + bias over each row",
    .axes = norm_axes,
    .invalid = norm_invalid,
    .cost = layernorm_cost,
    .tensors = layernorm_tensors,
    .emulate = kv_layernorm_emulate,
    .emulation_exact = norm_emulation_exact,
    .unbiased = norm_unbiased,
    .reference = kv_layernorm_cpu_reference,
    .reference_dd = kv_layernorm_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_layernorm),
};

const kv_family kv_family_rmsnorm = {
    .name = "rmsnorm",
    .summary = "RMSNorm forward y = x / sqrt(mean(x^2) + eps) * weight over each row",
    .axes = norm_axes,
    .invalid = norm_invalid,
    .cost = rmsnorm_cost,
    .tensors = rmsnorm_tensors,
    .emulate = kv_rmsnorm_emulate,
    .emulation_exact = norm_emulation_exact,
    .unbiased = norm_unbiased,
    .reference = kv_rmsnorm_cpu_reference,
    .reference_dd = kv_rmsnorm_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_rmsnorm),
};
