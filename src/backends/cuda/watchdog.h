/* watchdog.h - the cuda backend's waits with a deadline (watchdog.c), for its C and CUDA files:
 * the deadline of a wait whose work is estimated to take estimate_seconds (a large multiple of
 * it, at least the deck's [run] watchdog), and waits for an event or for everything enqueued on
 * the context's stream so far. A wait past its deadline defers a fatal "timeout: WHAT did not
 * finish ..." error and returns KV_ERR; the device must then not be touched again (it may still
 * be running the work). */
#ifndef KVAL_BACKENDS_CUDA_WATCHDOG_H
#define KVAL_BACKENDS_CUDA_WATCHDOG_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/check.h"
#include "input/plan.h"

double kv_cuda_deadline(const kv_run_settings *rs, double estimate_seconds);
kv_status kv_cuda_wait_event(cudaEvent_t e, double deadline, const char *what);

#ifdef __cplusplus
}
#endif

#endif
