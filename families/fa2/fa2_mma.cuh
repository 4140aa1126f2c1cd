/* fa2_mma.cuh - kval-mma, the FlashAttention-2 forward kernel template (mma.sync) and its host
 * side per configuration (prepare once: grid check, shared-memory limit; launch). Included only
 * by the instantiation files families/fa2/inst/fa2_mma_d<D>.cu (and by the bench driver's tile
 * ladder, families/fa2/bench/fa2_ladder_d<D>.cu); everything else calls it through fa2_api.h.
 *
 * Algorithm (one thread block = BM query rows of one (batch, head); 4 warps, split-Q: warp w
 * owns 16 * MT consecutive rows and every key, so no inter-warp reduction):
 *   The Q tile goes to shared memory by cp.async (16 bytes, rows past seqlen zero-filled) and,
 *   where the traits say so, into registers once. K/V tiles of BN keys walk a STAGES-deep
 *   cp.async ring in ascending key order (the CPU emulation's order); tiles wholly above the
 *   causal diagonal are never loaded. Per tile: wait, one barrier, issue the loads of tile
 *   n + STAGES - 1 (before any math, so they overlap S, the softmax and P.V), then
 *   S = Q K^T (ldmatrix, mma.sync m16n8k16); the mask (keys >= seqlen_k, and above the
 *   bottom-right aligned causal diagonal) runs only in the last tiles that need it (a
 *   warp-uniform branch) and sets scores to -inf; online softmax in the log2 domain: the row
 *   max of the raw scores across the 4 lanes of a row by shuffles, p = ex2(S * scale*log2e -
 *   max * scale*log2e) in one FFMA + ex2.approx; O rescaled; P rounded to the storage type in
 *   registers and fed to P.V as the A operand (V through ldmatrix.trans). The row sum stays
 *   per lane until the end; the final normalisation, the LSE and the output store (staged
 *   through the warp's own Q rows in shared memory, 16-byte coalesced stores) happen once.
 *   Fully masked rows (causal with seqlen_k < seqlen) keep max -inf: the subtracted max is
 *   taken as 0 so no inf - inf appears; their sum stays 0, the output is 0 and the LSE -inf.
 *   Shared memory layout and swizzle: fa2_mma_traits.h.
 *
 * Precision (the comment block docs/NUMERICS.md copies; CPU model: families/fa2/fa2_emulate.c):
 *   Inputs Q, K, V and the output O are in the storage type (fp16 or bf16), rounded to nearest
 *   even; the LSE is fp32 (natural log).
 *   Exactly two products use the case's accumulator; everything else is fp32:
 *   - S = Q K^T: per m16n8 tile, D/16 mma k-steps of 16 products each.
 *       fp32 accumulation: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32,
 *         plain fp32 accumulators.
 *       fp16 accumulation: mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16: fp16
 *         accumulators between k-steps (the tensor core's own rounding inside a step);
 *         converted exactly to fp32 for the softmax.
 *       bf16 accumulation (model): the fp32 mma, and after every k-step the accumulators are
 *         rounded to bf16 (round to nearest even).
 *   - O += P V: per m16n8 output tile, BN/16 k-steps of 16 keys per key tile, into a running
 *       output accumulator with the same three modes (fp16: native f16 mma accumulators that
 *       persist across key tiles; bf16: rounded after every k-step). The per-tile rescale
 *       O *= alpha is an fp32 multiply whose product is rounded back to the accumulator type
 *       (fp16: cvt.rn.f16x2.f32; bf16: round to nearest even).
 *   - Softmax statistics always fp32: the row max m of the raw (unscaled) scores; with
 *     m' = new max (0 when -inf): alpha = ex2((m - m') * scale_log2), p = ex2(fma(S,
 *     scale_log2, -(m' * scale_log2))) (ex2.approx.ftz); the row sum adds the unrounded fp32 p
 *     (per lane in key order, the 4 lanes of a row added at the end) and is rescaled by alpha.
 *   - P is rounded to the storage type (round to nearest even) before P.V.
 *   - Epilogue in fp32: O * (1 / rowsum) rounded once to the storage type (rowsum 0: output 0);
 *     LSE = m * scale + log(rowsum), -inf when rowsum is 0. */
