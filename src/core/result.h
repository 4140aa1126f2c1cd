/* result.h - one result row (one case on one rank) and the table of its fields. The field
 * lists are X-macros so the runner, the MPI transfer, the HDF5 writer and --resume all see
 * the same fields: adding a statistic is one line here. Every field becomes a dataset
 * [rank, axis...] of the family's group. */
#ifndef KVAL_RESULT_H
#define KVAL_RESULT_H

#include <stdint.h>

#include "numerics/errstats.h"

#define KV_MESSAGE_LEN 96

/* X(name, unit, description) - float64 datasets, NaN where not run. */
#define KV_RESULT_DOUBLES(X)                                                                     \
  X(max_abs, "1", "max |out - ref|")                                                             \
  X(max_rel, "1", "max |out - ref| / max(|ref|, rel_floor)")                                     \
  X(rel_l2, "1", "||out - ref||_2 / ||ref||_2")                                                  \
  X(mean_abs, "1", "mean |out - ref|")                                                           \
  X(max_ulp, "ulp", "max error in ULPs of the storage type")                                     \
  X(p99_ulp, "ulp", "99th percentile error in ULPs of the storage type")                         \
  X(max_bound_ratio, "1", "max |out - ref| / tolerance bound (pass <= 1)")                       \
  X(floor_ratio, "1", "max |out - ref| / max |round(ref) - ref| (ratio to output rounding)")     \
  X(aux_max_abs, "1", "max abs error of the auxiliary output (fa2: row log-sum-exp)")            \
  X(ref_seconds, "s", "wall time of the fp64 reference")                                         \
  X(ref_xcheck, "1", "max relative disagreement GPU vs CPU fp64 reference on sampled rows")      \
  X(time_min, "s", "minimum kernel time")                                                        \
  X(time_median, "s", "median kernel time")                                                      \
  X(time_mean, "s", "mean kernel time")                                                          \
  X(time_p10, "s", "10th percentile kernel time")                                                \
  X(time_p90, "s", "90th percentile kernel time")                                                \
  X(time_stddev, "s", "standard deviation of kernel time")                                       \
  X(tflops, "TFLOP/s", "useful FLOPs / median time")                                             \
  X(gbps, "GB/s", "minimal bytes / median time")                                                 \
  X(intensity, "FLOP/byte", "arithmetic intensity")                                              \
  X(roofline_frac, "1", "achieved / min(peak, intensity * bandwidth)")                           \
  X(sm_clock_min, "MHz", "lowest SM clock seen around the measurement")                          \
  X(sm_clock_max, "MHz", "highest SM clock seen around the measurement")                         \
  X(mem_clock, "MHz", "memory clock")                                                            \
  X(temperature, "C", "GPU temperature after the measurement")                                   \
  X(power, "W", "GPU power draw after the measurement")

/* X(name, unit, description) - int64 datasets, -1 where not run. */
#define KV_RESULT_INTS(X)                                                                        \
  X(n_nan, "1", "NaN outputs where the reference is finite")                                     \
  X(n_inf, "1", "Inf outputs where the reference is finite")                                     \
  X(n_checked, "1", "elements compared with the reference")                                      \
  X(worst_index, "1", "flat index of the element with the largest bound ratio")                  \
  X(ref_rows, "1", "output rows covered by the reference (all rows unless sampled)")             \
  X(reps, "1", "timed repetitions")                                                              \
  X(throttle_reasons, "1", "NVML clocks-throttle-reason bitmask seen during the measurement")    \
  X(clock_flag, "1", "1 when the SM clock fell below 75% of its maximum during timing")          \
  X(registers, "1", "registers per thread of the kernel variant (-1 on the cpu backend)")        \
  X(smem_bytes, "B", "static + dynamic shared memory per block of the kernel variant")           \
  X(local_bytes, "B", "local memory per thread of the kernel variant (spills; must be 0)")       \
  X(occupancy, "1", "theoretical resident blocks per SM of the kernel variant")

typedef struct {
  int32_t rank;
  int32_t family;  /* index in kv_families */
  uint64_t cell;   /* flat index into the family's grid */
  int32_t status;  /* kv_case_status */
  uint64_t fingerprint;
#define KV_X(name, unit, doc) double name;
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, unit, doc) int64_t name;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  uint64_t hist[KV_HIST_BINS];
  char message[KV_MESSAGE_LEN]; /* skip reason or error message */
} kv_result;

/* A result with every statistic unset (NaN / -1), status not_run. */
void kv_result_init(kv_result *r, int rank, int family, uint64_t cell);

#endif
