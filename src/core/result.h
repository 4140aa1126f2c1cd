/* result.h - one result row (one case on one rank) and the table of its datasets. The lists
 * are X-macros naming each dataset and the member of kv_result it holds, so the runner, the
 * MPI transfer, the HDF5 writer and --resume all see the same fields: adding a statistic is
 * one line here (and its member). Every field becomes a dataset [rank, axis...] of the
 * family's group; units are UDUNITS-2 strings (CF), "1" for counts and ratios. */
#ifndef KVAL_RESULT_H
#define KVAL_RESULT_H

#include <stdint.h>

#include "core/timing.h"
#include "family.h"
#include "numerics/errstats.h"

#define KV_MESSAGE_LEN 96

/* A phase of core/timing.h as a float64 dataset of seconds. */
#define KV_RESULT_PHASE(X, member, dataset, description) X(dataset, phases.member, "s", description)

/* X(name, member, unit, description) - float64 datasets, NaN where not run; `member` is the
 * field of kv_result the dataset `name` holds. */
#define KV_RESULT_DOUBLES(X)                                                                                 \
  X(max_abs, stats.max_abs, "1", "max |out - ref|")                                                          \
  X(max_rel, stats.max_rel, "1", "max |out - ref| / max(|ref|, rel_floor)")                                  \
  X(rel_l2, stats.rel_l2, "1", "||out - ref||_2 / ||ref||_2")                                                \
  X(mean_abs, stats.mean_abs, "1", "mean |out - ref|")                                                       \
  X(max_ulp, stats.max_ulp, "1", "max error in ULPs of the storage type")                                    \
  X(p99_ulp, stats.p99_ulp, "1", "99th percentile error in ULPs of the storage type")                        \
  X(max_bound_ratio, stats.max_bound_ratio, "1", "max |out - ref| / tolerance bound (pass <= 1)")            \
  X(floor_ratio, stats.floor_ratio, "1", "max |out - ref| / max |round(ref) - ref| (ratio to output rounding)") \
  X(bias_ulp, stats.bias_ulp, "1", "mean signed error in ULPs of the storage type (rounding bias)")       \
  X(bias_mag_ulp, stats.bias_mag_ulp, "1", "mean of sign(ref) * error in ULPs (negative: toward zero)")    \
  X(bias_se, stats.bias_se, "1", "standard error of the two bias means")                                   \
  X(red_len, red_len, "1", "reduction length K of the tolerance's sqrt(K) term")                            \
  X(aux_max_abs, aux_max_abs, "1", "max abs error of the auxiliary output (fa2: row log-sum-exp)")           \
  X(aux_bound_ratio, aux_bound_ratio, "1", "max |aux - ref| / its bound (pass <= 1)")                        \
  X(ref_seconds, ref_seconds, "s", "wall time of the fp64 reference")                                        \
  X(ref_xcheck, ref_xcheck, "1", "max relative disagreement GPU vs CPU fp64 reference on sampled rows")      \
  KV_PHASES(KV_RESULT_PHASE, X)                                                                              \
  X(time_min, timing.min, "s", "minimum kernel time")                                                        \
  X(time_median, timing.median, "s", "median kernel time")                                                   \
  X(time_mean, timing.mean, "s", "mean kernel time")                                                         \
  X(time_p10, timing.p10, "s", "10th percentile kernel time")                                                \
  X(time_p90, timing.p90, "s", "90th percentile kernel time")                                                \
  X(time_stddev, timing.stddev, "s", "standard deviation of kernel time")                                    \
  X(tflops, tflops, "1e12 s-1", "useful FLOPs / median time, in TFLOP/s")                                    \
  X(gbps, gbps, "1e9 byte s-1", "minimal bytes / median time, in GB/s")                                      \
  X(intensity, intensity, "byte-1", "arithmetic intensity, in FLOP/byte")                                    \
  X(roofline_frac, roofline_frac, "1", "achieved / min(peak, intensity * bandwidth)")                        \
  X(sm_clock_min, tel.sm_clock_min, "MHz", "lowest SM clock seen around the measurement")                    \
  X(sm_clock_max, tel.sm_clock_max, "MHz", "highest SM clock seen around the measurement")                   \
  X(mem_clock, tel.mem_clock, "MHz", "memory clock")                                                         \
  X(temperature, tel.temperature, "degC", "GPU temperature after the measurement")                           \
  X(power, tel.power, "W", "GPU power draw after the measurement")                                          \
  X(emu_max_ulp, emu_max_ulp, "1", "max |out - emulation| in ULPs of the storage type (NaN: conformance not judged)")

