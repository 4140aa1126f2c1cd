/* watchdog.c - every wait of the cuda backend for the device has a deadline: a launch, a
 * reference or a statistics pass that does not finish within it (a deadlocked pipeline, a
 * kernel spinning on a barrier) is reported as a timeout naming what it waited for, and the
 * rank stops through the deferred fatal path of a sticky CUDA error (its finished cases are
 * kept, the collectives finish, then it exits 3): never a silent hang until the time limit.
 * The wait polls the event: spinning for the first millisecond (timed launches are short and
 * their timing comes from the events, not from this loop), then sleeping 100 microseconds. */
#include <math.h>
#include <time.h>

#include "backends/cuda/context.h"
#include "core/cuda_check.cuh"
#include "core/timing.h"

#define SPIN_SECONDS 1e-3
#define ESTIMATE_FACTOR 1000.0 /* a deadline is this multiple of the estimate, at least the floor */

double kv_cuda_deadline(const kv_run_settings *rs, double estimate_seconds) {
  const double d = ESTIMATE_FACTOR * (isfinite(estimate_seconds) ? estimate_seconds : 0.0);
  return d > rs->watchdog ? d : rs->watchdog;
}

kv_status kv_cuda_wait_event(cudaEvent_t e, double deadline, const char *what) {
  const double start = kv_wtime();
  const struct timespec nap = {0, 100000};
  for (;;) {
    const cudaError_t q = cudaEventQuery(e);
    if (q == cudaSuccess) return KV_OK;
    if (q != cudaErrorNotReady) return CHECK_CUDA(q);
    const double waited = kv_wtime() - start;
    if (waited > deadline) {
      kv_fatal_defer(__FILE__, __LINE__, "timeout: %s did not finish within %.3g s (the watchdog's deadline)", what,
                     deadline);
      return KV_ERR;
    }
    if (waited > SPIN_SECONDS) nanosleep(&nap, NULL);
  }
}

kv_status kv_cuda_wait(const kv_cuda_ctx *ctx, double deadline, const char *what) {
  KV_TRY(CHECK_CUDA(cudaEventRecord(ctx->done, ctx->stream)));
  return kv_cuda_wait_event(ctx->done, deadline, what);
}
