/* decode_kernels.cuh - the paged-KV decode kernels (split-KV flash-decoding on tensor cores),
 * instantiated per head dim D and storage type in inst/decode_<st>.cu.
 *
 * split_kernel: one block of KV_DECODE_WARPS warps per (split, kv head, batch) for the rows of
 * the GQA group (q_len x group <= 16: one 16-row mma tile, rows past the group zero). The
 * split's tokens come in slabs of 16 (within one page: splits are whole pages); slab i belongs
 * to warp i % KV_DECODE_WARPS, which copies its slabs of K and V to its own shared-memory
 * stages with 16-byte cp.async (KV_DECODE_STAGES of them: two slabs in flight while one is
 * used; tokens past the split zero-filled) and keeps its own online softmax: per slab
 * S = Q K^T by mma.sync m16n8k16 (fp32 accumulators; Q held as A fragments), the slab's row
 * max and sum by quad shuffles, P rounded to the storage type, O += P V by mma.sync. No block
 * barrier until the split's end, where the warps' (m, l, O) are merged in warp order. With one
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

/* Storage type of a kv_dtype, and two floats rounded to nearest even into one 32-bit pair. */
template <kv_dtype S>
struct store_of {
  using type = std::conditional_t<S == KV_FP16, __half, __nv_bfloat16>;
  static __device__ __forceinline__ uint32_t pack(float a, float b) { return kv::ptx::cvt_rn_pair<type>(a, b); }
};

/* Shared memory of an instantiation: per warp kStages slabs of K, then as many of V, each
 * kSlab rows of D + 8 storage elements (16 bytes of padding: ldmatrix's 8 rows fall in 8
 * distinct bank groups). At the split's end it holds the warps' states: per warp m[16],
 * l[16] and O[16][D] in fp32. */
template <int D>
struct layout {
  static constexpr int kRow = D + 8;                        /* storage elements per slab row */
  static constexpr int kSlabElems = kSlab * kRow;           /* one slab of K or of V */
  static constexpr int kWarpElems = 2 * kStages * kSlabElems;
  static constexpr int kBytes = kWarps * kWarpElems * 2;
  static constexpr int kStateM = 0, kStateL = 16, kStateO = 32; /* offsets of m[16], l[16], O[16][D] */
  static constexpr int kStateFloats = kStateO + 16 * D;          /* one warp's m, l, O */
  static_assert(kBytes == KV_DECODE_SMEM_BYTES(D), "the split rule's shared-memory count (decode_limits.h)");
  static_assert(kWarps * kStateFloats * 4 <= kBytes, "the warps' states reuse the stages");
};

/* Group row rr of (b, h) as a global row index. */
__device__ __forceinline__ int row_of(const kv_decode_args &a, int b, int h, int rr) {
  return (b * a.q_len + rr / a.group) * a.q_heads + h * a.group + rr % a.group;
}

/* Copy slab tokens [ts, ts + kSlab) of (b, h), cut at t1, into one stage of this warp's K and
 * V (sk, sv), and commit the group. The slab lies in one page: one table entry. */
template <int D>
__device__ __forceinline__ void load_slab(const kv_decode_args &a, int b, int h, int ts, int t1, uint16_t *sk,
                                          uint16_t *sv, int lane) {
  constexpr int kVec = D / 8, kChunks = kSlab * kVec / 32, kRow = layout<D>::kRow;
  const long long page = a.table[static_cast<long long>(b) * a.pages_per_seq + ts / a.page];
  const size_t base = ((static_cast<size_t>(page) * a.kv_heads + h) * a.page + ts % a.page) * D;
  const uint16_t *k = static_cast<const uint16_t *>(a.k) + base, *v = static_cast<const uint16_t *>(a.v) + base;
  const int n = t1 - ts;
#pragma unroll
  for (int it = 0; it < kChunks; ++it) {
    const int c = lane + it * 32, j = c / kVec, vec = c % kVec, bytes = j < n ? 16 : 0;
    const size_t off = bytes ? static_cast<size_t>(j) * D + vec * 8 : 0;
    kv::ptx::cp_async_16(kv::ptx::smem_addr(sk + j * kRow + vec * 8), k + off, bytes);
    kv::ptx::cp_async_16(kv::ptx::smem_addr(sv + j * kRow + vec * 8), v + off, bytes);
  }
}

/* The 16 x D query tile of (b, h) as mma A fragments (k-step kk: rows g, g + 8, dims
 * 16 kk + 2t (+1) and + 8); rows past a.rows are zero. */
template <int D>
__device__ __forceinline__ void load_q(const kv_decode_args &a, int b, int h, int lane, uint32_t (&qa)[D / 16][4]) {
  const int g = lane >> 2, t = lane & 3;
  const uint32_t *q = static_cast<const uint32_t *>(a.q);
  const bool r0 = g < a.rows, r1 = g + 8 < a.rows;
  const size_t w0 = r0 ? static_cast<size_t>(row_of(a, b, h, g)) * (D / 2) : 0;
  const size_t w1 = r1 ? static_cast<size_t>(row_of(a, b, h, g + 8)) * (D / 2) : 0;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    qa[kk][0] = r0 ? q[w0 + kk * 8 + t] : 0u;
    qa[kk][1] = r1 ? q[w1 + kk * 8 + t] : 0u;
    qa[kk][2] = r0 ? q[w0 + kk * 8 + 4 + t] : 0u;
    qa[kk][3] = r1 ? q[w1 + kk * 8 + 4 + t] : 0u;
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
    const float inv = 1.0f / sw;
    uint2 out;
    out.x = store_of<S>::pack(acc[0] * inv, acc[1] * inv);
    out.y = store_of<S>::pack(acc[2] * inv, acc[3] * inv);
    *reinterpret_cast<uint2 *>(static_cast<uint16_t *>(a.o) + static_cast<size_t>(row) * D + c) = out;
    if (c == 0) a.lse[row] = mx + logf(sw);
  }
}

