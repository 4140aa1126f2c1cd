/* widen.cuh - the input side of the fp64 GPU references of the attention families
 * (fa2_gpu_ref.cu, fa2bwd_gpu_ref.cu, decode_gpu_ref.cu): an fp16, bf16, e4m3 or e5m2 element
 * widened exactly to double, the kernel that widens rows of one (batch, head) of a [B, L, H, D]
 * tensor together with their absolute values, and the grid-stride launch size both use. */
#ifndef KVAL_DEVICE_WIDEN_CUH
#define KVAL_DEVICE_WIDEN_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "core/dtype.h"

namespace kv::ref {

/* Element i of 16-bit storage (KV_FP16 or KV_BF16) or 8-bit (KV_E4M3, KV_E5M2) as the double
 * of the same value. */
__device__ __forceinline__ double widen(const void *p, long long i, kv_dtype store) {
  if (store == KV_E4M3) return static_cast<double>(static_cast<float>(static_cast<const __nv_fp8_e4m3 *>(p)[i]));
  if (store == KV_E5M2) return static_cast<double>(static_cast<float>(static_cast<const __nv_fp8_e5m2 *>(p)[i]));
  const uint16_t bits = static_cast<const uint16_t *>(p)[i];
  if (store == KV_FP16) return static_cast<double>(__half2float(__ushort_as_half(bits)));
  return static_cast<double>(__uint_as_float(static_cast<uint32_t>(bits) << 16));
}

/* dst[j * D + d] = x(b, row0 + j, h, d) and dst_abs its absolute value, for j < rows, of the
 * [batch, len, heads, D] tensor src. A template so that every translation unit including
 * this header shares one definition. */
template <class Bits>
__global__ void widen_rows(const Bits *src, kv_dtype store, long long len, long long heads, long long D, long long b,
                           long long h, long long row0, long long rows, double *dst, double *dst_abs) {
  const long long n = rows * D;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long j = t / D, d = t % D;
    const double x = widen(src, ((b * len + row0 + j) * heads + h) * D + d, store);
    dst[t] = x;
    dst_abs[t] = fabs(x);
  }
}

/* Blocks of 256 threads for a grid-stride loop over n elements: at least 1, at most cap. */
inline unsigned grid_for(long long n, long long cap = 4096) {
  const long long blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
}

}  // namespace kv::ref

#endif
