/* gemm_common.cuh - what the GEMM kernels (gemm_mma.cuh, gemm_wgmma.cuh) share: the launch
 * parameter block of the epilogue, and in namespace kv_gemm the CUDA type of a storage type,
 * the storage-type conversions, the
 * bf16 accumulation model's rounding and the epilogue D = alpha * acc + beta * C.
 * Epilogue arithmetic (the CPU emulation matches it): t = fl32(alpha * acc); when beta != 0,
 * t = fl32(t + fl32(beta * c)); d = round-to-nearest-even of t to the storage type. */
#ifndef KVAL_GEMM_COMMON_CUH
#define KVAL_GEMM_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "core/dtype.h"

/* Output side of a launch: D (and C when beta != 0), row-major m x n. */
struct kv_gemm_epi {
  void *d;
  const void *c;
  int m, n;
  float alpha, beta;
};

namespace kv_gemm {

/* The CUDA type of a storage type (KV_FP16, KV_BF16). */
template <kv_dtype STORE>
using storage_t = std::conditional_t<STORE == KV_FP16, __half, __nv_bfloat16>;

/* Storage element <-> float; to the storage type with round to nearest even. */
template <class T> struct storage;

template <> struct storage<__half> {
  static __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from_float(float x) { return __float2half_rn(x); }
};

template <> struct storage<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
};

/* The bf16 accumulation model: the fp32 accumulator rounded to bf16 (RNE) after a k-step. */
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

/* The outputs at (row, col), (row, col + 1), col even, as storage values packed low first;
 * C is read only inside the matrix (outside it the values are never stored). */
template <class T>
__device__ __forceinline__ uint32_t out_pair(const kv_gemm_epi &e, int row, int col, float v0, float v1) {
  typedef storage<T> S;
  float r0 = __fmul_rn(e.alpha, v0), r1 = __fmul_rn(e.alpha, v1);
  if (e.beta != 0.0f && row < e.m && col < e.n) {
    const T *c = static_cast<const T *>(e.c) + (size_t)row * (size_t)e.n + (size_t)col;
    r0 = __fadd_rn(r0, __fmul_rn(e.beta, S::to_float(c[0])));
    if (col + 1 < e.n) r1 = __fadd_rn(r1, __fmul_rn(e.beta, S::to_float(c[1])));
  }
  T pair[2] = {S::from_float(r0), S::from_float(r1)};
  return *reinterpret_cast<const uint32_t *>(pair);
}

/* Store the accumulator pair at (row, col), (row, col + 1), col even; bounds-checked. */
template <class T>
__device__ __forceinline__ void store_pair(const kv_gemm_epi &e, int row, int col, float v0, float v1) {
  if (row >= e.m || col >= e.n) return;
  const uint32_t packed = out_pair<T>(e, row, col, v0, v1);
  T *d = static_cast<T *>(e.d) + (size_t)row * (size_t)e.n + (size_t)col;
  if (col + 1 < e.n && (e.n % 2) == 0) {
    *reinterpret_cast<uint32_t *>(d) = packed;
  } else {
    const T *pair = reinterpret_cast<const T *>(&packed);
    d[0] = pair[0];
    if (col + 1 < e.n) d[1] = pair[1];
  }
}

}  // namespace kv_gemm

#endif
