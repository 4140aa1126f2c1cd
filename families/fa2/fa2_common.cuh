/* fa2_common.cuh - what the two FlashAttention-2 forward kernels (fa2_mma.cuh: kval-mma,
 * fa2_wgmma.cuh: kval-wgmma) share: the key tiles a query block visits, the size of a launch's
 * grid, the CUDA type of a storage type, ex2.approx, and the resource report of one
 * instantiation. */
#ifndef KVAL_FA2_COMMON_CUH
#define KVAL_FA2_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "families/fa2/fa2_api.h"

namespace kv_fa2_common {

/* Key tiles of BN keys that the query rows [m0, m0 + BM) visit: [0, n_end); those from n_free
 * on need the mask (keys >= seqlen_k, and causal: keys above the bottom-right aligned diagonal,
 * row i sees keys j <= i + Lk - Lq). Tiles wholly above the diagonal are never visited. */
template <bool CAUSAL, int BM, int BN>
__device__ __forceinline__ void key_tiles(int m0, int Lq, int Lk, int &n_end, int &n_free) {
  const int n_tiles = (Lk + BN - 1) / BN;
  n_end = n_tiles;
  n_free = Lk / BN;
  if (CAUSAL) {
    const int last_key = min(m0 + BM, Lq) - 1 + Lk - Lq;
    n_end = last_key < 0 ? 0 : min(n_tiles, last_key / BN + 1);
    const int first_lim = m0 + Lk - Lq + 1; /* row m0 sees keys < first_lim */
    n_free = min(n_free, first_lim <= 0 ? 0 : first_lim / BN);
  }
  n_free = min(n_free, n_end);
}

/* Thread blocks of a launch of BM query rows per block: one per query block, head and batch. */
template <int BM>
long long grid_blocks(const kv_fa2_args &a) {
  return static_cast<long long>((a.seqlen_q + BM - 1) / BM) * a.heads * a.batch;
}

/* The CUDA type of a storage type (KV_FP16, KV_BF16). */
template <kv_dtype STORE>
using storage_t = std::conditional_t<STORE == KV_FP16, __half, __nv_bfloat16>;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* Registers, local memory, shared memory and resident blocks per SM of kernel `kern` with the
 * configuration Tr (kThreads, kSmemBytes dynamic). */
template <class Tr, class Kernel>
cudaError_t kernel_info(Kernel kern, kv_kernel_resources *out) {
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
  out->occupancy = blocks;
  return cudaSuccess;
}

}  // namespace kv_fa2_common

#endif
