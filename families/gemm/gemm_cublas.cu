/* gemm_cublas.cu - the "cublas" GEMM variant: cublasLtMatmul with the compute type that
 * matches the case's accumulator (CUBLAS_COMPUTE_32F for fp16:fp32 and bf16:fp32,
 * CUBLAS_COMPUTE_16F for fp16:fp16; bf16 accumulation has no cuBLAS compute type). Row-major
 * D = alpha op(A) op(B) + beta C is computed as the column-major D^T = op(B)^T op(A)^T, with
 * C and D as separate matrices (C only when beta != 0). The handle, a 32 MiB workspace and
 * the plan (descriptors and heuristic algorithm) of the last problem shape are kept for the
 * process, so repeated launches of one case cost one cublasLtMatmul each. */
#include <cublasLt.h>
#include <cuda_fp16.h>

#include "core/cublas_check.h"
#include "families/gemm/gemm_api.h"

static const size_t kv_lt_workspace_bytes = (size_t)32 << 20;

static struct {
  cublasLtHandle_t handle;
  void *workspace;
  int ready;
  /* plan of the last shape */
  int have_plan;
  int m, n, k, a_t, b_t;
  kv_precision prec;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lcd;
  cublasLtMatmulAlgo_t algo;
} kv_lt;

static void kv_lt_drop_plan(void) {
  if (!kv_lt.have_plan) return;
  cublasLtMatmulDescDestroy(kv_lt.op);
  cublasLtMatrixLayoutDestroy(kv_lt.la);
  cublasLtMatrixLayoutDestroy(kv_lt.lb);
  cublasLtMatrixLayoutDestroy(kv_lt.lcd);
  kv_lt.have_plan = 0;
}

static kv_status kv_lt_init(void) {
  if (kv_lt.ready) return KV_OK;
  KV_TRY(CHECK_CUBLAS(cublasLtCreate(&kv_lt.handle)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&kv_lt.workspace, kv_lt_workspace_bytes)));
  kv_lt.ready = 1;
  return KV_OK;
}

/* Column-major view: cuBLAS "A" is our B (N x K after op), cuBLAS "B" is our A. */
static kv_status kv_lt_make_plan(const kv_gemm_problem *p) {
  const int f16acc = p->prec.accum == KV_FP16;
  const cublasComputeType_t compute = f16acc ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = f16acc ? CUDA_R_16F : CUDA_R_32F;
  const cudaDataType_t type = p->prec.storage == KV_FP16 ? CUDA_R_16F : CUDA_R_16BF;
  const cublasOperation_t op_b = p->b_t ? CUBLAS_OP_T : CUBLAS_OP_N; /* B n: N x K col-major */
  const cublasOperation_t op_a = p->a_t ? CUBLAS_OP_T : CUBLAS_OP_N; /* A n: K x M col-major */
  kv_lt_drop_plan();
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescCreate(&kv_lt.op, compute, scale)));
  kv_lt.have_plan = 1; /* from here on kv_lt_drop_plan() frees whatever was created */
  kv_lt.la = kv_lt.lb = kv_lt.lcd = NULL;
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(kv_lt.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(kv_lt.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a)));
  if (p->b_t)
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&kv_lt.la, type, p->k, p->n, p->k)));
  else
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&kv_lt.la, type, p->n, p->k, p->n)));
  if (p->a_t)
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&kv_lt.lb, type, p->m, p->k, p->m)));
  else
    KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&kv_lt.lb, type, p->k, p->m, p->k)));
  KV_TRY(CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&kv_lt.lcd, type, p->n, p->m, p->n)));

  cublasLtMatmulPreference_t pref;
  KV_TRY(CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref)));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  kv_status st = CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &kv_lt_workspace_bytes, sizeof kv_lt_workspace_bytes));
  if (st == KV_OK)
    st = CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(kv_lt.handle, kv_lt.op, kv_lt.la, kv_lt.lb, kv_lt.lcd, kv_lt.lcd,
                                                  pref, 1, &result, &found));
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == KV_OK && found < 1) {
    kv_report(__FILE__, __LINE__, "cuBLASLt", "no algorithm for %dx%dx%d (%s)", p->m, p->n, p->k,
              f16acc ? "CUBLAS_COMPUTE_16F" : "CUBLAS_COMPUTE_32F");
    st = KV_ERR;
  }
  if (st != KV_OK) {
    kv_lt_drop_plan();
    return KV_ERR;
  }
  kv_lt.algo = result.algo;
  kv_lt.m = p->m;
  kv_lt.n = p->n;
  kv_lt.k = p->k;
  kv_lt.a_t = p->a_t;
  kv_lt.b_t = p->b_t;
  kv_lt.prec = p->prec;
  return KV_OK;
}

kv_status kv_gemm_cublas_run(const kv_gemm_problem *p, cudaStream_t stream) {
  KV_TRY(kv_lt_init());
  if (!kv_lt.have_plan || kv_lt.m != p->m || kv_lt.n != p->n || kv_lt.k != p->k || kv_lt.a_t != p->a_t ||
      kv_lt.b_t != p->b_t || kv_lt.prec.storage != p->prec.storage || kv_lt.prec.accum != p->prec.accum)
    KV_TRY(kv_lt_make_plan(p));
  const void *c = p->beta != 0.0 ? p->c : p->d;
  if (p->prec.accum == KV_FP16) {
    const __half alpha = __double2half(p->alpha), beta = __double2half(p->beta);
    return CHECK_CUBLAS(cublasLtMatmul(kv_lt.handle, kv_lt.op, &alpha, p->b, kv_lt.la, p->a, kv_lt.lb, &beta, c,
                                    kv_lt.lcd, p->d, kv_lt.lcd, &kv_lt.algo, kv_lt.workspace, kv_lt_workspace_bytes,
                                    stream));
  }
  const float alpha = (float)p->alpha, beta = (float)p->beta;
  return CHECK_CUBLAS(cublasLtMatmul(kv_lt.handle, kv_lt.op, &alpha, p->b, kv_lt.la, p->a, kv_lt.lb, &beta, c,
                                  kv_lt.lcd, p->d, kv_lt.lcd, &kv_lt.algo, kv_lt.workspace, kv_lt_workspace_bytes,
                                  stream));
}
