/* decode_kernels.cuh - the paged-KV decode kernels (split-KV flash-decoding on tensor cores),
 * instantiated per head dim D, storage type S and KV cache type KV in inst/decode_<S>[_<KV>].cu.
 *
 * Types: q, out and the mma operands in S (fp16 or bf16); the KV cache in S or 8-bit (e4m3,
 * e5m2). An 8-bit cache stays 8-bit in shared memory and is widened exactly (cvt to f16x2, and
 * for bf16 on to bf16x2 through fp32) fragment by fragment after ldmatrix, which reads it as
 * 16-bit pairs, so a fragment's dims are permuted: K's k-step pairs are dims 4t, 4t+1 | 4t+2,
 * 4t+3 of each 16 (Q's A fragments are loaded with the same permutation, which leaves every
 * dot product unchanged), and V's ldmatrix.trans pairs split into an even-dims and an odd-dims
 * n-tile, whose outputs interleave back where the warps store their states.
 *
 * split_kernel: one block of KV_DECODE_WARPS warps per (split, kv head, batch) for the rows of
 * the GQA group (q_len x group <= 16: one 16-row mma tile, rows past the group zero). The
 * split's tokens come in slabs of 16 (within one page: splits are whole pages); slab i belongs
 * to warp i % KV_DECODE_WARPS, which copies its slabs of K and V to its own shared-memory
 * stages with 16-byte cp.async (KV_DECODE_STAGES of them: two slabs in flight while one is
 * used; tokens past the split zero-filled) and keeps its own online softmax: per slab
 * S = Q K^T by mma.sync m16n8k16 (fp32 accumulators; Q held as A fragments), the slab's row
 * max and sum by quad shuffles, P rounded to the storage type, O += P V by mma.sync. No block
 * barrier until the split's end, where the warps' (m, l, O) are merged in warp order. The
 * cache's scales: k_scale is folded into the score scale (args scale, scale_log2), v_scale into
 * the output's final factor v_scale / l. With one
 * split the block writes the output and the LSE; with several, fp32 partials o / l and LSEs,
 * and the last block of its (batch, kv head) to finish (an arrival count in global memory,
 * fenced on both sides) reduces every split's partials in split order (combine_rows) and
 * resets the count for the next launch: one launch, and the order of every sum fixed whichever
 * block comes last, so the same inputs give the same bits on every run. decode_emulate.c is the
 * CPU model of this code. */
#ifndef KVAL_DECODE_KERNELS_CUH
#define KVAL_DECODE_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "families/decode/decode_api.h"
#include "families/device/sm80.cuh"

#include <type_traits>

namespace kv_decode {

constexpr int kThreads = KV_DECODE_THREADS, kWarps = KV_DECODE_WARPS, kSlab = KV_DECODE_SLAB,
              kStages = KV_DECODE_STAGES;
static_assert(kSlab == 16, "a slab is the k = 16 of the P V mma and two n = 8 tiles of S");

/* Storage type of a kv_dtype (fp16 or bf16), and two floats rounded to nearest even into one
 * 32-bit pair. */
template <kv_dtype S>
struct store_of {
  using type = std::conditional_t<S == KV_FP16, __half, __nv_bfloat16>;
  static __device__ __forceinline__ uint32_t pack(float a, float b) { return kv::ptx::cvt_rn_pair<type>(a, b); }
};

/* A KV cache of type KV: 8-bit (e4m3, e5m2) or 16-bit, and the bytes of an element. */
template <kv_dtype KV>
struct cache_of {
  static constexpr bool k8 = KV == KV_E4M3 || KV == KV_E5M2;
  static constexpr int kElemBytes = k8 ? 1 : 2;
};

/* Two 8-bit values of type KV in the low 16 bits of x (the first in the low byte) as a pair of
 * S: cvt to f16x2 (exact for e4m3 and e5m2); for bf16 each half on to fp32 and both to bf16
 * (exact). */
template <kv_dtype KV, kv_dtype S>
__device__ __forceinline__ uint32_t widen_pair(uint32_t x) {
  static_assert(cache_of<KV>::k8, "an 8-bit cache");
  uint32_t h;
  const unsigned short b = static_cast<unsigned short>(x);
  if constexpr (KV == KV_E4M3)
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(b));
  else
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;\n" : "=r"(h) : "h"(b));
  if constexpr (S == KV_FP16)
    return h;
  else
    return kv::ptx::cvt_rn_pair<__nv_bfloat16>(kv::ptx::f16x2_lo(h), kv::ptx::f16x2_hi(h));
}

