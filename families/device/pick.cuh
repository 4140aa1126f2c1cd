/* pick.cuh - what the attention dispatchers (fa2_dispatch.cu, fa2bwd_dispatch.cu) share:
 * compile-time values as types, the choice of a (head dim) x (fp16|bf16 storage) x causal
 * instantiation, the refusal of sm_90a kernels on other devices, and the status of a prepare
 * step that may refuse a problem with a reason of its own. Host code. */
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

/* Why the current device cannot run sm_90a code (the Hopper kernels, compiled for compute
 * capability 9.0 only), in the caller's words, or NULL: `no_cc` when the capability cannot be
 * read, `not_sm90` when it is not 9.0. */
inline const char *sm90a_refusal(const char *no_cc, const char *not_sm90) {
  int dev, major, minor;
  if (CHECK_CUDA(cudaGetDevice(&dev)) != KV_OK ||
      CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) != KV_OK ||
      CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)) != KV_OK)
    return no_cc;
  return major == 9 && minor == 0 ? nullptr : not_sm90;
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
