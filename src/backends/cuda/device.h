/* device.h - the cuda backend's own device code, called from its host half (C11): the input
 * generator, the error statistics on the device, the buffer checksum, and the real faults of
 * --inject sticky and hang (generate.cu, errstats.cu, checks.cu, fault.cu); and the backend
 * itself, with its run path open to a launch the family does not dispatch (the bench harness,
 * bench/harness.c). */
#ifndef KVAL_BACKENDS_CUDA_DEVICE_H
#define KVAL_BACKENDS_CUDA_DEVICE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "numerics/errstats.h"
#include "numerics/tolerance.h"

/* Fill a device buffer with the tensor's inputs: element i = round_to(dtype,
 * kv_gen_value(key, i, dist, scale, offset)), bit-identical to the CPU generator. */
kv_status kv_cuda_generate(void *d_buf, const kv_tensor_spec *t, uint64_t key, void *stream);

/* kv_errstats_compute on the device (errstats.cu): the same statistics of n elements of a
 * device output d_out (flat indices d_index, or NULL for 0..n-1) against the device reference
 * d_ref and magnitude term d_mag (position i of the compared sequence). Maxima, counts,
 * histogram, worst_index and p99_ulp equal the host's; the sums differ from the host's only by
 * summation order (deterministic). Ends waiting for `stream` under the watchdog's deadline. */
kv_status kv_cuda_errstats(const void *d_out, kv_dtype out_t, const int64_t *d_index, const double *d_ref,
                           const double *d_mag, size_t n, kv_precision prec, const kv_tolerance *tol, double red_len,
                           double deadline, kv_errstats *st, void *stream);

/* Add the order-independent 64-bit checksum of bytes of a device buffer, under a salt (one per
 * buffer summed into the same word), to the device word d_sum; enqueued on `stream`
 * (checks.cu). */
kv_status kv_cuda_checksum(const void *d_buf, size_t bytes, unsigned salt, unsigned long long *d_sum, void *stream);

/* A kernel that never finishes (fault.cu), for --inject hang: it spins on a device word that
 * nothing writes; only the watchdog ends the wait for it. Enqueued on `stream`. */
kv_status kv_cuda_hang(void *stream);

/* A real sticky device error (fault.cu): a kernel that stores through an invalid device
 * address, then a synchronize of `stream`; returns KV_ERR with the fatal error deferred
 * (CHECK_CUDA), or KV_OK if the device did not fault. */
kv_status kv_cuda_fault(void *stream);

/* The cuda backend (backend.c). */
extern const kv_backend kv_backend_cuda;

/* A kernel the family does not dispatch, run on the family's prepared problem (the bench
 * drivers' tile and configuration ladders): prepare derives the kernel's own launch state from
 * the family's problem object once, untimed (a refusal: KV_ERR with *why a static reason);
 * launch is the one call the timing harness times; resources reports that kernel's; release
 * frees the state. arg is handed to prepare. */
typedef struct {
  kv_status (*prepare)(const void *problem, const void *arg, void **state, const char **why);
  kv_status (*launch)(const void *state, void *stream);
  kv_status (*resources)(const void *state, kv_kernel_resources *r);
  void (*release)(void *state);
  const void *arg;
} kv_cuda_launch_override;

/* kv_backend_cuda.run_case with the family's launch replaced by ovr's (NULL: the family's own):
 * the inputs, the poisoned outputs and guard bands, the family's prepare, the timing, the
 * checks, the GPU reference, the error statistics of the output ovr's kernel wrote and the
 * cross-checks are the job's. After kv_backend_cuda.init. */
kv_status kv_cuda_run_case_with(const kv_case *c, const kv_run_settings *rs, const kv_cuda_launch_override *ovr,
                                kv_case_data *d, char *message, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
