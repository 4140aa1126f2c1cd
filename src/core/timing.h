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

/* The phases of one case, each once: P(X, member, dataset, description). The struct below,
 * kv_phases_unknown, the runner's sums and the result datasets (core/result.h, units "s") all
 * expand this list, so a phase is added here alone. */
#define KV_PHASES(P, X)                                                                                       \
  P(X, setup, t_setup, "wall time of buffers, input generation and the kernel's prepare")                     \
  P(X, timing, t_timing, "wall time of the warm-up and timed repetitions (flushes, launches, waits)")         \
  P(X, checks, t_checks, "wall time of the verification launch, guard-band/input/launch checks, downloads")   \
  P(X, stats, t_stats, "wall time of the error statistics on the device")                                     \
  P(X, xcheck, t_xcheck, "wall time of the cross-checks the case waited for (CPU reference beside the GPU)") \
  P(X, judge, t_judge, "wall time of the host statistics, verdict and fingerprint")                           \
  P(X, total, t_case, "wall time of the whole case")

/* Wall time of the phases of one case, seconds (NaN where a backend has no such phase):
 * where a run's time goes beside the timed launches (docs/PERFORMANCE.md). The backends set
 * setup, timing, checks, stats and xcheck; the runner adds judge and total. */
#define KV_PHASE_MEMBER(X, member, dataset, description) double member;
typedef struct {
  KV_PHASES(KV_PHASE_MEMBER, )
} kv_phases;
#undef KV_PHASE_MEMBER

/* Phases with nothing measured (NaN). */
void kv_phases_unknown(kv_phases *p);

/* Telemetry with nothing known. */
void kv_telemetry_unknown(kv_telemetry *t);

/* Summarise n samples (seconds). The array is sorted in place. */
void kv_timing_summarize(double *samples, int n, kv_timing *t);

/* Relative standard error of the median of n samples (a copy is sorted), from the
 * distribution-free order-statistic interval; +inf when n < 5. */
double kv_timing_median_rse(const double *samples, int n);

/* CPU time of the calling thread in seconds: the cpu backend's kernel timer (its kernels are
 * the emulations on this thread; time spent preempted by other load does not count). */
double kv_cputime(void);

/* Monotonic wall clock in seconds. */
double kv_wtime(void);

/* Seconds since *mark, and *mark set to now: the phase timer of the backends. */
double kv_lap(double *mark);

#endif
