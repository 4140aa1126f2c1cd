/* cublas_check.h - CHECK_CUBLAS: every cuBLAS and cuBLASLt call of kval (the GPU fp64
 * references, the cublas GEMM variant, the start-up ceilings) goes through it. Common subset
 * of C11 and C++17, like cuda_check.cuh; a failure is reported through kv_report (rank, host,
 * file, line, call, status) and returns KV_ERR. */
#ifndef KVAL_CUBLAS_CHECK_H
#define KVAL_CUBLAS_CHECK_H

#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "core/check.h"
#ifdef __cplusplus
}
#endif

static inline kv_status kv_check_cublas(cublasStatus_t s, const char *call, const char *file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return KV_OK;
  kv_report(file, line, "cuBLAS", "%s failed: %s", call, cublasGetStatusString(s));
  return KV_ERR;
}

#define CHECK_CUBLAS(call) kv_check_cublas((call), #call, __FILE__, __LINE__)

#endif
