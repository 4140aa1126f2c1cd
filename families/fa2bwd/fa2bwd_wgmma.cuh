/* fa2bwd_wgmma.cuh - kval-wgmma and kval-wgmma-fused, the Hopper (sm_90a) FlashAttention-2
 * backward kernels and their host side per configuration (prepare once: grid checks, seven TMA
 * descriptors, shared-memory limits; launch: three kernels on one stream, the fused variant a
 * counter reset before them). Included only by the instantiation files
 * families/fa2bwd/inst/fa2bwd_wgmma_d<D>.cu; everything else calls it through fa2bwd_api.h.
 * Configuration: fa2bwd_wgmma_traits.h.
 *
 * The algorithm and precision model are kval-mma's (fa2bwd_mma.cuh, whose D kernel runs first
 * here too), on wgmma and TMA: q, k, v, dout, dq, dk, dv are 4-D tensors [batch, seqlen, heads,
 * D] to TMA (boxes of 64 columns x 64 rows x 1 head x 1 batch, 128-byte swizzle): rows past
 * seqlen are zero-filled on load and clipped on store.
 *   dK/dV kernel: one CTA per 128 keys of one (batch, head); consumer warpgroup c owns keys
 *     64c..64c+63 and keeps dK and dV in fp32 registers while the CTA walks the query blocks of
 *     BQ rows in ascending order (causal: from the first block that sees one of its keys). The
 *     producer's thread 0 loads K and V once and Q, dO of every block into a ring of STAGES;
 *     each consumer copies the next block's lse and D into the other of its two buffers
 *     (cp.async, a warpgroup barrier before they are read) while it computes this one. Per
 *     block:
 *       S^T = K Q^T, dP^T = V dO^T   wgmma m64nBQk16, both operands K-major from shared memory
 *       P^T = ex2(S^T scale_log2 - lse log2(e)), dS^T = P^T (dP^T - D) in fp32; the mask
 *             (P = 0 for causal pairs with key > query and queries past seqlen) only in the
 *             blocks that hold such pairs
 *       dV += P^T dO, dK += dS^T Q   wgmma m64nDk16, P^T and dS^T rounded to the storage type as
 *             register A operands (the accumulator layout is the A-fragment layout), dO and Q
 *             read N-major (transpose bit); then the stage is released.
 *   dQ kernel: one CTA per 128 query rows (causal: the last rows first); consumer c owns rows
 *     64c.., dQ in registers, walking the key blocks of BK keys in ascending order (causal: up to
 *     the diagonal): S = Q K^T, dP = dO V^T (K-major), P and dS as above with keys past seqlen
 *     masked too, dQ += dS K (K N-major).
 *   Epilogues: dK, dQ times scale in fp32; every gradient rounded once to the storage type
 *   (round to nearest even), staged 128-byte swizzled in the warpgroup's own rows of the K, V or
 *   Q tile and stored by TMA.
 * Causal CTAs start by groups of heads of about a wave, in order of work within a group
 * (tile_of). Deterministic: no atomics, every output element is written by one thread, every
 * sum is taken in a fixed order (wgmma's k16 steps in ascending order, blocks in ascending
 * order).
 * kval-wgmma-fused (FUSED): no dQ kernel; the dK/dV kernel also computes each query block's
 * dQ share dS K (dS^T through shared memory) and two writer threads add the shares into the
 * fp32 workspace dq_accum in descending order of key blocks (a counter per query block, each
 * bulk add completed before the counter moves on; a head's key blocks start in that order
 * too), then dQ is written from it: deterministic as well. */
#ifndef KVAL_FA2BWD_WGMMA_CUH
#define KVAL_FA2BWD_WGMMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <climits>

#include "families/device/sm80.cuh"
#include "families/device/sm90.cuh"
#include "families/fa2/fa2_common.cuh"
#include "families/fa2/fa2_wgmma.cuh"
#include "families/fa2bwd/fa2bwd_api.h"
#include "families/fa2bwd/fa2bwd_mma.cuh"
#include "families/fa2bwd/fa2bwd_wgmma_fused.cuh"
#include "families/fa2bwd/fa2bwd_wgmma_traits.h"

