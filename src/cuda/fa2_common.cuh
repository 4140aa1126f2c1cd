/* fa2_common.cuh - what the two FlashAttention-2 forward kernels (fa2_kernel.cuh: kval-mma,
 * fa2_wgmma.cuh: kval-wgmma) share: the rounding of an fp32 pair to a 16-bit storage pair,
 * ex2.approx, and the resource report of one instantiation. */
#ifndef KVAL_FA2_COMMON_CUH
#define KVAL_FA2_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/fa2_api.h"

namespace kv_fa2_common {

/* (lo, hi) -> packed 16-bit pair, lo in the low half, round to nearest even. */
template <int STORE>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (STORE == KV_FA2_FP16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* Registers, local memory, shared memory and resident blocks per SM of kernel `kern` with the
 * configuration Tr (kThreads, kSmemBytes dynamic, kBlockM, kBlockN, kStages). */
template <class Tr, class Kernel>
cudaError_t kernel_info(Kernel kern, kv_fa2_kernel_info *out) {
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, kern);
  if (e == cudaSuccess && Tr::kSmemBytes > 48 * 1024)
    e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes);
  int blocks = 0;
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kern, Tr::kThreads, Tr::kSmemBytes);
  if (e != cudaSuccess) return e;
  out->registers = attr.numRegs;
  out->local_bytes = static_cast<int>(attr.localSizeBytes);
  out->smem_bytes = static_cast<int>(attr.sharedSizeBytes) + Tr::kSmemBytes;
  out->blocks_per_sm = blocks;
  out->block_m = Tr::kBlockM;
  out->block_n = Tr::kBlockN;
  out->stages = Tr::kStages;
  out->threads = Tr::kThreads;
  return cudaSuccess;
}

}  // namespace kv_fa2_common

#endif
