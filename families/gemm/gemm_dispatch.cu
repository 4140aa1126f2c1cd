/* gemm_dispatch.cu - one entry for every GEMM variant, at the level of a problem: the support
 * rule (gemm_limits.h, the one the family's invalid() applies), the device check of kval-wgmma
 * (compute capability 9.0, and the SM count its persistent grid needs) and the choice of the
 * compiled kernel by variant and precision (FP8 storage: kval-wgmma's e4m3/e5m2 instantiations),
 * once per problem (kv_gemm_prepare; the layout and configuration are chosen inside each kernel
 * file); then the launch, resources and release of the prepared problem. */
#include <type_traits>

#include "families/gemm/gemm_api.h"

/* kval-wgmma runs on compute capability 9.0 only (sm_90a code); *sms for its grid. */
static kv_status wgmma_device(int *sms, const char **why) {
  int dev, major, minor;
  KV_TRY(CHECK_CUDA(cudaGetDevice(&dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev)));
  if (major != 9 || minor != 0) {
    *why = "kval-wgmma: needs a compute capability 9.0 GPU (sm_90a code)";
    return KV_ERR;
  }
  return KV_OK;
}

template <kv_dtype T>
using dtype_ = std::integral_constant<kv_dtype, T>;

/* F(STORE, ACC) for a supported precision; FP8 storage (e4m3:fp32, e5m2:fp32) only when FP8 is
 * set (kval-wgmma: kval-mma has no FP8 instantiations, and the support rule refuses them). */
template <bool FP8 = false, class F> static kv_status by_precision(kv_precision p, F &&f) {
  if constexpr (FP8) {
    if (p.storage == KV_E4M3) return f(dtype_<KV_E4M3>{}, dtype_<KV_FP32>{});
    if (p.storage == KV_E5M2) return f(dtype_<KV_E5M2>{}, dtype_<KV_FP32>{});
  }
  if (p.storage == KV_FP16)
    return p.accum == KV_FP32 ? f(dtype_<KV_FP16>{}, dtype_<KV_FP32>{}) : f(dtype_<KV_FP16>{}, dtype_<KV_FP16>{});
  return p.accum == KV_FP32 ? f(dtype_<KV_BF16>{}, dtype_<KV_FP32>{}) : f(dtype_<KV_BF16>{}, dtype_<KV_BF16>{});
}

kv_status kv_gemm_prepare(const kv_gemm_args *g, int variant, kv_gemm_problem *pr, const char **why) {
  *pr = kv_gemm_problem();
  pr->g = *g;
  pr->variant = variant;
  if ((*why = kv_gemm_unsupported(variant, g->m, g->n, g->k, g->a_t, g->b_t, g->prec, g->promote))) return KV_ERR;
  switch (variant) {
    case KV_GEMM_CUBLAS:
      return kv_gemm_cublas_prepare(pr);
    case KV_GEMM_MMA:
      return by_precision(g->prec, [&](auto st, auto ac) {
        return kv_gemm_mma_prepare<decltype(st)::value, decltype(ac)::value>(pr);
      });
    default:
      KV_TRY(wgmma_device(&pr->sms, why));
      return by_precision<true>(g->prec, [&](auto st, auto ac) {
        return kv_gemm_wgmma_prepare<decltype(st)::value, decltype(ac)::value>(pr);
      });
  }
}

kv_status kv_gemm_launch(const kv_gemm_problem *pr, cudaStream_t stream) { return pr->launch(pr, stream); }

kv_status kv_gemm_resources(const kv_gemm_problem *pr, kv_kernel_resources *r) { return pr->resources(pr, r); }

void kv_gemm_release(kv_gemm_problem *pr) {
  if (pr->lt) kv_gemm_cublas_release(pr->lt);
  pr->lt = nullptr;
  if (pr->partials) (void)CHECK_CUDA(cudaFree(pr->partials));
  pr->partials = nullptr;
}
