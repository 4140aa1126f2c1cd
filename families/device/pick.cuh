/* pick.cuh - what the attention dispatchers (fa2_dispatch.cu, fa2bwd_dispatch.cu) share:
 * compile-time values as types, the choice of a (head dim) x (fp16|bf16 storage) x causal
 * instantiation, and the status of a prepare step that may refuse a problem with a
 * reason of its own. Host code. */
#ifndef KVAL_DEVICE_PICK_CUH
#define KVAL_DEVICE_PICK_CUH

#include <cuda_runtime_api.h>

#include <type_traits>

#include "core/cuda_check.cuh"
#include "core/dtype.h"

namespace kv::pick {

template <int V>
using int_ = std::integral_constant<int, V>;
template <kv_dtype T>
using dtype_ = std::integral_constant<kv_dtype, T>;

/* f(D, STORE, CAUSAL) as integral constants, for the head dim among Ds that equals headdim and
 * fp16 or bf16 storage; a head dim outside Ds (which the family's support rule has refused
 * before) is cudaErrorInvalidValue without calling f. */
template <int... Ds, class F>
cudaError_t by_headdim_store_causal(int headdim, kv_precision prec, int causal, F &&f) {
  auto by_causal = [&](auto d, auto st) -> cudaError_t {
    return causal ? f(d, st, std::true_type{}) : f(d, st, std::false_type{});
  };
  auto by_store = [&](auto d) -> cudaError_t {
    return prec.storage == KV_FP16 ? by_causal(d, dtype_<KV_FP16>{}) : by_causal(d, dtype_<KV_BF16>{});
  };
  cudaError_t e = cudaErrorInvalidValue;
  (void)((headdim == Ds && ((e = by_store(int_<Ds>{})), true)) || ...);
  return e;
}

/* A kernel's own refusal (cudaErrorInvalidValue with a reason) as KV_ERR with that reason;
 * any other error through CHECK_CUDA. */
inline kv_status prepare_status(cudaError_t e, const char *refusal, const char **why) {
  if (e == cudaErrorInvalidValue && refusal) {
    (void)cudaGetLastError();
    *why = refusal;
    return KV_ERR;
  }
  return CHECK_CUDA(e);
}

}  // namespace kv::pick

#endif