/* Shared memory of an instantiation: per warp kStages slabs of K, then as many of V, each
 * kSlab rows of KV_DECODE_ROW_BYTES (the row padded by 16 bytes: ldmatrix's 8 rows fall in 8
 * distinct bank groups). At the split's end it holds the warps' states: per warp m[16],
 * l[16] and O[16][D] in fp32. */
template <int D, kv_dtype KV>
struct layout {
  static constexpr int kRowBytes = KV_DECODE_ROW_BYTES(D, cache_of<KV>::kElemBytes);
  static constexpr int kSlabBytes = kSlab * kRowBytes; /* one slab of K or of V */
  static constexpr int kWarpBytes = 2 * kStages * kSlabBytes;
  static constexpr int kBytes = kWarps * kWarpBytes;
  static constexpr int kStateM = 0, kStateL = 16, kStateO = 32; /* offsets of m[16], l[16], O[16][D] */
  static constexpr int kStateFloats = kStateO + 16 * D;          /* one warp's m, l, O */
  static constexpr int kSmemBytes = KV_DECODE_BLOCK_SMEM_BYTES(D, cache_of<KV>::kElemBytes);
  static_assert(kBytes == KV_DECODE_SMEM_BYTES(D, cache_of<KV>::kElemBytes), "the split rule's count (decode_limits.h)");
  static_assert(kWarps * kStateFloats * 4 == KV_DECODE_STATE_BYTES(D), "the split rule's state count");
};

/* Group row rr of (b, h) as a global row index. */
__device__ __forceinline__ int row_of(const kv_decode_args &a, int b, int h, int rr) {
  return (b * a.q_len + rr / a.group) * a.q_heads + h * a.group + rr % a.group;
}

/* Copy slab tokens [ts, ts + kSlab) of (b, h), cut at t1, into one stage of this warp's K and
 * V (shared addresses sk, sv), 16 bytes a copy. The slab lies in one page: one table entry. */
template <int D, kv_dtype KV>
__device__ __forceinline__ void load_slab(const kv_decode_args &a, int b, int h, int ts, int t1, uint32_t sk,
                                          uint32_t sv, int lane) {
  constexpr int kEb = cache_of<KV>::kElemBytes, kVec = D * kEb / 16, kChunks = kSlab * kVec / 32;
  constexpr int kRowBytes = layout<D, KV>::kRowBytes;
  static_assert(kChunks * 32 == kSlab * kVec, "whole copies per lane");
  const long long page = a.table[static_cast<long long>(b) * a.pages_per_seq + ts / a.page];
  const size_t base = ((static_cast<size_t>(page) * a.kv_heads + h) * a.page + ts % a.page) * D * kEb;
  const unsigned char *k = static_cast<const unsigned char *>(a.k) + base, *v = static_cast<const unsigned char *>(a.v) + base;
  const int n = t1 - ts;
#pragma unroll
  for (int it = 0; it < kChunks; ++it) {
    const int c = lane + it * 32, j = c / kVec, vec = c % kVec, bytes = j < n ? 16 : 0;
    const size_t off = bytes ? static_cast<size_t>(j) * D * kEb + vec * 16 : 0;
    kv::ptx::cp_async_16(sk + j * kRowBytes + vec * 16, k + off, bytes);
    kv::ptx::cp_async_16(sv + j * kRowBytes + vec * 16, v + off, bytes);
  }
}

/* The 16 x D query tile of (b, h) as mma A fragments (k-step kk: rows g, g + 8; 16-bit KV: dims
 * 16 kk + 2t (+1) and + 8, the mma's order; 8-bit KV: dims 16 kk + 4t (+1) and 16 kk + 4t + 2
 * (+1), the order of its K fragments); rows past a.rows are zero. */
