/* timing.c - robust statistics of repeated kernel timings (min, median, mean, p10, p90,
 * standard deviation; percentiles linearly interpolated between order statistics), the
 * relative standard error of the median from its distribution-free order-statistic 95%
 * confidence interval (the harness's stop rule), the monotonic wall clock, and unset
 * telemetry and phase times. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "core/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"

#define Z95 1.959963984540054 /* two-sided 95% normal quantile */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Percentile q in [0, 1] of sorted s[0..n-1]: linear interpolation at position q*(n-1)
 * (numpy's default "linear" method). */
static double percentile(const double *s, int n, double q) {
  const double pos = q * (n - 1);
  const int i = (int)pos;
  if (i >= n - 1) return s[n - 1];
  return s[i] + (pos - i) * (s[i + 1] - s[i]);
}

void kv_timing_summarize(double *samples, int n, kv_timing *t) {
  t->reps = n > 0 ? n : 0;
  if (n <= 0) {
    t->min = t->median = t->mean = t->p10 = t->p90 = t->stddev = NAN;
    return;
  }
  qsort(samples, (size_t)n, sizeof *samples, cmp_double);
  double sum = 0.0;
  for (int i = 0; i < n; i++) sum += samples[i];
  const double mean = sum / n;
  double ss = 0.0;
  for (int i = 0; i < n; i++) ss += (samples[i] - mean) * (samples[i] - mean);
  t->min = samples[0];
  t->median = percentile(samples, n, 0.5);
  t->mean = mean;
  t->p10 = percentile(samples, n, 0.1);
  t->p90 = percentile(samples, n, 0.9);
  t->stddev = n > 1 ? sqrt(ss / (n - 1)) : 0.0; /* sample standard deviation */
}

/* The 95% interval of the median runs between the order statistics of (1-based) ranks
 * n/2 - z*sqrt(n)/2 (rounded down) and 1 + n/2 + z*sqrt(n)/2 (rounded up), clamped to
 * [1, n] (Conover, Practical Nonparametric Statistics); half its width divided by z is the
 * standard error, relative to the median. */
double kv_timing_median_rse(const double *samples, int n) {
  if (n < 5) return INFINITY;
  double *s = KV_MALLOC((size_t)n * sizeof *s);
  if (!s) return INFINITY;
  memcpy(s, samples, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  const double half_width = Z95 * sqrt((double)n) / 2.0;
  int lo = (int)floor(n / 2.0 - half_width), hi = (int)ceil(1.0 + n / 2.0 + half_width);
  if (lo < 1) lo = 1;
  if (hi > n) hi = n;
  const double median = percentile(s, n, 0.5), spread = s[hi - 1] - s[lo - 1];
  free(s);
  if (spread == 0.0) return 0.0;
  return median > 0.0 ? spread / (2.0 * Z95 * median) : INFINITY;
}

static double seconds_of(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double kv_cputime(void) { return seconds_of(CLOCK_THREAD_CPUTIME_ID); }

double kv_wtime(void) { return seconds_of(CLOCK_MONOTONIC); }

double kv_lap(double *mark) {
  const double now = kv_wtime(), dt = now - *mark;
  *mark = now;
  return dt;
}

void kv_phases_unknown(kv_phases *p) {
#define UNKNOWN(X, member, dataset, description) p->member = NAN;
  KV_PHASES(UNKNOWN, )
#undef UNKNOWN
}

void kv_telemetry_unknown(kv_telemetry *t) {
  t->sm_clock_min = t->sm_clock_max = t->mem_clock = t->temperature = t->power = NAN;
  t->throttle_reasons = 0;
  t->clock_flag = 0;
}
