/* decode_kernels.cuh - the paged-KV decode kernels (split-KV flash-decoding on CUDA cores),
 * instantiated per head dim D, storage type and row capacity CAP in inst/decode_<st>.cu.
 *
 * split_kernel: one block of KV_DECODE_THREADS per (split, kv head, batch) for the rows of the
 * GQA group (q_len x group <= CAP). Tiles of KV_DECODE_TILE tokens of K and V are copied to
 * shared memory with 16-byte cp.async (two stages, the next tile in flight while one is
 * used), each token row found through the block table; tokens past the split are zero-filled.
 * Per tile: QK^T (thread tid: token tid % TILE, rows of parity tid / TILE, fp32 FMAs over D in
 * order), the online softmax of each row by one warp (max and sum by shuffles), and P V
 * (kv_decode_pv_layout's dim groups x row sets x token sets). With one split the block writes
 * the output and the LSE; with several, fp32 partials o / l and LSEs that combine_kernel
 * reduces, one warp-slice per row, in split order. The order of every sum is fixed: the same
 * inputs give the same bits on every run. decode_emulate.c is the CPU model of this code. */
#ifndef KVAL_DECODE_KERNELS_CUH
#define KVAL_DECODE_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "families/decode/decode_api.h"
#include "families/device/sm80.cuh"

#include <type_traits>

