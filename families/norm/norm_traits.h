/* norm_traits.h - what the LayerNorm/RMSNorm kernels share: the kernel parameter block and
 * kernel handle, the table of register-resident kernel shapes (threads per row x 16-byte
 * vectors per thread x kind), and in namespace kv_norm the device traits: storage (16-byte
 * vector <-> float conversions with round-to-nearest-even), the shift of a vector into line, and
 * the narrow accumulators (fp16/bf16 rounding after every operation). The kernels are in
 * norm_kernels.cuh, their instantiations in inst/norm_<storage>.cu, the host API in
 * norm_api.h. CUDA C++ only. */
#ifndef KVAL_NORM_TRAITS_H
#define KVAL_NORM_TRAITS_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "core/cuda_check.cuh"
extern "C" {
#include "core/dtype.h"
#include "families/norm/norm_limits.h"
}

/* Kernel arguments (passed by value). x [rows, hidden], w and b [hidden] (b NULL for
 * RMSNorm), y [rows, hidden]; all of the storage type. */
struct kv_norm_params {
  const void *x, *w, *b;
  void *y;
  long long rows;
  int hidden;
  float inv_hidden; /* 1 / hidden rounded to float: the fast path's mean is sum * inv_hidden */
  float eps;
};

/* One compiled kernel variant and its launch shape. */
struct kv_norm_kernel {
  const void *func;  /* __global__ function, for cudaLaunchKernel and cudaFuncGetAttributes */
  int block;         /* threads per block */
  int rows_per_block;
  const char *name;  /* for messages: "fast tpr=64 nv=8", "general" */
};

/* Register-resident paths: each row is held in registers by TPR threads, NV 16-byte vectors
 * each (8 fp16 / bf16 or 4 fp32 elements per vector). Kinds:
 *   KV_NORM_FAST    hidden a multiple of the vector (rows start on 16-byte boundaries)
 *   KV_NORM_PEELED  any hidden: rows start anywhere; the row's whole 16-byte vectors as the
 *                   fast path holds them, the fewer than 2N elements at its ends one a thread
 * Several entries cover one row length: the table is what families/norm/bench/norm_bench.cu sweeps,
 * kv_norm_default_config() the measured choice. Both need 16-byte aligned x, y, w, b.
 * Measured on an H200 and dropped (docs/PERFORMANCE.md): streaming cache hints on the fast
 * path (ld.global.nc.L1::no_allocate for x, st.global.cs for y: 3889 -> 3656 GB/s for
 * RMSNorm fp16 16384x4096), w and b loaded before the reductions (more registers, fewer
 * resident blocks: LayerNorm tpr 256 nv 2 fell to 3387 GB/s), and a persistent kernel
 * (grid = resident blocks, w and b in registers, next row prefetched: slower at every shape).
 * Replaced: a peeled kernel that held the row's partial end vectors as vector slots (one more
 * vector a thread, so fewer resident blocks) with the streaming hints ran at 1.5 - 2.7 TB/s
 * where today's runs 3.2 - 3.8 (16384 x 4097 and 4100, fp16/bf16; docs/PERFORMANCE.md). */
/* The configurations (kv_norm_kind, kv_norm_config, KV_NORM_CONFIGS) and the choice among them:
 * norm_limits.h, shared with the C descriptor. */

/* Threads per block of a register-resident configuration: small rows share a 128-thread block. */
__host__ __device__ constexpr int kv_norm_block(int tpr) { return tpr < 128 ? 128 : tpr; }
/* Minimum resident blocks for __launch_bounds__: caps the kernel at 128 registers a thread
 * (with the block size alone, ptxas picked tighter budgets and spilled a few bytes), except
 * RMSNorm's 512-thread entries, capped at 64 for two blocks an SM: uncapped they took 64 - 79
 * registers and one block an SM; capped they run 4 - 28 % faster (H100, docs/PERFORMANCE.md).
 * LayerNorm's 512 x 8 needs 98 - 128. A 1024-thread block is one an SM, 64 registers. */
__host__ __device__ constexpr int kv_norm_min_blocks(int tpr, bool layernorm) {
  return kv_norm_block(tpr) == 512 ? (layernorm ? 1 : 2) : kv_norm_block(tpr) >= 512 ? 1 : 512 / kv_norm_block(tpr);
}

/* ---- device traits (kv_norm) ---- */

