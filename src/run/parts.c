/* parts.c - the error statistics of each part of a case's output (kv_family.out_parts, e.g.
 * fa2bwd's dq | dk | dv): computed on the host from the reference the backend handed back,
 * or taken from the backend (device statistics of each part's rows), and checked against the
 * whole output's statistics: the parts must tile the output exactly (parts.h). */
#include "run/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Part p's statistics over the compared elements of its rows: with all rows (rows NULL) a
 * contiguous range of out, ref and mag; with sampled rows (ascending) the range of the sample
 * whose rows fall in the part, its flat output indices listed. */
static kv_status part_of(const kv_case *c, const kv_cost *cost, const kv_tolerance *tol, const kv_case_data *d,
                         int n_parts, int p, kv_errstats *st) {
  const size_t first = kv_part_first_row(cost->rows, n_parts, p), end = kv_part_first_row(cost->rows, n_parts, p + 1);
  const size_t len = d->row_len;
  if (!d->rows) {
    const size_t off = first * len;
    const char *out = (const char *)d->out + off * kv_dtype_size(d->out_type);
    if (kv_errstats_compute(out, d->out_type, NULL, d->ref + off, d->mag + off, (end - first) * len, c->prec, tol,
                            cost->red_len, st))
      return KV_ERR;
    if (st->worst_index >= 0) st->worst_index += (int64_t)off;
    return KV_OK;
  }
  size_t lo = 0, hi;
  while (lo < d->n_rows && d->rows[lo] < first) lo++;
  for (hi = lo; hi < d->n_rows && d->rows[hi] < end; hi++) {}
  const size_t n = (hi - lo) * len;
  int64_t *index = KV_MALLOC((n ? n : 1) * sizeof *index);
  if (!index) return KV_ERR;
  for (size_t k = 0; k < n; k++) index[k] = (int64_t)(d->rows[lo + k / len] * len + k % len);
  const int rc = kv_errstats_compute(d->out, d->out_type, index, d->ref + lo * len, d->mag + lo * len, n, c->prec, tol,
                                     cost->red_len, st);
  free(index);
  return rc ? KV_ERR : KV_OK;
}

kv_status kv_parts_host_stats(const kv_case *c, const kv_cost *cost, const kv_tolerance *tol, const kv_case_data *d,
                              kv_errstats *parts) {
  const int n_parts = kv_family_parts(c->fp->family);
  for (int p = 0; p < n_parts; p++) KV_TRY(part_of(c, cost, tol, d, n_parts, p, &parts[p]));
  return KV_OK;
}

/* A bias sum over the parts agrees with the whole's when they differ by no more than the
 * rounding of summing n terms in another order: 1e-9 of sqrt(n sum e^2), a bound on sum |e|
 * (the totals themselves may cancel to nearly zero, so they are no scale). */
static int sum_agrees(double whole, double parts, const kv_errstats *st) {
  const double n = (double)st->n_bias, sum_e2 = st->bias_se * n * st->bias_se * n;
  return whole == parts || fabs(whole - parts) <= 1e-9 * sqrt(n * sum_e2);
}

void kv_parts_consistency(const kv_errstats *whole, const kv_errstats *parts, int n_parts, char *msg, size_t len) {
  int64_t n_checked = 0, n_nan = 0, n_inf = 0, n_bias = 0;
  uint64_t hist[KV_HIST_BINS] = {0};
  double max_abs = 0.0, max_ulp = 0.0, max_ratio = -INFINITY, sum_e = 0.0, sum_s = 0.0;
  int64_t worst = -1;
  for (int p = 0; p < n_parts; p++) {
    const kv_errstats *s = &parts[p];
    n_checked += s->n_checked, n_nan += s->n_nan, n_inf += s->n_inf, n_bias += s->n_bias;
    for (int b = 0; b < KV_HIST_BINS; b++) hist[b] += s->hist[b];
    max_abs = fmax(max_abs, s->max_abs);
    max_ulp = fmax(max_ulp, s->max_ulp);
    if (s->n_checked > 0 && s->max_bound_ratio > max_ratio) max_ratio = s->max_bound_ratio, worst = s->worst_index;
    if (s->n_bias) sum_e += s->bias_ulp * (double)s->n_bias, sum_s += s->bias_mag_ulp * (double)s->n_bias;
  }
  msg[0] = '\0';
  if (n_checked != whole->n_checked || n_nan != whole->n_nan || n_inf != whole->n_inf || n_bias != whole->n_bias)
    snprintf(msg, len, "%lld checked, %lld in the bias; the whole: %lld, %lld",
             (long long)n_checked, (long long)n_bias, (long long)whole->n_checked, (long long)whole->n_bias);
  else if (memcmp(hist, whole->hist, sizeof hist) != 0)
    snprintf(msg, len, "their histograms differ from the whole's");
  else if (n_checked > 0 && (max_abs != whole->max_abs || max_ulp != whole->max_ulp ||
                             max_ratio != whole->max_bound_ratio || worst != whole->worst_index))
    snprintf(msg, len, "worst %.6g at %lld; the whole: %.6g at %lld",
             max_ratio, (long long)worst, whole->max_bound_ratio, (long long)whole->worst_index);
  else if (n_bias && (!sum_agrees(whole->bias_ulp * (double)n_bias, sum_e, whole) ||
                      !sum_agrees(whole->bias_mag_ulp * (double)n_bias, sum_s, whole)))
    snprintf(msg, len, "their bias sums differ from the whole's");
}

const char *kv_parts_name_of(const kv_case *c, const kv_cost *cost, int64_t index) {
  const kv_family *f = c->fp->family;
  const int n_parts = kv_family_parts(f);
  if (n_parts == 0 || index < 0 || cost->row_len == 0) return NULL;
  const size_t row = (size_t)index / cost->row_len;
  for (int p = n_parts - 1; p >= 0; p--)
    if (row >= kv_part_first_row(cost->rows, n_parts, p)) return f->out_parts[p];
  return NULL;
}