#ifndef KVAL_FA2_MMA_CUH
#define KVAL_FA2_MMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <climits>
#include <type_traits>

#include "families/fa2/fa2_api.h"
#include "families/fa2/fa2_common.cuh"
#include "families/fa2/fa2_mma_traits.h"
#include "families/device/sm80.cuh"

namespace kv_fa2 {

namespace ptx = kv::ptx;
using kv_fa2_common::ex2;
using kv_fa2_common::storage_t;

/* ---- accumulator fragments of one m16n8 tile: rows g and g+8, columns 2t and 2t+1 ----
 * fp32: four floats. fp16: two fp16 pairs, the native mma accumulator. bf16: two bf16 pairs;
 * each mma unpacks them exactly to fp32, runs the fp32 mma (one k-step) and rounds the result
 * back to bf16 pairs: the rounding after every k-step, with half the registers. */

template <kv_dtype ACC>
struct acc_frag {
  uint32_t h[2]; /* 16-bit pairs: row g (cols 2t, 2t+1), row g+8 */
};
template <>
struct acc_frag<KV_FP32> {
  float v[4]; /* (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) */
};

template <kv_dtype ACC>
__device__ __forceinline__ void frag_zero(acc_frag<ACC> &c) {
  if constexpr (ACC == KV_FP32)
    c.v[0] = c.v[1] = c.v[2] = c.v[3] = 0.f;
  else
    c.h[0] = c.h[1] = 0u;
}
/* c += a b for inputs of type T (__half or __nv_bfloat16). */
template <class T, kv_dtype ACC>
__device__ __forceinline__ void frag_mma(acc_frag<ACC> &c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (ACC == KV_FP32) {
    ptx::mma_m16n8k16_f32<T>(c.v, a, b0, b1);
  } else if constexpr (ACC == KV_FP16) {
    ptx::mma_m16n8k16_f16(c.h, a, b0, b1);
  } else {
    float f[4] = {ptx::bf16x2_lo(c.h[0]), ptx::bf16x2_hi(c.h[0]), ptx::bf16x2_lo(c.h[1]), ptx::bf16x2_hi(c.h[1])};
    ptx::mma_m16n8k16_f32<T>(f, a, b0, b1);
    c.h[0] = ptx::cvt_rn_pair<__nv_bfloat16>(f[0], f[1]);
    c.h[1] = ptx::cvt_rn_pair<__nv_bfloat16>(f[2], f[3]);
  }
}
/* c0 += a (b[0], b[1]) and c1 += a (b[2], b[3]): two adjacent n8 tiles, whose B fragments
 * one ldmatrix x4 loads. */
template <class T, kv_dtype ACC>
__device__ __forceinline__ void frag_mma_x2(acc_frag<ACC> &c0, acc_frag<ACC> &c1, const uint32_t (&a)[4],
                                            const uint32_t (&b)[4]) {
  frag_mma<T, ACC>(c0, a, b[0], b[1]);
  frag_mma<T, ACC>(c1, a, b[2], b[3]);
}
/* Element e (0..3: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)) as fp32, exactly. */
template <kv_dtype ACC>
__device__ __forceinline__ float frag_get(const acc_frag<ACC> &c, int e) {
  if constexpr (ACC == KV_FP32)
    return c.v[e];
  else if constexpr (ACC == KV_FP16)
    return (e & 1) ? ptx::f16x2_hi(c.h[e >> 1]) : ptx::f16x2_lo(c.h[e >> 1]);
  else
    return (e & 1) ? ptx::bf16x2_hi(c.h[e >> 1]) : ptx::bf16x2_lo(c.h[e >> 1]);
}
/* Rows g and g+8 multiplied by fa and fb in fp32, the products rounded to the accumulator
 * type. */
template <kv_dtype ACC>
__device__ __forceinline__ void frag_rescale(acc_frag<ACC> &c, float fa, float fb) {
  if constexpr (ACC == KV_FP32) {
    c.v[0] *= fa;
    c.v[1] *= fa;
    c.v[2] *= fb;
    c.v[3] *= fb;
  } else {
    using T = std::conditional_t<ACC == KV_FP16, __half, __nv_bfloat16>;
    c.h[0] = ptx::cvt_rn_pair<T>(frag_get(c, 0) * fa, frag_get(c, 1) * fa);
    c.h[1] = ptx::cvt_rn_pair<T>(frag_get(c, 2) * fb, frag_get(c, 3) * fb);
  }
}

/* ---- the kernel ---- */

template <class Tr, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) fa2_fwd_kernel(const kv_fa2_args a) {
  constexpr int D = Tr::kHeadDim, BM = Tr::kBlockM, BN = Tr::kBlockN, ST = Tr::kStages;
  constexpr int MT = Tr::kMTiles, NT = BN / 8, KT = D / 16, DT = D / 8, KK = BN / 16;
  constexpr int CPR = Tr::kRowChunks, RS = Tr::kRowStride, NTHR = Tr::kThreads;
  static_assert(ACC != KV_FP16 || STORE == KV_FP16, "fp16 accumulation needs fp16 storage");
  static_assert(ACC != KV_BF16 || STORE == KV_BF16, "bf16 accumulation needs bf16 storage");
  using T = storage_t<STORE>;

  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  /* block -> (m block, head, batch); causal: heaviest m blocks first */
  const int Lq = a.seqlen_q, Lk = a.seqlen_k;
  const int n_mblocks = (Lq + BM - 1) / BM;
  int mb = static_cast<int>(blockIdx.x % static_cast<unsigned>(n_mblocks));
  const unsigned bh = blockIdx.x / static_cast<unsigned>(n_mblocks);
  const int h = static_cast<int>(bh % static_cast<unsigned>(a.heads));
  const long long b = bh / static_cast<unsigned>(a.heads);
  if (CAUSAL) mb = n_mblocks - 1 - mb;
  const int m0 = mb * BM;
  const long long rs = static_cast<long long>(a.heads) * D; /* elements between rows */
  const uint16_t *qg = static_cast<const uint16_t *>(a.q) + (b * Lq + m0) * rs + h * D;
  const long long kv_off = b * Lk * rs + h * D; /* K and V of this (batch, head) */

  const int shift = Lk - Lq; /* causal: row i sees keys j <= i + shift */
  int n_end, n_free;
  kv_fa2_common::key_tiles<CAUSAL, BM, BN>(m0, Lq, Lk, n_end, n_free);

  const uint32_t sQ = ptx::smem_addr(smem);
  const uint32_t sK = sQ + Tr::kQBytes;
  const uint32_t sV = sK + ST * Tr::kTileBytes;

  /* cp.async of one tile of R rows (rows >= valid are zero-filled). TPR threads share a row,
   * each copying chunks c0, c0 + 8, ...; passes step RSTEP rows (a multiple of 8, so the
   * swizzle of row r0 + i * RSTEP is that of r0 plus a constant). */
  constexpr int TPR = CPR < 8 ? CPR : 8, RSTEP = NTHR / TPR, CGROUPS = (CPR + 7) / 8;
  static_assert(RSTEP % 8 == 0, "loader passes keep the swizzle phase");
  const int ld_r0 = tid / TPR, ld_c0 = tid % TPR;
  const uint32_t ld_soff = Tr::swz(ld_r0, ld_c0) * 16;
  const long long ld_goff = (ld_r0 * rs + ld_c0 * 8) * 2, ld_step = RSTEP * rs * 2; /* bytes */
  auto load_tile = [&](uint32_t s_tile, const uint16_t *g_tile, int valid, auto rows_tag) {
    constexpr int R = decltype(rows_tag)::value;
    static_assert(R % RSTEP == 0, "whole loader passes");
    const char *src = reinterpret_cast<const char *>(g_tile) + ld_goff;
#pragma unroll
    for (int i = 0; i < R / RSTEP; ++i, src += ld_step) {
      const bool ok = ld_r0 + i * RSTEP < valid; /* else read nothing from the tile's first row */
      const char *p = ok ? src : reinterpret_cast<const char *>(g_tile);
#pragma unroll
      for (int j = 0; j < CGROUPS; ++j)
        if (8 * j + 8 <= CPR || ld_c0 + 8 * j < CPR)
          ptx::cp_async_16(s_tile + ld_soff + (i * RSTEP * RS + 8 * j) * 16, p + (ok ? 128 * j : 0), ok ? 16 : 0);
    }
  };
  using rows_m = std::integral_constant<int, BM>;
  using rows_n = std::integral_constant<int, BN>;
  auto load_kv = [&](int n, int stage) {
    const long long off = static_cast<long long>(n) * BN * rs;
    load_tile(sK + stage * Tr::kTileBytes, static_cast<const uint16_t *>(a.k) + kv_off + off, Lk - n * BN, rows_n{});
    load_tile(sV + stage * Tr::kTileBytes, static_cast<const uint16_t *>(a.v) + kv_off + off, Lk - n * BN, rows_n{});
  };

  /* ldmatrix lane addresses. A pattern (Q, and V through .trans): lane l addresses row l & 15,
   * chunk 2 kt + (l >> 4); B pattern (K): row (l & 7) + 8 (l >> 4), chunk 2 kt + ((l >> 3) & 1).
   * With bx = tile + lane row * RS * 16 + x (x: the lane's swizzled chunk bit, fa2_mma_traits.h;
   * tiles and 8-row groups start on 128-byte boundaries in the XOR layouts) the 16x16 block at
   * (row_off, k-step kt) is at (bx ^ 32 (kt % 4)) + 128 (kt / 4) + row_off * RS * 16 (XOR
   * layouts) or bx + 32 kt + row_off * RS * 16 (padded layout): one LOP3 and an immediate. */
  const int warp_row0 = warp * 16 * MT; /* first row of this warp within the block */
  const int rowA = lane & 15, bitA = lane >> 4;
  const int rowB = (lane & 7) + ((lane >> 4) << 3), bitB = (lane >> 3) & 1;
  const uint32_t laneA = Tr::swz(rowA, bitA) * 16, laneB = Tr::swz(rowB, bitB) * 16;
#define KV_FA2_AT(bx, row_off, kt)                                                          \
  (Tr::kPadded ? (bx) + (kt) * 32 + (row_off) * RS * 16                                    \
               : (((bx) ^ (((kt) % 4) * 32)) + ((kt) / 4) * 128 + (row_off) * RS * 16))
  /* the Q base passes through an opaque move every tile, so the compiler recomputes the
   * per-k-step addresses instead of holding them in registers across the loop */
  auto q_base = [&]() {
    uint32_t r;
    asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(sQ + warp_row0 * RS * 16 + laneA));
    return r;
  };

  acc_frag<ACC> o[MT][DT];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) frag_zero(o[mt][dt]);
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) row_max[mt][0] = row_max[mt][1] = -INFINITY, row_sum[mt][0] = row_sum[mt][1] = 0.f;

  const float sl2 = a.scale_log2;

  if (n_end > 0) {
    load_tile(sQ, qg, Lq - m0, rows_m{});
    ptx::cp_async_commit_group();
#pragma unroll
    for (int s = 0; s < ST - 1; ++s) {
      if (s < n_end) load_kv(s, s);
      ptx::cp_async_commit_group();
    }

    uint32_t qf[Tr::kQInRegs ? MT : 1][Tr::kQInRegs ? KT : 1][4];
    if constexpr (Tr::kQInRegs) {
      ptx::cp_async_wait_group<ST - 1>();
      kv::block_sync();
      const uint32_t bq = q_base();
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) ptx::ldmatrix_x4(qf[mt][kt], KV_FA2_AT(bq, mt * 16, kt));
    }

    /* key tiles in ascending order (as the CPU emulation); tile n sits in ring slot `stage` */
    int stage = 0;
    for (int n = 0; n < n_end; ++n) {
      ptx::cp_async_wait_group<ST - 2>();
      kv::block_sync();
      {
        const int ahead = n + ST - 1;
        if (ahead < n_end) load_kv(ahead, stage == 0 ? ST - 1 : stage - 1);
        ptx::cp_async_commit_group();
      }
      const uint32_t bk = sK + stage * Tr::kTileBytes + laneB, bv = sV + stage * Tr::kTileBytes + laneA;

      /* S = Q K^T for the warp's rows */
      float s[MT][NT][4];
      {
        const uint32_t bq = q_base();
        acc_frag<ACC> sa[MT][NT];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) frag_zero(sa[mt][nt]);
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) {
          uint32_t qa[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            if constexpr (Tr::kQInRegs) {
#pragma unroll
              for (int r = 0; r < 4; ++r) qa[mt][r] = qf[mt][kt][r];
            } else {
              ptx::ldmatrix_x4(qa[mt], KV_FA2_AT(bq, mt * 16, kt));
            }
          }
#pragma unroll
          for (int np = 0; np < NT / 2; ++np) {
            uint32_t kb[4];
            ptx::ldmatrix_x4(kb, KV_FA2_AT(bk, np * 16, kt));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) frag_mma_x2<T, ACC>(sa[mt][2 * np], sa[mt][2 * np + 1], qa[mt], kb);
          }
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][nt][e] = frag_get(sa[mt][nt], e);
      }

      /* mask: keys past seqlen_k and, causal, above the diagonal (only the first tiles) */
      if (n >= n_free) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int hi = 0; hi < 2; ++hi) {
            const int i = m0 + warp_row0 + mt * 16 + g + 8 * hi;
            const int lim = CAUSAL ? min(Lk - 1, i + shift) : Lk - 1; /* last visible key */
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (n * BN + nt * 8 + 2 * t4 + e > lim) s[mt][nt][2 * hi + e] = -INFINITY;
          }
      }

      /* online softmax: new row max (4 lanes share a row), rescale factors */
      float msc[MT][2], fac[MT][2], sum[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          float mx = row_max[mt][hi];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hi], s[mt][nt][2 * hi + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          msc[mt][hi] = mx == -INFINITY ? 0.f : mx * sl2;
          fac[mt][hi] = ex2((row_max[mt][hi] - (mx == -INFINITY ? 0.f : mx)) * sl2);
          row_max[mt][hi] = mx;
          sum[mt][hi] = 0.f;
        }

      /* p = exp2(S*sl2 - max*sl2), summed in fp32 and rounded to the storage type as the A
       * operand of P.V (k-step kk = keys 16kk..16kk+15) */
      uint32_t pa[MT][KK][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
#pragma unroll
          for (int r = 0; r < 4; ++r) { /* r: (row g | g+8) x (tile 2kk | 2kk+1) */
            const int hi = r & 1, nt = 2 * kk + (r >> 1);
            const float p0 = ex2(fmaf(s[mt][nt][2 * hi], sl2, -msc[mt][hi]));
            const float p1 = ex2(fmaf(s[mt][nt][2 * hi + 1], sl2, -msc[mt][hi]));
            sum[mt][hi] += p0 + p1;
            pa[mt][kk][r] = ptx::cvt_rn_pair<T>(p0, p1);
          }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        row_sum[mt][0] = row_sum[mt][0] * fac[mt][0] + sum[mt][0];
        row_sum[mt][1] = row_sum[mt][1] * fac[mt][1] + sum[mt][1];
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) frag_rescale(o[mt][dt], fac[mt][0], fac[mt][1]);
      }

      /* O += P V */
