/* norm.c - the layernorm and rmsnorm families: descriptors (shared axes and eps), FLOP and
 * byte counts, input tensors, and the cpu backend's kernels, which model the CUDA-core
 * kernels' precision exactly (deterministic, bit-exact to this model). Per row of n = hidden
 * values, with acc() = rounding to the accumulator type (identity for fp32) and every other
 * operation an fp32 operation rounded to nearest even (no fused multiply-add):
 *   layernorm: s = acc(s + x_j) for j in order; mean = acc(s / n);
 *              q = acc(q + d_j * d_j) with d_j = acc(x_j - mean); var = acc(q / n);
 *              rstd = 1 / sqrtf(var + eps); y_j = ((x_j - mean) * rstd) * w_j + b_j
 *   rmsnorm:   q = acc(q + x_j * x_j); ms = acc(q / n); rstd = 1 / sqrtf(ms + eps);
 *              y_j = (x_j * rstd) * w_j
 * y_j rounded to the storage type. Two passes over the row, never E[x^2] - E[x]^2. With
 * fp16 accumulation the sums overflow at 65504 (e.g. the `offset` inputs of a 1024-wide
 * row): that is what fp16 accumulation does, and the case fails as non-finite.
 *
 * Inputs: x [rows, hidden] normal (scale 1), uniform on [-1,1), or offset (100 + normal:
 * |mean| >> std); weight [hidden] = 1 + 0.1 normal; bias [hidden] (layernorm) = 0.1 normal. */
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/families.h"

static const char *const norm_dists[] = {"normal", "uniform", "offset", NULL};

static const kv_axis_desc norm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32 fp32:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"rows", KV_AXIS_INT, "1024", NULL, 1, 1LL << 26, "rows normalised independently"},
    {"hidden", KV_AXIS_INT, "1024 4096", NULL, 1, 65536, "row length (the normalised dimension)"},
    {"dist", KV_AXIS_STR, "normal", norm_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or offset (100 + normal: |mean| >> std)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const kv_param_desc norm_params[] = {{"eps", 1e-5, 0.0, 1.0, "added to the variance before the square root"},
                                            {NULL, 0, 0, 0, NULL}};

void kv_norm_dims_of(const kv_case *c, kv_norm_dims *d) {
  d->rows = kv_case_int(c, "rows");
  d->hidden = kv_case_int(c, "hidden");
  d->eps = kv_case_param(c, "eps");
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

/* y of one row (x widened in xr) into yr, following the model in the header. */
static void layernorm_row(const float *xr, const float *w, const float *b, size_t n, float eps, kv_dtype acc,
                          float *yr) {
  float s = 0.0f, q = 0.0f;
  for (size_t j = 0; j < n; j++) s = kv_acc_add(s, xr[j], acc);
  const float mean = kv_acc_round(s / (float)n, acc);
  for (size_t j = 0; j < n; j++) {
    const float dj = kv_acc_round(xr[j] - mean, acc);
    q = kv_acc_add(q, dj * dj, acc);
  }
  const float var = kv_acc_round(q / (float)n, acc);
  const float rstd = 1.0f / sqrtf(var + eps);
  for (size_t j = 0; j < n; j++) yr[j] = ((xr[j] - mean) * rstd) * w[j] + b[j];
}

static void rmsnorm_row(const float *xr, const float *w, size_t n, float eps, kv_dtype acc, float *yr) {
  float q = 0.0f;
  for (size_t j = 0; j < n; j++) q = kv_acc_add(q, xr[j] * xr[j], acc);
  const float ms = kv_acc_round(q / (float)n, acc);
  const float rstd = 1.0f / sqrtf(ms + eps);
  for (size_t j = 0; j < n; j++) yr[j] = (xr[j] * rstd) * w[j];
}

static kv_status norm_emulate(const kv_case *c, void *const *in, void *const *out, int ln) {
  kv_norm_dims d;
  kv_norm_dims_of(c, &d);
  const kv_dtype st = c->prec.storage, acc = c->prec.accum;
  const size_t n = (size_t)d.hidden;
  float *buf = KV_MALLOC(4 * n * sizeof(float));
  if (CHECK_ALLOC(buf) != KV_OK) return KV_ERR;
  float *w = buf, *b = buf + n, *xr = buf + 2 * n, *yr = buf + 3 * n;
  kv_to_float(in[1], st, 0, n, w);
  if (ln) kv_to_float(in[2], st, 0, n, b);
  for (size_t r = 0; r < (size_t)d.rows; r++) {
    kv_to_float(in[0], st, r * n, n, xr);
    if (ln)
      layernorm_row(xr, w, b, n, (float)d.eps, acc, yr);
    else
      rmsnorm_row(xr, w, n, (float)d.eps, acc, yr);
    for (size_t j = 0; j < n; j++) kv_store(out[0], r * n + j, st, yr[j]);
  }
  free(buf);
  return KV_OK;
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
static kv_status layernorm_emulate(const kv_case *c, void *const *in, void *const *out) {
  return norm_emulate(c, in, out, 1);
}
static kv_status rmsnorm_emulate(const kv_case *c, void *const *in, void *const *out) {
  return norm_emulate(c, in, out, 0);
}

const kv_family kv_family_layernorm = {
    .name = "layernorm",
    .summary = "LayerNorm forward y = (x - mean) / sqrt(var + eps) * weight + bias over each row",
    .axes = norm_axes,
    .params = norm_params,
    .invalid = norm_invalid,
    .cost = layernorm_cost,
    .tensors = layernorm_tensors,
    .emulate = layernorm_emulate,
    .reference = kv_layernorm_reference,
    .cuda = KV_CUDA_FAMILY(kv_cuda_layernorm),
};

const kv_family kv_family_rmsnorm = {
    .name = "rmsnorm",
    .summary = "RMSNorm forward y = x / sqrt(mean(x^2) + eps) * weight over each row",
    .axes = norm_axes,
    .params = norm_params,
    .invalid = norm_invalid,
    .cost = rmsnorm_cost,
    .tensors = rmsnorm_tensors,
    .emulate = rmsnorm_emulate,
    .reference = kv_rmsnorm_reference,
    .cuda = KV_CUDA_FAMILY(kv_cuda_rmsnorm),
};
