/* fa2bwd_mma.cuh - kval-mma, the FlashAttention-2 backward kernels (mma.sync) and their host
 * side per configuration (prepare once: grid checks, shared-memory limits; launch: three
 * kernels on one stream). Included only by the instantiation files
 * families/fa2bwd/inst/fa2bwd_mma_d<D>.cu; everything else calls it through fa2bwd_api.h.
 *
 * Algorithm (per (batch, head); tiles, warps and shared memory: fa2bwd_mma_traits.h):
 *   1. D kernel: D_i = sum_d dO_id O_id for every query row, D/8 threads per row.
 *   2. dK/dV kernel: one thread block per BN keys, each warp 16 of them; the dK and dV
 *      accumulators stay in registers while the block walks the query blocks of BM rows in
 *      ascending order (causal: from the first block that sees a key of the block). Q, dO and
 *      the block's lse and D go through a double-buffered cp.async ring (rows past seqlen
 *      zero-filled), the loads of block m + 1 issued before the math of block m. The warp
 *      computes the transposed products S^T = K Q^T and dP^T = V dO^T (K, V: A operands from its
 *      own rows; Q, dO: B operands by ldmatrix), so P^T and dS^T are accumulator fragments of
 *      its own key rows that become A operands of dV += P^T dO and dK += dS^T Q in registers
 *      (dO and Q through ldmatrix.trans), as P is in the forward's P.V. lse and D are per
 *      column there, read from shared memory.
 *   3. dQ kernel: one thread block per BM query rows, each warp 16 of them; dQ in registers
 *      while the block walks the key blocks of BN keys in ascending order (causal: up to the
 *      diagonal) through a double-buffered K/V ring: S = Q K^T, dP = dO V^T, dS in registers
 *      as the A operand of dQ += dS K (K through ldmatrix.trans).
 *   Masks (P = 0: causal pairs with key > query, queries or keys past seqlen) run only in the
 *   blocks that hold such pairs (a block-uniform branch). The epilogues stage each warp's rows
 *   in its own rows of shared memory and store them with 16-byte coalesced stores; rows past
 *   seqlen are never stored. Deterministic: no atomics, every output element is written by one
 *   thread, every sum is taken in a fixed order, so the gradients are bitwise reproducible.
 *
 * Precision (fp32 accumulation throughout; inputs in the storage type, fp16 or bf16):
 *   - D_i: fp32 products of the storage values, per thread 8 consecutive features added with
 *     fmaf in ascending order, then the D/8 partial sums added by a butterfly of shuffles.
 *   - S and dP: mma.sync m16n8k16 with fp32 accumulators, D/16 k-steps of 16 features; both
 *     passes recompute them (the dK/dV pass as K Q^T and V dO^T, whose sums inside a tensor-core
 *     step may differ in the last bit from those of Q K^T and dO V^T).
 *   - P = ex2.approx.ftz(fma(S, scale_log2, -lse_l2)), lse_l2 = lse * log2(e) rounded to fp32
 *     once per row; dS = P (dP - D_i) in fp32 (the difference rounded, then the product) with
 *     the unrounded fp32 P.
 *   - dV += P dO, dK += dS Q, dQ += dS K: P and dS rounded to the storage type (round to
 *     nearest even) as mma operands, fp32 accumulators over k-steps of 16 queries (dV, dK) or
 *     keys (dQ) in ascending order.
 *   - Epilogue: dK and dQ multiplied by scale in fp32; dQ, dK, dV rounded once to the storage
 *     type (round to nearest even). */
#ifndef KVAL_FA2BWD_MMA_CUH
#define KVAL_FA2BWD_MMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <climits>
#include <type_traits>

#include "families/device/sm80.cuh"
#include "families/fa2/fa2_common.cuh"
#include "families/fa2bwd/fa2bwd_api.h"
#include "families/fa2bwd/fa2bwd_mma_traits.h"

