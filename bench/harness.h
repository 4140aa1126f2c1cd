/* harness.h - the bench harness of the family bench drivers (families/<f>/bench/<f>_bench.cu).
 * A bench case is a kv_case of the family built from an "axis=value param=value" string
 * (fcase_init, families/testkit/family_case.h), run through the cuda backend's own path
 * (kv_cuda_run_case_with: inputs generated on the device, outputs poisoned, the family's
 * prepare, the timing harness under a deck's [run] settings, L2 flush and stop rule, the GPU
 * fp64 reference, the error statistics on the device, the CPU cross-check) and judged by the
 * runner (kv_judge_case, src/run/judge.c): its time, throughput, verdict and error statistics are the
 * ones a job's cell would have. A case may time a launch the family does not dispatch on the
 * family's prepared problem (kv_cuda_launch_override, backends/cuda/device.h). Every case
 * prints one line and writes one CSV row; the columns are in bench/README.md. C11, callable
 * from the drivers' C++. */
#ifndef KVAL_BENCH_HARNESS_H
#define KVAL_BENCH_HARNESS_H

#ifdef __cplusplus
extern "C" {
#endif

#include "backends/cuda/device.h"

typedef struct kv_bench kv_bench;

/* A command of a driver: its cases, each through kv_bench_case; KV_ERR stops the driver. */
typedef struct {
  const char *name;
  kv_status (*run)(kv_bench *b);
} kv_bench_command;

/* The whole driver of family `family` (and of others with the same axes):
 *   DRIVER [all|COMMAND] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * `commands` ends with a NULL name; `all` (the default) runs each in turn. Before them: [run]
 * settings from the deck (default $top_srcdir/inputs/default.deck, the main job's; "." when
 * top_srcdir is unset) with the --set overrides, through the job's deck parser and plan; the
 * cuda backend's init (binding, identity, ceilings: KVAL_SKIP_CEILINGS=1 skips them); the
 * device line on stdout; the CSV header. After them the counts. Returns the exit code: 0 when
 * every case that ran passed, 1 otherwise, 2 for a usage or deck error, 3 when the backend
 * failed to start, 77 without a GPU. */
int kv_bench_main(const char *family, const kv_bench_command *commands, int argc, char **argv);

/* One case of `family` (the driver's, or one with the same axes): spec as fcase_init reads it.
 * backend names the CSV row and ovr is the launch to time (both NULL: the family's own launch,
 * named by its variant axis, or "kval" for a family without one). A case the plan would skip
 * is skipped with its reason. KV_ERR only when the device is lost (a sticky CUDA error): the
 * driver stops. */
kv_status kv_bench_case(kv_bench *b, const char *family, const char *spec, const char *backend,
                        const kv_cuda_launch_override *ovr);

#ifdef __cplusplus
}
#endif

#endif