#pragma unroll
      for (int kk = 0; kk < KK; ++kk) {
#pragma unroll
        for (int dp = 0; dp < DT / 2; ++dp) {
          uint32_t vb[4];
          ptx::ldmatrix_x4_trans(vb, KV_FA2_AT(bv, kk * 16, dp));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) frag_mma_x2<T, ACC>(o[mt][2 * dp], o[mt][2 * dp + 1], pa[mt][kk], vb);
        }
      }
      stage = stage + 1 == ST ? 0 : stage + 1;
    }
  }
#undef KV_FA2_AT
  ptx::cp_async_wait_group<0>();
  __syncwarp();

  /* epilogue: normalise, LSE, stage the warp's rows in its own Q rows, 16-byte stores */
  const long long lse_row0 = (b * Lq + m0) * a.heads + h;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float l = row_sum[mt][hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const bool live = l > 0.f;
      const float inv = live ? 1.f / l : 0.f;
      const int r = warp_row0 + mt * 16 + g + 8 * hi;
      if (t4 == 0 && m0 + r < Lq)
        a.lse[lse_row0 + static_cast<long long>(r) * a.heads] = live ? row_max[mt][hi] * a.scale + logf(l) : -INFINITY;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const uint32_t packed =
            ptx::cvt_rn_pair<T>(frag_get(o[mt][dt], 2 * hi) * inv, frag_get(o[mt][dt], 2 * hi + 1) * inv);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + Tr::swz(r, dt) * 16 + t4 * 4), "r"(packed));
      }
    }
  __syncwarp();
  uint16_t *og = static_cast<uint16_t *>(a.o) + (b * Lq + m0) * rs + h * D;
