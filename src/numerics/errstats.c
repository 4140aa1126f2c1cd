/* errstats.c - error statistics of a kernel output against its fp64 reference, in one pass
 * over the elements. The exact 99th percentile of the ULP errors comes from a running
 * selection of the largest 1% (most elements are rejected by one comparison), so there is no
 * second pass and the memory is about n/50 doubles. Definitions, including how non-finite
 * values count, are in errstats.h and docs/NUMERICS.md. */
#include "numerics/errstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "numerics/halfprec.h"
#include "numerics/ulp.h"

/* The k largest of a stream of values, exactly: candidates above the current threshold are
 * appended to a buffer of 2k; a full buffer is cut back to its k largest by quickselect and
 * the threshold becomes the k-th largest. A value not above the threshold already has k
 * values at least as large ahead of it, so dropping it cannot change the k-th largest. Most
 * values cost one comparison; the buffer is cut O(log(n/k)) times for values in random order. */
typedef struct {
  double *v;
  size_t k, cap, size;
  double threshold;
} top_k;

static void swap(double *a, double *b) {
  const double t = *a;
  *a = *b;
  *b = t;
}

/* Reorder v[0..m) so that its k largest values come first: quickselect with a three-way
 * partition, since equal values (exact zeros, whole ULPs) are common. */
static void keep_largest(double *v, size_t m, size_t k) {
  size_t lo = 0, hi = m; /* v[0..lo) holds the largest values, v[hi..m) the smallest */
  while (hi - lo > 1) {
    const double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    const double pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    size_t gt = lo, i = lo, lt = hi; /* [lo, gt) > pivot, [gt, i) == pivot, [lt, hi) < pivot */
    while (i < lt) {
      if (v[i] > pivot)
        swap(&v[gt++], &v[i++]);
      else if (v[i] < pivot)
        swap(&v[i], &v[--lt]);
      else
        i++;
    }
    if (k < gt)
      hi = gt;
    else if (k <= lt)
      return;
    else
      lo = lt;
  }
}

static double min_of(const double *v, size_t m) {
  double x = v[0];
  for (size_t i = 1; i < m; i++) x = v[i] < x ? v[i] : x;
  return x;
}

static inline void top_k_push(top_k *t, double x) {
  if (!(x > t->threshold)) return;
  t->v[t->size++] = x;
  if (t->size == t->cap) {
    keep_largest(t->v, t->size, t->k);
    t->size = t->k;
    t->threshold = min_of(t->v, t->k);
  }
}

/* The k-th largest value pushed (at least k were pushed). */
static double top_k_result(top_k *t) {
  keep_largest(t->v, t->size, t->k);
  return min_of(t->v, t->k);
}

/* Histogram bins by decade, from the binary exponent: the decade of 2^e from a table, then
 * one comparison for the binades that straddle a power of ten. */
#define HIST_EXP_MIN (-40) /* 2^-40 < 1e-12 */
#define HIST_EXP_MAX 13    /* 2^13 < 1e4 < 2^14 */
typedef struct {
  int decade_of_exp[HIST_EXP_MAX - HIST_EXP_MIN + 1]; /* floor(log10(2^e)) */
  double pow10[KV_HIST_BINS - 2];                     /* 1e-12 .. 1e5 */
} hist_table;

static void hist_table_init(hist_table *t) {
  for (int e = HIST_EXP_MIN; e <= HIST_EXP_MAX; e++) t->decade_of_exp[e - HIST_EXP_MIN] = (int)floor(e * log10(2.0));
  for (int d = 0; d < KV_HIST_BINS - 2; d++) t->pow10[d] = pow(10.0, KV_HIST_LOG10_MIN + d);
}

/* Bin of a finite error (see errstats.h). */
static inline int hist_bin(const hist_table *t, double err) {
  if (err == 0.0) return 0;
  if (err < t->pow10[0]) return 1;
  if (!(err < t->pow10[KV_HIST_BINS - 4])) return KV_HIST_BINS - 2;
  uint64_t bits;
  memcpy(&bits, &err, sizeof bits);
  const int e = (int)(bits >> 52) - 1023;                         /* err in [2^e, 2^(e+1)), a positive normal number */
  int d = t->decade_of_exp[e - HIST_EXP_MIN] - KV_HIST_LOG10_MIN; /* decade index of 2^e */
  d += err >= t->pow10[d + 1];
  return 2 + d;
}

