/* fa2_dispatch.cu - the FlashAttention-2 forward kernel of a problem, chosen once: the variant
 * (kval-mma or kval-wgmma), after the family's support rule (fa2_limits.h), the argument checks
 * and the device check, and its instantiation (head dim x storage x accumulation x causal),
 * whose prepare step encodes what the launch needs (kv_fa2_prepare); then the launch and the
 * resource query of the prepared problem. The instantiations are compiled in
 * inst/fa2_mma_d<D>.cu and inst/fa2_wgmma_d<D>.cu. */
#include <type_traits>

#include "families/device/pick.cuh"
#include "families/fa2/fa2_api.h"

namespace {

using kv::pick::dtype_;
using kv::pick::int_;

/* Why the problem cannot be launched by the variant on this device, or NULL. */
const char *unsupported(int variant, int headdim, kv_precision prec, const char **why) {
  *why = kv_fa2_unsupported(variant, headdim, prec);
  if (*why || variant != KV_FA2_WGMMA) return *why;
  return *why = kv::pick::sm90a_refusal("fa2 kval-wgmma: the device's compute capability could not be read",
                                        "fa2 kval-wgmma: needs a compute capability 9.0 GPU (sm_90a code)");
}

/* F(D, STORE, ACC, CAUSAL) for a supported kval-mma problem. */
template <class F>
cudaError_t pick_mma(int headdim, kv_precision prec, int causal, F &&f) {
  auto by_causal = [&](auto d, auto st, auto ac) -> cudaError_t {
    return causal ? f(d, st, ac, std::true_type{}) : f(d, st, ac, std::false_type{});
  };
  auto by_prec = [&](auto d) -> cudaError_t {
    if (prec.storage == KV_FP16)
      return prec.accum == KV_FP32 ? by_causal(d, dtype_<KV_FP16>{}, dtype_<KV_FP32>{})
                                   : by_causal(d, dtype_<KV_FP16>{}, dtype_<KV_FP16>{});
    return prec.accum == KV_FP32 ? by_causal(d, dtype_<KV_BF16>{}, dtype_<KV_FP32>{})
                                 : by_causal(d, dtype_<KV_BF16>{}, dtype_<KV_BF16>{});
  };
  switch (headdim) {
    case 32: return by_prec(int_<32>{});
    case 64: return by_prec(int_<64>{});
    case 96: return by_prec(int_<96>{});
    case 128: return by_prec(int_<128>{});
    default: return by_prec(int_<256>{});
  }
}

}  // namespace

kv_status kv_fa2_prepare(const kv_fa2_args &a, int variant, int headdim, kv_precision prec, int causal,
                         kv_fa2_problem *pr, const char **why) {
  *why = nullptr;
  if (unsupported(variant, headdim, prec, why)) return KV_ERR;
  if (!(a.scale_log2 > 0.f) || !(a.scale > 0.f)) *why = "fa2 kernel: the softmax scale must be positive";
  if (a.batch < 0 || a.heads < 1 || a.seqlen_q < 0 || a.seqlen_k < 0) *why = "fa2 kernel: negative size or no heads";
  if (*why) return KV_ERR;
  *pr = kv_fa2_problem();
  pr->a = a;
  pr->variant = variant;
  pr->headdim = headdim;
  pr->causal = causal;
  pr->prec = prec;
  const char *refusal = nullptr;
  cudaError_t e;
  if (variant == KV_FA2_WGMMA)
    e = kv::pick::by_headdim_store_causal<64, 128, 256>(headdim, prec, causal, [&](auto d, auto st, auto ca) {
      return kv_fa2_wgmma_prepare<decltype(d)::value, decltype(st)::value, decltype(ca)::value>(pr, &refusal);
    });
  else
    e = pick_mma(headdim, prec, causal, [&](auto d, auto st, auto ac, auto ca) {
      return kv_fa2_mma_prepare<decltype(d)::value, decltype(st)::value, decltype(ac)::value, decltype(ca)::value>(
          pr, &refusal);
    });
  return kv::pick::prepare_status(e, refusal, why);
}

kv_status kv_fa2_launch(const kv_fa2_problem &pr, cudaStream_t stream) { return CHECK_CUDA(pr.launch(pr, stream)); }

kv_status kv_fa2_resources(const kv_fa2_problem &pr, kv_kernel_resources *r) { return CHECK_CUDA(pr.info(r)); }