namespace kv_decode {

constexpr int kThreads = KV_DECODE_THREADS, kTile = KV_DECODE_TILE;

/* A pair of storage values in one 32-bit word: its low and high element as fp32 (exact), and
 * two floats rounded to nearest even into one. */
template <kv_dtype S>
struct store_of {
  using type = std::conditional_t<S == KV_FP16, __half, __nv_bfloat16>;
  static __device__ __forceinline__ float lo(uint32_t h) { return S == KV_FP16 ? kv::ptx::f16x2_lo(h) : kv::ptx::bf16x2_lo(h); }
  static __device__ __forceinline__ float hi(uint32_t h) { return S == KV_FP16 ? kv::ptx::f16x2_hi(h) : kv::ptx::bf16x2_hi(h); }
  static __device__ __forceinline__ uint32_t pack(float a, float b) { return kv::ptx::cvt_rn_pair<type>(a, b); }
};

/* The 8 storage values of a 16-byte vector as floats. */
template <kv_dtype S>
__device__ __forceinline__ void widen8(const uint4 &u, float (&f)[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = store_of<S>::lo(w[i]);
    f[2 * i + 1] = store_of<S>::hi(w[i]);
  }
}

/* Shared-memory layout of an instantiation (bytes). K rows are padded by one 16-byte vector
 * so the QK^T step's per-token rows fall in different banks. */
template <int D, int CAP>
struct layout {
  static constexpr int kKRow = D + 8;                          /* storage elements per K row */
  static constexpr int kK = 2 * kTile * kKRow * 2;             /* two stages of K */
  static constexpr int kV = 2 * kTile * D * 2;                 /* two stages of V */
  static constexpr int kQ = CAP * D * 4;                       /* q rows, fp32 */
  static constexpr int kP = CAP * kTile * 4;                   /* scores, then probabilities */
  static constexpr int kStats = 3 * CAP * 4;                   /* m, l, alpha per row */
  static constexpr int kBytes = kK + kV + kQ + kP + kStats;
  static_assert(kBytes == KV_DECODE_SMEM_BYTES(D, CAP), "the split rule's shared-memory count (decode_limits.h)");
  static_assert(kThreads * 8 * 4 <= kK, "the token-set partials reuse the K stages");
};

/* Group row rr of (b, h) as a global row index. */
__device__ __forceinline__ int row_of(const kv_decode_args &a, int b, int h, int rr) {
  return (b * a.q_len + rr / a.group) * a.q_heads + h * a.group + rr % a.group;
}

/* Stage tile tokens [t, t + kTile) of (b, h), cut at t1, into shared K and V. */
template <int D>
__device__ __forceinline__ void load_tile(const kv_decode_args &a, int b, int h, int t, int t1, uint16_t *sk,
                                          uint16_t *sv) {
  constexpr int kVec = D / 8, kChunks = kTile * kVec / kThreads;
  const uint16_t *k = static_cast<const uint16_t *>(a.k), *v = static_cast<const uint16_t *>(a.v);
#pragma unroll
  for (int it = 0; it < kChunks; ++it) {
    const int c = threadIdx.x + it * kThreads, j = c / kVec, vec = c % kVec, tok = t + j;
    const bool ok = tok < t1;
    size_t off = 0;
    if (ok) {
      const long long page = a.table[static_cast<long long>(b) * a.pages_per_seq + tok / a.page];
      off = ((static_cast<size_t>(page) * a.kv_heads + h) * a.page + tok % a.page) * D + vec * 8;
    }
    kv::ptx::cp_async_16(kv::ptx::smem_addr(sk + j * (D + 8) + vec * 8), k + off, ok ? 16 : 0);
    kv::ptx::cp_async_16(kv::ptx::smem_addr(sv + j * D + vec * 8), v + off, ok ? 16 : 0);
  }
  kv::ptx::cp_async_commit_group();
}

/* Scores of the tile's tokens for this thread's rows into sp (raw q . k, fp32). */
template <int D, kv_dtype S, int CAP>
__device__ __forceinline__ void tile_scores(const kv_decode_args &a, const uint16_t *sk, const float *sq, float *sp) {
  constexpr int kRows = (CAP + 1) / 2;
  const int j = threadIdx.x % kTile, par = threadIdx.x / kTile;
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
#pragma unroll 4
  for (int vec = 0; vec < D / 8; ++vec) {
    float kf[8];
    widen8<S>(*reinterpret_cast<const uint4 *>(sk + j * (D + 8) + vec * 8), kf);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int rr = par + 2 * r;
      if (rr < a.rows) {
        const float4 q0 = *reinterpret_cast<const float4 *>(sq + rr * D + vec * 8);
        const float4 q1 = *reinterpret_cast<const float4 *>(sq + rr * D + vec * 8 + 4);
        acc[r] = fmaf(q0.x, kf[0], acc[r]);
        acc[r] = fmaf(q0.y, kf[1], acc[r]);
        acc[r] = fmaf(q0.z, kf[2], acc[r]);
        acc[r] = fmaf(q0.w, kf[3], acc[r]);
        acc[r] = fmaf(q1.x, kf[4], acc[r]);
        acc[r] = fmaf(q1.y, kf[5], acc[r]);
        acc[r] = fmaf(q1.z, kf[6], acc[r]);
        acc[r] = fmaf(q1.w, kf[7], acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (par + 2 * r < a.rows) sp[(par + 2 * r) * kTile + j] = acc[r];
}

/* The online softmax of the tile (n valid tokens): warp w takes rows w, w + 4, ... */
template <int CAP>
__device__ __forceinline__ void tile_softmax(const kv_decode_args &a, int n, float *sp, float *sm, float *sl, float *sa) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int rr = warp; rr < a.rows; rr += kThreads / 32) {
    float *s = sp + rr * kTile;
    const float s0 = s[lane], s1 = s[lane + 32];
    float mt = fmaxf(lane < n ? s0 : -INFINITY, lane + 32 < n ? s1 : -INFINITY);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
    const float m_old = sm[rr], m_new = fmaxf(m_old, mt), ms = m_new * a.scale_log2;
    const float alpha = exp2f((m_old - m_new) * a.scale_log2);
    const float p0 = lane < n ? exp2f(fmaf(s0, a.scale_log2, -ms)) : 0.0f;
    const float p1 = lane + 32 < n ? exp2f(fmaf(s1, a.scale_log2, -ms)) : 0.0f;
    s[lane] = p0;
    s[lane + 32] = p1;
    float sum = p0 + p1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum = sum + __shfl_xor_sync(0xffffffffu, sum, o);
    __syncwarp(); /* every lane has read sm[rr] (m_old) before lane 0 writes it */
    if (lane == 0) {
      sl[rr] = fmaf(sl[rr], alpha, sum);
      sm[rr] = m_new;
      sa[rr] = alpha;
    }
  }
}

template <int D, kv_dtype S, int CAP>
__global__ void __launch_bounds__(kThreads) split_kernel(const kv_decode_args a) {
  using L = layout<D, CAP>;
  constexpr int kGroups = D / 8, kSets = kThreads / kGroups;
  constexpr int kNR = CAP < kSets ? CAP : kSets, kNT = kSets / kNR, kRPT = CAP / kNR;
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t *sk = reinterpret_cast<uint16_t *>(smem), *sv = reinterpret_cast<uint16_t *>(smem + L::kK);
  float *sq = reinterpret_cast<float *>(smem + L::kK + L::kV), *sp = sq + CAP * D, *sm = sp + CAP * kTile;
  float *sl = sm + CAP, *sa = sl + CAP;
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int t0 = split * a.split_pages * a.page, t1 = min(a.ctx, t0 + a.split_pages * a.page);
  const int ntiles = (t1 - t0 + kTile - 1) / kTile;
  load_tile<D>(a, b, h, t0, t1, sk, sv);
  for (int i = threadIdx.x; i < a.rows * D; i += kThreads) {
    const int rr = i / D, d = i % D;
    const uint16_t bits = static_cast<const uint16_t *>(a.q)[static_cast<size_t>(row_of(a, b, h, rr)) * D + d];
    sq[i] = S == KV_FP16 ? __half2float(__ushort_as_half(bits)) : __uint_as_float(static_cast<uint32_t>(bits) << 16);
  }
  for (int rr = threadIdx.x; rr < CAP; rr += kThreads) {
    sm[rr] = -INFINITY;
    sl[rr] = 0.0f;
  }
  const int g = threadIdx.x % kGroups, rs = (threadIdx.x / kGroups) % kNR, ts = threadIdx.x / kGroups / kNR;
  float acc[kRPT][8];
#pragma unroll
  for (int r = 0; r < kRPT; ++r)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.0f;

  for (int it = 0; it < ntiles; ++it) {
    const int stage = it & 1, t = t0 + it * kTile, n = min(kTile, t1 - t);
    if (it + 1 < ntiles) {
      load_tile<D>(a, b, h, t + kTile, t1, sk + (stage ^ 1) * kTile * (D + 8), sv + (stage ^ 1) * kTile * D);
      kv::ptx::cp_async_wait_group<1>();
    } else {
      kv::ptx::cp_async_wait_group<0>();
    }
    __syncthreads();
    tile_scores<D, S, CAP>(a, sk + stage * kTile * (D + 8), sq, sp);
    __syncthreads();
    tile_softmax<CAP>(a, n, sp, sm, sl, sa);
    __syncthreads();
    const uint16_t *vt = sv + stage * kTile * D;
#pragma unroll
    for (int r = 0; r < kRPT; ++r) {
      const int rr = rs + r * kNR;
      if (rr < a.rows) {
        const float alpha = sa[rr];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] *= alpha;
        for (int j = ts; j < n; j += kNT) {
          float vf[8];
          widen8<S>(*reinterpret_cast<const uint4 *>(vt + j * D + g * 8), vf);
          const float p = sp[rr * kTile + j];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(p, vf[e], acc[r][e]);
        }
      }
    }
    __syncthreads();
  }

  if (kNT > 1) { /* kRPT == 1: token-set partials through the (idle) K stages, added in set order */
    float *red = reinterpret_cast<float *>(smem);
    if (ts > 0)
#pragma unroll
      for (int e = 0; e < 8; ++e) red[((ts - 1) * kNR + rs) * D + g * 8 + e] = acc[0][e];
    __syncthreads();
    if (ts == 0)
      for (int s = 1; s < kNT; ++s)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[0][e] = acc[0][e] + red[((s - 1) * kNR + rs) * D + g * 8 + e];
  }
  if (ts != 0) return;
  const int total = a.batch * a.q_len * a.q_heads;
#pragma unroll
  for (int r = 0; r < kRPT; ++r) {
    const int rr = rs + r * kNR;
    if (rr >= a.rows) continue;
    const int row = row_of(a, b, h, rr);
    const float inv = 1.0f / sl[rr], lse = sm[rr] * a.scale + logf(sl[rr]);
    if (a.splits == 1) {
      uint4 out;
      out.x = store_of<S>::pack(acc[r][0] * inv, acc[r][1] * inv);
      out.y = store_of<S>::pack(acc[r][2] * inv, acc[r][3] * inv);
      out.z = store_of<S>::pack(acc[r][4] * inv, acc[r][5] * inv);
      out.w = store_of<S>::pack(acc[r][6] * inv, acc[r][7] * inv);
      *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(a.o) + static_cast<size_t>(row) * D + g * 8) = out;
      if (g == 0) a.lse[row] = lse;
    } else {
      float *po = a.part_o + (static_cast<size_t>(split) * total + row) * D + g * 8;
      *reinterpret_cast<float4 *>(po) = make_float4(acc[r][0] * inv, acc[r][1] * inv, acc[r][2] * inv, acc[r][3] * inv);
      *reinterpret_cast<float4 *>(po + 4) = make_float4(acc[r][4] * inv, acc[r][5] * inv, acc[r][6] * inv, acc[r][7] * inv);
      if (g == 0) a.part_lse[static_cast<size_t>(split) * total + row] = lse;
    }
  }
}