namespace kv_fa2bwd_wgmma {

namespace ptx = kv::ptx;
using kv_fa2_common::ex2;
using kv_fa2_common::storage_t;

/* The tensor maps of a problem, in kv_fa2bwd_problem::maps. */
enum { MAP_Q = 0, MAP_K, MAP_V, MAP_DO, MAP_DQ, MAP_DK, MAP_DV, MAP_COUNT };
static_assert(MAP_COUNT <= KV_FA2BWD_MAPS, "kv_fa2bwd_problem holds every map");

/* d (+)= A B^T over the D features, A the 64 rows at a_base of a tile of a_rows rows, B the N
 * rows of a tile at b_base (both K-major: k-step kt = chunk kt / 4, 32 bytes (kt % 4) into its
 * rows); accumulate 0 at the first step. */
template <class T, int D, int N>
__device__ __forceinline__ void gemm_nt(float (&d)[N / 2], uint32_t a_base, int a_rows, uint32_t b_base) {
#pragma unroll
  for (int kt = 0; kt < D / 16; ++kt)
    ptx::wgmma_m64nNk16_f32<T, N, 0, 0>(d, ptx::wgmma_desc(a_base + (kt / 4) * a_rows * 128 + (kt % 4) * 32, 16, 1024),
                                        ptx::wgmma_desc(b_base + (kt / 4) * N * 128 + (kt % 4) * 32, 16, 1024), kt > 0);
}

/* d += A B: A the register fragments of K rows' k16 steps, B a tile of K rows x D at b_base
 * read N-major (k-step kk = 16 rows of 128 bytes further; D chunks K * 128 bytes apart). */
template <class T, int D, int K>
__device__ __forceinline__ void gemm_rs(float (&d)[D / 2], const uint32_t (&a)[K / 16][4], uint32_t b_base) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    ptx::wgmma_m64nNk16_rs_f32<T, D, 1>(d, a[kk], ptx::wgmma_desc(b_base + kk * 16 * 128, K * 128, 1024), 1);
}

/* d = A B: A the 64 x K tile at a_base read M-major (K rows of 128 bytes, 64 rows of A across
 * each), B the K rows at b_base read N-major, N columns of a chunk of a tile of b_rows rows
 * (k-step kk = 16 rows of 128 bytes further in both). */
template <class T, int N, int K>
__device__ __forceinline__ void gemm_tt(float (&d)[N / 2], uint32_t a_base, uint32_t b_base, int b_rows) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    ptx::wgmma_m64nNk16_f32<T, N, 1, 1>(d, ptx::wgmma_desc(a_base + kk * 16 * 128, K * 128, 1024),
                                        ptx::wgmma_desc(b_base + kk * 16 * 128, b_rows * 128, 1024), kk > 0);
}

/* The fp32 accumulators of an m64nN tile as the A fragments of k16 steps along N (rounded to
 * T): k-step kk = columns 16kk.. = column blocks 2kk and 2kk + 1; register r = (row | row + 8) x
 * (block 2kk | 2kk + 1). */
template <class T, int N>
__device__ __forceinline__ void to_frags(const float (&x)[N / 2], uint32_t (&f)[N / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int j = 4 * (2 * kk + (r >> 1)) + 2 * (r & 1);
      f[kk][r] = ptx::cvt_rn_pair<T>(x[j], x[j + 1]);
    }
}

template <int N>
__device__ __forceinline__ void settle(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) ptx::reg_fence(r[i]);
}
template <int K>
__device__ __forceinline__ void settle(uint32_t (&f)[K][4]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int r = 0; r < 4; ++r) ptx::reg_fence(f[k][r]);
}

/* x = A0 B0^T and y = A1 B1^T (gemm_nt; A0, A1 the 64 rows at a0, a1 of tiles of a_rows rows)
 * as two wgmma groups, returning once x is done: the caller computes with x while y is still in
 * the tensor cores (then wgmma_wait_group<0> and settle(y) before reading y). */
template <class T, int D, int N>
__device__ __forceinline__ void gemm_nt_pair(float (&x)[N / 2], uint32_t a0, uint32_t b0, float (&y)[N / 2], uint32_t a1,
                                             uint32_t b1, int a_rows) {
  ptx::wgmma_fence();
  gemm_nt<T, D, N>(x, a0, a_rows, b0);
  ptx::wgmma_commit_group();
  gemm_nt<T, D, N>(y, a1, a_rows, b1);
  ptx::wgmma_commit_group();
  ptx::wgmma_wait_group<1>();
  settle(x);
}

/* TMA loads of `rows` (a multiple of 64) rows from `row0` of a [batch, seqlen, heads, D]
 * tensor into a tile of `rows` rows at dst: one box per 64 columns and 64 rows. */
template <int D>
__device__ __forceinline__ void load_tile(unsigned char *dst, int rows, const CUtensorMap *map, uint64_t *bar, int h,
                                          int row0, int b) {
#pragma unroll
  for (int c = 0; c < D / 64; ++c)
    for (int r = 0; r < rows; r += 64) ptx::tma_load_4d(dst + c * rows * 128 + r * 128, map, bar, 64 * c, h, row0 + r, b);
}

/* The producer's one thread, in both kernels: the CTA's two resident tiles (ROWS rows from row0
 * of maps r0 and r1 into res0 and res1, completing on `once`), then the two tiles of the blocks
 * first .. first + count - 1 (BROWS rows each, of maps s0 and s1; WRAP: block numbers from
 * `count` on taken less count, a walk of blocks 0 .. count - 1 that starts at `first`) into
 * stage j % ST of the ring for the block's j-th load, refilling a stage only after its
 * consumers released it. */
