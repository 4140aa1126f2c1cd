/* norm_kernels.cuh - the LayerNorm and RMSNorm kernels (templates; instantiated per storage
 * type in families/norm/inst/norm_fp16.cu, norm_bf16.cu and norm_fp32.cu) and their device
 * helpers (namespace kv_norm).
 *
 * y = (x - mean) * rstd * w + b (LayerNorm) or x * rstd * w (RMSNorm), per row of n = hidden
 * elements; mean = sum(x) / n, var = sum((x - mean)^2) / n (two passes over the row, never
 * E[x^2] - E[x]^2), rms^2 = sum(x^2) / n, rstd = 1 / sqrt(var + eps). The output is formed
 * in fp32 and rounded once to the storage type (RNE). Kernels:
 *
 * Fast path (fp32 accumulation, hidden a multiple of the 16-byte vector, up to 4096 vectors):
 * a row is held in registers by TPR threads, NV 16-byte vectors each, loaded coalesced
 * (thread t of the row takes vectors t, t + TPR, t + 2 TPR, ...), so x is read from memory
 * exactly once. Reduction order: each
 * thread adds its elements in vector order (elements 0..N-1 of its first vector, then of its
 * second, ...), then a butterfly over the row's lanes (xor 16, 8, 4, 2, 1, which leaves the
 * same bits in every lane), then, when a row spans several warps, the warps' sums in warp
 * order through shared memory. The division by n is a multiply by inv_hidden = fl(1/n),
 * rstd comes from rsqrtf (max 2 ulp of fp32) and the affine step uses fma: all far below the
 * output rounding.
 *
 * Peeled path (fp32 accumulation, any hidden up to 4096 whole vectors, 16-byte aligned
 * pointers): rows that start anywhere. The whole 16-byte vectors of a row in the fast path's
 * layout and reduction order; the elements before the row's first 16-byte boundary and after
 * its last one (fewer than 2N) one per thread, which a thread adds before its vectors in the
 * mean and after them in the variance.
 *
 * General path (fp32 accumulation, any other case: rows over 4096 vectors, unaligned
 * pointers): one block of KV_NORM_GENERAL_BLOCK threads per row, three passes over the row
 * (L1/L2 serve the re-reads); thread t adds
 * elements t, t + B, t + 2B, ... in order, then the butterfly within each warp, then the warp
 * sums in warp order; correctly rounded divide and sqrt.
 *
 * Serial path (fp16/bf16 accumulation, the precision study): one thread per row performs
 * exactly the operation sequence of the cpu backend's model (families/norm/norm_emulate.c): sums in
 * element order rounded to the accumulator after every add, mean and variance rounded to
 * it, d_j = acc(x_j - mean), no fused multiply-add, correctly rounded divide and sqrt; so
 * its output is bit-identical to the CPU emulation. It is slow (one thread walks its row three
 * times) and meant for correctness, not speed. */
#ifndef KVAL_NORM_KERNELS_CUH
#define KVAL_NORM_KERNELS_CUH

#include <type_traits>

#include "families/device/race_delay.cuh"
#include "families/norm/norm_api.h"

namespace kv_norm {

/* The place of this thread in a register-resident kernel: thread t of the TPR threads of row
 * `row`, kv_norm_block(TPR) / TPR rows per block; rows past the last one (live false) still
 * take part in the block's barriers. */
struct row_thread {
  int t;
  long long row;
  bool live;
};
template <int TPR>
__device__ __forceinline__ row_thread row_thread_of(const kv_norm_params &p) {
  const long long row = (long long)blockIdx.x * (kv_norm_block(TPR) / TPR) + threadIdx.x / TPR;
  return {static_cast<int>(threadIdx.x % TPR), row, row < p.rows};
}

/* Sum over the TPR threads of a row; every thread of the row gets the same value. `red`
 * holds one float per warp of the block (only used when a row spans several warps). */
template <int TPR>
__device__ __forceinline__ float row_sum(float v, float *red) {
  constexpr int W = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (TPR > 32) {
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) red[warp] = v;
    kv::block_sync();
    const int first = (threadIdx.x / TPR) * (TPR / 32);
    v = red[first];
#pragma unroll
    for (int i = 1; i < TPR / 32; i++) v += red[first + i];
  }
  return v;
}

