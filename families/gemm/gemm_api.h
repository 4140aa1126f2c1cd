/* gemm_api.h - the CUDA GEMM family at the level of a problem: the problem a launch solves and
 * the entry points of each variant (kval-wgmma, kval-mma, cublas) and of the fp64 GPU
 * reference, independent of kval's cases so the bench driver links them alone; gemm_cuda.cu
 * adapts a case to them. Every entry returns kv_status. C++ only (included from .cu files). */
#ifndef KVAL_GEMM_API_H
#define KVAL_GEMM_API_H

#include <cuda_runtime.h>

#include "core/cuda_check.cuh"
#include "families/gemm/gemm_limits.h"
#include "family.h"
#include "core/dtype.h"

/* D = alpha * op(A) op(B) + beta * C, row-major M x N; a_t / b_t: 1 when A is stored as
 * K x M / B as N x K (layout letter t), 0 for M x K / K x N (letter n). C is read only when
 * beta != 0. Storage and accumulation types from prec. */
struct kv_gemm_problem {
  int m, n, k;
  int a_t, b_t;
  kv_precision prec;
  double alpha, beta;
  const void *a, *b, *c;
  void *d;
};

/* One compiled precision of a variant: run it, or report its resources. */
struct kv_gemm_impl {
  kv_status (*run)(const kv_gemm_problem *p, cudaStream_t stream);
  kv_status (*resources)(const kv_gemm_problem *p, kv_kernel_resources *r);
};

/* kval-wgmma (gemm_wgmma_*.cu) and kval-mma (gemm_mma_*.cu), by precision. */
extern const kv_gemm_impl kv_gemm_wgmma_f16_f32, kv_gemm_wgmma_bf16_f32, kv_gemm_wgmma_f16_f16,
    kv_gemm_wgmma_bf16_bf16;
extern const kv_gemm_impl kv_gemm_mma_f16_f32, kv_gemm_mma_bf16_f32, kv_gemm_mma_f16_f16,
    kv_gemm_mma_bf16_bf16;

/* Launch the variant (gemm_limits.h) on the stream and check the launch; a problem the
 * variant cannot run (kv_gemm_unsupported) is KV_ERR with *why the reason. */
kv_status kv_gemm_run(int variant, const kv_gemm_problem *p, cudaStream_t stream, const char **why);
kv_status kv_gemm_resources(int variant, const kv_gemm_problem *p, kv_kernel_resources *r, const char **why);

/* cublas variant (gemm_cublas.cu): cublasLtMatmul with CUBLAS_COMPUTE_32F (fp32 accumulation)
 * or CUBLAS_COMPUTE_16F (fp16:fp16). */
kv_status kv_gemm_cublas_run(const kv_gemm_problem *p, cudaStream_t stream);

/* fp64 reference (gemm_reference.cu) over the whole M x N output:
 * ref = alpha op(A) op(B) + beta C and mag = |alpha| |op(A)| |op(B)| + |beta| |C|,
 * by cuBLAS DGEMM on inputs upcast to double. */
kv_status kv_gemm_gpu_reference(const kv_gemm_problem *p, double *d_ref, double *d_mag,
                            cudaStream_t stream);

#endif
