/* timing.h - robust statistics of repeated timings and the stop rule of the harness
 * (repeat until the relative standard error of the median is small or a time cap). */
#ifndef KVAL_TIMING_H
#define KVAL_TIMING_H

typedef struct {
  double min, median, mean, p10, p90, stddev; /* seconds */
  int reps;
} kv_timing;

/* Summarise n samples (seconds). The array is sorted in place. */
void kv_timing_summarize(double *samples, int n, kv_timing *t);

/* Relative standard error of the median of n samples (a copy is sorted), from the
 * distribution-free order-statistic interval; +inf when n < 5. */
double kv_timing_median_rse(const double *samples, int n);

/* Monotonic wall clock in seconds. */
double kv_wtime(void);

#endif
