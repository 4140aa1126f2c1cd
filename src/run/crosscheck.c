/* crosscheck.c - the comparisons of the cross-checks (crosscheck.h). */
#include "run/crosscheck.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Relative disagreement of two reference values: 0 when equal (infinities included),
 * |g - c| / max(|c|, scale) otherwise, +inf when only one is finite or either is NaN. */
static double disagreement(double g, double c, double scale) {
  if (g == c) return 0.0;
  if (!isfinite(g) || !isfinite(c)) return INFINITY;
  double den = fmax(fabs(c), scale);
  return fabs(g - c) / (den > 0.0 ? den : DBL_MIN);
}

double kv_xcheck_disagreement(const kv_ref_sample *g, const kv_ref_sample *c) {
  double worst = 0.0;
  for (size_t r = 0; r < c->n; r++) {
    for (size_t j = 0; j < c->len; j++) {
      const size_t k = r * c->len + j;
      worst = fmax(worst, disagreement(g->ref[k], c->ref[k], fabs(c->mag[k])));
      worst = fmax(worst, disagreement(g->mag[k], c->mag[k], 0.0));
    }
    if (c->aux) {
      worst = fmax(worst, disagreement(g->aux[r], c->aux[r], 0.0));
      worst = fmax(worst, disagreement(g->aux_mag[r], c->aux_mag[r], 0.0));
    }
  }
  return worst;
}

/* Sums agree when their relative difference is below 1e-12 (only their order differs). */
static int sums_agree(double a, double b) {
  return a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

void kv_xcheck_compare_stats(const kv_errstats *dev, const kv_errstats *host, const kv_errstats *all, size_t n,
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
