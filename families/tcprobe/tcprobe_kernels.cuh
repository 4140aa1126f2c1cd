/* tcprobe_kernels.cuh - the probe kernels: one block runs a probe's sub-tests one after the
 * other, each one tensor-core instruction whose A row 0, B column 0 and C[0][0] are the
 * sub-test's operands (every other element zero), and stores D[0][0] as fp32. The operands
 * arrive as bit patterns and are moved into registers or shared memory as bits: no float
 * operation touches them, so nothing but the tensor core can round or flush them.
 *  - mma.sync m16n8k16 (one warp): row 0 of A and column 0 of B live in lanes 0..3
 *    (k = 2 (lane % 4) + {0, 1} in registers 0 / b0, k + 8 in registers 2 / b1); D[0][0] is
 *    lane 0's c[0].
 *  - wgmma m64n8k16 (one warpgroup, Hopper): A (64 x 16) and B (8 x 16) K-major in shared
 *    memory, rows of 128 bytes in the 128-byte swizzle of sm90.cuh's descriptor (row 0 is not
 *    permuted, so its k-th element is at byte 2k); D[0][0] is warp 0 lane 0's d[0]. */
#ifndef KVAL_TCPROBE_KERNELS_CUH
#define KVAL_TCPROBE_KERNELS_CUH

#include <stdint.h>

#include "families/device/sm80.cuh"
#include "families/device/sm90.cuh"
#include "families/tcprobe/tcprobe_limits.h"

namespace kv_tcp {

constexpr int kMmaThreads = 32;
constexpr int kWgmmaThreads = 128;
constexpr int kRowBytes = 128;   /* one swizzled row of a wgmma operand tile */
constexpr int kARows = 64, kBRows = 8;

__device__ __forceinline__ uint32_t pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }

template <class T>
__global__ void __launch_bounds__(kMmaThreads, 1) mma_kernel(const kv_tcp_operands *ops, int n, float *d) {
  const int lane = threadIdx.x, q = 2 * (lane % 4);
  for (int t = 0; t < n; ++t) {
    const kv_tcp_operands &o = ops[t];
    uint32_t a[4] = {0u, 0u, 0u, 0u}, b0 = 0u, b1 = 0u;
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (lane < 4) {
      a[0] = pack(o.a[q], o.a[q + 1]);
      a[2] = pack(o.a[q + 8], o.a[q + 9]);
      b0 = pack(o.b[q], o.b[q + 1]);
      b1 = pack(o.b[q + 8], o.b[q + 9]);
    }
    if (lane == 0) c[0] = __uint_as_float(o.c);
    kv::ptx::mma_m16n8k16_f32<T>(c, a, b0, b1);
    if (lane == 0) d[t] = c[0];
  }
}

template <class T>
__global__ void __launch_bounds__(kWgmmaThreads, 1) wgmma_kernel(const kv_tcp_operands *ops, int n, float *d) {
#if KV_SM90A
  __shared__ __align__(1024) uint16_t sa[kARows * kRowBytes / 2];
  __shared__ __align__(1024) uint16_t sb[kBRows * kRowBytes / 2];
  const int tid = threadIdx.x;
  for (int i = tid; i < kARows * kRowBytes / 2; i += kWgmmaThreads) sa[i] = 0;
  for (int i = tid; i < kBRows * kRowBytes / 2; i += kWgmmaThreads) sb[i] = 0;
  const uint64_t desc_a = kv::ptx::wgmma_desc(kv::ptx::smem_addr(sa), 16, 8 * kRowBytes);
  const uint64_t desc_b = kv::ptx::wgmma_desc(kv::ptx::smem_addr(sb), 16, 8 * kRowBytes);
  for (int t = 0; t < n; ++t) {
    const kv_tcp_operands &o = ops[t];
    if (tid < KV_TCP_K) {
      sa[tid] = o.a[tid];
      sb[tid] = o.b[tid];
    }
    kv::ptx::fence_proxy_async();
    __syncthreads();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (tid == 0) acc[0] = __uint_as_float(o.c);
#pragma unroll
    for (int i = 0; i < 4; ++i) kv::ptx::reg_fence(acc[i]);
    kv::ptx::wgmma_fence();
    kv::ptx::wgmma_m64n8k16_f32<T>(acc, desc_a, desc_b, 1);
    kv::ptx::wgmma_commit_group();
    kv::ptx::wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < 4; ++i) kv::ptx::reg_fence(acc[i]);
    if (tid == 0) d[t] = acc[0];
    __syncthreads(); /* every warp's wgmma has read the tiles before they change */
  }
#else
  (void)ops, (void)n, (void)d;
#endif
}

/* Each thread one sub-test: the exact D[0][0] and its magnitude term in fp64. */
__global__ void reference_kernel(const kv_tcp_operands *ops, int n, kv_dtype st, double *ref, double *mag) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) ref[t] = kv_tcp_exact(&ops[t], st, &mag[t]);
}

}  // namespace kv_tcp

#endif
