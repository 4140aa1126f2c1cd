/* norm_emulate.c - the cpu backend's LayerNorm and RMSNorm kernels, which model the CUDA-core
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
 */
#include <math.h>
#include <stdlib.h>

#include "families/kit.h"
#include "families/norm/norm.h"
#include "numerics/accum.h"

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

kv_status kv_layernorm_emulate(const kv_case *c, void *const *in, void *const *out) {
  return norm_emulate(c, in, out, 1);
}

kv_status kv_rmsnorm_emulate(const kv_case *c, void *const *in, void *const *out) {
  return norm_emulate(c, in, out, 0);
}