/* X(name, member, unit, description) - int64 datasets, -1 where not run. */
#define KV_RESULT_INTS(X)                                                                                    \
  X(n_nan, stats.n_nan, "1", "NaN outputs where the reference is finite")                                    \
  X(n_inf, stats.n_inf, "1", "Inf outputs where the reference is finite")                                    \
  X(n_checked, stats.n_checked, "1", "elements compared with the reference")                                 \
  X(worst_index, stats.worst_index, "1", "flat index of the element with the largest bound ratio")           \
  X(n_bias, stats.n_bias, "1", "elements in the rounding-bias statistics")                                   \
  X(ref_rows, ref_rows, "1", "output rows covered by the reference (all rows unless sampled)")               \
  X(reps, timing.reps, "1", "timed repetitions")                                                             \
  X(throttle_reasons, tel.throttle_reasons, "1", "NVML clocks-throttle-reason bitmask seen during the measurement") \
  X(clock_flag, tel.clock_flag, "1", "1 when the SM clock fell below 75% of its maximum during timing")       \
  X(registers, res.registers, "1", "registers per thread of the kernel variant (-1 on the cpu backend)")     \
  X(smem_bytes, res.smem_bytes, "byte", "static + dynamic shared memory per block of the kernel variant")    \
  X(local_bytes, res.local_bytes, "byte", "local memory per thread of the kernel variant (spills; must be 0)") \
  X(occupancy, res.occupancy, "1", "theoretical resident blocks per SM of the kernel variant")                \
  X(outcome, outcome, "1", "measured outcome of a probe case (tcprobe: the decoded arithmetic property); -1 elsewhere")

/* X(name, member, description) - the error statistics of each part of a family's output
 * (kv_family.out_parts), the columns of the dataset part_stats [rank, axis..., part,
 * part_stat], all float64 (counts and the index exact), dimensionless, NaN where not run. */
#define KV_PART_STATS(X)                                                                              \
  X(max_abs, max_abs, "max |out - ref|")                                                              \
  X(max_rel, max_rel, "max |out - ref| / max(|ref|, rel_floor)")                                     \
  X(rel_l2, rel_l2, "||out - ref||_2 / ||ref||_2")                                                    \
  X(mean_abs, mean_abs, "mean |out - ref|")                                                           \
  X(max_ulp, max_ulp, "max error in ULPs of the storage type")                                        \
  X(p99_ulp, p99_ulp, "99th percentile error in ULPs of the storage type")                            \
  X(max_bound_ratio, max_bound_ratio, "max |out - ref| / tolerance bound (pass <= 1)")                \
  X(floor_ratio, floor_ratio, "max |out - ref| / max |round(ref) - ref|")                             \
  X(bias_ulp, bias_ulp, "mean signed error in ULPs (rounding bias)")                                  \
  X(bias_mag_ulp, bias_mag_ulp, "mean of sign(ref) * error in ULPs (negative: toward zero)")          \
  X(bias_se, bias_se, "standard error of the two bias means")                                         \
  X(n_nan, n_nan, "NaN outputs where the reference is finite")                                        \
  X(n_inf, n_inf, "Inf outputs where the reference is finite")                                        \
  X(n_checked, n_checked, "elements compared with the reference")                                     \
  X(worst_index, worst_index, "flat index in the whole output of the part's largest bound ratio")     \
  X(n_bias, n_bias, "elements in the rounding-bias statistics")

enum {
#define KV_X(name, member, doc) KV_PART_##name,
  KV_PART_STATS(KV_X)
#undef KV_X
  KV_N_PART_STATS
};

/* One result row: the error statistics, timing, telemetry and kernel resources as their own
 * structs, and the quantities the runner derives. */
typedef struct {
  int32_t rank;
  int32_t family;  /* the plan's family section: index in kv_plan.fam (kv_family_plan.slot) */
  uint64_t cell;   /* flat index into the family's grid */
  int32_t status;  /* kv_case_status */
  uint64_t fingerprint;
  kv_errstats stats; /* of output 0 against the reference (stats.hist: the histogram dataset) */
  double part_stats[KV_MAX_PARTS][KV_N_PART_STATS]; /* of each part of output 0 (KV_PART_STATS); NaN past the family's parts */
  kv_timing timing;
  kv_telemetry tel;
  kv_kernel_resources res;
  kv_phases phases;
  double red_len, aux_max_abs, aux_bound_ratio, ref_seconds, ref_xcheck, tflops, gbps, intensity, roofline_frac;
  int64_t ref_rows;
  double emu_max_ulp; /* conformance: max distance from the emulation in output ULPs (run/conform.h) */
  int64_t outcome; /* the family's outcome() of the case (tcprobe), -1 when it has none */
  char message[KV_MESSAGE_LEN]; /* skip reason or error message */
} kv_result;

/* A result with every statistic unset (NaN / -1), status not_run. */
void kv_result_init(kv_result *r, int rank, int family, uint64_t cell);
/* The KV_PART_STATS fields of st into row[KV_N_PART_STATS]. */
void kv_result_part_stats(const kv_errstats *st, double *row);

#endif
