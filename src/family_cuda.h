/* kval_cuda.h - the one extern "C" boundary between the C11 host code and the CUDA code.
 * Everything the host calls in src/cuda/ is declared here; .cu files include it to define
 * it. Without CUDA (configure --with-cuda=no) none of this is compiled or linked. */
#ifndef KVAL_CUDA_H
#define KVAL_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "core/check.h"
#include "family.h"

/* Resource usage of the kernel variant a case launches. */
typedef struct {
  int registers;      /* per thread */
  int smem_bytes;     /* static + dynamic shared memory per block */
  int local_bytes;    /* local memory per thread (spills) */
  int occupancy;      /* resident blocks per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor) */
} kv_kernel_resources;

/* A family's CUDA side. Device buffers are laid out exactly as the CPU ones (kv_tensors). */
typedef struct kv_cuda_family {
  /* Launch the kernel for the case on `stream` (a cudaStream_t); checks the launch. */
  kv_status (*launch)(const kv_case *c, void *const *d_in, void *const *d_out, void *stream);
  /* fp64 reference over the whole output: d_ref, d_mag (out count doubles each) and
   * d_aux_ref (rows doubles, or NULL when the family has no auxiliary output). */
  kv_status (*reference)(const kv_case *c, const void *const *d_in, double *d_ref, double *d_mag,
                         double *d_aux_ref, void *stream);
  /* Resources of the kernel variant the case launches. */
  kv_status (*resources)(const kv_case *c, kv_kernel_resources *r);
} kv_cuda_family;

extern const kv_cuda_family kv_cuda_layernorm, kv_cuda_rmsnorm, kv_cuda_gemm, kv_cuda_fa2;

/* Fill a device buffer with the tensor's inputs: element i = round_to(dtype,
 * kv_gen_value(key, i, dist, scale, offset)), bit-identical to the CPU generator. */
kv_status kv_cuda_generate(void *d_buf, const kv_tensor_spec *t, uint64_t key, void *stream);

/* kv_errstats_compute on the device (errstats_gpu.cu): the same statistics of n elements of a
 * device output d_out (flat indices d_index, or NULL for 0..n-1) against the device reference
 * d_ref and magnitude term d_mag. Maxima, counts, histogram, worst_index and p99_ulp equal the
 * host's; the sums differ from the host's only by summation order (deterministic). Ends with
 * a synchronize of `stream`. */
kv_status kv_cuda_errstats(const void *d_out, kv_dtype out_t, const int64_t *d_index, const double *d_ref,
                           const double *d_mag, size_t n, kv_precision prec, const kv_tolerance *tol, double red_len,
                           kv_errstats *st, void *stream);

/* A real sticky device error (fault.cu): a kernel that stores through an invalid device
 * address, then a synchronize of `stream`; returns KV_ERR with the fatal error deferred
 * (CHECK_CUDA), or KV_OK if the device did not fault. */
kv_status kv_cuda_fault(void *stream);

/* The cuda backend (its host logic lives in backend_cuda.cu). */
extern const kv_backend kv_backend_cuda;

#ifdef __cplusplus
}
#endif

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif
#ifdef HAVE_CUDA
#define KV_CUDA_FAMILY(x) (&(x))
#else
#define KV_CUDA_FAMILY(x) NULL
#endif

#endif