/* Mean of a row held as NV 16-byte vectors per thread (vectors and elements outside the row
 * hold zeros), in the first pass of the two-pass statistics; s is what the thread has summed
 * before its vectors (the peeled kernel's end elements). */
template <class T, int TPR, int NV>
__device__ __forceinline__ float row_mean(const uint4 (&xv)[NV], float *red, float inv_hidden, float s = 0.0f) {
  constexpr int N = storage<T>::N;
#pragma unroll
  for (int v = 0; v < NV; v++) {
    float f[N];
    unpack_vec<T>(xv[v], f);
#pragma unroll
    for (int e = 0; e < N; e++) s += f[e];
  }
  return row_sum<TPR>(s, red) * inv_hidden;
}

/* The thread's sum of squared deviations from `mean` over its vectors (those with index
 * v * TPR + t < nvec: the row's), in vector order; the second pass of the statistics. */
template <class T, int TPR, int NV>
__device__ __forceinline__ float thread_sq_dev(const uint4 (&xv)[NV], int t, int nvec, float mean) {
  constexpr int N = storage<T>::N;
  float q = 0.0f;
#pragma unroll
  for (int v = 0; v < NV; v++) {
    if (v * TPR + t < nvec) {
      float f[N];
      unpack_vec<T>(xv[v], f);
#pragma unroll
      for (int e = 0; e < N; e++) {
        const float d = f[e] - mean;
        q = fmaf(d, d, q);
      }
    }
  }
  return q;
}

}  // namespace kv_norm

template <class T, int TPR, int NV, bool LN>
__global__ void __launch_bounds__(kv_norm_block(TPR), kv_norm_min_blocks(TPR, LN)) kv_norm_fast(kv_norm_params p) {
  constexpr int N = kv_norm::storage<T>::N;
  __shared__ float red[2][kv_norm_block(TPR) / 32];
  const auto [t, row, live] = kv_norm::row_thread_of<TPR>(p);
  const int nvec = p.hidden / N;
  const size_t base = (size_t)(live ? row : 0) * (size_t)nvec;
  const uint4 *xr = static_cast<const uint4 *>(p.x) + base;

  uint4 xv[NV];
#pragma unroll
  for (int v = 0; v < NV; v++) {
    const int j = v * TPR + t;
    xv[v] = (live && j < nvec) ? __ldg(xr + j) : make_uint4(0u, 0u, 0u, 0u);
  }

  const float mean = LN ? kv_norm::row_mean<T, TPR, NV>(xv, red[0], p.inv_hidden) : 0.0f;
  const float q = kv_norm::thread_sq_dev<T, TPR, NV>(xv, t, nvec, mean);
  const float rstd = rsqrtf(fmaf(kv_norm::row_sum<TPR>(q, red[1]), p.inv_hidden, p.eps));

  const uint4 *wr = static_cast<const uint4 *>(p.w);
  const uint4 *br = static_cast<const uint4 *>(p.b);
  uint4 *yr = static_cast<uint4 *>(p.y) + base;
#pragma unroll
  for (int v = 0; v < NV; v++) {
    const int j = v * TPR + t;
    if (live && j < nvec) {
      float f[N], w[N], b[N];
      kv_norm::unpack_vec<T>(xv[v], f);
      kv_norm::unpack_vec<T>(__ldg(wr + j), w);
      if constexpr (LN) kv_norm::unpack_vec<T>(__ldg(br + j), b);
#pragma unroll
      for (int e = 0; e < N; e++) f[e] = LN ? fmaf((f[e] - mean) * rstd, w[e], b[e]) : (f[e] * rstd) * w[e];
      yr[j] = kv_norm::pack_vec<T>(f);
    }
  }
}