template <int D, int ST, int ROWS, int BROWS, bool WRAP = false>
__device__ __forceinline__ void produce(uint64_t *once, unsigned char *res0, unsigned char *res1, const CUtensorMap *r0,
                                        const CUtensorMap *r1, int row0, unsigned char *stages, const CUtensorMap *s0,
                                        const CUtensorMap *s1, int first, int count, uint64_t *full, uint64_t *empty,
                                        int h, int b) {
  constexpr int kTileBytes = BROWS * D * 2;
  ptx::mbarrier_arrive_expect_tx(once, 2 * ROWS * D * 2);
  load_tile<D>(res0, ROWS, r0, once, h, row0, b);
  load_tile<D>(res1, ROWS, r1, once, h, row0, b);
  for (int j = 0; j < count; ++j) {
    const int s = j % ST, row = (WRAP ? kv_fa2bwd_rotated_block(j, first, count) : first + j) * BROWS;
    unsigned char *tile = stages + s * 2 * kTileBytes;
    if (j >= ST) ptx::mbarrier_wait_parity(&empty[s], ((j / ST) & 1) ^ 1);
    ptx::mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);
    load_tile<D>(tile, BROWS, s0, &full[s], h, row, b);
    load_tile<D>(tile + kTileBytes, BROWS, s1, &full[s], h, row, b);
  }
}

/* The warpgroup's 64 rows (from row `wrow` of a tile of `rows` rows at tile) of fp32
 * accumulators acc times `factor`, rounded to T, written swizzled into those rows of the tile
 * and stored by TMA to rows row0.. of the tensor (rows past seqlen clipped). */
template <class T, int D>
__device__ __forceinline__ void store_rows(const float (&acc)[D / 2], float factor, unsigned char *tile, int rows,
                                           int wrow, const CUtensorMap *map, int h, int row0, int b) {
  const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int jb = 0; jb < D / 8; ++jb)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = wrow + warp * 16 + g + 8 * hi;
      const uint32_t packed = ptx::cvt_rn_pair<T>(acc[4 * jb + 2 * hi] * factor, acc[4 * jb + 2 * hi + 1] * factor);
      unsigned char *dst = tile + (jb / 8) * rows * 128 + r * 128 + (((jb % 8) ^ (r % 8)) * 16) + t4 * 4;
      *reinterpret_cast<uint32_t *>(dst) = packed;
    }
  ptx::fence_proxy_async();
  ptx::bar_sync(1 + wrow / 64, 128);
  if (lt == 0) {
#pragma unroll
    for (int c = 0; c < D / 64; ++c) ptx::tma_store_4d(map, tile + c * rows * 128 + wrow * 128, 64 * c, h, row0, b);
    ptx::bulk_commit_group();
    ptx::bulk_wait_group_read<0>();
  }
}

/* The dynamic shared memory rounded up to 1024 bytes (128-byte swizzled tiles). */
__device__ __forceinline__ unsigned char *aligned_smem() {
  extern __shared__ unsigned char fa2bwd_wgmma_smem[];
  return reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(fa2bwd_wgmma_smem) + 1023) &
                                           ~static_cast<uintptr_t>(1023));
}

/* Thread 0 initialises the barriers: `once` (the tiles loaded once, one arrival), then ST
 * "full" barriers of full_arrivals arrivals and ST "empty" ones (every consumer warp); the CTA
 * waits for it. */
template <int ST, int CONSUMERS>
__device__ __forceinline__ void init_barriers(uint64_t *once, uint64_t *full, uint64_t *empty, int full_arrivals) {
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(once, 1);
    for (int s = 0; s < ST; ++s) {
      ptx::mbarrier_init(&full[s], full_arrivals);
      ptx::mbarrier_init(&empty[s], CONSUMERS * 4);
    }
    ptx::fence_mbarrier_init();
  }
  kv::block_sync();
}

/* The (block, batch x head) a CTA owns. The hardware starts CTAs in linear order (x fastest); with
 * the causal mask the blocks' work differs, so there the linear order walks groups of heads of
 * about 128 CTAs (a wave), and within a group every head's first block (`block` 0: the most
 * work), then every head's second, ...: a wave's last CTAs are the light ones, and the CTAs
 * that run together share their heads' Q and dO (K and V) blocks in L2. */
template <bool CAUSAL>
__device__ __forceinline__ void tile_of(int &block, int &bh) {
  if (CAUSAL) {
    const unsigned lin = blockIdx.x + gridDim.x * blockIdx.y;
    const unsigned group = max(1u, 128u / gridDim.x), per_group = group * gridDim.x;
    const unsigned g0 = lin / per_group * group, within = lin % per_group;
    const unsigned heads = min(group, gridDim.y - g0);
    block = static_cast<int>(within / heads);
    bh = static_cast<int>(g0 + within % heads);
  } else {
    block = static_cast<int>(blockIdx.x);
    bh = static_cast<int>(blockIdx.y);
  }
}