namespace kv_norm {

/* Storage: a 16-byte vector <-> N floats; scalar load/store. Stores round to nearest even. */
template <class T>
struct storage;

template <>
struct storage<__half> {
  static constexpr int N = 8;
  using bits = unsigned short;
  static __device__ __forceinline__ float2 pair(unsigned u) {
    __half2 h;
    memcpy(&h, &u, 4);
    return __half22float2(h);
  }
  static __device__ __forceinline__ unsigned pack(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
  static __device__ __forceinline__ float load(const void *p, size_t i) {
    return __half2float(static_cast<const __half *>(p)[i]);
  }
  static __device__ __forceinline__ void store(void *p, size_t i, float v) {
    static_cast<__half *>(p)[i] = __float2half_rn(v);
  }
};

template <>
struct storage<__nv_bfloat16> {
  static constexpr int N = 8;
  using bits = unsigned short;
  static __device__ __forceinline__ float2 pair(unsigned u) {
    return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
  }
  static __device__ __forceinline__ unsigned pack(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
  static __device__ __forceinline__ float load(const void *p, size_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  }
  static __device__ __forceinline__ void store(void *p, size_t i, float v) {
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
  }
};

template <>
struct storage<float> {
  static constexpr int N = 4;
  using bits = unsigned;
  static __device__ __forceinline__ float load(const void *p, size_t i) { return static_cast<const float *>(p)[i]; }
  static __device__ __forceinline__ void store(void *p, size_t i, float v) { static_cast<float *>(p)[i] = v; }
};

/* The N floats of a 16-byte vector, and back. */
template <class T>
__device__ __forceinline__ void unpack_vec(const uint4 &v, float (&f)[storage<T>::N]) {
  if constexpr (storage<T>::N == 4) {
    f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
  } else {
    const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
      float2 p = storage<T>::pair(u[k]);
      f[2 * k] = p.x, f[2 * k + 1] = p.y;
    }
  }
}

template <class T>
__device__ __forceinline__ uint4 pack_vec(const float (&f)[storage<T>::N]) {
  if constexpr (storage<T>::N == 4) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  } else {
    return make_uint4(storage<T>::pack(f[0], f[1]), storage<T>::pack(f[2], f[3]), storage<T>::pack(f[4], f[5]),
                      storage<T>::pack(f[6], f[7]));
  }
}

/* Elements s .. s + N - 1 of the 2N elements of vectors a then b (0 < s < N, the same in every
 * thread of a row), s given as q = the whole 32-bit words it skips (0..3) and, for 2-byte
 * elements, odd = s & 1: the vector of w or b that lines up with a row starting off a 16-byte
 * boundary, from the two aligned vectors around it. Word selection by compares (no local
 * memory; register moves where q is a compile-time constant), then a half-word shift for
 * 2-byte elements. */
template <int N>
__device__ __forceinline__ uint4 shift_vec(const uint4 &a, const uint4 &b, int q, int odd) {
  const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  unsigned o[5];
#pragma unroll
  for (int i = 0; i < 5; i++) {
    o[i] = q == 0 ? w[i] : q == 1 ? w[i + 1] : q == 2 ? w[i + 2] : w[i + 3];
  }
  if constexpr (N == 8) {
    const unsigned sel = odd ? 0x5432u : 0x3210u;
    return make_uint4(__byte_perm(o[0], o[1], sel), __byte_perm(o[1], o[2], sel), __byte_perm(o[2], o[3], sel),
                      __byte_perm(o[3], o[4], sel));
  } else {
    return make_uint4(o[0], o[1], o[2], o[3]);
  }
}

/* The most vectors a thread of the peeled kernel holds where its store loop is compiled once per
 * word shift (kv_norm::with_words). Measured (docs/PERFORMANCE.md, 2026-12-05): four copies of
 * a loop of up to 4 vectors beat the run-time word selection (H100, LayerNorm bf16 4097: 0.87
 * -> 0.97 of the same-size copy); four copies of 8 vectors lost to it (H100,
 * LayerNorm fp16 11009: 0.85 -> 0.69). */
#define KV_NORM_WORD_COPIES_MAX_NV 4

/* f(std::integral_constant<int, q>{}) for the run-time word count q in [0, Q) (the same in
 * every thread of a warp): Q copies of f, each with its q a compile-time constant. */
template <int Q, int K = 0, class F>
__device__ __forceinline__ void with_words(int q, F &&f) {
  if constexpr (K < Q) {
    if (q == K)
      f(std::integral_constant<int, K>{});
    else
      with_words<Q, K + 1>(q, f);
  }
}

/* Narrow accumulators: r() rounds a float result to the accumulator type (RNE) and widens it
 * back, as kv_acc_round() does on the host. */
struct acc_fp16 {
  static __device__ __forceinline__ float r(float v) { return __half2float(__float2half_rn(v)); }
};
struct acc_bf16 {
  static __device__ __forceinline__ float r(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
};

}  // namespace kv_norm

#endif