template <int D, bool kK8>
__device__ __forceinline__ void load_q(const kv_decode_args &a, int b, int h, int lane, uint32_t (&qa)[D / 16][4]) {
  const int g = lane >> 2, t = lane & 3;
  const uint32_t *q = static_cast<const uint32_t *>(a.q);
  const bool r0 = g < a.rows, r1 = g + 8 < a.rows;
  const size_t w0 = r0 ? static_cast<size_t>(row_of(a, b, h, g)) * (D / 2) : 0;
  const size_t w1 = r1 ? static_cast<size_t>(row_of(a, b, h, g + 8)) * (D / 2) : 0;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int lo = kK8 ? kk * 8 + 2 * t : kk * 8 + t, hi = kK8 ? lo + 1 : lo + 4; /* 32-bit words */
    qa[kk][0] = r0 ? q[w0 + lo] : 0u;
    qa[kk][1] = r1 ? q[w1 + lo] : 0u;
    qa[kk][2] = r0 ? q[w0 + hi] : 0u;
    qa[kk][3] = r1 ? q[w1 + hi] : 0u;
  }
}

/* The max and the sum of a row's values over the 4 lanes of a quad (xor 1, then xor 2). */
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x = x + __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* The rows of group (b, h) combined from every split's partials, in split order (weights
 * exp(lse_s - max)): one (row, 4 dims) a thread. The partials were written by other blocks of
 * this launch: read through L2 (ld.global.cg), never from this SM's L1. */
template <int D, kv_dtype S>
__device__ __forceinline__ void combine_rows(const kv_decode_args &a, int b, int h) {
  const int total = a.batch * a.q_len * a.q_heads;
  for (int item = threadIdx.x; item < a.rows * (D / 4); item += kThreads) {
    const int row = row_of(a, b, h, item / (D / 4)), c = (item % (D / 4)) * 4;
    float mx = -INFINITY, sw = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 0; s < a.splits; ++s) mx = fmaxf(mx, __ldcg(a.part_lse + static_cast<size_t>(s) * total + row));
    for (int s = 0; s < a.splits; ++s) {
      const float w = expf(__ldcg(a.part_lse + static_cast<size_t>(s) * total + row) - mx);
      const float4 o = __ldcg(reinterpret_cast<const float4 *>(a.part_o + (static_cast<size_t>(s) * total + row) * D + c));
      sw = sw + w;
      acc[0] = fmaf(w, o.x, acc[0]);
      acc[1] = fmaf(w, o.y, acc[1]);
      acc[2] = fmaf(w, o.z, acc[2]);
      acc[3] = fmaf(w, o.w, acc[3]);
    }
    const float inv = a.v_scale / sw;
    uint2 out;
    out.x = store_of<S>::pack(acc[0] * inv, acc[1] * inv);
    out.y = store_of<S>::pack(acc[2] * inv, acc[3] * inv);
    *reinterpret_cast<uint2 *>(static_cast<uint16_t *>(a.o) + static_cast<size_t>(row) * D + c) = out;
    if (c == 0) a.lse[row] = mx + logf(sw);
  }
}

/* S += Q K^T of one slab (s[j]: the n-tile of tokens 8 j .. 8 j + 7) from the stage at ks. */
template <int D, kv_dtype S, kv_dtype KV>
__device__ __forceinline__ void slab_scores(float (&s)[2][4], const uint32_t (&qa)[D / 16][4], uint32_t ks, int lane) {
  using T = typename store_of<S>::type;
  constexpr int kRowBytes = layout<D, KV>::kRowBytes;
  /* ldmatrix rows of this lane: matrices (tokens 0-7 | 8-15) x (bytes 0-15 | 16-31) of a 32-byte window */
  const uint32_t at = ks + ((lane & 7) + ((lane >> 4) << 3)) * kRowBytes + ((lane >> 3) & 1) * 16;
  if constexpr (!cache_of<KV>::k8) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) { /* a window is one k-step: r[0], r[1] tokens 0-7, r[2], r[3] 8-15 */
      uint32_t r[4];
      kv::ptx::ldmatrix_x4(r, at + kk * 32);
      kv::ptx::mma_m16n8k16_f32<T>(s[0], qa[kk], r[0], r[1]);
      kv::ptx::mma_m16n8k16_f32<T>(s[1], qa[kk], r[2], r[3]);
    }
  } else {
#pragma unroll
    for (int c = 0; c < D / 32; ++c) { /* a window is two k-steps: r[0] tokens 0-7 k-step 2c, r[1] 2c + 1, r[2], r[3] 8-15 */
      uint32_t r[4];
      kv::ptx::ldmatrix_x4(r, at + c * 32);
#pragma unroll
      for (int x = 0; x < 4; ++x) /* r[x]: dims 4t .. 4t + 3 of its 16: b0 the first pair, b1 the second */
        kv::ptx::mma_m16n8k16_f32<T>(s[x >> 1], qa[2 * c + (x & 1)], widen_pair<KV, S>(r[x]), widen_pair<KV, S>(r[x] >> 16));
    }
  }
}

