/* xcheck.c - the checker checked, on a few sampled output rows of every case: the device
 * inputs (downloaded whole for the CPU reference) against the host generator on a sample of
 * elements (kv_input_finding: a device generator bug would otherwise change what every case
 * tests, unseen, as kernel and references read the same wrong inputs); the GPU fp64
 * reference (value, magnitude term, auxiliary output and its magnitude) against the family's
 * CPU reference on the same device inputs (d->ref_xcheck, judged against KV_REF_XCHECK_BOUND),
 * and the device error statistics against the host's: the device statistics of exactly the
 * sampled elements must equal kv_errstats_compute's (maxima, counts, histogram, worst index
 * exactly; sums to 1e-12), and the statistics of the whole output must be consistent with them
 * (every element counted, maxima at least the sample's). A mismatch is a harness error
 * (d->harness): the device statistics, not the kernel, are wrong. The CPU reference runs on the
 * host cores the rank may use (kv_reference_threaded). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/context.h"
#include "core/cuda_check.cuh"
#include "families/ref_threads.h"
#include "numerics/errstats.h"
#include "numerics/tolerance.h"

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

/* Relative disagreement of two reference values: 0 when equal (infinities included),
 * |g - c| / max(|c|, scale) otherwise, +inf when only one is finite or either is NaN. */
static double disagreement(double g, double c, double scale) {
  if (g == c) return 0.0;
  if (!isfinite(g) || !isfinite(c)) return INFINITY;
  double den = fmax(fabs(c), scale);
  return fabs(g - c) / (den > 0.0 ? den : DBL_MIN);
}

/* Rows rows[0..n) of a device array of rows of len doubles, packed on the host. */
static kv_status download_rows(const kv_cuda_ctx *ctx, double *host, const double *dev, const size_t *rows, size_t n,
                               size_t len) {
  for (size_t r = 0; r < n; r++)
    KV_TRY(CHECK_CUDA(cudaMemcpyAsync(host + r * len, dev + rows[r] * len, len * sizeof *host,
                                      cudaMemcpyDeviceToHost, ctx->stream)));
  return KV_OK;
}

/* The sampled rows of everything the cross-checks compare. */
typedef struct {
  size_t n, len, *rows;
  void *in[KV_MAX_TENSORS];
  double *gref, *gmag, *gaux, *gaux_mag; /* the GPU reference's rows */
  double *ref, *mag, *aux, *aux_mag;     /* the CPU reference's */
} sample;

static void sample_free(sample *s) {
  for (int i = 0; i < KV_MAX_TENSORS; i++) kv_cuda_host_put(s->in[i]);
  double *all[] = {s->gref, s->gmag, s->gaux, s->gaux_mag, s->ref, s->mag, s->aux, s->aux_mag};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  free(s->rows);
}

static kv_status sample_take(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                             const kv_run_settings *rs, const kv_cuda_buffers *b, double deadline, sample *s) {
  memset(s, 0, sizeof *s);
  s->n = kv_xcheck_rows(c, cost, rs, &s->rows);
  s->len = cost->row_len;
  KV_TRY(s->n > 0 ? KV_OK : KV_ERR);
  const size_t m = s->n * s->len;
  const int aux = t->n_out > 1;
  for (int i = 0; i < t->n_in; i++) {
    KV_TRY(kv_cuda_host_get(tensor_bytes(&t->in[i]), &s->in[i]));
    KV_TRY(CHECK_CUDA(
        cudaMemcpyAsync(s->in[i], b->in[i], tensor_bytes(&t->in[i]), cudaMemcpyDeviceToHost, ctx->stream)));
  }
  double **bufs[] = {&s->gref, &s->gmag, &s->ref, &s->mag, &s->gaux, &s->gaux_mag, &s->aux, &s->aux_mag};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
    if (i >= 4 && !aux) break;
    *bufs[i] = KV_MALLOC((i < 4 ? m : s->n) * sizeof(double));
    KV_TRY(CHECK_ALLOC(*bufs[i]));
    memset(*bufs[i], 0xff, (i < 4 ? m : s->n) * sizeof(double)); /* NaN: a row no reference wrote disagrees */
  }
  KV_TRY(download_rows(ctx, s->gref, b->ref, s->rows, s->n, s->len));
  KV_TRY(download_rows(ctx, s->gmag, b->mag, s->rows, s->n, s->len));
  if (aux) {
    KV_TRY(download_rows(ctx, s->gaux, b->aux_ref, s->rows, s->n, 1));
    KV_TRY(download_rows(ctx, s->gaux_mag, b->aux_mag, s->rows, s->n, 1));
  }
  KV_TRY(kv_cuda_wait(ctx, deadline, "the download of the cross-check's rows"));
  return kv_reference_threaded(c, (const void *const *)s->in, s->rows, s->n, s->len, s->ref, s->mag, s->aux,
                               s->aux_mag, ctx->ref_threads);
}