#pragma unroll
  for (int j = 0; j < 16 * MT * CPR / 32; ++j) {
    const int idx = lane + 32 * j, r = warp_row0 + idx / CPR, c = idx % CPR;
    if (m0 + r < Lq) {
      uint32_t v0, v1, v2, v3;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                   : "r"(sQ + Tr::swz(r, c) * 16));
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(og + r * rs + c * 8), "r"(v0), "r"(v1),
                   "r"(v2), "r"(v3)
                   : "memory");
    }
  }
}

/* ---- host side of one configuration: prepare once, launch many times ---- */

template <class Tr, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
cudaError_t launch(const kv_fa2_problem &pr, cudaStream_t stream) {
  const kv_fa2_args &a = pr.a;
  if (a.batch == 0 || a.seqlen_q == 0) return cudaSuccess;
  fa2_fwd_kernel<Tr, STORE, ACC, CAUSAL>
      <<<static_cast<unsigned>(kv_fa2_common::grid_blocks<Tr::kBlockM>(a)), Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

template <class Tr, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
cudaError_t info(kv_kernel_resources *out) {
  return kv_fa2_common::kernel_info<Tr>(fa2_fwd_kernel<Tr, STORE, ACC, CAUSAL>, out);
}

/* The grid checked against the launch limit, the shared-memory limit raised where the
 * configuration needs more than 48 KB, launch and info set. */
template <class Tr, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
cudaError_t prepare(kv_fa2_problem *pr, const char **why) {
  if (kv_fa2_common::grid_blocks<Tr::kBlockM>(pr->a) > INT_MAX) {
    *why = "fa2 kval-mma: grid too large (blocks > 2^31 - 1)";
    return cudaErrorInvalidValue;
  }
  if (Tr::kSmemBytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(fa2_fwd_kernel<Tr, STORE, ACC, CAUSAL>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes);
    if (e != cudaSuccess) return e;
  }
  pr->launch = launch<Tr, STORE, ACC, CAUSAL>;
  pr->info = info<Tr, STORE, ACC, CAUSAL>;
  return cudaSuccess;
}

}  // namespace kv_fa2

/* The instantiations kval runs (kv_fa2_traits<D>), explicitly instantiated per head dim. */
template <int D, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
cudaError_t kv_fa2_mma_prepare(kv_fa2_problem *pr, const char **why) {
  return kv_fa2::prepare<kv_fa2_traits<D>, STORE, ACC, CAUSAL>(pr, why);
}

#define KV_FA2_INSTANTIATE(D, STORE, ACC)                                                            \
  template cudaError_t kv_fa2_mma_prepare<D, STORE, ACC, false>(kv_fa2_problem *, const char **); \
  template cudaError_t kv_fa2_mma_prepare<D, STORE, ACC, true>(kv_fa2_problem *, const char **);

#endif