/* o += P V of one slab from the stage at vs (P in pa: tokens 2t, 2t + 1 | 8 + 2t, 9 + 2t).
 * 16-bit: o[nd] holds dims 8 nd .. 8 nd + 7. 8-bit: o[4 w + 2 p + e] holds dims 32 w + 16 p +
 * 2 g' + e for its column g' (e = 0: the even dims, 1: the odd ones). */
template <int D, kv_dtype S, kv_dtype KV>
__device__ __forceinline__ void slab_values(float (&o)[D / 8][4], const uint32_t (&pa)[4], uint32_t vs, int lane) {
  using T = typename store_of<S>::type;
  constexpr int kRowBytes = layout<D, KV>::kRowBytes;
  /* ldmatrix.trans rows of this lane: matrices (tokens 0-7 | 8-15) x (bytes 0-15 | 16-31) */
  const uint32_t at = vs + ((lane & 7) + (((lane >> 3) & 1) << 3)) * kRowBytes + (lane >> 4) * 16;
#pragma unroll
  for (int w = 0; w < D * cache_of<KV>::kElemBytes / 32; ++w) {
    uint32_t r[4];
    kv::ptx::ldmatrix_x4_trans(r, at + w * 32);
    if constexpr (!cache_of<KV>::k8) {
      kv::ptx::mma_m16n8k16_f32<T>(o[2 * w], pa, r[0], r[1]);
      kv::ptx::mma_m16n8k16_f32<T>(o[2 * w + 1], pa, r[2], r[3]);
    } else {
      /* r[2p] tokens 2t, 2t + 1 x dims 2g, 2g + 1 of part p (bytes: [2t][2g], [2t][2g+1],
       * [2t+1][2g], [2t+1][2g+1]); r[2p + 1] the same for tokens 8 + 2t, 9 + 2t */
#pragma unroll
      for (int p = 0; p < 2; ++p)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const uint32_t sel = e ? 0x4431u : 0x4420u; /* bytes 1, 3 (odd dims) or 0, 2 (even) */
          kv::ptx::mma_m16n8k16_f32<T>(o[4 * w + 2 * p + e], pa, widen_pair<KV, S>(__byte_perm(r[2 * p], 0u, sel)),
                                       widen_pair<KV, S>(__byte_perm(r[2 * p + 1], 0u, sel)));
        }
    }
  }
}

