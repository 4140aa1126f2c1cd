/* fa2bwd_dispatch.cu - the FlashAttention-2 backward kernels of a problem, chosen once: after
 * the family's support rule (fa2bwd_limits.h), kval-wgmma's device (compute capability 9.0)
 * and the argument checks, the variant's instantiation (kval-mma or kval-wgmma, which also runs
 * kval-wgmma-fused, x head dim x storage x causal), whose prepare step checks the grids, encodes kval-wgmma's tensor maps and
 * raises the shared-memory limits (kv_fa2bwd_prepare); then the launch and the resource query
 * of the prepared problem. The instantiations are compiled in inst/fa2bwd_mma_d<D>.cu and
 * inst/fa2bwd_wgmma_d<D>.cu. */
#include "families/device/pick.cuh"
#include "families/fa2bwd/fa2bwd_api.h"

kv_status kv_fa2bwd_prepare(const kv_fa2bwd_args &a, int variant, int headdim, kv_precision prec, int causal,
                            kv_fa2bwd_problem *pr, const char **why) {
  *why = kv_fa2bwd_unsupported(variant, headdim, prec);
  if (!*why && variant != KV_FA2BWD_MMA)
    *why = kv::pick::sm90a_refusal("fa2bwd kval-wgmma: the device's compute capability could not be read",
                                   "fa2bwd kval-wgmma: needs a compute capability 9.0 GPU (sm_90a code)");
  if (*why) return KV_ERR;
  if (!(a.scale_log2 > 0.f) || !(a.scale > 0.f)) *why = "fa2bwd kernel: the softmax scale must be positive";
  if (a.batch < 0 || a.heads < 1 || a.seqlen < 0) *why = "fa2bwd kernel: negative size or no heads";
  if (*why) return KV_ERR;
  *pr = kv_fa2bwd_problem();
  pr->a = a;
  pr->variant = variant;
  pr->headdim = headdim;
  pr->causal = causal;
  pr->prec = prec;
  const char *refusal = nullptr;
  auto prepare = [&](auto d, auto st, auto ca) {
    constexpr int D = decltype(d)::value;
    constexpr kv_dtype ST = decltype(st)::value;
    constexpr bool CA = decltype(ca)::value;
    return variant == KV_FA2BWD_MMA ? kv_fa2bwd_mma_prepare<D, ST, CA>(pr, &refusal)
                                    : kv_fa2bwd_wgmma_prepare<D, ST, CA>(pr, &refusal);
  };
  const cudaError_t e = kv::pick::by_headdim_store_causal<64, 128>(headdim, prec, causal, prepare);
  return kv::pick::prepare_status(e, refusal, why);
}

kv_status kv_fa2bwd_launch(const kv_fa2bwd_problem &pr, cudaStream_t stream) {
  return CHECK_CUDA(pr.launch(pr, stream));
}

kv_status kv_fa2bwd_resources(const kv_fa2bwd_problem &pr, kv_kernel_resources *r) { return CHECK_CUDA(pr.info(r)); }