namespace kv_fa2bwd {

namespace ptx = kv::ptx;
using kv_fa2_common::ex2;
using kv_fa2_common::storage_t;

constexpr float kLog2e = 1.4426950408889634f;

/* 4-byte global -> shared copy reading src_bytes (0 or 4) bytes, zero-filling the rest. */
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

/* The 16-bit pair `h` of type T as two exact fp32 values. */
template <class T>
__device__ __forceinline__ float2 pair_to_float2(uint32_t h) {
  if constexpr (std::is_same_v<T, __half>)
    return make_float2(ptx::f16x2_lo(h), ptx::f16x2_hi(h));
  else
    return make_float2(ptx::bf16x2_lo(h), ptx::bf16x2_hi(h));
}

/* The ldmatrix address of the 16 x 16 block at rows row_off (a multiple of 8) and k-step kt
 * (chunks 2 kt, 2 kt + 1) for a lane whose base is its tile's 128-byte aligned address plus its
 * swizzled row and chunk bit: the XOR permutes chunks inside a 128-byte span only
 * (families/fa2/fa2_mma.cuh, KV_FA2_AT: one LOP3 and an immediate). */
template <class Tr>
__device__ __forceinline__ uint32_t block_addr(uint32_t lane_base, int row_off, int kt) {
  return (lane_base ^ ((kt % 4) * 32)) + (kt / 4) * 128 + row_off * Tr::kRowBytes;
}

/* ldmatrix lane bases (byte offsets inside a swizzled tile, families/fa2/fa2_mma.cuh): the A
 * pattern reads row lane & 15, chunk lane >> 4; the B pattern row (lane & 7) + 8 (lane >> 4),
 * chunk (lane >> 3) & 1. */
template <class Tr>
__device__ __forceinline__ uint32_t lane_base_a(int lane) {
  return Tr::swz(lane & 15, lane >> 4) * 16;
}
template <class Tr>
__device__ __forceinline__ uint32_t lane_base_b(int lane) {
  return Tr::swz((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1) * 16;
}

/* The A fragments of the warp's 16 rows of two tiles kept in registers for a whole walk
 * (x_lane, y_lane their A-pattern lane bases), read once the block's first loads have landed. */
template <class Tr, int KT>
__device__ __forceinline__ void load_resident_rows(uint32_t (&xf)[KT][4], uint32_t (&yf)[KT][4], uint32_t x_lane,
                                                   uint32_t y_lane) {
  ptx::cp_async_wait_group<0>();
  kv::block_sync();
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    ptx::ldmatrix_x4(xf[kt], block_addr<Tr>(x_lane, 0, kt));
    ptx::ldmatrix_x4(yf[kt], block_addr<Tr>(y_lane, 0, kt));
  }
}

/* cp.async of R rows of a [rows, D] tile whose rows are row_elems elements apart into the
 * swizzled shared tile s_tile, by NTHR threads (8 per row, each copying chunks c, c + 8, ...);
 * rows >= valid are zero-filled without reading global memory. */
template <class Tr, int R, int NTHR>
__device__ __forceinline__ void load_rows(uint32_t s_tile, const uint16_t *g_tile, long long row_elems, int valid,
                                          int tid) {
  constexpr int RSTEP = NTHR / 8, CGROUPS = Tr::kRowChunks / 8;
  static_assert(R % RSTEP == 0 && RSTEP % 8 == 0, "whole loader passes that keep the swizzle phase");
  const int r0 = tid / 8, c0 = tid % 8;
  const uint32_t s_lane = s_tile + Tr::swz(r0, c0) * 16;
  const char *src = reinterpret_cast<const char *>(g_tile + r0 * row_elems + c0 * 8);
#pragma unroll
  for (int i = 0; i < R / RSTEP; ++i) {
    const bool ok = r0 + i * RSTEP < valid;
    const char *p = ok ? src + i * RSTEP * row_elems * 2 : reinterpret_cast<const char *>(g_tile);
#pragma unroll
    for (int j = 0; j < CGROUPS; ++j)
      ptx::cp_async_16(s_lane + (i * RSTEP * Tr::kRowChunks + 8 * j) * 16, p + (ok ? 128 * j : 0), ok ? 16 : 0);
  }
}

/* acc (16 x 8 SNT, fp32) = A B^T over the D features: A the warp's 16 rows, as A fragments
 * held in registers (af[kt], A_IN_REGS) or read from shared memory at a_lane (A-pattern lane
 * base of the warp's rows); B the 8 SNT rows from b_row0 of a shared tile (B-pattern lane base
 * b_lane), one ldmatrix x4 per pair of n8 tiles and k-step. */
template <class Tr, class T, bool A_IN_REGS, int SNT, int AF>
__device__ __forceinline__ void warp_dot_rows(float (&acc)[SNT][4], const uint32_t (&af)[AF][4], uint32_t a_lane,
                                              uint32_t b_lane, int b_row0) {
#pragma unroll
  for (int nt = 0; nt < SNT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
#pragma unroll
  for (int kt = 0; kt < Tr::kHeadDim / 16; ++kt) {
    uint32_t fa[4];
    if constexpr (A_IN_REGS) {
#pragma unroll
      for (int r = 0; r < 4; ++r) fa[r] = af[kt][r];
    } else {
      ptx::ldmatrix_x4(fa, block_addr<Tr>(a_lane, 0, kt));
    }
#pragma unroll
    for (int np = 0; np < SNT / 2; ++np) {
      uint32_t fb[4];
      ptx::ldmatrix_x4(fb, block_addr<Tr>(b_lane, b_row0 + np * 16, kt));
      ptx::mma_m16n8k16_f32<T>(acc[2 * np], fa, fb[0], fb[1]);
      ptx::mma_m16n8k16_f32<T>(acc[2 * np + 1], fa, fb[2], fb[3]);
    }
  }
}

/* acc (16 x D, fp32) += A B: A the SKK k-steps of 16 (A fragments af), B the 16 SKK rows from
 * row0 of a shared [rows, D] tile through ldmatrix.trans (A-pattern lane base lane_base), one
 * x4 per k-step and pair of n8 tiles; the k-steps in ascending order. */
template <class Tr, class T, int SKK>
__device__ __forceinline__ void warp_mma_rows_trans(float (&acc)[Tr::kHeadDim / 8][4], const uint32_t (&af)[SKK][4],
                                                    uint32_t lane_base, int row0) {
#pragma unroll
  for (int kk = 0; kk < SKK; ++kk)
#pragma unroll
    for (int dp = 0; dp < Tr::kHeadDim / 16; ++dp) {
      uint32_t fb[4];
      ptx::ldmatrix_x4_trans(fb, block_addr<Tr>(lane_base, row0 + kk * 16, dp));
      ptx::mma_m16n8k16_f32<T>(acc[2 * dp], af[kk], fb[0], fb[1]);
      ptx::mma_m16n8k16_f32<T>(acc[2 * dp + 1], af[kk], fb[2], fb[3]);
    }
}

/* A warp's 16 x D fp32 accumulators (n8 tiles dt, fragment (g, 2t), (g, 2t+1), (g+8, 2t),
 * (g+8, 2t+1)) times `factor`, rounded to T and stored to its 16 shared rows [row0, row0 + 16)
 * of s_tile; then the rows below seqlen - first_row copied to global g_rows (rows row_elems
 * apart) by 16-byte stores. */
template <class Tr, class T>
__device__ __forceinline__ void store_warp_rows(const float (&acc)[Tr::kHeadDim / 8][4], float factor, uint32_t s_tile,
                                                int row0, uint16_t *g_rows, long long row_elems, int valid, int lane) {
  constexpr int DT = Tr::kHeadDim / 8, CPR = Tr::kRowChunks;
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    const int r = row0 + g + 8 * hi;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const uint32_t packed = ptx::cvt_rn_pair<T>(acc[dt][2 * hi] * factor, acc[dt][2 * hi + 1] * factor);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(s_tile + Tr::swz(r, dt) * 16 + t4 * 4), "r"(packed));
    }
  }
  __syncwarp();