template <int D, kv_dtype S, kv_dtype KV>
__global__ void __launch_bounds__(kThreads, KV_DECODE_REG_BLOCKS(D)) split_kernel(const kv_decode_args a) {
  using L = layout<D, KV>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int t0 = split * a.split_pages * a.page, t1 = min(a.ctx, t0 + a.split_pages * a.page);
  const int slabs = (t1 - t0 + kSlab - 1) / kSlab, mine = slabs > warp ? (slabs - warp + kWarps - 1) / kWarps : 0;
  const uint32_t sk = kv::ptx::smem_addr(smem) + warp * L::kWarpBytes, sv = sk + kStages * L::kSlabBytes;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < mine)
      load_slab<D, KV>(a, b, h, t0 + (warp + s * kWarps) * kSlab, t1, sk + s * L::kSlabBytes, sv + s * L::kSlabBytes, lane);
    kv::ptx::cp_async_commit_group();
  }
  uint32_t qa[D / 16][4];
  load_q<D, cache_of<KV>::k8>(a, b, h, lane, qa);
  float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nd][e] = 0.0f;

  for (int it = 0; it < mine; ++it) {
    kv::ptx::cp_async_wait_group<kStages - 2>();
    __syncwarp();
    const int next = it + kStages - 1, stage = it % kStages;
    if (next < mine)
      load_slab<D, KV>(a, b, h, t0 + (warp + next * kWarps) * kSlab, t1, sk + (next % kStages) * L::kSlabBytes,
                       sv + (next % kStages) * L::kSlabBytes, lane);
    kv::ptx::cp_async_commit_group();
    const int n = t1 - (t0 + (warp + it * kWarps) * kSlab);

    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    slab_scores<D, S, KV>(s, qa, sk + stage * L::kSlabBytes, lane);
    /* s[j][e]: row g (e < 2) or g + 8, token 8 j + 2 t + (e & 1) of the slab */
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (8 * j + 2 * t + (e & 1) >= n) s[j][e] = -INFINITY;
    uint32_t pa[4];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) { /* rows g (hr 0) and g + 8 (hr 1) */
      const float mx = quad_max(fmaxf(fmaxf(s[0][2 * hr], s[0][2 * hr + 1]), fmaxf(s[1][2 * hr], s[1][2 * hr + 1])));
      const float m_new = fmaxf(m[hr], mx), ms = m_new * a.scale_log2;
      const float alpha = exp2f((m[hr] - m_new) * a.scale_log2);
      float p[4];
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) p[2 * j + e] = exp2f(fmaf(s[j][2 * hr + e], a.scale_log2, -ms));
      l[hr] = fmaf(l[hr], alpha, quad_sum((p[0] + p[1]) + (p[2] + p[3])));
      m[hr] = m_new;
