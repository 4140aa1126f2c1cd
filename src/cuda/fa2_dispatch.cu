/* fa2_dispatch.cu - run-time choice of the FlashAttention-2 forward instantiation (head dim x
 * storage x accumulation x causal) for a launch or a resource query. The instantiations
 * themselves are compiled in fa2_d<D>.cu. */
#include <type_traits>

#include "cuda/fa2_api.h"

namespace {

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
  if (!(a.scale_log2 > 0.f) || !(a.scale > 0.f)) {
    if (why) *why = "fa2 kernel: the softmax scale must be positive";
    return cudaErrorInvalidValue;
  }
  if (a.batch < 0 || a.heads < 1 || a.seqlen_q < 0 || a.seqlen_k < 0) {
    if (why) *why = "fa2 kernel: negative size or no heads";
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