namespace kv_norm {

/* y of one element from x, the statistics (mean, rstd), w and b. */
template <bool LN>
__device__ __forceinline__ float affine(float x, float2 st, float w, float b) {
  return LN ? fmaf((x - st.x) * st.y, w, b) : (x * st.y) * w;
}

/* Elements lo .. lo + N - 1 of a row of n elements at base as one 16-byte vector, element by
 * element; those outside [0, n) are zero. */
template <class T>
__device__ __forceinline__ uint4 load_part(const void *base, long long lo, long long n) {
  constexpr int N = storage<T>::N;
  using U = typename storage<T>::bits;
  const U *e = static_cast<const U *>(base);
  U u[N];
#pragma unroll
  for (int i = 0; i < N; i++) u[i] = (lo + i >= 0 && lo + i < n) ? e[lo + i] : U(0);
  if constexpr (N == 4) return make_uint4(u[0], u[1], u[2], u[3]);
  else
    return make_uint4(u[0] | (unsigned)u[1] << 16, u[2] | (unsigned)u[3] << 16, u[4] | (unsigned)u[5] << 16,
                      u[6] | (unsigned)u[7] << 16);
}

/* The peeled kernel's whole vectors of y with the shift worked out at run time: vector
 * j = v * TPR + t of the row (hd elements after its start, nw of them) from x (xv), the
 * statistics st, and w and b shifted into line by hd = qw whole 32-bit words (selected by
 * compares) and, where 2-byte elements start an odd number off, a half word. A function, not a
 * lambda over the kernel's locals: wrapped in a lambda the same loop took 7 - 34 registers more
 * (128x6: 64 -> 71 RMSNorm, 92 -> 126 LayerNorm) and RMSNorm 4097 ran 12 % slower (H200). */
template <class T, int TPR, int NV, bool LN>
__device__ __forceinline__ void peeled_vectors(const kv_norm_params &p, const uint4 (&xv)[NV], float2 st, int t, bool live,
                                               int nw, int hd, uint4 *yg) {
  constexpr int N = storage<T>::N;
  const int n = p.hidden;
  const int qw = N == 8 ? hd >> 1 : hd, odd = N == 8 ? hd & 1 : 0;
  const uint4 *wg = static_cast<const uint4 *>(p.w);
  const uint4 *bg = static_cast<const uint4 *>(p.b);
#pragma unroll
  for (int v = 0; v < NV; v++) {
    const int j = v * TPR + t;
    if (!live || j >= nw) continue;
    float f[N], w[N], b[N];
    unpack_vec<T>(xv[v], f);
    if (hd == 0) {
      unpack_vec<T>(__ldg(wg + j), w);
      if constexpr (LN) unpack_vec<T>(__ldg(bg + j), b);
    } else if ((j + 2) * N <= n) { /* w vectors j and j + 1 exist */
      unpack_vec<T>(shift_vec<N>(__ldg(wg + j), __ldg(wg + j + 1), qw, odd), w);
      if constexpr (LN) unpack_vec<T>(shift_vec<N>(__ldg(bg + j), __ldg(bg + j + 1), qw, odd), b);
    } else {
      unpack_vec<T>(load_part<T>(p.w, hd + j * N, n), w);
      if constexpr (LN) unpack_vec<T>(load_part<T>(p.b, hd + j * N, n), b);
    }
#pragma unroll
    for (int e = 0; e < N; e++) f[e] = affine<LN>(f[e], st, w[e], LN ? b[e] : 0.0f);
    yg[j] = pack_vec<T>(f);
  }
}

}  // namespace kv_norm

