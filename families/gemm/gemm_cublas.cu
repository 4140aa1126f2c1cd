/* gemm_cublas.cu - the "cublas" GEMM variant: cublasLtMatmul with the compute type that
 * matches the case's accumulator (CUBLAS_COMPUTE_32F for fp16:fp32, bf16:fp32 and e4m3:fp32,
 * CUBLAS_COMPUTE_16F for fp16:fp16; bf16 accumulation has no cuBLAS compute type). FP8
 * (e4m3 only: cuBLASLt has no e5m2 x e5m2 matmul): layout nt (cuBLASLt's "TN"), C and D bf16,
 * the per-tensor scales through the A/B scale pointers, fast accumulation when promote = 0. Row-major
 * D = alpha op(A) op(B) + beta C is computed as the column-major D^T = op(B)^T op(A)^T, with
 * C and D as separate matrices (C only when beta != 0). The plan of a problem (descriptors
 * and heuristic algorithm) is made once by its prepare step and freed by its release, so a
 * launch is one cublasLtMatmul; the handle and a 32 MiB workspace are the process's. */
#include <cublasLt.h>
#include <cuda_fp16.h>

#include <new>

#include "core/cublas_check.h"
#include "families/gemm/gemm_api.h"

static const size_t kv_lt_workspace_bytes = (size_t)32 << 20;

static struct {
  cublasLtHandle_t handle;
  void *workspace;
  int ready;
} kv_lt;

struct kv_gemm_lt_plan {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lcd;
  cublasLtMatmulAlgo_t algo;
  float *d_scales; /* FP8: device copies of scale_b, scale_a (cuBLAS's A, B) */
};

static kv_status kv_lt_init(void) {
  if (kv_lt.ready) return KV_OK;
  KV_TRY(CHECK_CUBLAS(cublasLtCreate(&kv_lt.handle)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&kv_lt.workspace, kv_lt_workspace_bytes)));
  kv_lt.ready = 1;
  return KV_OK;
}

void kv_gemm_cublas_release(kv_gemm_lt_plan *lt) {
  if (lt->op) cublasLtMatmulDescDestroy(lt->op);
  if (lt->la) cublasLtMatrixLayoutDestroy(lt->la);
  if (lt->lb) cublasLtMatrixLayoutDestroy(lt->lb);
  if (lt->lcd) cublasLtMatrixLayoutDestroy(lt->lcd);
  if (lt->d_scales) cudaFree(lt->d_scales);
  delete lt;
}

static cudaDataType_t kv_lt_type(kv_dtype t) {
  return t == KV_FP16 ? CUDA_R_16F : t == KV_E4M3 ? CUDA_R_8F_E4M3 : t == KV_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_16BF;
}

/* FP8: the scales (cuBLAS's A is our B) in device memory, each on its own 256-byte boundary,
 * and fast accumulation (never promoted) when promote = 0. */
#define KV_LT_SCALE_STRIDE 64
static kv_status kv_lt_fp8_attributes(const kv_gemm_args *g, kv_gemm_lt_plan *lt) {
  float scales[2 * KV_LT_SCALE_STRIDE] = {0};
  scales[0] = (float)g->scale_b;
  scales[KV_LT_SCALE_STRIDE] = (float)g->scale_a;
  KV_TRY(CHECK_CUDA(cudaMalloc((void **)&lt->d_scales, sizeof scales)));
  KV_TRY(CHECK_CUDA(cudaMemcpy(lt->d_scales, scales, sizeof scales, cudaMemcpyHostToDevice)));
  const float *sa = lt->d_scales, *sb = lt->d_scales + KV_LT_SCALE_STRIDE;
  const int8_t fast = g->promote == 0;
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb)));
  return CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
}

/* Column-major view: cuBLAS "A" is our B (N x K after op), cuBLAS "B" is our A. */
static kv_status kv_lt_make_plan(const kv_gemm_args *g, kv_gemm_lt_plan *lt) {
  const int f16acc = g->prec.accum == KV_FP16;
  const cublasComputeType_t compute = f16acc ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = f16acc ? CUDA_R_16F : CUDA_R_32F;
  const cudaDataType_t type = kv_lt_type(g->prec.storage), out = kv_lt_type(kv_precision_output(g->prec));
  const cublasOperation_t op_b = g->b_t ? CUBLAS_OP_T : CUBLAS_OP_N; /* B n: N x K col-major */
  const cublasOperation_t op_a = g->a_t ? CUBLAS_OP_T : CUBLAS_OP_N; /* A n: K x M col-major */
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescCreate(&lt->op, compute, scale)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a)));
  if (kv_dtype_is_fp8(g->prec.storage)) KV_TRY(kv_lt_fp8_attributes(g, lt));
  if (g->b_t)
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lt->la, type, g->k, g->n, g->k)));
  else
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lt->la, type, g->n, g->k, g->n)));
  if (g->a_t)
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lt->lb, type, g->m, g->k, g->m)));
  else
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lt->lb, type, g->k, g->m, g->k)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lt->lcd, out, g->n, g->m, g->n)));

  cublasLtMatmulPreference_t pref;
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref)));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  kv_status st = CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &kv_lt_workspace_bytes, sizeof kv_lt_workspace_bytes));
  if (st == KV_OK)
    st = CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(kv_lt.handle, lt->op, lt->la, lt->lb, lt->lcd, lt->lcd, pref, 1,
                                                     &result, &found));
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == KV_OK && found < 1) {
    kv_report(__FILE__, __LINE__, "cuBLASLt", "no algorithm for %dx%dx%d (%s)", g->m, g->n, g->k,
              f16acc ? "CUBLAS_COMPUTE_16F" : "CUBLAS_COMPUTE_32F");
    st = KV_ERR;
  }
  if (st == KV_OK) lt->algo = result.algo;
  return st;
}

static kv_status kv_lt_launch(const kv_gemm_problem *pr, cudaStream_t stream) {
  const kv_gemm_args *g = &pr->g;
  const kv_gemm_lt_plan *lt = pr->lt;
  const void *c = g->beta != 0.0 ? g->c : g->d;
  if (g->prec.accum == KV_FP16) {
    const __half alpha = __double2half(g->alpha), beta = __double2half(g->beta);
    return CHECK_CUBLAS(cublasLtMatmul(kv_lt.handle, lt->op, &alpha, g->b, lt->la, g->a, lt->lb, &beta, c, lt->lcd,
                                       g->d, lt->lcd, &lt->algo, kv_lt.workspace, kv_lt_workspace_bytes, stream));
  }
  const float alpha = (float)g->alpha, beta = (float)g->beta;
  return CHECK_CUBLAS(cublasLtMatmul(kv_lt.handle, lt->op, &alpha, g->b, lt->la, g->a, lt->lb, &beta, c, lt->lcd, g->d,
                                     lt->lcd, &lt->algo, kv_lt.workspace, kv_lt_workspace_bytes, stream));
}

/* cuBLAS picks its kernel inside the library: its resources are not known here. */
static kv_status kv_lt_resources(const kv_gemm_problem *, kv_kernel_resources *r) {
  r->registers = r->smem_bytes = r->local_bytes = r->occupancy = -1;
  return KV_OK;
}

kv_status kv_gemm_cublas_prepare(kv_gemm_problem *pr) {
  KV_TRY(kv_lt_init());
  pr->lt = new (std::nothrow) kv_gemm_lt_plan();
  KV_TRY(CHECK_ALLOC(pr->lt));
  KV_TRY(kv_lt_make_plan(&pr->g, pr->lt));
  pr->launch = kv_lt_launch;
  pr->resources = kv_lt_resources;
  return KV_OK;
}
