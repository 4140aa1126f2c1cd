/* fa2_variants_common.cuh - the run/info adapters of one alternative configuration for
 * fa2_variants_d<D>.cu: fp32 accumulation, fp16 or bf16 storage, causal or not. */
#ifndef KVAL_BENCH_FA2_VARIANTS_COMMON_CUH
#define KVAL_BENCH_FA2_VARIANTS_COMMON_CUH

#include "families/fa2/fa2_mma.cuh"
#include "families/fa2/bench/fa2_variants.h"

template <class Tr>
cudaError_t variant_run(const kv_fa2_args &a, int store, int causal, cudaStream_t s) {
  if (store == KV_FA2_FP16)
    return causal ? kv_fa2::launch<Tr, KV_FA2_FP16, KV_FA2_ACC_F32, true>(a, s)
                  : kv_fa2::launch<Tr, KV_FA2_FP16, KV_FA2_ACC_F32, false>(a, s);
  return causal ? kv_fa2::launch<Tr, KV_FA2_BF16, KV_FA2_ACC_F32, true>(a, s)
                : kv_fa2::launch<Tr, KV_FA2_BF16, KV_FA2_ACC_F32, false>(a, s);
}
template <class Tr>
cudaError_t variant_info(int store, int causal, kv_fa2_kernel_info *in) {
  if (store == KV_FA2_FP16)
    return causal ? kv_fa2::info<Tr, KV_FA2_FP16, KV_FA2_ACC_F32, true>(in)
                  : kv_fa2::info<Tr, KV_FA2_FP16, KV_FA2_ACC_F32, false>(in);
  return causal ? kv_fa2::info<Tr, KV_FA2_BF16, KV_FA2_ACC_F32, true>(in)
                : kv_fa2::info<Tr, KV_FA2_BF16, KV_FA2_ACC_F32, false>(in);
}
#define FA2_VARIANT(name, D, BM, BN, ST, QR, MINB)                                    \
  {                                                                                   \
    name, D, variant_run<kv_fa2_config<D, BM, BN, ST, QR, MINB>>,                     \
        variant_info<kv_fa2_config<D, BM, BN, ST, QR, MINB>>                          \
  }

#endif
