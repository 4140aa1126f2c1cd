/* gemm_common.cuh - what the GEMM kernels (gemm_mma.cuh, gemm_wgmma.cuh) share: the launch
 * parameter block of the epilogue, and in namespace kv_gemm the CUDA types of a storage type
 * and of its output (C and D), the output-type conversions, the
 * bf16 accumulation model's rounding and the epilogue D = alpha * acc + beta * C.
 * Epilogue arithmetic (the CPU emulation matches it): t = fl32(alpha * acc); when beta != 0,
 * t = fl32(t + fl32(beta * c)); d = round-to-nearest-even of t to the output type (the storage
 * type, bf16 for FP8 storage: kv_precision_output). alpha is kv_gemm_epilogue_alpha's (FP8
 * scales folded in). */
#ifndef KVAL_GEMM_COMMON_CUH
#define KVAL_GEMM_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "core/dtype.h"

/* Output side of a launch: D (and C when beta != 0), row-major m x n of the output type. */
struct kv_gemm_epi {
  void *d;
  const void *c;
  int m, n;
  float alpha, beta;
};

namespace kv_gemm {

/* The CUDA type of a storage type (KV_FP16, KV_BF16, KV_E4M3, KV_E5M2). */
template <kv_dtype STORE>
using storage_t = std::conditional_t<
    STORE == KV_FP16, __half,
    std::conditional_t<STORE == KV_BF16, __nv_bfloat16,
                       std::conditional_t<STORE == KV_E4M3, __nv_fp8_e4m3, __nv_fp8_e5m2>>>;

/* The CUDA type of C and D for storage type T: T, bf16 for FP8 (kv_precision_output). */
template <class T>
using output_t = std::conditional_t<sizeof(T) == 1, __nv_bfloat16, T>;

/* Output element <-> float; to the output type with round to nearest even. */
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

/* The outputs at (row, col), (row, col + 1), col even, as values of the output type O packed
 * low first; C is read only inside the matrix (outside it the values are never stored). */
template <class O>
__device__ __forceinline__ uint32_t out_pair(const kv_gemm_epi &e, int row, int col, float v0, float v1) {
  typedef storage<O> S;
  float r0 = __fmul_rn(e.alpha, v0), r1 = __fmul_rn(e.alpha, v1);
  if (e.beta != 0.0f && row < e.m && col < e.n) {
    const O *c = static_cast<const O *>(e.c) + (size_t)row * (size_t)e.n + (size_t)col;
    r0 = __fadd_rn(r0, __fmul_rn(e.beta, S::to_float(c[0])));
    if (col + 1 < e.n) r1 = __fadd_rn(r1, __fmul_rn(e.beta, S::to_float(c[1])));
  }
  O pair[2] = {S::from_float(r0), S::from_float(r1)};
  return *reinterpret_cast<const uint32_t *>(pair);
}

/* Store the accumulator pair at (row, col), (row, col + 1), col even, as output type O;
 * bounds-checked. */
template <class O>
__device__ __forceinline__ void store_pair(const kv_gemm_epi &e, int row, int col, float v0, float v1) {
  if (row >= e.m || col >= e.n) return;
  const uint32_t packed = out_pair<O>(e, row, col, v0, v1);
  O *d = static_cast<O *>(e.d) + (size_t)row * (size_t)e.n + (size_t)col;
  if (col + 1 < e.n && (e.n % 2) == 0) {
    *reinterpret_cast<uint32_t *>(d) = packed;
  } else {
    const O *pair = reinterpret_cast<const O *>(&packed);
    d[0] = pair[0];
    if (col + 1 < e.n) d[1] = pair[1];
  }
}

}  // namespace kv_gemm

#endif