template <int D, kv_dtype S>
__global__ void __launch_bounds__(kThreads) split_kernel(const kv_decode_args a) {
  using L = layout<D>;
  using T = typename store_of<S>::type;
  extern __shared__ __align__(16) unsigned char smem[];
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int t0 = split * a.split_pages * a.page, t1 = min(a.ctx, t0 + a.split_pages * a.page);
  const int slabs = (t1 - t0 + kSlab - 1) / kSlab, mine = slabs > warp ? (slabs - warp + kWarps - 1) / kWarps : 0;
  uint16_t *sk = reinterpret_cast<uint16_t *>(smem) + warp * L::kWarpElems, *sv = sk + kStages * L::kSlabElems;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < mine) load_slab<D>(a, b, h, t0 + (warp + s * kWarps) * kSlab, t1, sk + s * L::kSlabElems, sv + s * L::kSlabElems, lane);
    kv::ptx::cp_async_commit_group();
  }
  uint32_t qa[D / 16][4];
  load_q<D>(a, b, h, lane, qa);
  float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nd][e] = 0.0f;
  /* ldmatrix row addresses of this lane: K (non-transposed: tokens x dims, B of S) and V
   * (transposed: B of P V), relative to a slab */
  const int k_row = (lane & 7) + ((lane >> 4) << 3), k_col = ((lane >> 3) & 1) * 8;
  const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_col = (lane >> 4) * 8;

  for (int it = 0; it < mine; ++it) {
    kv::ptx::cp_async_wait_group<kStages - 2>();
    __syncwarp();
    const int next = it + kStages - 1, stage = it % kStages;
    if (next < mine)
      load_slab<D>(a, b, h, t0 + (warp + next * kWarps) * kSlab, t1, sk + (next % kStages) * L::kSlabElems,
                   sv + (next % kStages) * L::kSlabElems, lane);
    kv::ptx::cp_async_commit_group();
    const uint16_t *ks = sk + stage * L::kSlabElems, *vs = sv + stage * L::kSlabElems;
    const int n = t1 - (t0 + (warp + it * kWarps) * kSlab);

    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t r[4];
      kv::ptx::ldmatrix_x4(r, kv::ptx::smem_addr(ks + k_row * L::kRow + kk * 16 + k_col));
      kv::ptx::mma_m16n8k16_f32<T>(s[0], qa[kk], r[0], r[1]);
      kv::ptx::mma_m16n8k16_f32<T>(s[1], qa[kk], r[2], r[3]);
    }
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
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t r[4];
      kv::ptx::ldmatrix_x4_trans(r, kv::ptx::smem_addr(vs + v_row * L::kRow + np * 16 + v_col));
      kv::ptx::mma_m16n8k16_f32<T>(o[2 * np], pa, r[0], r[1]);
      kv::ptx::mma_m16n8k16_f32<T>(o[2 * np + 1], pa, r[2], r[3]);
    }
  }

  /* The warps' states to shared memory (the stages are free once every copy has landed) */
  kv::ptx::cp_async_wait_group<0>();
  __syncthreads();
  float *st = reinterpret_cast<float *>(smem) + warp * L::kStateFloats;
  if (t == 0) {
    st[L::kStateM + g] = m[0];
    st[L::kStateM + g + 8] = m[1];
    st[L::kStateL + g] = l[0];
    st[L::kStateL + g + 8] = l[1];
  }
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) {
    *reinterpret_cast<float2 *>(st + L::kStateO + g * D + nd * 8 + 2 * t) = make_float2(o[nd][0], o[nd][1]);
    *reinterpret_cast<float2 *>(st + L::kStateO + (g + 8) * D + nd * 8 + 2 * t) = make_float2(o[nd][2], o[nd][3]);
  }
  __syncthreads();

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
    const float inv = 1.0f / sw, lse = mx * a.scale + logf(sw);
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
  __syncthreads();
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

template <int D, kv_dtype S>
cudaError_t launch(const kv_decode_problem &pr, cudaStream_t stream) {
  const kv_decode_args &a = pr.a;
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.batch));
  split_kernel<D, S><<<grid, kThreads, layout<D>::kBytes, stream>>>(a);
  return cudaGetLastError();
}

template <int D, kv_dtype S>
cudaError_t info(kv_kernel_resources *r) {
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, split_kernel<D, S>);
  if (e != cudaSuccess) return e;
  int blocks = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, split_kernel<D, S>, kThreads, layout<D>::kBytes);
  if (e != cudaSuccess) return e;
  r->registers = fa.numRegs;
  r->smem_bytes = static_cast<int>(fa.sharedSizeBytes) + layout<D>::kBytes;
  r->local_bytes = static_cast<int>(fa.localSizeBytes);
  r->occupancy = blocks;
  return cudaSuccess;
}

}  // namespace kv_decode

template <int D, kv_dtype STORE>
cudaError_t kv_decode_prepare_inst(kv_decode_problem *pr) {
  if (kv_decode::layout<D>::kBytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kv_decode::split_kernel<D, STORE>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               kv_decode::layout<D>::kBytes);
    if (e != cudaSuccess) return e;
  }
  pr->launch = kv_decode::launch<D, STORE>;
  pr->info = kv_decode::info<D, STORE>;
  return cudaSuccess;
}

#define KV_DECODE_INSTANTIATE(D, STORE) template cudaError_t kv_decode_prepare_inst<D, STORE>(kv_decode_problem *);

#endif