/* ---- the dK/dV kernel: 128 keys a CTA, walking the query blocks; fused: dQ's shares too ---- */

/* FUSED (kval-wgmma-fused): the CTA also computes each query block's dQ share dS K over its
 * 128 keys: both consumers write dS^T into a shared tile, consumer c multiplies it (read
 * M-major: queries) by the K tile's columns c D/2 .. (read N-major) for a 64 x D/2 share in
 * fp32, stored in accumulator order into a buffer that a writer thread adds into dq_accum
 * (write_dq); a head's key blocks start in descending order, so that every key block a CTA
 * waits for has started before it. */
template <class Tr, kv_dtype STORE, bool CAUSAL, bool FUSED>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    fa2bwd_wgmma_dkdv_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                             const __grid_constant__ CUtensorMap map_v, const __grid_constant__ CUtensorMap map_do,
                             const __grid_constant__ CUtensorMap map_dk, const __grid_constant__ CUtensorMap map_dv,
                             const kv_fa2bwd_args a) {
#if KV_SM90A
  constexpr int D = Tr::kHeadDim, BN = Tr::kKeys, BQ = Tr::kQueryRows, ST = Tr::kStages;
  using T = storage_t<STORE>;
  unsigned char *smem = aligned_smem();
  unsigned char *sk = smem, *sv = smem + Tr::kKvTileBytes, *stages = smem + Tr::kDkdvStagesOffset;
  unsigned char *sds = smem + Tr::kFusedDsOffset, *parts = smem + Tr::kFusedDqOffset;
  uint64_t *full_kv = reinterpret_cast<uint64_t *>(smem + (FUSED ? Tr::kFusedBarOffset : Tr::kDkdvBarOffset));
  uint64_t *full = full_kv + 1, *empty = full + ST, *dq_full = empty + ST, *dq_empty = dq_full + 2;

  const int L = a.seqlen, H = a.heads;
  int order, bh;
  tile_of<CAUSAL>(order, bh);
  const int kb = FUSED ? static_cast<int>(gridDim.x) - 1 - order : order;
  const int n0 = kb * BN, h = bh % H, b = bh / H;
  /* query blocks [m_begin, m_end); masked: those before m_unmasked (causal diagonal), those
   * from m_tail on (rows past seqlen) and, fused, every block of a key block that ends past
   * seqlen (its keys past seqlen must add nothing to dQ; the two passes clip their dK, dV rows) */
  const int m_end = (L + BQ - 1) / BQ;
  const int m_begin = CAUSAL ? kv_fa2bwd_diagonal_block(kb, BQ, BN) : 0;
  const int m_unmasked = CAUSAL ? (n0 + BN - 1 + BQ - 1) / BQ : 0;
  const int m_tail = L / BQ;
  const bool key_tail = n0 + BN > L;
  /* fused without the mask, kRotateWalks, a.dq_rotate set by prepare (kv_fa2bwd_rotated, and
   * the head's key blocks fit on the SMs at once: a CTA may wait for any key block of its
   * head): walk step `step` takes query block kv_fa2bwd_rotated_block(step, m_first, m_end) */
  constexpr bool kRotate = FUSED && !CAUSAL && Tr::kRotateWalks;
  const int m_first = kRotate && a.dq_rotate ? kv_fa2bwd_diagonal_block(kb, BQ, BN) : 0;
  auto walk = [=](int step) { return kv_fa2bwd_rotated_block(step, m_first, m_end); };

  if (FUSED && threadIdx.x == 0)
    for (int i = 0; i < 2; ++i) {
      ptx::mbarrier_init(&dq_full[i], 4 * Tr::kConsumers);
      ptx::mbarrier_init(&dq_empty[i], 1);
    }
  init_barriers<ST, Tr::kConsumers>(full_kv, full, empty, 1);

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<FUSED ? Tr::kFusedProducerRegs : Tr::kProducerRegs>();
    if (threadIdx.x == 0)
      produce<D, ST, BN, BQ, kRotate>(full_kv, sk, sv, &map_k, &map_v, n0, stages, &map_q, &map_do,
                                      kRotate ? m_first : m_begin, m_end - m_begin, full, empty, h, b);
    else if (FUSED && (threadIdx.x == 32 || threadIdx.x == 64))
      write_dq<D, BQ, BN, CAUSAL, kRotate>(parts, dq_full, dq_empty, a, kb, bh, m_begin, m_end, m_first,
                                           threadIdx.x / 64);
    return;
  }

  ptx::setmaxnreg_inc<FUSED ? Tr::kFusedConsumerRegs : Tr::kConsumerRegs>();
  const int cw = wg - 1, lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
  const int key0 = n0 + cw * 64 + warp * 16 + g; /* this lane's keys key0 and key0 + 8 */
  const float sl2 = a.scale_log2;
  const uint32_t k_base = ptx::smem_addr(sk) + cw * 64 * 128, v_base = ptx::smem_addr(sv) + cw * 64 * 128;
  /* fused: dQ's share reads K's columns cw D/2 .. (d 128: chunk cw; d 64: 64 bytes into it) */
  const uint32_t ds_base = ptx::smem_addr(sds), kq_base = ptx::smem_addr(sk) + (D == 128 ? cw * BN * 128 : cw * 64);
  /* this consumer's two buffers of {lse, D}: thread lt copies lse (lt < BQ) or D of query
   * row lt % BQ of a block (0 past seqlen: those pairs are masked) */
  const float *stats = reinterpret_cast<const float *>(smem + Tr::kDkdvStatsOffset) + cw * 2 * 2 * BQ;
  const long long stat0 = static_cast<long long>(b) * L * H + h;
  const float *stat_src = (lt < BQ ? a.lse : a.dsum) + stat0;
  const uint32_t stat_dst = ptx::smem_addr(stats) + lt * 4;
  const int row = lt % BQ;
  auto copy_stats = [=](int m, int buf) {
    const int q = m * BQ + row;
    kv_fa2bwd::cp_async_4(stat_dst + buf * 2 * BQ * 4, stat_src + (q < L ? static_cast<long long>(q) * H : 0),
                          q < L ? 4 : 0);
    ptx::cp_async_commit_group();
  };
  copy_stats(kRotate ? walk(0) : m_begin, 0);

  float dk[D / 2], dv[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dk[i] = dv[i] = 0.f;
  ptx::mbarrier_wait_parity(full_kv, 0);
  for (int step = m_begin; step < m_end; ++step) {
    const int m = kRotate ? walk(step) : step, i = step - m_begin, s = i % ST, m0 = m * BQ;
    unsigned char *sq = stages + s * Tr::kDkdvStageBytes;
    const uint32_t q_base = ptx::smem_addr(sq), do_base = q_base + Tr::kQTileBytes;
    const float *stat = stats + (i % 2) * 2 * BQ;
    ptx::cp_async_wait_group<0>();
    ptx::bar_sync(1 + cw, 128); /* this block's stats landed; the other buffer's readers are done */
    if (step + 1 < m_end) copy_stats(kRotate ? walk(step + 1) : step + 1, (i + 1) % 2);
    ptx::mbarrier_wait_parity(&full[s], (i / ST) & 1);

    /* S^T = K Q^T and dP^T = V dO^T: key rows x query columns, two groups, so that P^T is
     * computed while dP^T is in the tensor cores */
    float st[BQ / 2], dpt[BQ / 2];
    gemm_nt_pair<T, D, BQ>(st, k_base, q_base, dpt, v_base, do_base, BN);

    /* accumulator j: key key0 + 8 ((j / 2) % 2), query m0 + 8 (j / 4) + 2 t4 + j % 2 */
    const bool masked = m < m_unmasked || m >= m_tail || (FUSED && key_tail);
#pragma unroll
    for (int jb = 0; jb < BQ / 8; ++jb) {
      const int c = 8 * jb + 2 * t4;
      const float2 lse = *reinterpret_cast<const float2 *>(stat + c);
      const float neg_lse2[2] = {-(lse.x * kv_fa2bwd::kLog2e), -(lse.y * kv_fa2bwd::kLog2e)};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 4 * jb + e, key = key0 + 8 * (e / 2), query = m0 + c + e % 2;
        float p = ex2(fmaf(st[j], sl2, neg_lse2[e % 2]));
        if (masked && (query >= L || (FUSED && key >= L) || (CAUSAL && key > query))) p = 0.f;
        st[j] = p;
      }
    }
    uint32_t pf[BQ / 16][4];
    to_frags<T, BQ>(st, pf);
    settle(pf);
    ptx::wgmma_wait_group<0>();
    settle(dpt);
    settle(dv);

    /* dV += P^T dO in the tensor cores while dS^T = P^T (dP^T - D) is computed, then
     * dK += dS^T Q */
    if (Tr::kOverlapDv) {
      ptx::wgmma_fence();
      gemm_rs<T, D, BQ>(dv, pf, do_base);
      ptx::wgmma_commit_group();
    }
#pragma unroll
    for (int jb = 0; jb < BQ / 8; ++jb) {
      const float2 dsum = *reinterpret_cast<const float2 *>(stat + BQ + 8 * jb + 2 * t4);
#pragma unroll
      for (int e = 0; e < 4; ++e) dpt[4 * jb + e] = st[4 * jb + e] * (dpt[4 * jb + e] - (e % 2 ? dsum.y : dsum.x));
    }
    uint32_t dsf[BQ / 16][4];
    to_frags<T, BQ>(dpt, dsf);
    settle(dsf);
    /* fused: dS^T into shared tile i % kDsBuffers; with one tile once the other consumer's last
     * dQ product has read it (with two, its product of block i - 2 is done: it has passed the
     * barrier below for block i - 1) */
    const uint32_t dsq_base = ds_base + (i % Tr::kDsBuffers) * Tr::kDsBytes;
    if (FUSED) {
      if (Tr::kDsBuffers == 1) ptx::bar_sync(3, 256);
      put_rows<BQ>(sds + (i % Tr::kDsBuffers) * Tr::kDsBytes, dsf, cw * 64 + warp * 16);
      ptx::fence_proxy_async();
      ptx::bar_sync(4, 256);
    }
    settle(dk);

    /* dV, dK (and dQ's share where the registers allow: kDqWithDkdv) in one group */
    float dq[D / 4];
    ptx::wgmma_fence();
    if (!Tr::kOverlapDv) gemm_rs<T, D, BQ>(dv, pf, do_base);
    gemm_rs<T, D, BQ>(dk, dsf, q_base);
    if constexpr (FUSED && Tr::kDqWithDkdv) gemm_tt<T, D / 2, BN>(dq, dsq_base, kq_base, BN);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
    settle(dv);
    settle(dk);
    if constexpr (FUSED) {
      if (!Tr::kDqWithDkdv) {
        ptx::wgmma_fence();
        gemm_tt<T, D / 2, BN>(dq, dsq_base, kq_base, BN);
        ptx::wgmma_commit_group();
        ptx::wgmma_wait_group<0>();
      }
      settle(dq);
      /* this consumer's 64 x D/2 share in accumulator order (float4 j4 of thread lt at j4 x 128
       * + lt) into buffer i % 2 once its writer is done with block i - 2 */
      if (i >= 2) ptx::mbarrier_wait_parity(&dq_empty[i % 2], ((i / 2) & 1) ^ 1);
      float4 *part = reinterpret_cast<float4 *>(parts + (i % 2) * Tr::kDqPartBytes) + cw * (D / 16) * 128 + lt;
#pragma unroll
      for (int j4 = 0; j4 < D / 16; ++j4)
        part[j4 * 128] = make_float4(dq[4 * j4], dq[4 * j4 + 1], dq[4 * j4 + 2], dq[4 * j4 + 3]);
      ptx::fence_proxy_async();
      __syncwarp();
      if (lane == 0) ptx::mbarrier_arrive(&dq_full[i % 2]);
    }
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(&empty[s]);
  }

  /* epilogue: dK * scale and dV, staged in this warpgroup's K and V rows (fused: once the other
   * consumer's last dQ product, which reads every K row, is done) */
  if (FUSED) ptx::bar_sync(3, 256);
  store_rows<T, D>(dk, a.scale, sk, BN, cw * 64, &map_dk, h, n0 + cw * 64, b);
  store_rows<T, D>(dv, 1.f, sv, BN, cw * 64, &map_dv, h, n0 + cw * 64, b);