/* Peeled path (any hidden, 16-byte aligned pointers). A row of n elements starting at element
 * o = row * n begins hd elements before a 16-byte boundary (hd = -o mod N, at most n); it is
 * those hd elements, the nw whole 16-byte vectors after them, held as the fast path holds its
 * row (thread t takes vectors t, t + TPR, ...), and the tail after those. The ends, hd + tail
 * < 2N elements, are peeled off: end k is one element of thread k mod TPR. Reduction order:
 * the thread's end elements, then its vectors in order (the mean; the variance takes the
 * vectors first); the butterfly; the warps in order.
 * w and b of a whole vector come shifted into line from the two aligned vectors around them
 * (kv_norm::shift_vec), element by element where the second would pass the end of w. Where a
 * warp serves one row (TPR >= 32) and a thread holds at most KV_NORM_WORD_COPIES_MAX_NV
 * vectors, the shift's whole words are a compile-time constant of each of four copies of that
 * loop (kv_norm::with_words), so the word selection is register moves; with more vectors the
 * four copies cost more than the selection they save (docs/PERFORMANCE.md). */
template <class T, int TPR, int NV, bool LN>
__global__ void __launch_bounds__(kv_norm_block(TPR), kv_norm_min_blocks(TPR, LN)) kv_norm_peeled(kv_norm_params p) {
  using S = kv_norm::storage<T>;
  constexpr int N = S::N;
  constexpr int EX = (2 * N - 2 + TPR - 1) / TPR; /* end elements per thread */
  __shared__ float red[2][kv_norm_block(TPR) / 32];
  const auto [t, row, live] = kv_norm::row_thread_of<TPR>(p);
  const int n = p.hidden;
  const size_t o = (size_t)(live ? row : 0) * (size_t)n;
  const int hd = min((int)((N - o % N) % N), n);
  const int nw = (n - hd) / N, ends = n - nw * N;
  const uint4 *xg = static_cast<const uint4 *>(p.x) + (o + hd) / N;
  const void *xrow = static_cast<const typename S::bits *>(p.x) + o;
  /* row position of end element k */
  auto end_pos = [&](int k) { return k < hd ? k : k + nw * N; };

  uint4 xv[NV];
#pragma unroll
  for (int v = 0; v < NV; v++) {
    const int j = v * TPR + t;
    xv[v] = (live && j < nw) ? __ldg(xg + j) : make_uint4(0u, 0u, 0u, 0u);
  }
  float xe[EX];
#pragma unroll
  for (int e = 0; e < EX; e++) {
    const int k = e * TPR + t;
    xe[e] = (live && k < ends) ? S::load(xrow, (size_t)end_pos(k)) : 0.0f;
  }

  float mean = 0.0f;
  if constexpr (LN) {
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < EX; e++) s += xe[e];
    mean = kv_norm::row_mean<T, TPR, NV>(xv, red[0], p.inv_hidden, s);
  }
  float q = kv_norm::thread_sq_dev<T, TPR, NV>(xv, t, nw, mean);
