/* harness.c - the timing harness of the cuda backend: warm-up launches, then timed
 * repetitions with a CUDA event pair around each launch, every wait under the watchdog. After
 * the first launch and after every timed one (outside the timed region) the backend's probe
 * adds the outputs' checksum into a device word of that launch; the words come to the host
 * once, after the loop, for the launch check (kv_launch_finding). Between repetitions (outside
 * the timed region) a memset of a buffer twice the L2 size evicts the inputs and outputs from
 * L2 unless the deck asks for warm timing. The loop stops when the relative standard error of
 * the median reaches the target (after min_reps), at max_reps, or when time_cap seconds of
 * wall time have passed. NVML telemetry is read after the warm-up, every 0.25 s during the loop
 * and after it: lowest and highest SM clock, memory clock, temperature, power, OR of the
 * throttle reasons, and a flag when the SM clock fell below 75% of its maximum. */
#include <math.h>
#include <stdlib.h>

#include "backends/cuda/context.h"
#include "family_cuda.h"
#include "core/cuda_check.cuh"
#include "backends/cuda/nvml.h"
#include "core/timing.h"

#define TELEMETRY_INTERVAL 0.25 /* seconds between NVML readings inside the loop */

static void telemetry_read(const kv_cuda_ctx *ctx, kv_telemetry *d) {
  kv_nvml_sample s;
  kv_nvml_read(&s);
  if (!isnan(s.sm_clock)) {
    if (isnan(d->sm_clock_min) || s.sm_clock < d->sm_clock_min) d->sm_clock_min = s.sm_clock;
    if (isnan(d->sm_clock_max) || s.sm_clock > d->sm_clock_max) d->sm_clock_max = s.sm_clock;
    if (!isnan(ctx->max_sm_clock) && s.sm_clock < 0.75 * ctx->max_sm_clock) d->clock_flag = 1;
  }
  if (!isnan(s.mem_clock)) d->mem_clock = s.mem_clock;
  if (!isnan(s.temperature)) d->temperature = s.temperature;
  if (!isnan(s.power)) d->power = s.power;
  if (s.have_throttle) d->throttle_reasons |= s.throttle_reasons;
}

/* One timed repetition: flush (untimed), event, launch, event, wait (under the watchdog). */
static kv_status time_once(const kv_cuda_ctx *ctx, kv_cuda_launch_fn launch, const void *problem, int flush,
                           double deadline, cudaEvent_t e0, cudaEvent_t e1, double *seconds) {
  if (flush) KV_TRY(CHECK_CUDA(cudaMemsetAsync(ctx->flush, 0x5a, ctx->flush_bytes, ctx->stream)));
  KV_TRY(CHECK_CUDA(cudaEventRecord(e0, ctx->stream)));
  KV_TRY(launch(problem, ctx->stream));
  KV_TRY(CHECK_CUDA(cudaEventRecord(e1, ctx->stream)));
  KV_TRY(kv_cuda_wait_event(e1, deadline, "a timed launch"));
  float ms = 0.0f;
  KV_TRY(CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1)));
  *seconds = 1e-3 * (double)ms;
  return KV_OK;
}

typedef struct {
  double deadline;
  kv_launch_probe probe;
  void *probe_arg;
  unsigned long long *d_sums; /* the launches' checksums: [0] the first launch, [i] timed repetition i */
} watch;

static kv_status repeat(const kv_cuda_ctx *ctx, kv_cuda_launch_fn launch, const void *problem,
                        const kv_run_settings *rs, const watch *w, cudaEvent_t e0, cudaEvent_t e1, kv_case_data *d) {
  for (int i = 0; i < rs->warmup; i++) {
    KV_TRY(launch(problem, ctx->stream));
    if (i == 0) KV_TRY(w->probe(w->probe_arg, &w->d_sums[0]));
    KV_TRY(kv_cuda_wait(ctx, w->deadline, "a warm-up launch"));
  }
  telemetry_read(ctx, &d->tel);
  const int max_reps = rs->max_reps > 0 ? rs->max_reps : 1;
  d->n_times = 0;
  const double start = kv_wtime();
  double last_reading = start;
  while (d->n_times < max_reps) {
    KV_TRY(time_once(ctx, launch, problem, rs->l2_flush, w->deadline, e0, e1, &d->times[d->n_times]));
    d->n_times++;
    KV_TRY(w->probe(w->probe_arg, &w->d_sums[d->n_times]));
    const double now = kv_wtime();
    if (now - last_reading >= TELEMETRY_INTERVAL) {
      telemetry_read(ctx, &d->tel);
      last_reading = now;
    }
    if (now - start >= rs->time_cap) break;
    if (d->n_times >= rs->min_reps && kv_timing_median_rse(d->times, d->n_times) <= rs->rse_target) break;
  }
  telemetry_read(ctx, &d->tel);
  const size_t n = (size_t)d->n_times + 1;
  KV_TRY(CHECK_CUDA(cudaMemcpyAsync(d->launch_sums, w->d_sums, n * sizeof *w->d_sums, cudaMemcpyDeviceToHost,
                                    ctx->stream)));
  KV_TRY(kv_cuda_wait(ctx, w->deadline, "the download of the launch checksums"));
  if (rs->warmup == 0) d->launch_sums[0] = d->launch_sums[1]; /* the first launch was timed */
  return KV_OK;
}

kv_status kv_cuda_time_case(const kv_cuda_ctx *ctx, kv_cuda_launch_fn launch, const void *problem,
                            const kv_run_settings *rs, double deadline, kv_launch_probe probe, void *probe_arg,
                            kv_case_data *d) {
  watch w = {deadline, probe, probe_arg, NULL};
  kv_telemetry_unknown(&d->tel);
  const size_t max_reps = rs->max_reps > 0 ? (size_t)rs->max_reps : 1;
  d->times = KV_MALLOC(max_reps * sizeof *d->times);
  d->launch_sums = KV_MALLOC((max_reps + 1) * sizeof *d->launch_sums);
  KV_TRY(CHECK_ALLOC(d->times));
  KV_TRY(CHECK_ALLOC(d->launch_sums));
  cudaEvent_t e0 = NULL, e1 = NULL;
  kv_status st = CHECK_CUDA(cudaEventCreate(&e0));
  if (st == KV_OK) st = CHECK_CUDA(cudaEventCreate(&e1));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&w.d_sums, (max_reps + 1) * sizeof *w.d_sums));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemsetAsync(w.d_sums, 0, (max_reps + 1) * sizeof *w.d_sums, ctx->stream));
  if (st == KV_OK) st = repeat(ctx, launch, problem, rs, &w, e0, e1, d);
  if (kv_fatal_pending()) return st; /* after a timeout the device must not be touched again */
  if (w.d_sums && CHECK_CUDA(cudaFree(w.d_sums)) != KV_OK) st = KV_ERR;
  if (e0 && CHECK_CUDA(cudaEventDestroy(e0)) != KV_OK) st = KV_ERR;
  if (e1 && CHECK_CUDA(cudaEventDestroy(e1)) != KV_OK) st = KV_ERR;
  return st;
}