#endif
}

/* ---- the dQ kernel: 128 query rows a CTA, walking the key blocks ---- */
template <class Tr, kv_dtype STORE, bool CAUSAL>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    fa2bwd_wgmma_dq_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                           const __grid_constant__ CUtensorMap map_v, const __grid_constant__ CUtensorMap map_do,
                           const __grid_constant__ CUtensorMap map_dq, const kv_fa2bwd_args a) {
#if KV_SM90A
  constexpr int D = Tr::kHeadDim, BM = Tr::kRows, BK = Tr::kKeyBlock, ST = Tr::kStages;
  using T = storage_t<STORE>;
  unsigned char *smem = aligned_smem();
  unsigned char *sq = smem, *sdo = smem + Tr::kRowTileBytes, *stages = smem + Tr::kDqStagesOffset;
  uint64_t *full_q = reinterpret_cast<uint64_t *>(smem + Tr::kDqBarOffset);
  uint64_t *full = full_q + 1, *empty = full + ST;

  const int L = a.seqlen, H = a.heads;
  const int n_mblocks = (L + BM - 1) / BM;
  int rank, bh;
  tile_of<CAUSAL>(rank, bh);
  const int mb = CAUSAL ? n_mblocks - 1 - rank : rank; /* causal: the last rows first (most key blocks) */
  const int m0 = mb * BM, h = bh % H, b = bh / H;
  int n_end, n_free; /* key blocks [0, n_end), those from n_free on masked */
  kv_fa2_common::key_tiles<CAUSAL, BM, BK>(m0, L, L, n_end, n_free);

  init_barriers<ST, Tr::kConsumers>(full_q, full, empty, 1);

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (threadIdx.x == 0)
      produce<D, ST, BM, BK>(full_q, sq, sdo, &map_q, &map_do, m0, stages, &map_k, &map_v, 0, n_end, full, empty, h, b);
    return;
  }

  ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
  const int cw = wg - 1, lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
  const int row0 = m0 + cw * 64 + warp * 16 + g; /* this lane's query rows row0 and row0 + 8 */
  const float sl2 = a.scale_log2;
  const uint32_t q_base = ptx::smem_addr(sq) + cw * 64 * 128, do_base = ptx::smem_addr(sdo) + cw * 64 * 128;
  float lse2[2], dsum[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    const int q = row0 + 8 * hi;
    const long long at = (static_cast<long long>(b) * L + q) * H + h;
    lse2[hi] = q < L ? a.lse[at] * kv_fa2bwd::kLog2e : 0.f;
    dsum[hi] = q < L ? a.dsum[at] : 0.f;
  }

  float dq[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dq[i] = 0.f;
  ptx::mbarrier_wait_parity(full_q, 0);
  for (int n = 0; n < n_end; ++n) {
    const int s = n % ST;
    const uint32_t k_base = ptx::smem_addr(stages + s * Tr::kDqStageBytes), v_base = k_base + Tr::kKeyTileBytes;
    ptx::mbarrier_wait_parity(&full[s], (n / ST) & 1);

    /* S = Q K^T and dP = dO V^T: query rows x key columns, two groups (P while dP is in the
     * tensor cores) */
    float sc[BK / 2], dp[BK / 2];
    gemm_nt_pair<T, D, BK>(sc, q_base, k_base, dp, do_base, v_base, BM);

    /* accumulator j: row row0 + 8 ((j / 2) % 2), key n BK + 8 (j / 4) + 2 t4 + j % 2 */
    const bool masked = n >= n_free;
#pragma unroll
    for (int j = 0; j < BK / 2; ++j) {
      const int hi = (j / 2) % 2, key = n * BK + 8 * (j / 4) + 2 * t4 + j % 2, query = row0 + 8 * hi;
      float p = ex2(fmaf(sc[j], sl2, -lse2[hi]));
      if (masked && (key >= L || (CAUSAL && key > query))) p = 0.f;
      sc[j] = p;
    }
    ptx::wgmma_wait_group<0>();
    settle(dp);
#pragma unroll
    for (int j = 0; j < BK / 2; ++j) dp[j] = sc[j] * (dp[j] - dsum[(j / 2) % 2]);
    uint32_t dsf[BK / 16][4];
    to_frags<T, BK>(dp, dsf);
    settle(dsf);
    settle(dq);

    /* dQ += dS K */
    ptx::wgmma_fence();
    gemm_rs<T, D, BK>(dq, dsf, k_base);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
    settle(dq);
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(&empty[s]);
  }

  /* epilogue: dQ * scale, staged in this warpgroup's Q rows */
  store_rows<T, D>(dq, a.scale, sq, BM, cw * 64, &map_dq, h, m0 + cw * 64, b);
#endif
}

