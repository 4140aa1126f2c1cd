/* gemm_api.h - the CUDA GEMM family at the level of a problem, independent of kval's cases: the
 * arguments of one GEMM, the problem prepared once for a variant (kval-wgmma, kval-mma,
 * cublas: the device checked, the instantiation and grid chosen, the TMA descriptors encoded,
 * the cuBLASLt plan made) and launched many times, and the fp64 GPU reference. gemm_cuda.cu
 * adapts a case to these calls; its problem object is a kv_gemm_problem, which the bench
 * driver's own launches read (families/gemm/bench). Every entry returns kv_status; the kernel
 * templates take kval's kv_dtype for the accumulator. C++ only (included from .cu files). */
#ifndef KVAL_GEMM_API_H
#define KVAL_GEMM_API_H

#include <cuda.h>
#include <cuda_runtime.h>

#include "core/cuda_check.cuh"
#include "families/gemm/gemm_limits.h"
#include "family.h"
#include "core/dtype.h"

/* D = alpha * op(A) op(B) + beta * C, row-major M x N; a_t / b_t: 1 when A is stored as
 * K x M / B as N x K (layout letter t), 0 for M x K / K x N (letter n). C is read only when
 * beta != 0. Storage and accumulation types from prec; C and D in kv_precision_output(prec)
 * (bf16 for FP8 storage). FP8: A and B hold codes whose values are scale_a * A and
 * scale_b * B (per-tensor scales, 1 otherwise), so D = alpha scale_a scale_b A B + beta C,
 * and `promote` is the promotion interval (gemm_limits.h; 0 for fp16/bf16). */
struct kv_gemm_args {
  int m, n, k;
  int a_t, b_t;
  kv_precision prec;
  double alpha, beta;
  double scale_a, scale_b;
  int promote;
  const void *a, *b, *c;
  void *d;
};

struct kv_gemm_lt_plan; /* cuBLASLt descriptors and algorithm of one problem (gemm_cublas.cu) */

/* A problem prepared once for one variant (kv_gemm_prepare) and launched many times
 * (kv_gemm_launch): the arguments, the chosen kernel's launch and resource query, and what
 * the launch needs: kval-wgmma's TMA descriptors, grid and split-K workspace, kval-mma's grid
 * and load path, the cublas variant's plan. kv_gemm_release frees what it holds (the
 * workspace, the cuBLASLt plan). */
struct kv_gemm_problem {
  kv_gemm_args g;
  int variant; /* kv_gemm_variant (gemm_limits.h) */
  kv_status (*launch)(const kv_gemm_problem *pr, cudaStream_t stream);
  kv_status (*resources)(const kv_gemm_problem *pr, kv_kernel_resources *r);
  unsigned grid;                   /* kval-wgmma, kval-mma: thread blocks */
  int sms;                         /* kval-wgmma: the device's multiprocessors (the persistent grid) */
  CUtensorMap map_a, map_b, map_d; /* kval-wgmma: A, B, and D when tma_store */
  int tma_store;                   /* kval-wgmma: D stored by TMA (N a multiple of 8, D 16-byte aligned) */
  int splits, kb_per;              /* kval-wgmma: splits of K (1: none) and the k-blocks of each */
  float *partials;                 /* kval-wgmma, splits > 1: the splits' fp32 sums, splits x M x N */
  int vec;                         /* kval-mma: 16-byte cp.async loads (row strides multiples of 8, aligned) */
  kv_gemm_lt_plan *lt;             /* cublas */
};

/* The kernels' prepare steps for one precision (explicitly instantiated in
 * inst/gemm_wgmma_<storage>_<accum>.cu and inst/gemm_mma_<storage>.cu): choose the
 * configuration and layout instantiation, encode what the launch needs, set pr->launch and
 * pr->resources. */
template <kv_dtype STORE, kv_dtype ACC>
kv_status kv_gemm_wgmma_prepare(kv_gemm_problem *pr);
template <kv_dtype STORE, kv_dtype ACC>
kv_status kv_gemm_mma_prepare(kv_gemm_problem *pr);
/* cublas variant (gemm_cublas.cu): cublasLtMatmul with CUBLAS_COMPUTE_32F (fp32 accumulation)
 * or CUBLAS_COMPUTE_16F (fp16:fp16), its plan made once per problem. */
kv_status kv_gemm_cublas_prepare(kv_gemm_problem *pr);
void kv_gemm_cublas_release(kv_gemm_lt_plan *lt);

/* Problem level (gemm_dispatch.cu). kv_gemm_prepare: the support rule (kv_gemm_unsupported:
 * KV_ERR with *why the reason), for kval-wgmma a compute capability 9.0 device, and the
 * variant's prepare step; *pr is valid for kv_gemm_release whatever it returns.
 * kv_gemm_launch: one launch on `stream`, checked, and nothing else. kv_gemm_resources:
 * registers, memory and occupancy of the chosen kernel (-1 for cuBLAS's own). */
kv_status kv_gemm_prepare(const kv_gemm_args *g, int variant, kv_gemm_problem *pr, const char **why);
kv_status kv_gemm_launch(const kv_gemm_problem *pr, cudaStream_t stream);
kv_status kv_gemm_resources(const kv_gemm_problem *pr, kv_kernel_resources *r);
void kv_gemm_release(kv_gemm_problem *pr);

/* fp64 reference (gemm_gpu_ref.cu) over the whole M x N output:
 * ref = alpha op(A) op(B) + beta C and mag = |alpha| |op(A)| |op(B)| + |beta| |C|,
 * by cuBLAS DGEMM on inputs upcast to double. */
kv_status kv_gemm_gpu_reference(const kv_gemm_args *g, double *d_ref, double *d_mag, cudaStream_t stream);

#endif
