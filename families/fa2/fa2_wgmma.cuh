/* fa2_wgmma.cuh - kval-wgmma, the Hopper (sm_90a) FlashAttention-2 forward kernel template and
 * its host side (prepare: grid check, the four TMA descriptors encoded once per problem; launch),
 * FA3-style: TMA loads, wgmma tensor-core instructions, a producer warpgroup and consumer
 * warpgroups. Included only by families/fa2/inst/fa2_wgmma_d<D>.cu; everything else calls it
 * through fa2_api.h. Configuration: fa2_wgmma_traits.h.
 *
 * One CTA = BM query rows of one (batch, head); causal CTAs start with the heaviest query
 * blocks. Q, K, V and O are 4-D tensors [batch, seqlen, heads, D] to TMA (one tensor map
 * each, boxes of 64 columns x rows x 1 head x 1 batch, 128-byte swizzle): rows past seqlen
 * are zero-filled on load and clipped on store, so tails need no address arithmetic.
 *   Producer (one thread of warpgroup 0, 24 registers after setmaxnreg): Q once, then for
 *   every key tile n in ascending order K_n and V_n into ring slot n % STAGES, each after the
 *   slot's "empty" barrier says every consumer warp is done with it; tiles wholly above the
 *   causal diagonal are never loaded.
 *   Consumer warpgroup c (rows 64c..64c+63, the traits' registers): per key tile
 *     S = Q K^T     wgmma m64nBNk16, both operands from shared memory (K-major), fp32
 *                   accumulators, issued together with P V of the previous tile, so the
 *                   tensor cores run that P V while this tile's softmax runs (intra-
 *                   warpgroup pipelining); the K slot is released as soon as S completes;
 *     mask          keys >= seqlen_k and above the bottom-right aligned causal diagonal set to
 *                   -inf, only in the tiles that need it;
 *     softmax       online, in the log2 domain, as the mma.sync kernel (fa2_mma.cuh): row
 *                   max over the 4 lanes of a row, p = ex2(S * scale_log2 - m * scale_log2),
 *                   O rescaled by ex2((m_old - m) * scale_log2), row sums per lane in fp32;
 *     O += P V      wgmma m64nDk16 with P from registers (rounded to the storage type; the
 *                   S accumulator layout is the A-fragment layout) and V from shared memory
 *                   read N-major (transpose bit), fp32 accumulators; V slot released.
 *   Pingpong scheduling between the two consumer warpgroups where the traits ask for it.
 *   Epilogue: O / rowsum rounded once to the storage type, written 128-byte swizzled into the
 *   warpgroup's own rows of the Q buffer and stored by one TMA store per 64-column chunk;
 *   LSE = m * scale + log(rowsum) (-inf and output 0 for a fully masked row).
 * Precision: fp16 or bf16 storage with fp32 accumulation only (the products of S = Q K^T and
 * O += P V accumulate in fp32 inside the tensor core; the reduced-accumulator models of the
 * precision study run on kval-mma). Everything else as fa2_mma.cuh's precision block. */
#ifndef KVAL_FA2_WGMMA_CUH
#define KVAL_FA2_WGMMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <climits>
#include <type_traits>

#include "families/fa2/fa2_api.h"
#include "families/fa2/fa2_common.cuh"
#include "families/fa2/fa2_wgmma_traits.h"
#include "families/device/sm80.cuh"
#include "families/device/sm90.cuh"

namespace kv_fa2_wgmma {

namespace ptx = kv::ptx;
using kv_fa2_common::ex2;
using kv_fa2_common::storage_t;

/* ---- wgmma m64nNk16 with fp32 accumulators: S with N = 64 or 128, O with N = 64, 128 or 256 ---- */

/* S = A B^T: A (64 x 16) and B (N x 16) K-major from shared memory; accumulate != 0 adds. */
template <kv_dtype STORE, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {
  static_assert(N == 64 || N == 128, "instantiated N");
  ptx::wgmma_m64nNk16_f32<storage_t<STORE>, N, 0, 0>(d, da, db, accumulate);
}

/* O += A B: A (64 x 16) from registers (the mma m16n8k16 A fragment per warp), B (16 x N)
 * N-major from shared memory (transpose bit set); N = 256 for head dim 256. */
template <kv_dtype STORE, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  static_assert(N == 64 || N == 128 || N == 256, "instantiated N");
  ptx::wgmma_m64nNk16_rs_f32<storage_t<STORE>, N, 1>(d, a, db, 1);
}