/* ---- host side of one configuration: prepare once, launch many times ---- */

/* One launch: the D kernel, then the two passes (the dK/dV kernel, the dQ kernel) or, FUSED, the
 * counters cleared, the fused kernel and dQ from dq_accum. */
template <class Tr, kv_dtype STORE, bool CAUSAL, bool FUSED>
cudaError_t launch(const kv_fa2bwd_problem &pr, cudaStream_t stream) {
  using Mma = kv_fa2bwd_traits<Tr::kHeadDim>;
  const kv_fa2bwd_args &a = pr.a;
  const CUtensorMap *m = pr.maps;
  if (a.batch == 0 || a.seqlen == 0) return cudaSuccess;
  const unsigned heads_total = static_cast<unsigned>(a.batch) * static_cast<unsigned>(a.heads);
  const long long query_blocks = static_cast<long long>(heads_total) * ((a.seqlen + Tr::kQueryRows - 1) / Tr::kQueryRows);
  cudaError_t e = FUSED ? cudaMemsetAsync(a.dq_sem, 0, static_cast<size_t>(query_blocks) * sizeof(int), stream)
                        : cudaSuccess;
  if (e != cudaSuccess) return e;
  kv_fa2bwd::fa2bwd_dsum_kernel<Mma, STORE>
      <<<static_cast<unsigned>(kv_fa2bwd::dsum_blocks<Mma>(a)), Mma::kDsumThreads, 0, stream>>>(a);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const dim3 dkdv_grid((a.seqlen + Tr::kKeys - 1) / Tr::kKeys, heads_total);
  fa2bwd_wgmma_dkdv_kernel<Tr, STORE, CAUSAL, FUSED>
      <<<dkdv_grid, Tr::kThreads, FUSED ? Tr::kFusedSmemBytes : Tr::kDkdvSmemBytes, stream>>>(
          m[MAP_Q], m[MAP_K], m[MAP_V], m[MAP_DO], m[MAP_DK], m[MAP_DV], a);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  if (FUSED) {
    const long long vecs = query_blocks * Tr::kQueryRows * Tr::kHeadDim / 4;
    fa2bwd_dq_convert_kernel<Tr::kHeadDim, Tr::kQueryRows, STORE>
        <<<static_cast<unsigned>(std::min<long long>((vecs + 255) / 256, 1 << 20)), 256, 0, stream>>>(a);
    return cudaGetLastError();
  }
  const dim3 dq_grid((a.seqlen + Tr::kRows - 1) / Tr::kRows, heads_total);
  fa2bwd_wgmma_dq_kernel<Tr, STORE, CAUSAL><<<dq_grid, Tr::kThreads, Tr::kDqSmemBytes, stream>>>(
      m[MAP_Q], m[MAP_K], m[MAP_V], m[MAP_DO], m[MAP_DQ], a);
  return cudaGetLastError();
}