#pragma unroll
  for (int j = 0; j < 16 * CPR / 32; ++j) {
    const int idx = lane + 32 * j, r = idx / CPR, c = idx % CPR;
    if (r < valid) {
      uint32_t v0, v1, v2, v3;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                   : "r"(s_tile + Tr::swz(row0 + r, c) * 16));
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(g_rows + r * row_elems + c * 8), "r"(v0), "r"(v1),
                   "r"(v2), "r"(v3)
                   : "memory");
    }
  }
}

/* ---- kernel 1: D_i = sum_d dO_id O_id ---- */

template <class Tr, kv_dtype STORE>
__global__ void __launch_bounds__(Tr::kDsumThreads) fa2bwd_dsum_kernel(const kv_fa2bwd_args a) {
  constexpr int D = Tr::kHeadDim, TPR = Tr::kRowChunks;
  using T = storage_t<STORE>;
  const long long rows = static_cast<long long>(a.batch) * a.seqlen * a.heads;
  const long long row = static_cast<long long>(blockIdx.x) * Tr::kDsumRowsPerBlock + threadIdx.x / TPR;
  const int chunk = threadIdx.x % TPR;
  float sum = 0.f;
  if (row < rows) {
    const long long off = row * D + chunk * 8;
    const uint4 dov = __ldg(reinterpret_cast<const uint4 *>(static_cast<const uint16_t *>(a.dout) + off));
    const uint4 ov = __ldg(reinterpret_cast<const uint4 *>(static_cast<const uint16_t *>(a.o) + off));
    const uint32_t dop[4] = {dov.x, dov.y, dov.z, dov.w}, op[4] = {ov.x, ov.y, ov.z, ov.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = pair_to_float2<T>(dop[i]), y = pair_to_float2<T>(op[i]);
      sum = fmaf(x.x, y.x, sum);
      sum = fmaf(x.y, y.y, sum);
    }
  }
#pragma unroll
  for (int off = TPR / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (row < rows && chunk == 0) a.dsum[row] = sum;
}

/* ---- kernel 2: dK and dV of BN keys, walking the query blocks ---- */

template <class Tr, kv_dtype STORE, bool CAUSAL>
__global__ void __launch_bounds__(Tr::kDkdvThreads, Tr::kMinBlocksPerSm) fa2bwd_dkdv_kernel(const kv_fa2bwd_args a) {
  constexpr int D = Tr::kHeadDim, BM = Tr::kBlockM, BN = Tr::kBlockN, SUB = Tr::kDkdvSubM;
  constexpr int KT = D / 16, DT = D / 8, SNT = SUB / 8, SKK = SUB / 16, NTHR = Tr::kDkdvThreads;
  using T = storage_t<STORE>;

  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  const int L = a.seqlen, H = a.heads;
  const int n0 = blockIdx.x * BN;
  const int h = static_cast<int>(blockIdx.y % static_cast<unsigned>(H));
  const long long b = blockIdx.y / static_cast<unsigned>(H);
  const long long rs = static_cast<long long>(H) * D; /* elements between rows */
  const long long head_off = b * L * rs + h * D;      /* row 0 of this (batch, head) */
  const long long stat_off = b * L * H + h;

  /* query blocks [m_begin, m_end); those before m_unmasked hold pairs above the causal
   * diagonal, those from m_tail on rows past seqlen */
  const int m_end = (L + BM - 1) / BM;
  const int m_begin = CAUSAL ? n0 / BM : 0;
  const int m_unmasked = CAUSAL ? (n0 + BN - 1 + BM - 1) / BM : 0;
  const int m_tail = L / BM;

  const uint32_t sK = ptx::smem_addr(smem), sV = sK + Tr::kKvTileBytes;
  const uint32_t sStages = sK + Tr::kDkdvStagesOffset, sStats = sK + Tr::kDkdvStatsOffset;

  const uint16_t *qg = static_cast<const uint16_t *>(a.q) + head_off;
  const uint16_t *dog = static_cast<const uint16_t *>(a.dout) + head_off;
  auto load_query_block = [&](int m, int stage) {
    const long long off = static_cast<long long>(m) * BM * rs;
    const int valid = L - m * BM;
    const uint32_t s_q = sStages + stage * Tr::kDkdvStageBytes;
    load_rows<Tr, BM, NTHR>(s_q, qg + off, rs, valid, tid);
    load_rows<Tr, BM, NTHR>(s_q + Tr::kQTileBytes, dog + off, rs, valid, tid);
    const uint32_t s_stat = sStats + stage * Tr::kDkdvStatBytes;
#pragma unroll
    for (int i = 0; i < (2 * BM + NTHR - 1) / NTHR; ++i) {
      const int idx = tid + i * NTHR, r = idx % BM;
      if (idx < 2 * BM) {
        const bool ok = r < valid;
        const float *src = (idx < BM ? a.lse : a.dsum) + stat_off + (ok ? static_cast<long long>(m * BM + r) * H : 0);
        cp_async_4(s_stat + idx * 4, src, ok ? 4 : 0);
      }
    }
  };

  /* this block's K and V, with the first query block */
  {
    const long long off = static_cast<long long>(n0) * rs;
    load_rows<Tr, BN, NTHR>(sK, static_cast<const uint16_t *>(a.k) + head_off + off, rs, L - n0, tid);
    load_rows<Tr, BN, NTHR>(sV, static_cast<const uint16_t *>(a.v) + head_off + off, rs, L - n0, tid);
  }
  load_query_block(m_begin, 0);
  ptx::cp_async_commit_group();

  /* ldmatrix lane bases: A pattern (K, V; dO and Q through .trans), B pattern (Q, dO) */
  const int warp_row0 = warp * 16;
  const uint32_t laneA = lane_base_a<Tr>(lane), laneB = lane_base_b<Tr>(lane);
  const uint32_t k_lane = sK + warp_row0 * Tr::kRowBytes + laneA, v_lane = sV + warp_row0 * Tr::kRowBytes + laneA;

  uint32_t kf[Tr::kKvInRegs ? KT : 1][4], vf[Tr::kKvInRegs ? KT : 1][4];
  if constexpr (Tr::kKvInRegs) load_resident_rows<Tr>(kf, vf, k_lane, v_lane);

  float dk[DT][4], dv[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[dt][e] = dv[dt][e] = 0.f;

  const float sl2 = a.scale_log2;
  int stage = 0;
  for (int m = m_begin; m < m_end; ++m) {
    ptx::cp_async_wait_group<0>();
    kv::block_sync();
    if (m + 1 < m_end) load_query_block(m + 1, stage ^ 1);
    ptx::cp_async_commit_group();

    const uint32_t s_q = sStages + stage * Tr::kDkdvStageBytes, s_do = s_q + Tr::kQTileBytes;
    const uint32_t s_lse = sStats + stage * Tr::kDkdvStatBytes, s_dsum = s_lse + BM * 4;
    const bool masked = m < m_unmasked || m >= m_tail;
    const int m0 = m * BM;

#pragma unroll
    for (int sub = 0; sub < BM / SUB; ++sub) {
      const int q_off = sub * SUB; /* first query of the step within the block */

      /* S^T = K Q^T and dP^T = V dO^T for the warp's 16 keys and the step's queries */
      float st[SNT][4], dpt[SNT][4];
      warp_dot_rows<Tr, T, Tr::kKvInRegs>(st, kf, k_lane, s_q + laneB, q_off);
      warp_dot_rows<Tr, T, Tr::kKvInRegs>(dpt, vf, v_lane, s_do + laneB, q_off);

      /* P^T and dS^T, rounded to T as the A operands of k-step kk (queries 16 kk .. 16 kk + 15):
       * fragment r = (row g | g+8) x (n8 tile 2 kk | 2 kk + 1) */
      uint32_t pa[SKK][4], dsa[SKK][4];
#pragma unroll
      for (int nt = 0; nt < SNT; ++nt) {
        const int c = q_off + nt * 8 + 2 * t4; /* the lane's first query column within the block */
        float2 lse, dsum;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(lse.x), "=f"(lse.y) : "r"(s_lse + c * 4));
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(dsum.x), "=f"(dsum.y) : "r"(s_dsum + c * 4));
        const float nl0 = -(lse.x * kLog2e), nl1 = -(lse.y * kLog2e);
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          float p0 = ex2(fmaf(st[nt][2 * hi], sl2, nl0));
          float p1 = ex2(fmaf(st[nt][2 * hi + 1], sl2, nl1));
          if (masked) {
            const int key = n0 + warp_row0 + g + 8 * hi, query = m0 + c;
            if (query >= L || (CAUSAL && key > query)) p0 = 0.f;
            if (query + 1 >= L || (CAUSAL && key > query + 1)) p1 = 0.f;
          }
          const float ds0 = p0 * (dpt[nt][2 * hi] - dsum.x);
          const float ds1 = p1 * (dpt[nt][2 * hi + 1] - dsum.y);
          pa[nt / 2][2 * (nt & 1) + hi] = ptx::cvt_rn_pair<T>(p0, p1);
          dsa[nt / 2][2 * (nt & 1) + hi] = ptx::cvt_rn_pair<T>(ds0, ds1);
        }
      }

      /* dV += P^T dO and dK += dS^T Q (dO and Q as B operands through ldmatrix.trans) */
      warp_mma_rows_trans<Tr, T>(dv, pa, s_do + laneA, q_off);
      warp_mma_rows_trans<Tr, T>(dk, dsa, s_q + laneA, q_off);
    }
    stage ^= 1;
  }
  ptx::cp_async_wait_group<0>();
  __syncwarp();

  /* epilogue: dK * scale and dV, staged in the warp's own K and V rows */
  const long long out_off = head_off + static_cast<long long>(n0 + warp_row0) * rs;
  const int valid = L - n0 - warp_row0;
  store_warp_rows<Tr, T>(dk, a.scale, sK, warp_row0, static_cast<uint16_t *>(a.dk) + out_off, rs, valid, lane);
  store_warp_rows<Tr, T>(dv, 1.f, sV, warp_row0, static_cast<uint16_t *>(a.dv) + out_off, rs, valid, lane);
}

