/* family_cuda.h - the contract between a kernel family's CUDA side and the cuda backend: the
 * one extern "C" boundary that each family's adapter (families/<f>/<f>_cuda.cu) implements.
 * It sees nothing of the host but the family contract (family.h). A case is decoded once
 * (prepare: kernel arguments, TMA descriptors, the reference's arguments), launched many
 * times (launch: the only call the timing harness times), checked against the fp64 GPU
 * reference, and released. Without CUDA (configure --with-cuda=no) none of this is linked. */
#ifndef KVAL_FAMILY_CUDA_H
#define KVAL_FAMILY_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

#include "family.h"

typedef struct kv_cuda_family {
  /* Decode the case for these device buffers (laid out as kv_tensors) into the family's own
   * problem object, *problem, which release() frees. A case the kernel cannot run returns
   * KV_ERR with *why a static reason; a failed CUDA call KV_ERR reported through CHECK_CUDA.
   * Device work it enqueues on any stream (uploads of tables and constants) is complete
   * before the first launch: the backend synchronizes the device after it. */
  kv_status (*prepare)(const kv_case *c, void *const *d_in, void *const *d_out, void **problem, const char **why);
  /* One launch of the kernel on `stream` (a cudaStream_t), checked. */
  kv_status (*launch)(const void *problem, void *stream);
  /* fp64 reference over the whole output: d_ref, d_mag (out count doubles each), d_aux_ref and
   * d_aux_mag (rows doubles each, or NULL when the family has no auxiliary output). Enqueued on
   * `stream` without waiting for it (the backend waits with its watchdog). */
  kv_status (*reference)(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref, double *d_aux_mag,
                         void *stream);
  /* Resources of the kernel variant the problem launches (-1 where unknown, e.g. cuBLAS). */
  kv_status (*resources)(const void *problem, kv_kernel_resources *r);
  void (*release)(void *problem);
} kv_cuda_family;

#define KV_FAMILY(name) extern const kv_cuda_family kv_cuda_##name;
#include "families/families.def"
#undef KV_FAMILY

#ifdef __cplusplus
}
#endif

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif
/* The descriptor's `cuda` field: the family's CUDA side when built with CUDA. */
#ifdef HAVE_CUDA
#define KV_CUDA_FAMILY(x) (&(x))
#else
#define KV_CUDA_FAMILY(x) NULL
#endif

#endif
