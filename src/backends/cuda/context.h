/* context.h - internal interface between the parts of the cuda backend (C11 host code on the
 * CUDA runtime C API): device binding and identity (identity.c), start-up ceilings
 * (ceilings.c), the timing harness with telemetry (harness.c), the pinned host buffers
 * (hostpool.c) and the backend itself (backend.c). Not used outside src/backends/cuda/. */
#ifndef KVAL_BACKEND_CUDA_H
#define KVAL_BACKEND_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "backends/backend.h"
#include "backends/cuda/device.h"
#include "backends/cuda/watchdog.h"
#include "family_cuda.h"

/* The process's device state, set up by init. */
typedef struct {
  int device;
  cudaStream_t stream;
  cudaEvent_t done;     /* recorded by kv_cuda_wait */
  void *flush;          /* L2 flush buffer, >= 2x the L2 size */
  size_t flush_bytes;
  double max_sm_clock;  /* MHz from NVML, NaN when unknown */
  double copy_gbps, matrix_tflops, fp64_tflops; /* the rank's ceilings, for the watchdog's estimates */
  int ref_threads;      /* host threads of the cross-check's CPU reference (kv_ref_host_threads) */
} kv_cuda_ctx;

/* Page-locked host buffers kept from case to case (hostpool.c): init sizes the pool's limit
 * by the node's memory and ranks; get returns a buffer of at least `bytes` (pinned, or from
 * malloc past the limit); put gives it back (any pointer get returned; no CUDA call);
 * release frees the pool at finalize. */
void kv_cuda_host_init(int local_size);
kv_status kv_cuda_host_get(size_t bytes, void **p);
void kv_cuda_host_put(void *p);
void kv_cuda_host_release(void);

/* Wait for everything enqueued on the context's stream so far, under the watchdog (watchdog.h). */
kv_status kv_cuda_wait(const kv_cuda_ctx *ctx, double deadline, const char *what);

/* Device buffers of one case (buffers.c); every pointer NULL until allocated. Each tensor
 * sits between two guard bands (backend.h): in[i] and out[i] point past the first band of
 * in_alloc[i] and out_alloc[i]. The device words `sums` hold the
 * checksums: inputs after generation [0, n_in), inputs after the launches
 * [KV_MAX_TENSORS, +n_in), and the outputs of the verification launch [2 KV_MAX_TENSORS]
 * (the timed launches' are the harness's, kv_cuda_time_case). */
typedef struct {
  void *in[KV_MAX_TENSORS], *out[KV_MAX_TENSORS], *in_alloc[KV_MAX_TENSORS], *out_alloc[KV_MAX_TENSORS];
  double *ref, *mag, *aux_ref, *aux_mag;
  unsigned long long *sums;
  uint64_t verification_sum; /* the device's checksum of the verification launch's outputs */
} kv_cuda_buffers;

/* Device bytes a case needs (its tensors with their guard bands, the reference's buffers). */
double kv_cuda_case_bytes(const kv_tensors *t, const kv_cost *cost);
kv_status kv_cuda_buffers_alloc(const kv_tensors *t, const kv_cost *cost, kv_cuda_buffers *b);
/* Inputs from the shared generator and their checksums, outputs poisoned with NaN bits (an
 * element a launch does not write stays NaN), guard bands filled (inputs' with NaN bits). */
kv_status kv_cuda_buffers_fill(const kv_cuda_ctx *ctx, const kv_case *c, const kv_run_settings *rs,
                               const kv_tensors *t, kv_cuda_buffers *b);
/* Poison the outputs again (before the verification launch). */
kv_status kv_cuda_buffers_poison(const kv_cuda_ctx *ctx, const kv_tensors *t, kv_cuda_buffers *b);
/* Enqueue the checksum of all outputs (output i with salt i) added into the device word d_sum. */
kv_status kv_cuda_buffers_sum_outputs(const kv_cuda_ctx *ctx, const kv_tensors *t, const kv_cuda_buffers *b,
                                      unsigned long long *d_sum);
/* The device word of the verification launch's checksum (zeroed by kv_cuda_buffers_fill). */
unsigned long long *kv_cuda_buffers_verification_slot(const kv_cuda_buffers *b);
/* After the launches: the guard bands of inputs and outputs, the inputs' checksums against the first ones and the
 * launch checksums (d->launch_sums and the verification launch's) against each other; what
 * differs goes into d->out_of_bounds and d->nondeterministic (names the tensor and byte offset,
 * or the launches). Keeps the verification launch's sum in b->verification_sum (for
 * kv_checksum_finding once the outputs are on the host). */
kv_status kv_cuda_buffers_check(const kv_cuda_ctx *ctx, const kv_tensors *t, kv_cuda_buffers *b, double deadline,
                                kv_case_data *d);
kv_status kv_cuda_buffers_free(kv_cuda_buffers *b);

/* The cross-checks of the checker on sampled rows (xcheck.c): the device inputs against the
 * host generator (kv_input_finding), the GPU fp64 reference against the family's CPU reference
 * (d->ref_xcheck), and, when the statistics were computed on the device, the device statistics
 * of those rows against the host's (d->harness on a mismatch) and the full statistics' own
 * consistency. start (once the inputs exist): the sampled rows, the inputs on the host, and the
 * CPU reference of those rows on a host thread of its own; *job is set even when it fails.
 * finish (after the GPU reference and statistics): waits for that thread and compares.
 * drop: waits for the thread if it still runs and frees the job (every path, NULL allowed). */
typedef struct kv_cuda_xcheck_job kv_cuda_xcheck_job;
kv_status kv_cuda_xcheck_start(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                               const kv_run_settings *rs, const kv_cuda_buffers *b, kv_cuda_xcheck_job **job);
kv_status kv_cuda_xcheck_finish(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                                const kv_run_settings *rs, const kv_cuda_buffers *b, kv_cuda_xcheck_job *job,
                                kv_case_data *d);
void kv_cuda_xcheck_drop(kv_cuda_xcheck_job *job);

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

/* Warm-up and timed repetitions of launch(problem) alone (
 * CUDA events around each launch, L2 flushed between repetitions unless rs->l2_flush is 0),
 * until the relative standard error of the median reaches rs->rse_target (after
 * rs->min_reps), rs->max_reps, or rs->time_cap seconds of wall time; every wait under the
 * watchdog's `deadline`; probe(probe_arg, d_sum) after the first launch and after every timed
 * repetition (outside the timed region) adds the outputs' checksum into a device word of its
 * own; fills d->times, d->n_times, d->launch_sums (those checksums, downloaded once after the
 * loop) and the telemetry. */
/* One launch of a prepared problem on `stream` (a family's kv_cuda_family.launch, or a bench
 * launch override's, device.h). */
typedef kv_status (*kv_cuda_launch_fn)(const void *problem, void *stream);
typedef kv_status (*kv_launch_probe)(void *arg, unsigned long long *d_sum);
kv_status kv_cuda_time_case(const kv_cuda_ctx *ctx, kv_cuda_launch_fn launch, const void *problem,
                            const kv_run_settings *rs, double deadline, kv_launch_probe probe, void *probe_arg,
                            kv_case_data *d);

#endif
