/* gemm_kernels.h - internal interface of the CUDA GEMM family: the problem a launch solves
 * and the entry points of each variant (kval-wgmma, kval-mma, cublas) and of the fp64
 * reference. gemm_launch.cu maps a kv_case onto these; families/gemm/bench/gemm_bench.cu calls them
 * directly. C++ only (included from .cu files). */
#ifndef KVAL_GEMM_KERNELS_H
#define KVAL_GEMM_KERNELS_H

#include <cuda_runtime.h>

#include "core/cuda_check.cuh"
#include "family_cuda.h"
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

/* Variants by deck name ("kval-wgmma", "kval-mma", "cublas"). */
enum kv_gemm_variant { KV_GEMM_WGMMA = 0, KV_GEMM_MMA = 1, KV_GEMM_CUBLAS = 2 };
int kv_gemm_variant_parse(const char *name, kv_gemm_variant *v); /* 0 on success */

/* NULL when the variant can run the problem, else a static reason (the rule the family's
 * invalid() applies; the launcher refuses such a problem with this reason). */
const char *kv_gemm_unsupported(kv_gemm_variant v, const kv_gemm_problem *p);

/* Launch the variant on the stream and check the launch. */
kv_status kv_gemm_run(kv_gemm_variant v, const kv_gemm_problem *p, cudaStream_t stream);
kv_status kv_gemm_resources(kv_gemm_variant v, const kv_gemm_problem *p, kv_kernel_resources *r);

/* cublas variant (gemm_cublas.cu): cublasLtMatmul with CUBLAS_COMPUTE_32F (fp32 accumulation)
 * or CUBLAS_COMPUTE_16F (fp16:fp16). */
kv_status kv_gemm_cublas_run(const kv_gemm_problem *p, cudaStream_t stream);

/* fp64 reference (gemm_reference.cu) over the whole M x N output:
 * ref = alpha op(A) op(B) + beta C and mag = |alpha| |op(A)| |op(B)| + |beta| |C|,
 * by cuBLAS DGEMM on inputs upcast to double. */
kv_status kv_gemm_reference(const kv_gemm_problem *p, double *d_ref, double *d_mag,
                            cudaStream_t stream);

#endif
