/* errstats.h - error statistics of one kernel output against its fp64 reference: max abs,
 * max relative (with a floor), relative L2, mean abs, max and p99 error in ULPs of the
 * storage type, NaN/Inf counts where the reference is finite, the worst element, a
 * histogram of log10|err|, and the worst ratio of |err| to the tolerance bound. */
#ifndef KVAL_ERRSTATS_H
#define KVAL_ERRSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "numerics/tolerance.h"

/* Histogram of log10|err|: bin 0 = exactly zero, bin 1 = below 1e-12, bins 2..KV_HIST_BINS-3
 * one decade each from [1e-12, 1e-11) to [1e3, 1e4), bin KV_HIST_BINS-2 = 1e4 and above,
 * bin KV_HIST_BINS-1 = non-finite output where the reference is finite. */
#define KV_HIST_BINS 20
#define KV_BIAS_WINDOW 4.0 /* ulps: the window of the bias statistics */
#define KV_HIST_LOG10_MIN (-12)

typedef struct {
  double max_abs;         /* max |out - ref| over finite outputs */
  double max_rel;         /* max |out - ref| / max(|ref|, rel_floor) */
  double rel_l2;          /* ||out - ref||_2 / ||ref||_2 */
  double mean_abs;        /* mean |out - ref| */
  double max_ulp;         /* max error in ULPs of the storage type */
  double p99_ulp;         /* 99th percentile error in ULPs */
  double max_bound_ratio; /* max |out - ref| / bound (<= 1 passes) */
  double floor_ratio;     /* max_abs / max(max |round(ref) - ref|, floor): ratio to the output-rounding baseline */
  int64_t n_nan;          /* NaN outputs where the reference is finite */
  int64_t n_inf;          /* Inf outputs where the reference is finite */
  int64_t n_checked;      /* elements compared */
  int64_t worst_index;    /* flat output index of the largest bound ratio (-1 when none) */
  /* Rounding bias, a trimmed mean: over the elements whose reference lies in the normal range
   * of the storage type, both finite, and whose error e = (out - ref) / ulp(ref) lies within
   * +-KV_BIAS_WINDOW ulps (the window is symmetric, so errors without a systematic sign keep a
   * mean of zero, while the few-ulp errors of the final rounding, where a wrong rounding mode
   * shows, all enter). */
  double bias_ulp;     /* mean e: directed rounding (toward +inf or -inf) shows as +-0.5 */
  double bias_mag_ulp; /* mean sign(ref) e: rounding toward zero (truncation) shows as -0.5 */
  double bias_se;      /* sqrt(sum e^2) / n_bias: the standard error of both means */
  int64_t n_bias;      /* elements in the bias statistics */
  uint64_t hist[KV_HIST_BINS];
} kv_errstats;

/* Compare n elements of a kernel output against the reference.
 *  out      - the output buffer (storage type out_t, bits as the kernel wrote them)
 *  index    - flat output indices of the compared elements, or NULL for 0..n-1
 *  ref, mag - fp64 reference value and its magnitude term (e.g. |A|^T|B|) per element
 *  red_len  - the reduction length K of the sqrt(K) tolerance term
 * Returns 0, or -1 when an allocation fails. */
int kv_errstats_compute(const void *out, kv_dtype out_t, const int64_t *index, const double *ref,
                        const double *mag, size_t n, kv_precision prec, const kv_tolerance *tol,
                        double red_len, kv_errstats *st);

/* The bias fields of st from the sums over its n_bias elements of e, sign(ref) e and e^2 (the
 * host and the device statistics finish alike). */
void kv_errstats_bias(kv_errstats *st, double sum_e, double sum_s, double sum_e2);

/* Verdict from the statistics: pass, fail_nonfinite (any NaN/Inf where the reference is
 * finite) or fail_tolerance (some element beyond its bound). */
kv_case_status kv_errstats_verdict(const kv_errstats *st);

#endif
