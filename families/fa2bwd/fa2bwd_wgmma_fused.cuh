/* fa2bwd_wgmma_fused.cuh - the parts of kval-wgmma-fused (fa2bwd_wgmma.cuh's dK/dV kernel with
 * FUSED) that the two passes lack: the writer threads that add the key blocks' dQ shares into
 * the fp32 workspace in the order fa2bwd_limits.h's schedule gives (write_dq), dS^T into the shared tile dQ's product reads (put_rows), and the kernel that
 * writes dQ from the workspace (fa2bwd_dq_convert_kernel). Included by fa2bwd_wgmma.cuh. */
#ifndef KVAL_FA2BWD_WGMMA_FUSED_CUH
#define KVAL_FA2BWD_WGMMA_FUSED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "families/device/sm90.cuh"
#include "families/fa2/fa2_common.cuh"
#include "families/fa2bwd/fa2bwd_api.h"

namespace kv_fa2bwd_wgmma {

namespace ptx = kv::ptx;
using kv_fa2_common::storage_t;

/* The fused kernel's dQ writers, two threads of the producer warpgroup: writer w takes the
 * CTA's i-th query blocks for i = w, w + 2, ... (buffer w). For its block m a writer waits until
 * the consumers have put the block's dQ partial sums into the buffer, then until m's counter
 * says that every key block before this one in m's order has added its share; then it copies
 * (the first) or adds (cp.reduce.async.bulk) the buffer into m's rows of dq_accum, waits until
 * that has completed, bumps the counter and frees the buffer. m's order is descending (the last
 * key block that sees m adds first) or, ROTATE with a.dq_rotate (walks from m_first), the
 * order in which the rotated walks reach m: key block m BQ / BN first, then the one before,
 * ... cyclically. Every element of dq_accum receives its sums in one fixed order: dQ is bitwise
 * the same run to run. */
template <int D, int BQ, int BN, bool CAUSAL, bool ROTATE>
__device__ __forceinline__ void write_dq(const unsigned char *parts, uint64_t *dq_full, uint64_t *dq_empty,
                                         const kv_fa2bwd_args &a, int kb, int bh, int m_begin, int m_end, int m_first,
                                         int w) {
  constexpr uint32_t kBytes = BQ * D * 4;
  const int nkb = (a.seqlen + BN - 1) / BN, nmb = (a.seqlen + BQ - 1) / BQ;
  for (int step = m_begin + w; step < m_end; step += 2) {
    const int m = ROTATE ? kv_fa2bwd_rotated_block(step, m_first, m_end) : step, i = step - m_begin;
    const int rank = kv_fa2bwd_add_rank(ROTATE && a.dq_rotate, CAUSAL, m, kb, nkb, BQ, BN);
    int *sem = a.dq_sem + static_cast<long long>(bh) * nmb + m;
    float *dst = a.dq_accum + (static_cast<long long>(bh) * nmb + m) * (BQ * D);
    ptx::mbarrier_wait_parity(&dq_full[w], (i / 2) & 1);
    while (ptx::ld_acquire_gpu(sem) != rank) __nanosleep(40);
    ptx::fence_proxy_async_global();
    if (rank == 0)
      ptx::bulk_store(dst, parts + w * kBytes, kBytes);
    else
      ptx::bulk_reduce_add_f32(dst, parts + w * kBytes, kBytes);
    ptx::bulk_commit_group();
    ptx::bulk_wait_group<0>();
    ptx::fence_proxy_async_global();
    ptx::red_release_gpu_add(sem, 1);
    ptx::mbarrier_arrive(&dq_empty[w]);
  }
}

/* dS^T fragments (this warpgroup's 64 key rows from `row0`, BQ query columns) into the
 * 128-byte swizzled tile at sds: key rows of BQ queries, the layout TMA would write. */
template <int BQ>
__device__ __forceinline__ void put_rows(unsigned char *sds, const uint32_t (&f)[BQ / 16][4], int row0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int kk = 0; kk < BQ / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = row0 + g + 8 * (r & 1), jb = 2 * kk + (r >> 1);
      *reinterpret_cast<uint32_t *>(sds + row * 128 + ((jb ^ (row % 8)) * 16) + t4 * 4) = f[kk][r];
    }
}

/* dQ from dq_accum: each float4 of a query block's BQ x D sums (the fused kernel's consumer
 * c, float4 j4, thread lt: rows 16 (lt / 32) + (lt % 32) / 4 and 8 more, columns c D/2 + 8 j4
 * + 2 (lt % 4) and the next) times scale, rounded once to the storage type. */
template <int D, int BQ, kv_dtype STORE>
__global__ void __launch_bounds__(256) fa2bwd_dq_convert_kernel(const kv_fa2bwd_args a) {
  using T = storage_t<STORE>;
  constexpr int kVecs = BQ * D / 4, kPerConsumer = 128 * D / 16;
  const int L = a.seqlen, H = a.heads, nmb = (L + BQ - 1) / BQ;
  const long long total = static_cast<long long>(a.batch) * H * nmb * kVecs;
  for (long long idx = blockIdx.x * 256ll + threadIdx.x; idx < total; idx += 256ll * gridDim.x) {
    const long long blk = idx / kVecs;
    const int within = static_cast<int>(idx % kVecs), c = within / kPerConsumer, j4 = within % kPerConsumer / 128,
              lt = within % 128;
    const int row = (lt / 32) * 16 + (lt % 32) / 4, col = c * (D / 2) + 8 * j4 + 2 * (lt % 4);
    const int bh = static_cast<int>(blk / nmb), m = static_cast<int>(blk % nmb), b = bh / H, h = bh % H;
    const float4 v = reinterpret_cast<const float4 *>(a.dq_accum)[idx];
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int q = m * BQ + row + 8 * hi;
      if (q >= L) continue;
      const uint32_t packed = ptx::cvt_rn_pair<T>((hi ? v.z : v.x) * a.scale, (hi ? v.w : v.y) * a.scale);
      *reinterpret_cast<uint32_t *>(static_cast<T *>(a.dq) + ((static_cast<long long>(b) * L + q) * H + h) * D + col) =
          packed;
    }
  }
}

}  // namespace kv_fa2bwd_wgmma

#endif
