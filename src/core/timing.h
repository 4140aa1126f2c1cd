/* timing.h - robust statistics of repeated timings, the stop rule of the harness (repeat
 * until the relative standard error of the median is small or a time cap), and the
 * telemetry taken around a measurement. */
#ifndef KVAL_TIMING_H
#define KVAL_TIMING_H

#include <stdint.h>

typedef struct {
  double min, median, mean, p10, p90, stddev; /* seconds */
  int reps;
} kv_timing;

/* What NVML said around a measurement (NaN / 0 where unavailable, e.g. the cpu backend). */
typedef struct {
  double sm_clock_min, sm_clock_max; /* MHz: lowest and highest SM clock seen */
  double mem_clock;                  /* MHz */
  double temperature;                /* degrees Celsius, after the measurement */
  double power;                      /* W, after the measurement */
  uint64_t throttle_reasons;         /* OR of the NVML clocks-throttle-reason masks seen */
  int clock_flag;                    /* 1 when the SM clock fell below 75% of its maximum */
} kv_telemetry;

/* Telemetry with nothing known. */
void kv_telemetry_unknown(kv_telemetry *t);

/* Summarise n samples (seconds). The array is sorted in place. */
void kv_timing_summarize(double *samples, int n, kv_timing *t);

/* Relative standard error of the median of n samples (a copy is sorted), from the
 * distribution-free order-statistic interval; +inf when n < 5. */
double kv_timing_median_rse(const double *samples, int n);

/* Monotonic wall clock in seconds. */
double kv_wtime(void);

#endif