template <class Tr, kv_dtype STORE, bool CAUSAL, bool FUSED>
cudaError_t info(kv_kernel_resources *out) {
  if (FUSED)
    return kv_fa2_common::kernel_info<typename Tr::fused_shape>(fa2bwd_wgmma_dkdv_kernel<Tr, STORE, CAUSAL, true>,
                                                                out);
  return kv_fa2_common::kernel_info<typename Tr::dkdv_shape>(fa2bwd_wgmma_dkdv_kernel<Tr, STORE, CAUSAL, false>, out);
}

/* The grids checked against the launch limits, the seven tensor maps encoded (64-row boxes;
 * none for an empty problem, which launches nothing), the shared-memory limits raised, launch
 * and info set; kval-wgmma-fused (pr->variant) needs the dQ workspace in pr->a. */
template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t prepare(kv_fa2bwd_problem *pr, const char **why) {
  constexpr int D = Tr::kHeadDim;
  using Mma = kv_fa2bwd_traits<D>;
  const kv_fa2bwd_args &a = pr->a;
  const bool fused = pr->variant == KV_FA2BWD_WGMMA_FUSED;
  pr->launch = fused ? launch<Tr, STORE, CAUSAL, true> : launch<Tr, STORE, CAUSAL, false>;
  pr->info = fused ? info<Tr, STORE, CAUSAL, true> : info<Tr, STORE, CAUSAL, false>;
  if ((*why = kv_fa2bwd::grid_refusal<Mma>(a))) return cudaErrorInvalidValue;
  if (a.batch == 0 || a.seqlen == 0) return cudaSuccess;
  if (fused && (!a.dq_accum || !a.dq_sem)) {
    *why = "fa2bwd kval-wgmma-fused: no dQ workspace (kv_fa2bwd_workspace)";
    return cudaErrorInvalidValue;
  }
  /* rotated walks (kv_fa2bwd_rotated) only where a head's key blocks also fit on the SMs at
   * once: a CTA may wait for key blocks of its head that start after it */
  cudaError_t e = cudaSuccess;
  if (Tr::kRotateWalks && kv_fa2bwd_rotated(pr->variant, D, CAUSAL, a.seqlen)) {
    int dev = 0, sms = 0;
    e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    pr->a.dq_rotate = (a.seqlen + Tr::kKeys - 1) / Tr::kKeys <= sms;
  }
  const void *base[MAP_COUNT] = {a.q, a.k, a.v, a.dout, a.dq, a.dk, a.dv};
  for (int i = 0; i < MAP_COUNT && e == cudaSuccess; ++i)
    e = kv_fa2_wgmma::encode_map<STORE, D>(&pr->maps[i], base[i], a.batch, a.seqlen, a.heads, Tr::kBoxRows, why);
  if (e == cudaSuccess && fused)
    e = cudaFuncSetAttribute(fa2bwd_wgmma_dkdv_kernel<Tr, STORE, CAUSAL, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kFusedSmemBytes);
  if (e == cudaSuccess && !fused)
    e = cudaFuncSetAttribute(fa2bwd_wgmma_dkdv_kernel<Tr, STORE, CAUSAL, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kDkdvSmemBytes);
  if (e == cudaSuccess && !fused)
    e = cudaFuncSetAttribute(fa2bwd_wgmma_dq_kernel<Tr, STORE, CAUSAL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Tr::kDqSmemBytes);
  return e;
}

}  // namespace kv_fa2bwd_wgmma

template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2bwd_wgmma_prepare(kv_fa2bwd_problem *pr, const char **why) {
  return kv_fa2bwd_wgmma::prepare<kv_fa2bwd_wgmma_traits<D>, STORE, CAUSAL>(pr, why);
}

#define KV_FA2BWD_WGMMA_INSTANTIATE(D, STORE)                                                            \
  template cudaError_t kv_fa2bwd_wgmma_prepare<D, STORE, false>(kv_fa2bwd_problem *, const char **); \
  template cudaError_t kv_fa2bwd_wgmma_prepare<D, STORE, true>(kv_fa2bwd_problem *, const char **);

#endif