#pragma unroll
      for (int nd = 0; nd < D / 8; ++nd) {
        o[nd][2 * hr] *= alpha;
        o[nd][2 * hr + 1] *= alpha;
      }
      pa[hr] = store_of<S>::pack(p[0], p[1]);     /* a0 / a1: tokens 2t, 2t + 1 */
      pa[2 + hr] = store_of<S>::pack(p[2], p[3]); /* a2 / a3: tokens 8 + 2t, 9 + 2t */
    }
    slab_values<D, S, KV>(o, pa, sv + stage * L::kSlabBytes, lane);
  }

  /* The warps' states to shared memory (the stages are free once every copy has landed) */
  kv::ptx::cp_async_wait_group<0>();
  kv::block_sync();
  float *st = reinterpret_cast<float *>(smem) + warp * L::kStateFloats;
  if (t == 0) {
    st[L::kStateM + g] = m[0];
    st[L::kStateM + g + 8] = m[1];
    st[L::kStateL + g] = l[0];
    st[L::kStateL + g + 8] = l[1];
  }
  if constexpr (!cache_of<KV>::k8) {
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) {
      *reinterpret_cast<float2 *>(st + L::kStateO + g * D + nd * 8 + 2 * t) = make_float2(o[nd][0], o[nd][1]);
      *reinterpret_cast<float2 *>(st + L::kStateO + (g + 8) * D + nd * 8 + 2 * t) = make_float2(o[nd][2], o[nd][3]);
    }
  } else { /* the even and odd tiles of each 16 dims interleave back: dims 4t .. 4t + 3 */
#pragma unroll
    for (int x = 0; x < D / 16; ++x) {
      *reinterpret_cast<float4 *>(st + L::kStateO + g * D + x * 16 + 4 * t) =
          make_float4(o[2 * x][0], o[2 * x + 1][0], o[2 * x][1], o[2 * x + 1][1]);
      *reinterpret_cast<float4 *>(st + L::kStateO + (g + 8) * D + x * 16 + 4 * t) =
          make_float4(o[2 * x][2], o[2 * x + 1][2], o[2 * x][3], o[2 * x + 1][3]);
    }
  }
  kv::block_sync();

  /* Merged in warp order, one (row, 8 dims) a thread: weights exp2((m_w - M) scale_log2) */
  const float *st0 = reinterpret_cast<const float *>(smem);
  const int total = a.batch * a.q_len * a.q_heads;
  for (int item = threadIdx.x; item < a.rows * (D / 8); item += kThreads) {
    const int rr = item / (D / 8), c = (item % (D / 8)) * 8;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, st0[w * L::kStateFloats + L::kStateM + rr]);
    float sw = 0.0f, acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float *sw_state = st0 + w * L::kStateFloats;
      const float f = exp2f((sw_state[L::kStateM + rr] - mx) * a.scale_log2);
      sw = fmaf(f, sw_state[L::kStateL + rr], sw);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(f, sw_state[L::kStateO + rr * D + c + e], acc[e]);
    }
    const int row = row_of(a, b, h, rr);
    const float inv = (a.splits == 1 ? a.v_scale : 1.0f) / sw, lse = mx * a.scale + logf(sw);
    if (a.splits == 1) {
      uint4 out;
      out.x = store_of<S>::pack(acc[0] * inv, acc[1] * inv);
      out.y = store_of<S>::pack(acc[2] * inv, acc[3] * inv);
      out.z = store_of<S>::pack(acc[4] * inv, acc[5] * inv);
      out.w = store_of<S>::pack(acc[6] * inv, acc[7] * inv);
      *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(a.o) + static_cast<size_t>(row) * D + c) = out;
      if (c == 0) a.lse[row] = lse;
    } else {
      float *po = a.part_o + (static_cast<size_t>(split) * total + row) * D + c;
      *reinterpret_cast<float4 *>(po) = make_float4(acc[0] * inv, acc[1] * inv, acc[2] * inv, acc[3] * inv);
      *reinterpret_cast<float4 *>(po + 4) = make_float4(acc[4] * inv, acc[5] * inv, acc[6] * inv, acc[7] * inv);
      if (c == 0) a.part_lse[static_cast<size_t>(split) * total + row] = lse;
    }
  }
  if (a.splits == 1) return;

  /* Arrival of this split (cooperative groups' grid-barrier pattern: block barrier, then one
   * thread's fence and atomic); the last of (b, h) fences again, resets the count for the next
   * launch and combines them all */
  kv::block_sync();
  int arrived = 0;
  if (threadIdx.x == 0) {
    int *count = a.arrivals + b * a.kv_heads + h;
    __threadfence();
    arrived = atomicAdd(count, 1) + 1;
    if (arrived == a.splits) {
      *count = 0;
      __threadfence();
    }
  }
  if (!__syncthreads_or(arrived == a.splits)) return;
  combine_rows<D, S>(a, b, h);
}

template <int D, kv_dtype S, kv_dtype KV>
cudaError_t launch(const kv_decode_problem &pr, cudaStream_t stream) {
  const kv_decode_args &a = pr.a;
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.batch));
  split_kernel<D, S, KV><<<grid, kThreads, layout<D, KV>::kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

template <int D, kv_dtype S, kv_dtype KV>
cudaError_t info(kv_kernel_resources *r) {
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, split_kernel<D, S, KV>);
  if (e != cudaSuccess) return e;
  int blocks = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, split_kernel<D, S, KV>, kThreads, layout<D, KV>::kSmemBytes);
  if (e != cudaSuccess) return e;
  r->registers = fa.numRegs;
  r->smem_bytes = static_cast<int>(fa.sharedSizeBytes) + layout<D, KV>::kSmemBytes;
  r->local_bytes = static_cast<int>(fa.localSizeBytes);
  r->occupancy = blocks;
  return cudaSuccess;
}

}  // namespace kv_decode

template <int D, kv_dtype STORE, kv_dtype KV>
cudaError_t kv_decode_prepare_inst(kv_decode_problem *pr) {
  if (kv_decode::layout<D, KV>::kSmemBytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kv_decode::split_kernel<D, STORE, KV>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               kv_decode::layout<D, KV>::kSmemBytes);
    if (e != cudaSuccess) return e;
  }
  pr->launch = kv_decode::launch<D, STORE, KV>;
  pr->info = kv_decode::info<D, STORE, KV>;
  return cudaSuccess;
}

#define KV_DECODE_INSTANTIATE(D, STORE, KV) \
  template cudaError_t kv_decode_prepare_inst<D, STORE, KV>(kv_decode_problem *);

#endif
