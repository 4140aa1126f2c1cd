/* generate.cu - kv_cuda_generate: the device twin of the host input generator. Element i of
 * a tensor is round_to_storage(kv_gen_value(key, i, dist, scale, offset)) with the shared
 * counter-based generator of numerics/rng.h; the value is formed in double with separately
 * rounded multiply and add and converted ONCE to the storage type with round-to-nearest-even:
 * __double2half and __double2bfloat16 are the PTX instructions cvt.rn.f16.f64 and
 * cvt.rn.bf16.f64 on sm_90 (a single correctly rounded conversion from double, no detour
 * through float), __double2float_rn likewise. The result is bit-identical to the host's
 * integer-arithmetic conversions (kv_f64_to_f16 / kv_f64_to_bf16), which tests/gpu checks.
 * The 8-bit types round once from double with saturation to the largest finite value
 * (__nv_cvt_double_to_fp8 with __NV_SATFINITE), as the host's kv_f64_to_fp8 does. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "core/cuda_check.cuh"
#include "backends/cuda/device.h"
#include "numerics/rng.h"

namespace {

__device__ __forceinline__ void store_rounded(__half *p, double v) { *p = __double2half(v); }
__device__ __forceinline__ void store_rounded(__nv_bfloat16 *p, double v) { *p = __double2bfloat16(v); }
__device__ __forceinline__ void store_rounded(float *p, double v) { *p = __double2float_rn(v); }
__device__ __forceinline__ void store_rounded(double *p, double v) { *p = v; }
__device__ __forceinline__ void store_rounded(__nv_fp8_e4m3 *p, double v) {
  p->__x = __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}
__device__ __forceinline__ void store_rounded(__nv_fp8_e5m2 *p, double v) {
  p->__x = __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
}

template <class T>
__global__ void __launch_bounds__(256) generate_kernel(T *out, size_t n, uint64_t key, int dist, double scale,
                                                       double offset) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    store_rounded(out + i, kv_gen_value(key, (uint64_t)i, dist, scale, offset));
}

template <class T>
kv_status launch(void *buf, const kv_tensor_spec *t, uint64_t key, cudaStream_t s) {
  const unsigned threads = 256;
  size_t blocks = (t->count + threads - 1) / threads;
  if (blocks > 65536) blocks = 65536; /* grid-stride beyond: 16M threads keep the memory busy */
  generate_kernel<T><<<(unsigned)blocks, threads, 0, s>>>(static_cast<T *>(buf), t->count, key, t->dist, t->scale,
                                                          t->offset);
  return CHECK_LAUNCH("generate_kernel");
}

}  // namespace

extern "C" kv_status kv_cuda_generate(void *d_buf, const kv_tensor_spec *t, uint64_t key, void *stream) {
  if (t->count == 0) return KV_OK;
  if (t->dist != KV_DIST_NORMAL && t->dist != KV_DIST_UNIFORM) {
    kv_report(__FILE__, __LINE__, "generate", "tensor %s: unknown base distribution %d", t->name, t->dist);
    return KV_ERR;
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (t->dtype) {
    case KV_FP16: return launch<__half>(d_buf, t, key, s);
    case KV_BF16: return launch<__nv_bfloat16>(d_buf, t, key, s);
    case KV_FP32: return launch<float>(d_buf, t, key, s);
    case KV_FP64: return launch<double>(d_buf, t, key, s);
    case KV_E4M3: return launch<__nv_fp8_e4m3>(d_buf, t, key, s);
    case KV_E5M2: return launch<__nv_fp8_e5m2>(d_buf, t, key, s);
    default:
      kv_report(__FILE__, __LINE__, "generate", "tensor %s: unsupported dtype %d", t->name, (int)t->dtype);
      return KV_ERR;
  }
}
