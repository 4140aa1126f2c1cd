/* gemm_dispatch.cu - one entry for every GEMM variant: the variant names, the rule that says
 * which problems a variant can run (the family's invalid() skips the same combinations), and
 * the choice of the compiled kernel by variant and precision (layout inside each kernel
 * file). Problem-level, so the standalone families/gemm/bench/gemm_bench.cu uses it too. */
#include <string.h>

#include "families/gemm/gemm_api.h"

int kv_gemm_variant_parse(const char *name, kv_gemm_variant *v) {
  if (!name) return -1;
  if (strcmp(name, "kval-wgmma") == 0) *v = KV_GEMM_WGMMA;
  else if (strcmp(name, "kval-mma") == 0) *v = KV_GEMM_MMA;
  else if (strcmp(name, "cublas") == 0) *v = KV_GEMM_CUBLAS;
  else return -1;
  return 0;
}

const char *kv_gemm_unsupported(kv_gemm_variant v, const kv_gemm_problem *p) {
  if (p->m < 1 || p->n < 1 || p->k < 1) return "gemm: M, N and K must be positive";
  if (p->prec.storage != KV_FP16 && p->prec.storage != KV_BF16)
    return "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  if (p->prec.accum != KV_FP32 && p->prec.accum != p->prec.storage)
    return "gemm: the accumulator must be fp32 or the storage type";
  if (p->a_t && p->b_t) return "gemm: layout tt is not implemented (nn, tn, nt are)";
  switch (v) {
    case KV_GEMM_CUBLAS:
      return p->prec.accum == KV_BF16 ? "cublas has no bf16 accumulation" : NULL;
    case KV_GEMM_WGMMA:
      /* TMA global strides are multiples of 16 bytes: the stored row lengths of A (K for
       * layout n, M for t) and of B (N for n, K for t) must be multiples of 8 elements. */
      if ((p->a_t ? p->m : p->k) % 8 != 0 || (p->b_t ? p->k : p->n) % 8 != 0)
        return "kval-wgmma: TMA needs the stored row lengths of A and B (K or M, N or K) to be multiples of 8";
      return NULL;
    case KV_GEMM_MMA:
      return NULL;
  }
  return "gemm: unknown variant";
}

static const kv_gemm_impl *kv_gemm_impl_of(kv_gemm_variant v, kv_precision prec) {
  const int f16 = prec.storage == KV_FP16, f32acc = prec.accum == KV_FP32;
  if (v == KV_GEMM_WGMMA)
    return f16 ? (f32acc ? &kv_gemm_wgmma_f16_f32 : &kv_gemm_wgmma_f16_f16)
               : (f32acc ? &kv_gemm_wgmma_bf16_f32 : &kv_gemm_wgmma_bf16_bf16);
  if (v == KV_GEMM_MMA)
    return f16 ? (f32acc ? &kv_gemm_mma_f16_f32 : &kv_gemm_mma_f16_f16)
               : (f32acc ? &kv_gemm_mma_bf16_f32 : &kv_gemm_mma_bf16_bf16);
  return NULL;
}

static kv_status kv_gemm_check(kv_gemm_variant v, const kv_gemm_problem *p) {
  const char *why = kv_gemm_unsupported(v, p);
  if (!why) return KV_OK;
  kv_report(__FILE__, __LINE__, "gemm", "%dx%dx%d %s:%s: %s", p->m, p->n, p->k, kv_dtype_name(p->prec.storage),
            kv_dtype_name(p->prec.accum), why);
  return KV_ERR;
}

kv_status kv_gemm_run(kv_gemm_variant v, const kv_gemm_problem *p, cudaStream_t stream) {
  KV_TRY(kv_gemm_check(v, p));
  if (v == KV_GEMM_CUBLAS) return kv_gemm_cublas_run(p, stream);
  return kv_gemm_impl_of(v, p->prec)->run(p, stream);
}

kv_status kv_gemm_resources(kv_gemm_variant v, const kv_gemm_problem *p, kv_kernel_resources *r) {
  KV_TRY(kv_gemm_check(v, p));
  if (v == KV_GEMM_CUBLAS) { /* cuBLAS picks its kernel inside: not known here */
    r->registers = r->smem_bytes = r->local_bytes = r->occupancy = -1;
    return KV_OK;
  }
  return kv_gemm_impl_of(v, p->prec)->resources(p, r);
}
