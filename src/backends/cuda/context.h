/* context.h - internal interface between the parts of the cuda backend (C11 host code on the
 * CUDA runtime C API): device binding and identity (identity.c), start-up ceilings
 * (ceilings.c), the timing harness with telemetry (harness.c) and the backend itself
 * (backend.c). Not used outside src/backends/cuda/. */
#ifndef KVAL_BACKEND_CUDA_H
#define KVAL_BACKEND_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "backends/backend.h"
#include "backends/cuda/device.h"
#include "family_cuda.h"

/* The process's device state, set up by init. */
typedef struct {
  int device;
  cudaStream_t stream;
  void *flush;          /* L2 flush buffer, >= 2x the L2 size */
  size_t flush_bytes;
  double max_sm_clock;  /* MHz from NVML, NaN when unknown */
} kv_cuda_ctx;

/* Pick this rank's device among the node's ranks (collective over the node's ranks when
 * MPI is initialised: MPI_Comm_split_type(SHARED) and an allgather of CUDA_VISIBLE_DEVICES),
 * make it current, and return its index. */
kv_status kv_cuda_bind(int local_rank, int local_size, const char *host, int *device);

/* Name, UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), serial (NVML), PCI bus id, SM
 * count, memory, compute capability, driver and runtime versions; opens NVML. */
kv_status kv_cuda_identify(int device, kv_rank_info *info);

/* Measured ceilings: device-to-device copy bandwidth (read + write counted), dense bf16
 * GEMM rate (cuBLAS, 8192^3, random inputs) and DGEMM rate (4096^3). */
kv_status kv_cuda_ceilings(cudaStream_t s, kv_rank_info *info);

/* One launch of a prepared problem on `stream` (a family's kv_cuda_family.launch, or a bench
 * launch override's, device.h). */
typedef kv_status (*kv_cuda_launch_fn)(const void *problem, void *stream);

/* Warm-up and timed repetitions of launch(problem) alone (CUDA events around each launch, L2
 * flushed between repetitions unless rs->l2_flush is 0), until the relative standard error
 * of the median reaches rs->rse_target (after rs->min_reps), rs->max_reps, or rs->time_cap
 * seconds of wall time; fills d->times, d->n_times and the telemetry. */
kv_status kv_cuda_time_case(const kv_cuda_ctx *ctx, kv_cuda_launch_fn launch, const void *problem,
                            const kv_run_settings *rs, kv_case_data *d);

#endif
