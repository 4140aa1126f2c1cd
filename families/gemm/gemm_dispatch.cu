/* gemm_dispatch.cu - one entry for every GEMM variant: the support rule (gemm_limits.h, the one
 * the family's invalid() applies) and the choice of the compiled kernel by variant and
 * precision (the layout is chosen inside each kernel file). */
#include <string.h>

#include "families/gemm/gemm_api.h"

static const kv_gemm_impl *kv_gemm_impl_of(int v, kv_precision prec) {
  const int f16 = prec.storage == KV_FP16, f32acc = prec.accum == KV_FP32;
  if (v == KV_GEMM_WGMMA)
    return f16 ? (f32acc ? &kv_gemm_wgmma_f16_f32 : &kv_gemm_wgmma_f16_f16)
               : (f32acc ? &kv_gemm_wgmma_bf16_f32 : &kv_gemm_wgmma_bf16_bf16);
  if (v == KV_GEMM_MMA)
    return f16 ? (f32acc ? &kv_gemm_mma_f16_f32 : &kv_gemm_mma_f16_f16)
               : (f32acc ? &kv_gemm_mma_bf16_f32 : &kv_gemm_mma_bf16_bf16);
  return NULL;
}

static const char *unsupported(int v, const kv_gemm_problem *p) {
  return kv_gemm_unsupported(v, p->m, p->n, p->k, p->a_t, p->b_t, p->prec);
}

kv_status kv_gemm_run(int v, const kv_gemm_problem *p, cudaStream_t stream, const char **why) {
  if ((*why = unsupported(v, p))) return KV_ERR;
  if (v == KV_GEMM_CUBLAS) return kv_gemm_cublas_run(p, stream);
  return kv_gemm_impl_of(v, p->prec)->run(p, stream);
}

kv_status kv_gemm_resources(int v, const kv_gemm_problem *p, kv_kernel_resources *r, const char **why) {
  if ((*why = unsupported(v, p))) return KV_ERR;
  if (v == KV_GEMM_CUBLAS) { /* cuBLAS picks its kernel inside: not known here */
    r->registers = r->smem_bytes = r->local_bytes = r->occupancy = -1;
    return KV_OK;
  }
  return kv_gemm_impl_of(v, p->prec)->resources(p, r);
}