/* ---- the kernel ---- */

template <class Tr, kv_dtype STORE, bool CAUSAL>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    fa2_wgmma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                     const __grid_constant__ CUtensorMap map_v, const __grid_constant__ CUtensorMap map_o,
                     const kv_fa2_args a) {
#if KV_SM90A
  constexpr int D = Tr::kHeadDim, BM = Tr::kBlockM, BN = Tr::kBlockN, ST = Tr::kStages, CH = Tr::kChunks;
  using T = storage_t<STORE>;
  extern __shared__ unsigned char fa2_wgmma_smem[];
  unsigned char *smem = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(fa2_wgmma_smem) + 1023) &
                                                          ~static_cast<uintptr_t>(1023));
  unsigned char *sq = smem, *sk = smem + Tr::kQBytes, *sv = sk + ST * Tr::kTileBytes;
  uint64_t *full_q = reinterpret_cast<uint64_t *>(smem + Tr::kBarOffset);
  uint64_t *full_k = full_q + 1, *full_v = full_k + ST, *empty_k = full_v + ST, *empty_v = empty_k + ST;

  /* block -> (m block, head, batch); causal: heaviest m blocks first */
  const int Lq = a.seqlen_q, Lk = a.seqlen_k;
  const int n_mblocks = (Lq + BM - 1) / BM;
  int mb = static_cast<int>(blockIdx.x % static_cast<unsigned>(n_mblocks));
  const unsigned bh = blockIdx.x / static_cast<unsigned>(n_mblocks);
  const int h = static_cast<int>(bh % static_cast<unsigned>(a.heads));
  const int b = static_cast<int>(bh / static_cast<unsigned>(a.heads));
  if (CAUSAL) mb = n_mblocks - 1 - mb;
  const int m0 = mb * BM;

  const int shift = Lk - Lq; /* causal: row i sees keys j <= i + shift */
  int n_end, n_free;
  kv_fa2_common::key_tiles<CAUSAL, BM, BN>(m0, Lq, Lk, n_end, n_free);

  if (threadIdx.x == 0) {
    ptx::mbarrier_init(full_q, 1);
    for (int s = 0; s < ST; ++s) {
      ptx::mbarrier_init(&full_k[s], 1);
      ptx::mbarrier_init(&full_v[s], 1);
      ptx::mbarrier_init(&empty_k[s], Tr::kConsumers * 4);
      ptx::mbarrier_init(&empty_v[s], Tr::kConsumers * 4);
    }
    ptx::fence_mbarrier_init();
  }
  kv::block_sync();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (threadIdx.x == 0 && n_end > 0) {
      ptx::mbarrier_arrive_expect_tx(full_q, Tr::kQBytes);
#pragma unroll
      for (int c = 0; c < CH; ++c) ptx::tma_load_4d(sq + c * BM * 128, &map_q, full_q, 64 * c, h, m0, b);
      for (int n = 0; n < n_end; ++n) {
        const int s = n % ST;
        const uint32_t parity = ((n / ST) & 1) ^ 1; /* the consumers' release of round n / ST - 1 */
        unsigned char *tk = sk + s * Tr::kTileBytes, *tv = sv + s * Tr::kTileBytes;
        if (n >= ST) ptx::mbarrier_wait_parity(&empty_k[s], parity);
        ptx::mbarrier_arrive_expect_tx(&full_k[s], Tr::kTileBytes);
#pragma unroll
        for (int c = 0; c < CH; ++c) ptx::tma_load_4d(tk + c * BN * 128, &map_k, &full_k[s], 64 * c, h, n * BN, b);
        if (n >= ST) ptx::mbarrier_wait_parity(&empty_v[s], parity);
        ptx::mbarrier_arrive_expect_tx(&full_v[s], Tr::kTileBytes);
#pragma unroll
        for (int c = 0; c < CH; ++c) ptx::tma_load_4d(tv + c * BN * 128, &map_v, &full_v[s], 64 * c, h, n * BN, b);
      }
    }
    return;
  }

  ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
  const int cw = wg - 1, lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
  const int row0 = cw * 64 + warp * 16 + g; /* this lane's rows row0 and row0 + 8 within the block */
  const float sl2 = a.scale_log2;

  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const uint32_t q_base = ptx::smem_addr(sq) + cw * 64 * 128;

  /* The waits for a tile's K or V come before the wgmma.fence that opens a batch of wgmma:
   * other instructions inside the batch would make ptxas serialise the wgmma. */
  auto wait_k = [&](int n) { ptx::mbarrier_wait_parity(&full_k[n % ST], (n / ST) & 1); };
  auto wait_v = [&](int n) { ptx::mbarrier_wait_parity(&full_v[n % ST], (n / ST) & 1); };
  /* S = Q K^T of tile n issued (one commit group): k-step kt = columns 16kt.. = chunk
   * kt / 4, 32 bytes (kt % 4) into its rows */
  auto issue_s = [&](float (&sc)[BN / 2], int n) {
    const int st = n % ST;
    const uint32_t k_base = ptx::smem_addr(sk + st * Tr::kTileBytes);
#pragma unroll
    for (int kt = 0; kt < D / 16; ++kt)
      wgmma_ss<STORE, BN>(sc, ptx::wgmma_desc(q_base + (kt / 4) * BM * 128 + (kt % 4) * 32, 16, 1024),
                          ptx::wgmma_desc(k_base + (kt / 4) * BN * 128 + (kt % 4) * 32, 16, 1024), kt > 0);
    ptx::wgmma_commit_group();
  };
  /* O += P V of tile n issued (one commit group): k-step kk = keys 16kk.. = 16 rows of 128
   * bytes further into every chunk; the N (head dim) chunks are a tile's BN * 128 bytes apart */
  auto issue_pv = [&](const uint32_t (&p)[BN / 16][4], int n) {
    const int st = n % ST;
    const uint32_t v_base = ptx::smem_addr(sv + st * Tr::kTileBytes);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      wgmma_rs<STORE, D>(o, p[kk], ptx::wgmma_desc(v_base + kk * 16 * 128, BN * 128, 1024));
    ptx::wgmma_commit_group();
  };
  /* Register operands of the next batch settled before its wgmma.fence: the compiler must not
   * sink their definitions (the rescale of O, the copy of P) into the batch, which would make
   * ptxas serialise the wgmma. */
  auto settle = [&](float *r, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) ptx::reg_fence(r[i]);
  };
  auto settle_p = [&](uint32_t (&p)[BN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) ptx::reg_fence(p[kk][r]);
  };
  /* Pingpong (traits kPingpong, two consumers): the warpgroups take turns to issue their wgmma
   * batches, so one runs its softmax while the other's matmuls occupy the tensor cores.
   * Warpgroup c waits on named barrier 8 + c and, after issuing, arrives on the other's; the
   * second warpgroup opens with an arrival and leaves out the one after its last batch, so
   * arrivals and waits pair up (n_end + 1 batches each). */
  auto turn_wait = [&]() {
    if constexpr (Tr::kPingpong) asm volatile("bar.sync %0, 256;" ::"r"(8 + cw) : "memory");
  };
  auto turn_pass = [&]() {
    if constexpr (Tr::kPingpong) asm volatile("bar.arrive %0, 256;" ::"r"(8 + (cw ^ 1)) : "memory");
  };
  auto release = [&](uint64_t *bar) {
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(bar);
  };
  /* mask and online softmax of tile n's scores, in place: accumulator j of column block
   * jb = j / 4 is row row0 + 8 ((j / 2) % 2), key n BN + 8 jb + 2 t4 + j % 2; it becomes
   * p = ex2(S * scale_log2 - m * scale_log2) in fp32; fac rescales O and the row sum. */
  auto softmax = [&](float (&sc)[BN / 2], int n, float (&fac)[2]) {
    if (n >= n_free) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int i = m0 + row0 + 8 * hi;
        const int lim = CAUSAL ? min(Lk - 1, i + shift) : Lk - 1; /* last visible key */
#pragma unroll
        for (int jb = 0; jb < BN / 8; ++jb)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (n * BN + 8 * jb + 2 * t4 + e > lim) sc[4 * jb + 2 * hi + e] = -INFINITY;
      }
    }
    float msc[2], sum[2] = {0.f, 0.f};
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float mx = row_max[hi];
#pragma unroll
      for (int jb = 0; jb < BN / 8; ++jb) mx = fmaxf(mx, fmaxf(sc[4 * jb + 2 * hi], sc[4 * jb + 2 * hi + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      msc[hi] = mx == -INFINITY ? 0.f : mx * sl2;
      fac[hi] = ex2((row_max[hi] - (mx == -INFINITY ? 0.f : mx)) * sl2);
      row_max[hi] = mx;
    }
#pragma unroll
    for (int j = 0; j < BN / 2; ++j) {
      const int hi = (j / 2) % 2;
      sc[j] = ex2(fmaf(sc[j], sl2, -msc[hi]));
      sum[hi] += sc[j];
    }
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) row_sum[hi] = row_sum[hi] * fac[hi] + sum[hi];
  };
  /* P rounded to the storage type as the A fragments of P V: k-step kk = keys 16kk.. =
   * column blocks 2kk and 2kk + 1; register r = (row0 | row0 + 8) x (block 2kk | 2kk + 1) */
  auto to_p = [&](const float (&sc)[BN / 2], uint32_t (&p)[BN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int j = 4 * (2 * kk + (r >> 1)) + 2 * (r & 1);
        p[kk][r] = ptx::cvt_rn_pair<T>(sc[j], sc[j + 1]);
      }
  };

  /* Software pipeline (FA3's intra-warpgroup overlap): S of tile n and P V of tile n - 1 are
   * issued together, and the softmax of tile n runs while the tensor cores compute that P V.
   * O is rescaled and P rebuilt only once the P V is complete (wgmma reads its register
   * operands asynchronously). */
  if (n_end > 0) {
    if (cw == 1) turn_pass();
    ptx::mbarrier_wait_parity(full_q, 0);
    float sc[BN / 2], fac[2];
    uint32_t p[BN / 16][4];
    wait_k(0);
    turn_wait();
    ptx::wgmma_fence();
    issue_s(sc, 0);
    turn_pass();
    ptx::wgmma_wait_group<0>();
    settle(sc, BN / 2);
    release(&empty_k[0]);
    softmax(sc, 0, fac); /* O is still zero: no rescale */
    to_p(sc, p);
    for (int n = 1; n < n_end; ++n) {
      wait_k(n);
      wait_v(n - 1);
      settle(o, D / 2);
      settle_p(p);
      turn_wait();
      ptx::wgmma_fence();
      issue_s(sc, n);
      issue_pv(p, n - 1);
      turn_pass();
      ptx::wgmma_wait_group<1>(); /* S of tile n */
      settle(sc, BN / 2);
      release(&empty_k[n % ST]);
      softmax(sc, n, fac);
      ptx::wgmma_wait_group<0>(); /* P V of tile n - 1 */
      settle(o, D / 2);
      settle_p(p);
      release(&empty_v[(n - 1) % ST]);
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] *= fac[(i / 2) % 2];
      to_p(sc, p);
    }
    wait_v(n_end - 1);
    settle(o, D / 2);
    settle_p(p);
    turn_wait();
    ptx::wgmma_fence();
    issue_pv(p, n_end - 1);
    if (cw == 0) turn_pass();
    ptx::wgmma_wait_group<0>();
    settle(o, D / 2);
    settle_p(p);
    release(&empty_v[(n_end - 1) % ST]);
  }

  /* epilogue: normalise, LSE, stage in this warpgroup's Q rows (swizzled), TMA store */
  const long long lse_row0 = (static_cast<long long>(b) * Lq + m0) * a.heads + h;
  float inv[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float l = row_sum[hi];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const bool live = l > 0.f;
    inv[hi] = live ? 1.f / l : 0.f;
    const int r = row0 + 8 * hi;
    if (t4 == 0 && m0 + r < Lq)
      a.lse[lse_row0 + static_cast<long long>(r) * a.heads] = live ? row_max[hi] * a.scale + logf(l) : -INFINITY;
  }