#pragma unroll
  for (int e = 0; e < EX; e++) {
    if (e * TPR + t < ends) {
      const float d = xe[e] - mean;
      q = fmaf(d, d, q);
    }
  }
  const float2 st = make_float2(mean, rsqrtf(fmaf(kv_norm::row_sum<TPR>(q, red[1]), p.inv_hidden, p.eps)));

  uint4 *yg = static_cast<uint4 *>(p.y) + (o + hd) / N;
  void *yrow = static_cast<typename S::bits *>(p.y) + o;
  if constexpr (TPR >= 32 && NV <= KV_NORM_WORD_COPIES_MAX_NV) { /* a warp serves one row: hd is the same in all its threads */
    /* The loop of peeled_vectors written out in a lambda over the kernel's locals: as a call of
     * peeled_vectors from the lambda, LayerNorm fp16 128x4 ran 5 - 10 % slower (H100, same call). */
    const uint4 *wg = static_cast<const uint4 *>(p.w);
    const uint4 *bg = static_cast<const uint4 *>(p.b);
    const int odd = N == 8 ? hd & 1 : 0;
    kv_norm::with_words<4>(N == 8 ? hd >> 1 : hd, [&, t = t, live = live](auto words) {
      const int qw = words;
#pragma unroll
      for (int v = 0; v < NV; v++) {
        const int j = v * TPR + t;
        if (!live || j >= nw) continue;
        float f[N], w[N], b[N];
        kv_norm::unpack_vec<T>(xv[v], f);
        if (hd == 0) {
          kv_norm::unpack_vec<T>(__ldg(wg + j), w);
          if constexpr (LN) kv_norm::unpack_vec<T>(__ldg(bg + j), b);
        } else if ((j + 2) * N <= n) {
          kv_norm::unpack_vec<T>(kv_norm::shift_vec<N>(__ldg(wg + j), __ldg(wg + j + 1), qw, odd), w);
          if constexpr (LN) kv_norm::unpack_vec<T>(kv_norm::shift_vec<N>(__ldg(bg + j), __ldg(bg + j + 1), qw, odd), b);
        } else {
          kv_norm::unpack_vec<T>(kv_norm::load_part<T>(p.w, hd + j * N, n), w);
          if constexpr (LN) kv_norm::unpack_vec<T>(kv_norm::load_part<T>(p.b, hd + j * N, n), b);
        }
#pragma unroll
        for (int e = 0; e < N; e++) f[e] = kv_norm::affine<LN>(f[e], st, w[e], LN ? b[e] : 0.0f);
        yg[j] = kv_norm::pack_vec<T>(f);
      }
    });
  } else {
    kv_norm::peeled_vectors<T, TPR, NV, LN>(p, xv, st, t, live, nw, hd, yg);
  }
#pragma unroll
  for (int e = 0; e < EX; e++) {
    const int k = e * TPR + t;
    if (!live || k >= ends) continue;
    const int i = end_pos(k);
    S::store(yrow, (size_t)i, kv_norm::affine<LN>(xe[e], st, S::load(p.w, i), LN ? S::load(p.b, i) : 0.0f));
  }
}

namespace kv_norm {

/* Block-wide sum for the general path and the reference: butterfly in each warp, then the
 * warp sums in warp order. Ends with a barrier, so `red` can be reused by the next call. */
template <int BLOCK, class V>
__device__ __forceinline__ V block_sum(V v, V *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  kv::block_sync();
  v = red[0];
#pragma unroll
  for (int i = 1; i < BLOCK / 32; i++) v += red[i];
  kv::block_sync();
  return v;
}

/* Mean of the row of x that starts at element base (p.hidden elements), one block of BLOCK
 * threads, in V (float, or double for the reference): thread t adds elements t, t + BLOCK,
 * ... in order, then block_sum. */
template <int BLOCK, class T, class V>
__device__ __forceinline__ V block_mean(const kv_norm_params &p, size_t base, V *red) {
  const size_t n = (size_t)p.hidden;
  V s = 0;
  for (size_t j = threadIdx.x; j < n; j += BLOCK) s += (V)storage<T>::load(p.x, base + j);
  return block_sum<BLOCK>(s, red) / (V)p.hidden;
}

}  // namespace kv_norm

template <class T, bool LN>
__global__ void __launch_bounds__(KV_NORM_GENERAL_BLOCK) kv_norm_general(kv_norm_params p) {
  using S = kv_norm::storage<T>;
  constexpr int B = KV_NORM_GENERAL_BLOCK;
  __shared__ float red[B / 32];
  const size_t n = (size_t)p.hidden, base = (size_t)blockIdx.x * n;
  const float nf = (float)p.hidden;

  float mean = 0.0f;
  if constexpr (LN) mean = kv_norm::block_mean<B, T>(p, base, red);
  float q = 0.0f;
  for (size_t j = threadIdx.x; j < n; j += B) {
    const float d = S::load(p.x, base + j) - mean;
    q = fmaf(d, d, q);
  }
  const float rstd = 1.0f / sqrtf(kv_norm::block_sum<B>(q, red) / nf + p.eps);
  for (size_t j = threadIdx.x; j < n; j += B) {
    const float x = S::load(p.x, base + j), w = S::load(p.w, j);
    const float y = LN ? fmaf((x - mean) * rstd, w, S::load(p.b, j)) : (x * rstd) * w;
    S::store(p.y, base + j, y);
  }
}