/* ---- kernel 3: dQ of BM query rows, walking the key blocks ---- */

template <class Tr, kv_dtype STORE, bool CAUSAL>
__global__ void __launch_bounds__(Tr::kDqThreads, Tr::kMinBlocksPerSm) fa2bwd_dq_kernel(const kv_fa2bwd_args a) {
  constexpr int D = Tr::kHeadDim, BM = Tr::kBlockM, BN = Tr::kBlockN, SUB = Tr::kDqSubN;
  constexpr int KT = D / 16, DT = D / 8, SNT = SUB / 8, SKK = SUB / 16, NTHR = Tr::kDqThreads;
  using T = storage_t<STORE>;

  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  /* causal: the heaviest query blocks (most key blocks) first */
  const int L = a.seqlen, H = a.heads;
  const int n_mblocks = (L + BM - 1) / BM;
  const int mb = CAUSAL ? n_mblocks - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
  const int m0 = mb * BM;
  const int h = static_cast<int>(blockIdx.y % static_cast<unsigned>(H));
  const long long b = blockIdx.y / static_cast<unsigned>(H);
  const long long rs = static_cast<long long>(H) * D;
  const long long head_off = b * L * rs + h * D;
  const long long stat_off = b * L * H + h;

  /* key blocks [0, n_end); those from n_unmasked on need the mask */
  int n_end, n_unmasked;
  kv_fa2_common::key_tiles<CAUSAL, BM, BN>(m0, L, L, n_end, n_unmasked);

  const uint32_t sQ = ptx::smem_addr(smem), sDO = sQ + Tr::kQTileBytes, sStages = sQ + Tr::kDqStagesOffset;

  const uint16_t *kg = static_cast<const uint16_t *>(a.k) + head_off;
  const uint16_t *vg = static_cast<const uint16_t *>(a.v) + head_off;
  auto load_key_block = [&](int n, int stage) {
    const long long off = static_cast<long long>(n) * BN * rs;
    const uint32_t s_k = sStages + stage * Tr::kDqStageBytes;
    load_rows<Tr, BN, NTHR>(s_k, kg + off, rs, L - n * BN, tid);
    load_rows<Tr, BN, NTHR>(s_k + Tr::kKvTileBytes, vg + off, rs, L - n * BN, tid);
  };

  /* this block's Q and dO, with the first key block */
  {
    const long long off = head_off + static_cast<long long>(m0) * rs;
    load_rows<Tr, BM, NTHR>(sQ, static_cast<const uint16_t *>(a.q) + off, rs, L - m0, tid);
    load_rows<Tr, BM, NTHR>(sDO, static_cast<const uint16_t *>(a.dout) + off, rs, L - m0, tid);
  }
  load_key_block(0, 0);
  ptx::cp_async_commit_group();

  /* the lane's two rows g and g + 8: -lse * log2(e) and D */
  const int warp_row0 = warp * 16;
  float neg_lse_l2[2], dsum[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    const int i = m0 + warp_row0 + g + 8 * hi;
    const bool live = i < L;
    neg_lse_l2[hi] = live ? -(a.lse[stat_off + static_cast<long long>(i) * H] * kLog2e) : 0.f;
    dsum[hi] = live ? a.dsum[stat_off + static_cast<long long>(i) * H] : 0.f;
  }

  /* ldmatrix lane bases: A pattern (Q, dO; K through .trans), B pattern (K, V) */
  const uint32_t laneA = lane_base_a<Tr>(lane), laneB = lane_base_b<Tr>(lane);
  const uint32_t q_lane = sQ + warp_row0 * Tr::kRowBytes + laneA, do_lane = sDO + warp_row0 * Tr::kRowBytes + laneA;

  uint32_t qf[Tr::kQdoInRegs ? KT : 1][4], dof[Tr::kQdoInRegs ? KT : 1][4];
  if constexpr (Tr::kQdoInRegs) load_resident_rows<Tr>(qf, dof, q_lane, do_lane);

  float dq[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[dt][e] = 0.f;

  const float sl2 = a.scale_log2;
  int stage = 0;
  for (int n = 0; n < n_end; ++n) {
    ptx::cp_async_wait_group<0>();
    kv::block_sync();
    if (n + 1 < n_end) load_key_block(n + 1, stage ^ 1);
    ptx::cp_async_commit_group();

    const uint32_t s_k = sStages + stage * Tr::kDqStageBytes, s_v = s_k + Tr::kKvTileBytes;
    const bool masked = n >= n_unmasked;

#pragma unroll
    for (int sub = 0; sub < BN / SUB; ++sub) {
      const int k_off = sub * SUB; /* first key of the step within the block */

      /* S = Q K^T and dP = dO V^T for the warp's 16 rows and the step's keys */
      float s[SNT][4], dp[SNT][4];
      warp_dot_rows<Tr, T, Tr::kQdoInRegs>(s, qf, q_lane, s_k + laneB, k_off);
      warp_dot_rows<Tr, T, Tr::kQdoInRegs>(dp, dof, do_lane, s_v + laneB, k_off);

      /* dS = P (dP - D), rounded to T as the A operand of k-step kk (keys 16 kk .. 16 kk + 15) */
      uint32_t dsa[SKK][4];
#pragma unroll
      for (int nt = 0; nt < SNT; ++nt) {
        const int key = n * BN + k_off + nt * 8 + 2 * t4; /* the lane's first key */
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          float p0 = ex2(fmaf(s[nt][2 * hi], sl2, neg_lse_l2[hi]));
          float p1 = ex2(fmaf(s[nt][2 * hi + 1], sl2, neg_lse_l2[hi]));
          if (masked) {
            const int query = m0 + warp_row0 + g + 8 * hi;
            if (key >= L || (CAUSAL && key > query)) p0 = 0.f;
            if (key + 1 >= L || (CAUSAL && key + 1 > query)) p1 = 0.f;
          }
          const float ds0 = p0 * (dp[nt][2 * hi] - dsum[hi]);
          const float ds1 = p1 * (dp[nt][2 * hi + 1] - dsum[hi]);
          dsa[nt / 2][2 * (nt & 1) + hi] = ptx::cvt_rn_pair<T>(ds0, ds1);
        }
      }

      /* dQ += dS K (K as the B operand through ldmatrix.trans) */
      warp_mma_rows_trans<Tr, T>(dq, dsa, s_k + laneA, k_off);
    }
    stage ^= 1;
  }
  ptx::cp_async_wait_group<0>();
  __syncwarp();

  /* epilogue: dQ * scale, staged in the warp's own Q rows */
  const long long out_off = head_off + static_cast<long long>(m0 + warp_row0) * rs;
  store_warp_rows<Tr, T>(dq, a.scale, sQ, warp_row0, static_cast<uint16_t *>(a.dq) + out_off, rs, L - m0 - warp_row0,
                         lane);
}