static double reference_disagreement(const sample *s) {
  double worst = 0.0;
  for (size_t r = 0; r < s->n; r++) {
    for (size_t j = 0; j < s->len; j++) {
      const size_t k = r * s->len + j;
      worst = fmax(worst, disagreement(s->gref[k], s->ref[k], fabs(s->mag[k])));
      worst = fmax(worst, disagreement(s->gmag[k], s->mag[k], 0.0));
    }
    if (s->aux) {
      worst = fmax(worst, disagreement(s->gaux[r], s->aux[r], 0.0));
      worst = fmax(worst, disagreement(s->gaux_mag[r], s->aux_mag[r], 0.0));
    }
  }
  return worst;
}

/* Sums agree when their relative difference is below 1e-12 (only their order differs). */
static int sums_agree(double a, double b) {
  return a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* The first field where the device statistics of the sample (dev) differ from the host's,
 * or where the whole output's (all, over n elements) contradict the sample's; "" if none. */
static void compare_stats(const kv_errstats *dev, const kv_errstats *host, const kv_errstats *all, size_t n,
                          char *msg, size_t len) {
  const struct {
    const char *name;
    double dev, host;
    int is_sum; /* sums differ by summation order only */
  } fields[] = {{"max_abs", dev->max_abs, host->max_abs, 0},
                {"max_rel", dev->max_rel, host->max_rel, 0},
                {"max_ulp", dev->max_ulp, host->max_ulp, 0},
                {"p99_ulp", dev->p99_ulp, host->p99_ulp, 0},
                {"max_bound_ratio", dev->max_bound_ratio, host->max_bound_ratio, 0},
                {"floor_ratio", dev->floor_ratio, host->floor_ratio, 0},
                {"n_nan", (double)dev->n_nan, (double)host->n_nan, 0},
                {"n_inf", (double)dev->n_inf, (double)host->n_inf, 0},
                {"n_checked", (double)dev->n_checked, (double)host->n_checked, 0},
                {"worst_index", (double)dev->worst_index, (double)host->worst_index, 0},
                {"n_bias", (double)dev->n_bias, (double)host->n_bias, 0},
                {"mean_abs", dev->mean_abs, host->mean_abs, 1},
                {"rel_l2", dev->rel_l2, host->rel_l2, 1},
                {"bias_ulp", dev->bias_ulp, host->bias_ulp, 1},
                {"bias_mag_ulp", dev->bias_mag_ulp, host->bias_mag_ulp, 1},
                {"bias_se", dev->bias_se, host->bias_se, 1}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    const double a = fields[i].dev, h = fields[i].host;
    const int same = a == h || (isnan(a) && isnan(h)) || (fields[i].is_sum && sums_agree(a, h));
    if (!same) {
      snprintf(msg, len, "sampled rows: device %s %.17g, host %.17g", fields[i].name, a, h);
      return;
    }
  }
  if (memcmp(dev->hist, host->hist, sizeof dev->hist) != 0) {
    snprintf(msg, len, "sampled rows: device and host histograms differ");
    return;
  }
  uint64_t hist_sum = 0;
  for (int b = 0; b < KV_HIST_BINS; b++) hist_sum += all->hist[b];
  if (all->n_checked != (int64_t)n || hist_sum != n)
    snprintf(msg, len, "whole output: %lld elements checked, %llu in the histogram, of %zu", (long long)all->n_checked,
             (unsigned long long)hist_sum, n);
  else if (all->max_abs < host->max_abs || all->max_bound_ratio < host->max_bound_ratio ||
           all->max_ulp < host->max_ulp || all->n_nan < host->n_nan || all->n_inf < host->n_inf ||
           all->n_bias < host->n_bias)
    snprintf(msg, len, "whole output: maxima or counts below those of its sampled rows");
}

/* Device statistics of the sampled elements (flat indices uploaded, the GPU reference's rows
 * packed) against the host's of the same elements. The uploads go on the case's stream: a
 * synchronous cudaMemcpy from pageable memory may return before its DMA ends, and the
 * non-blocking stream's kernel then read stale memory (seen on the H200 as a device
 * max_bound_ratio ten times the host's). The host buffers live until kv_cuda_errstats has
 * waited for the stream. */
static kv_status check_stats(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                             const kv_run_settings *rs, const kv_cuda_buffers *b, const sample *s, kv_case_data *d) {
  const size_t m = s->n * s->len;
  int64_t *index = KV_MALLOC(m * sizeof *index), *d_index = NULL;
  double *d_ref = NULL, *d_mag = NULL;
  KV_TRY(CHECK_ALLOC(index));
  for (size_t r = 0; r < s->n; r++)
    for (size_t j = 0; j < s->len; j++) index[r * s->len + j] = (int64_t)(s->rows[r] * s->len + j);
  const kv_tolerance tol = rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
  kv_errstats dev, host;
  kv_status st = kv_errstats_compute(d->out, t->out[0].dtype, index, s->gref, s->gmag, m, c->prec, &tol,
                                     cost->red_len, &host) == 0 ? KV_OK : KV_ERR;
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_index, m * sizeof *d_index));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_ref, m * sizeof *d_ref));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_mag, m * sizeof *d_mag));
  const enum cudaMemcpyKind up = cudaMemcpyHostToDevice;
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_index, index, m * sizeof *d_index, up, ctx->stream));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_ref, s->gref, m * sizeof *d_ref, up, ctx->stream));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_mag, s->gmag, m * sizeof *d_mag, up, ctx->stream));
  if (st == KV_OK)
    st = kv_cuda_errstats(b->out[0], t->out[0].dtype, d_index, d_ref, d_mag, m, c->prec, &tol, cost->red_len,
                          kv_cuda_deadline(rs, 0.0), &dev, ctx->stream);
  if (st == KV_OK) compare_stats(&dev, &host, &d->stats, t->out[0].count, d->harness, sizeof d->harness);
  if (!kv_fatal_pending()) {
    void *all[] = {d_index, d_ref, d_mag};
    for (int i = 0; i < 3; i++)
      if (all[i] && CHECK_CUDA(cudaFree(all[i])) != KV_OK) st = KV_ERR;
  }
  free(index);
  return st;
}

kv_status kv_cuda_xcheck(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                         const kv_run_settings *rs, const kv_cuda_buffers *b, kv_case_data *d) {
  sample s;
  kv_status st = sample_take(ctx, c, t, cost, rs, b, kv_cuda_deadline(rs, 0.0), &s);
  if (st == KV_OK) kv_input_finding(d, c, rs, t, (const void *const *)s.in);
  if (st == KV_OK) d->ref_xcheck = reference_disagreement(&s);
  if (st == KV_OK && d->has_stats) st = check_stats(ctx, c, t, cost, rs, b, &s, d);
  sample_free(&s);
  return st;
}