/* The cpu backend's operation sequence, one thread per row (see the header). */
template <class T, class Acc, bool LN>
__global__ void __launch_bounds__(KV_NORM_SERIAL_BLOCK) kv_norm_serial(kv_norm_params p) {
  using S = kv_norm::storage<T>;
  const long long row = (long long)blockIdx.x * KV_NORM_SERIAL_BLOCK + threadIdx.x;
  if (row >= p.rows) return;
  const size_t n = (size_t)p.hidden, base = (size_t)row * n;
  const float nf = (float)p.hidden;
  float mean = 0.0f;
  if constexpr (LN) {
    float s = 0.0f;
    for (size_t j = 0; j < n; j++) s = Acc::r(__fadd_rn(s, S::load(p.x, base + j)));
    mean = Acc::r(__fdiv_rn(s, nf));
  }
  float q = 0.0f;
  for (size_t j = 0; j < n; j++) {
    const float x = S::load(p.x, base + j), d = LN ? Acc::r(__fsub_rn(x, mean)) : x;
    q = Acc::r(__fadd_rn(q, __fmul_rn(d, d)));
  }
  const float var = Acc::r(__fdiv_rn(q, nf));
  const float rstd = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, p.eps)));
  for (size_t j = 0; j < n; j++) {
    const float x = S::load(p.x, base + j), w = S::load(p.w, j);
    const float y = LN ? __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, mean), rstd), w), S::load(p.b, j))
                       : __fmul_rn(__fmul_rn(x, rstd), w);
    S::store(p.y, base + j, y);
  }
}

/* The kernels of one storage type: config -1 is the general path (fp32 accumulation) or the
 * serial path (the storage type's own accumulator, Narrow; void for fp32 storage); a table
 * index is a register-resident kernel (fp32 accumulation only). */
template <class T, class Narrow, kv_dtype NARROW>
kv_norm_kernel kv_norm_kernel_of(bool layernorm, kv_dtype accum, int config) {
  kv_norm_kernel k = {nullptr, KV_NORM_GENERAL_BLOCK, 1, "general"};
  if (config < 0) {
    if (accum == KV_FP32)
      k.func = layernorm ? (const void *)kv_norm_general<T, true> : (const void *)kv_norm_general<T, false>;
    if constexpr (!std::is_void_v<Narrow>) {
      if (accum == NARROW) {
        k.func = layernorm ? (const void *)kv_norm_serial<T, Narrow, true> : (const void *)kv_norm_serial<T, Narrow, false>;
        k.block = k.rows_per_block = KV_NORM_SERIAL_BLOCK;
        k.name = "serial";
      }
    }
    return k;
  }
  if (accum != KV_FP32) return k;
  switch (config) {
#define KV_NORM_FN_FAST(TPR, NV) \
  layernorm ? (const void *)kv_norm_fast<T, TPR, NV, true> : (const void *)kv_norm_fast<T, TPR, NV, false>
#define KV_NORM_FN_PEELED(TPR, NV) \
  layernorm ? (const void *)kv_norm_peeled<T, TPR, NV, true> : (const void *)kv_norm_peeled<T, TPR, NV, false>
#define KV_X(idx, TPR, NV, KIND)                                   \
  case idx:                                                        \
    k.func = KV_NORM_FN_##KIND(TPR, NV);                           \
    k.block = kv_norm_block(TPR);                                  \
    k.rows_per_block = kv_norm_block(TPR) / TPR;                   \
    k.name = #KIND " tpr=" #TPR " nv=" #NV;                        \
    break;
    KV_NORM_CONFIGS(KV_X)
#undef KV_X
#undef KV_NORM_FN_PEELED
#undef KV_NORM_FN_FAST
    default:
      break;
  }
  return k;
}

#endif