/* ---- host side of one configuration: prepare once, launch many times ---- */

/* Blocks of the D kernel: one per kDsumRowsPerBlock query rows of all batches and heads. */
template <class Tr>
long long dsum_blocks(const kv_fa2bwd_args &a) {
  const long long rows = static_cast<long long>(a.batch) * a.seqlen * a.heads;
  return (rows + Tr::kDsumRowsPerBlock - 1) / Tr::kDsumRowsPerBlock;
}

/* The launch limits of the grids both variants share (kval-wgmma runs this D kernel too):
 * batch x heads in gridDim.y, the D kernel's blocks in gridDim.x; nullptr where they hold. */
template <class Tr>
const char *grid_refusal(const kv_fa2bwd_args &a) {
  if (static_cast<long long>(a.batch) * a.heads > 65535)
    return "fa2bwd kernel: batch x heads exceeds 65535 (the grid's y dimension)";
  if (dsum_blocks<Tr>(a) > INT_MAX) return "fa2bwd kernel: too many rows for the D kernel's grid (blocks > 2^31 - 1)";
  return nullptr;
}

template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t launch(const kv_fa2bwd_problem &pr, cudaStream_t stream) {
  const kv_fa2bwd_args &a = pr.a;
  if (a.batch == 0 || a.seqlen == 0) return cudaSuccess;
  const unsigned heads_total = static_cast<unsigned>(a.batch) * static_cast<unsigned>(a.heads);
  fa2bwd_dsum_kernel<Tr, STORE><<<static_cast<unsigned>(dsum_blocks<Tr>(a)), Tr::kDsumThreads, 0, stream>>>(a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const dim3 dkdv_grid((a.seqlen + Tr::kBlockN - 1) / Tr::kBlockN, heads_total);
  fa2bwd_dkdv_kernel<Tr, STORE, CAUSAL><<<dkdv_grid, Tr::kDkdvThreads, Tr::kDkdvSmemBytes, stream>>>(a);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const dim3 dq_grid((a.seqlen + Tr::kBlockM - 1) / Tr::kBlockM, heads_total);
  fa2bwd_dq_kernel<Tr, STORE, CAUSAL><<<dq_grid, Tr::kDqThreads, Tr::kDqSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t info(kv_kernel_resources *out) {
  return kv_fa2_common::kernel_info<typename Tr::dkdv_shape>(fa2bwd_dkdv_kernel<Tr, STORE, CAUSAL>, out);
}

/* The grids checked against the launch limits (batch x heads in gridDim.y, the D kernel's
 * blocks in gridDim.x), the shared-memory limits raised where a kernel needs more than 48 KB,
 * launch and info set. */
template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t prepare(kv_fa2bwd_problem *pr, const char **why) {
  if ((*why = grid_refusal<Tr>(pr->a))) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  if (Tr::kDkdvSmemBytes > 48 * 1024)
    e = cudaFuncSetAttribute(fa2bwd_dkdv_kernel<Tr, STORE, CAUSAL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Tr::kDkdvSmemBytes);
  if (e == cudaSuccess && Tr::kDqSmemBytes > 48 * 1024)
    e = cudaFuncSetAttribute(fa2bwd_dq_kernel<Tr, STORE, CAUSAL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Tr::kDqSmemBytes);
  if (e != cudaSuccess) return e;
  pr->launch = launch<Tr, STORE, CAUSAL>;
  pr->info = info<Tr, STORE, CAUSAL>;
  return cudaSuccess;
}

}  // namespace kv_fa2bwd

/* The instantiations kval runs (kv_fa2bwd_traits<D>), explicitly instantiated per head dim. */
template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2bwd_mma_prepare(kv_fa2bwd_problem *pr, const char **why) {
  return kv_fa2bwd::prepare<kv_fa2bwd_traits<D>, STORE, CAUSAL>(pr, why);
}

#define KV_FA2BWD_INSTANTIATE(D, STORE)                                                            \
  template cudaError_t kv_fa2bwd_mma_prepare<D, STORE, false>(kv_fa2bwd_problem *, const char **); \
  template cudaError_t kv_fa2bwd_mma_prepare<D, STORE, true>(kv_fa2bwd_problem *, const char **);

#endif