/* Rows of the splits' partials combined in split order: D / 4 threads per row, 4 dims each. */
template <int D, kv_dtype S>
__global__ void __launch_bounds__(kThreads) combine_kernel(const kv_decode_args a) {
  constexpr int kPerRow = D / 4, kRows = kThreads / kPerRow;
  const int total = a.batch * a.q_len * a.q_heads;
  const int row = blockIdx.x * kRows + threadIdx.x / kPerRow, c = threadIdx.x % kPerRow;
  if (row >= total) return;
  float mx = -INFINITY, sw = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = 0; s < a.splits; ++s) mx = fmaxf(mx, a.part_lse[static_cast<size_t>(s) * total + row]);
  for (int s = 0; s < a.splits; ++s) {
    const float w = expf(a.part_lse[static_cast<size_t>(s) * total + row] - mx);
    const float4 o = *reinterpret_cast<const float4 *>(a.part_o + (static_cast<size_t>(s) * total + row) * D + c * 4);
    sw = sw + w;
    acc[0] = fmaf(w, o.x, acc[0]);
    acc[1] = fmaf(w, o.y, acc[1]);
    acc[2] = fmaf(w, o.z, acc[2]);
    acc[3] = fmaf(w, o.w, acc[3]);
  }
  const float inv = 1.0f / sw;
  uint2 out;
  out.x = store_of<S>::pack(acc[0] * inv, acc[1] * inv);
  out.y = store_of<S>::pack(acc[2] * inv, acc[3] * inv);
  *reinterpret_cast<uint2 *>(static_cast<uint16_t *>(a.o) + static_cast<size_t>(row) * D + c * 4) = out;
  if (c == 0) a.lse[row] = mx + logf(sw);
}

