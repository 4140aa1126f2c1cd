/* fa2_dispatch.cu - run-time choice of the FlashAttention-2 forward kernel variant (kval-mma or
 * kval-wgmma) and of its instantiation (head dim x storage x accumulation x causal) for a
 * launch or a resource query. The instantiations themselves are compiled in fa2_d<D>.cu and
 * fa2_wgmma_d<D>.cu. */
#include <type_traits>

#include "families/fa2/fa2_api.h"

namespace {

/* Why the arguments cannot be launched (for either variant), or NULL. */
const char *args_invalid(const kv_fa2_args &a) {
  if (!(a.scale_log2 > 0.f) || !(a.scale > 0.f)) return "fa2 kernel: the softmax scale must be positive";
  if (a.batch < 0 || a.heads < 1 || a.seqlen_q < 0 || a.seqlen_k < 0) return "fa2 kernel: negative size or no heads";
  return nullptr;
}

/* F(D, STORE, ACC, CAUSAL) for the requested combination; cudaErrorInvalidValue and a reason
 * for one that is not instantiated. */
template <class F>
cudaError_t pick(int headdim, int store, int acc, int causal, F &&f, const char **why) {
  auto by_causal = [&](auto d, auto st, auto ac) -> cudaError_t {
    return causal ? f(d, st, ac, std::true_type{}) : f(d, st, ac, std::false_type{});
  };
  auto by_prec = [&](auto d) -> cudaError_t {
    if (store == KV_FA2_FP16 && acc == KV_FA2_ACC_F32)
      return by_causal(d, std::integral_constant<int, KV_FA2_FP16>{}, std::integral_constant<int, KV_FA2_ACC_F32>{});
    if (store == KV_FA2_FP16 && acc == KV_FA2_ACC_F16)
      return by_causal(d, std::integral_constant<int, KV_FA2_FP16>{}, std::integral_constant<int, KV_FA2_ACC_F16>{});
    if (store == KV_FA2_BF16 && acc == KV_FA2_ACC_F32)
      return by_causal(d, std::integral_constant<int, KV_FA2_BF16>{}, std::integral_constant<int, KV_FA2_ACC_F32>{});
    if (store == KV_FA2_BF16 && acc == KV_FA2_ACC_BF16)
      return by_causal(d, std::integral_constant<int, KV_FA2_BF16>{}, std::integral_constant<int, KV_FA2_ACC_BF16>{});
    if (why) *why = "fa2 kernel: precision must be fp16:fp32, fp16:fp16, bf16:fp32 or bf16:bf16";
    return cudaErrorInvalidValue;
  };
  switch (headdim) {
    case 32: return by_prec(std::integral_constant<int, 32>{});
    case 64: return by_prec(std::integral_constant<int, 64>{});
    case 96: return by_prec(std::integral_constant<int, 96>{});
    case 128: return by_prec(std::integral_constant<int, 128>{});
    case 256: return by_prec(std::integral_constant<int, 256>{});
    default:
      if (why) *why = "fa2 kernel: headdim must be 32, 64, 96, 128 or 256";
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t kv_fa2_forward(const kv_fa2_args &a, int headdim, int store, int acc, int causal, cudaStream_t stream,
                           const char **why) {
  if (why) *why = nullptr;
  if (const char *bad = args_invalid(a)) {
    if (why) *why = bad;
    return cudaErrorInvalidValue;
  }
  const cudaError_t e = pick(
      headdim, store, acc, causal,
      [&](auto d, auto st, auto ac, auto ca) {
        return kv_fa2_run<decltype(d)::value, decltype(st)::value, decltype(ac)::value, decltype(ca)::value>(a,
                                                                                                            stream);
      },
      why);
  if (e == cudaErrorInvalidValue && why && !*why) *why = "fa2 kernel: grid too large (blocks > 2^31 - 1)";
  return e;
}

cudaError_t kv_fa2_resources(int headdim, int store, int acc, int causal, kv_fa2_kernel_info *info,
                             const char **why) {
  if (why) *why = nullptr;
  return pick(
      headdim, store, acc, causal,
      [&](auto d, auto st, auto ac, auto ca) {
        return kv_fa2_info<decltype(d)::value, decltype(st)::value, decltype(ac)::value, decltype(ca)::value>(info);
      },
      why);
}

namespace {

/* F(D, STORE, CAUSAL) among the kval-wgmma instantiations, after the device check. */
template <class F>
cudaError_t pick_wgmma(int headdim, int store, int acc, int causal, F &&f, const char **why) {
  const char *no = kv_fa2_variant_unsupported(KV_FA2_VARIANT_WGMMA, headdim, store, acc);
  if (no) {
    if (why) *why = no;
    return cudaErrorInvalidValue;
  }
  int dev, major, minor;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) return e;
  if (major != 9 || minor != 0) {
    if (why) *why = "fa2 kval-wgmma: needs a compute capability 9.0 GPU (sm_90a code)";
    return cudaErrorInvalidValue;
  }
  auto by_causal = [&](auto d, auto st) -> cudaError_t {
    return causal ? f(d, st, std::true_type{}) : f(d, st, std::false_type{});
  };
  auto by_store = [&](auto d) -> cudaError_t {
    return store == KV_FA2_FP16 ? by_causal(d, std::integral_constant<int, KV_FA2_FP16>{})
                                : by_causal(d, std::integral_constant<int, KV_FA2_BF16>{});
  };
  return headdim == 64 ? by_store(std::integral_constant<int, 64>{}) : by_store(std::integral_constant<int, 128>{});
}

}  // namespace

const char *kv_fa2_variant_unsupported(int variant, int headdim, int store, int acc) {
  if (variant == KV_FA2_VARIANT_MMA) return nullptr; /* pick() names its own limits */
  if (variant != KV_FA2_VARIANT_WGMMA) return "fa2 kernel: unknown variant";
  if (headdim != 64 && headdim != 128) return "fa2 kval-wgmma: headdim must be 64 or 128";
  if (acc != KV_FA2_ACC_F32 || (store != KV_FA2_FP16 && store != KV_FA2_BF16))
    return "fa2 kval-wgmma: precision must be fp16:fp32 or bf16:fp32";
  return nullptr;
}

cudaError_t kv_fa2_variant_forward(int variant, const kv_fa2_args &a, int headdim, int store, int acc, int causal,
                                   cudaStream_t stream, const char **why) {
  if (variant != KV_FA2_VARIANT_WGMMA) return kv_fa2_forward(a, headdim, store, acc, causal, stream, why);
  if (why) *why = nullptr;
  if (const char *bad = args_invalid(a)) {
    if (why) *why = bad;
    return cudaErrorInvalidValue;
  }
  return pick_wgmma(
      headdim, store, acc, causal,
      [&](auto d, auto st, auto ca) {
        return kv_fa2_wgmma_run<decltype(d)::value, decltype(st)::value, decltype(ca)::value>(a, stream, why);
      },
      why);
}

cudaError_t kv_fa2_variant_resources(int variant, int headdim, int store, int acc, int causal,
                                     kv_fa2_kernel_info *info, const char **why) {
  if (variant != KV_FA2_VARIANT_WGMMA) return kv_fa2_resources(headdim, store, acc, causal, info, why);
  if (why) *why = nullptr;
  return pick_wgmma(
      headdim, store, acc, causal,
      [&](auto d, auto st, auto ca) {
        return kv_fa2_wgmma_info<decltype(d)::value, decltype(st)::value, decltype(ca)::value>(info);
      },
      why);
}