#pragma unroll
  for (int jb = 0; jb < D / 8; ++jb)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = row0 + 8 * hi; /* row within the block = row within every chunk */
      const uint32_t packed = ptx::cvt_rn_pair<T>(o[4 * jb + 2 * hi] * inv[hi], o[4 * jb + 2 * hi + 1] * inv[hi]);
      unsigned char *dst = sq + (jb / 8) * BM * 128 + r * 128 + (((jb % 8) ^ (r % 8)) * 16) + t4 * 4;
      *reinterpret_cast<uint32_t *>(dst) = packed;
    }
  ptx::fence_proxy_async();
  ptx::bar_sync(1 + cw, 128);
  if (lt == 0) {
#pragma unroll
    for (int c = 0; c < CH; ++c)
      ptx::tma_store_4d(&map_o, sq + c * BM * 128 + cw * 64 * 128, 64 * c, h, m0 + cw * 64, b);
    ptx::bulk_commit_group();
    ptx::bulk_wait_group_read<0>();
  }
#endif
}

/* ---- host side ---- */

/* A [batch, seqlen, heads, D] tensor of the storage type as TMA sees it: 4-D, innermost D;
 * boxes of 64 columns x `rows` rows of one head of one batch; 128-byte swizzle, zero fill. */
template <kv_dtype STORE, int D>
cudaError_t encode_map(CUtensorMap *map, const void *base, int batch, int seqlen, int heads, int rows,
                       const char **why) {
  cudaError_t e;
  PFN_cuTensorMapEncodeTiled_v12000 encode = kv::tma_encode_fn(&e);
  if (!encode) {
    if (why) *why = "kval-wgmma: cuTensorMapEncodeTiled is not available from the driver";
    return e;
  }
  const cuuint64_t len = seqlen > 0 ? seqlen : 1; /* no key tile is loaded when seqlen_k is 0 */
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)heads, len, (cuuint64_t)batch};
  const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)heads * D * 2, len * heads * D * 2};
  const cuuint32_t box[4] = {64, 1, (cuuint32_t)rows, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(map, STORE == KV_FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                            4, const_cast<void *>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    if (why) *why = "kval-wgmma: cuTensorMapEncodeTiled rejected a tensor (base not 16-byte aligned, or a stride >= 2^40 bytes)";
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t launch(const kv_fa2_problem &pr, cudaStream_t stream) {
  const kv_fa2_args &a = pr.a;
  if (a.batch == 0 || a.seqlen_q == 0) return cudaSuccess;
  fa2_wgmma_kernel<Tr, STORE, CAUSAL>
      <<<static_cast<unsigned>(kv_fa2_common::grid_blocks<Tr::kBlockM>(a)), Tr::kThreads, Tr::kSmemBytes, stream>>>(
          pr.maps[0], pr.maps[1], pr.maps[2], pr.maps[3], a);
  return cudaGetLastError();
}

template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t info(kv_kernel_resources *out) {
  return kv_fa2_common::kernel_info<Tr>(fa2_wgmma_kernel<Tr, STORE, CAUSAL>, out);
}

/* The grid checked against the launch limit, the four tensor maps encoded for the problem's
 * tensors (none for an empty problem, which launches nothing), the shared-memory limit raised,
 * launch and info set. */
template <class Tr, kv_dtype STORE, bool CAUSAL>
cudaError_t prepare(kv_fa2_problem *pr, const char **why) {
  constexpr int D = Tr::kHeadDim;
  const kv_fa2_args &a = pr->a;
  pr->launch = launch<Tr, STORE, CAUSAL>;
  pr->info = info<Tr, STORE, CAUSAL>;
  if (a.batch == 0 || a.seqlen_q == 0) return cudaSuccess;
  if (kv_fa2_common::grid_blocks<Tr::kBlockM>(a) > INT_MAX) {
    *why = "kval-wgmma: grid too large (blocks > 2^31 - 1)";
    return cudaErrorInvalidValue;
  }
  cudaError_t e = encode_map<STORE, D>(&pr->maps[0], a.q, a.batch, a.seqlen_q, a.heads, Tr::kBlockM, why);
  if (e == cudaSuccess) e = encode_map<STORE, D>(&pr->maps[1], a.k, a.batch, a.seqlen_k, a.heads, Tr::kBlockN, why);
  if (e == cudaSuccess) e = encode_map<STORE, D>(&pr->maps[2], a.v, a.batch, a.seqlen_k, a.heads, Tr::kBlockN, why);
  if (e == cudaSuccess) e = encode_map<STORE, D>(&pr->maps[3], a.o, a.batch, a.seqlen_q, a.heads, 64, why);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(fa2_wgmma_kernel<Tr, STORE, CAUSAL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Tr::kSmemBytes);
  return e;
}

}  // namespace kv_fa2_wgmma

template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2_wgmma_prepare(kv_fa2_problem *pr, const char **why) {
  return kv_fa2_wgmma::prepare<kv_fa2_wgmma_traits<D, CAUSAL>, STORE, CAUSAL>(pr, why);
}

#define KV_FA2_WGMMA_INSTANTIATE(D, STORE)                                                            \
  template cudaError_t kv_fa2_wgmma_prepare<D, STORE, false>(kv_fa2_problem *, const char **); \
  template cudaError_t kv_fa2_wgmma_prepare<D, STORE, true>(kv_fa2_problem *, const char **);

#endif