int kv_errstats_compute(const void *out, kv_dtype out_t, const int64_t *index, const double *ref, const double *mag,
                        size_t n, kv_precision prec, const kv_tolerance *tol, double red_len, kv_errstats *st) {
  memset(st, 0, sizeof *st);
  st->worst_index = -1;
  st->n_checked = (int64_t)n;
  if (n == 0) return 0;
  /* nearest-rank 99th percentile: the ceil(0.99 n)-th smallest = the k-th largest */
  const size_t k = n - (99 * (uint64_t)n + 99) / 100 + 1;
  top_k top = {NULL, k, 2 * k + 64, 0, -INFINITY};
  top.v = KV_MALLOC(top.cap * sizeof *top.v);
  if (!top.v) return -1;
  hist_table ht;
  hist_table_init(&ht);

  double coef_ref, coef_mag; /* the two coefficients of kv_tolerance_bound() */
  kv_tolerance_coefs(tol, prec, red_len, &coef_ref, &coef_mag);
  const double bias_min = kv_min_normal(out_t);
  double sum_abs = 0.0, sum_err2 = 0.0, sum_ref2 = 0.0, max_round = 0.0, sum_e = 0.0, sum_s = 0.0, sum_e2 = 0.0;
  size_t n_finite = 0;
  for (size_t i = 0; i < n; i++) {
    const double o = kv_load(out, index ? (size_t)index[i] : i, out_t), r = ref[i];
    const double rounded = kv_round_f64(r, out_t);
    double ratio, ulp;
    int bin;
    if (isfinite(o) && isfinite(r)) {
      const double err = fabs(o - r), aref = fabs(r);
      const double bound = coef_ref * aref + coef_mag * mag[i] + tol->abs_floor;
      ratio = err == 0.0 ? 0.0 : err / bound;
      if (isnan(ratio)) ratio = INFINITY; /* a NaN magnitude term: the element cannot be verified */
      ulp = kv_ulp_distance(o, r, out_t);
      bin = hist_bin(&ht, err);
      n_finite++;
      sum_abs += err;
      sum_err2 += err * err;
      sum_ref2 += aref * aref;
      if (err > st->max_abs) st->max_abs = err;
      const double rel = err / (aref > tol->rel_floor ? aref : tol->rel_floor);
      if (rel > st->max_rel) st->max_rel = rel;
      const double e = (o - r) / kv_ulp_at(r, out_t);
      if (aref >= bias_min && fabs(e) <= KV_BIAS_WINDOW) {
        sum_e += e;
        sum_s += r < 0.0 ? -e : e;
        sum_e2 += e * e;
        st->n_bias++;
      }
    } else if (isnan(o) ? isnan(r) : o == rounded) {
      ratio = 0.0, ulp = 0.0, bin = 0; /* both NaN, or the infinity the reference rounds to */
    } else if (isfinite(r)) {
      ratio = INFINITY, ulp = INFINITY, bin = KV_HIST_BINS - 1;
      if (isnan(o))
        st->n_nan++;
      else
        st->n_inf++;
    } else {
      ratio = INFINITY, ulp = INFINITY, bin = KV_HIST_BINS - 2; /* reference NaN/Inf, output not */
    }
    if (isfinite(rounded)) {
      const double dr = fabs(rounded - r);
      if (dr > max_round) max_round = dr;
    }
    st->hist[bin]++;
    top_k_push(&top, ulp);
    if (ulp > st->max_ulp) st->max_ulp = ulp;
    if (i == 0 || ratio > st->max_bound_ratio) {
      st->max_bound_ratio = ratio;
      st->worst_index = index ? index[i] : (int64_t)i;
    }
  }
  st->mean_abs = n_finite ? sum_abs / (double)n_finite : 0.0;
  st->rel_l2 = sum_err2 == 0.0 ? 0.0 : sqrt(sum_err2) / sqrt(sum_ref2);
  const double baseline = max_round > kv_min_normal(out_t) ? max_round : kv_min_normal(out_t);
  st->floor_ratio = st->max_abs / baseline;
  st->p99_ulp = top_k_result(&top);
  kv_errstats_bias(st, sum_e, sum_s, sum_e2);
  free(top.v);
  return 0;
}

void kv_errstats_bias(kv_errstats *st, double sum_e, double sum_s, double sum_e2) {
  const double n = (double)st->n_bias;
  st->bias_ulp = st->n_bias ? sum_e / n : NAN;
  st->bias_mag_ulp = st->n_bias ? sum_s / n : NAN;
  st->bias_se = st->n_bias ? sqrt(sum_e2) / n : NAN;
}

kv_case_status kv_errstats_verdict(const kv_errstats *st) {
  if (st->n_nan > 0 || st->n_inf > 0) return KV_FAIL_NONFINITE;
  if (st->max_bound_ratio > 1.0) return KV_FAIL_TOLERANCE;
  return KV_PASS;
}