template <int D, kv_dtype S, int CAP>
cudaError_t launch(const kv_decode_problem &pr, cudaStream_t stream) {
  const kv_decode_args &a = pr.a;
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.batch));
  split_kernel<D, S, CAP><<<grid, kThreads, layout<D, CAP>::kBytes, stream>>>(a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || a.splits == 1) return e;
  constexpr int kRows = kThreads / (D / 4);
  const int total = a.batch * a.q_len * a.q_heads;
  combine_kernel<D, S><<<static_cast<unsigned>((total + kRows - 1) / kRows), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

template <int D, kv_dtype S, int CAP>
cudaError_t info(kv_kernel_resources *r) {
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, split_kernel<D, S, CAP>);
  if (e != cudaSuccess) return e;
  int blocks = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, split_kernel<D, S, CAP>, kThreads, layout<D, CAP>::kBytes);
  if (e != cudaSuccess) return e;
  r->registers = fa.numRegs;
  r->smem_bytes = static_cast<int>(fa.sharedSizeBytes) + layout<D, CAP>::kBytes;
  r->local_bytes = static_cast<int>(fa.localSizeBytes);
  r->occupancy = blocks;
  return cudaSuccess;
}

}  // namespace kv_decode

template <int D, kv_dtype STORE, int CAP>
cudaError_t kv_decode_prepare_inst(kv_decode_problem *pr) {
  if (kv_decode::layout<D, CAP>::kBytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kv_decode::split_kernel<D, STORE, CAP>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               kv_decode::layout<D, CAP>::kBytes);
    if (e != cudaSuccess) return e;
  }
  pr->launch = kv_decode::launch<D, STORE, CAP>;
  pr->info = kv_decode::info<D, STORE, CAP>;
  return cudaSuccess;
}

#define KV_DECODE_INSTANTIATE(D, STORE)                                        \
  template cudaError_t kv_decode_prepare_inst<D, STORE, 1>(kv_decode_problem *); \
  template cudaError_t kv_decode_prepare_inst<D, STORE, 2>(kv_decode_problem *); \
  template cudaError_t kv_decode_prepare_inst<D, STORE, 4>(kv_decode_problem *); \
  template cudaError_t kv_decode_prepare_inst<D, STORE, 8>(kv_decode_problem *); \
  template cudaError_t kv_decode_prepare_inst<D, STORE, 16>(kv_decode_problem *);

#endif
