/* cuda_check.cuh - CHECK_CUDA and CHECK_LAUNCH: every CUDA runtime call and every kernel
 * launch of kval goes through them. Written in the common subset of C11 and C++17, so the
 * .cu files and the cuda backend's C host files share it. A failure is reported through
 * kv_report (rank, host, file, line, call, CUDA error name) and returns KV_ERR; an error
 * that leaves the context unusable ("sticky": an illegal address, a kernel fault, ...) is a
 * deferred fatal error: the case is recorded, then the rank ends through KV_FATAL, whose
 * hook flushes the output file before MPI_Abort. */
#ifndef KVAL_CUDA_CHECK_CUH
#define KVAL_CUDA_CHECK_CUH

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "core/check.h"
#ifdef __cplusplus
}
#endif

/* Errors after which every later call of the process fails the same way. */
static inline int kv_cuda_error_is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return 1;
    default:
      return 0;
  }
}

/* The check behind the macros. A non-sticky error is cleared (so the next launch check does
 * not see it again) and returned as KV_ERR; the context is then probed with a synchronize,
 * and a context that no longer works is fatal even when the error was not in the list. A
 * fatal error is deferred (kv_fatal_defer): the case is recorded as error and written
 * first, then the runner ends the rank through kv_fatal. */
static inline kv_status kv_check_cuda(cudaError_t e, const char *call, const char *file, int line) {
  if (e == cudaSuccess) return KV_OK;
  if (kv_fatal_pending()) return KV_ERR; /* the context is already gone: no probing, no cascade */
  (void)cudaGetLastError();
  if (kv_cuda_error_is_sticky(e)) {
    kv_fatal_defer(file, line, "%s: %s (%s); the CUDA context is unusable", call, cudaGetErrorName(e),
                   cudaGetErrorString(e));
    return KV_ERR;
  }
  cudaError_t probe = cudaDeviceSynchronize();
  if (probe != cudaSuccess) {
    kv_fatal_defer(file, line, "%s: %s (%s), then cudaDeviceSynchronize: %s; the CUDA context is unusable", call,
                   cudaGetErrorName(e), cudaGetErrorString(e), cudaGetErrorName(probe));
    return KV_ERR;
  }
  kv_report(file, line, "CUDA", "%s failed: %s (%s)", call, cudaGetErrorName(e), cudaGetErrorString(e));
  return KV_ERR;
}

#define CHECK_CUDA(call) kv_check_cuda((call), #call, __FILE__, __LINE__)
/* After every kernel launch: `what` names the kernel. */
#define CHECK_LAUNCH(what) kv_check_cuda(cudaGetLastError(), (what), __FILE__, __LINE__)

#endif
