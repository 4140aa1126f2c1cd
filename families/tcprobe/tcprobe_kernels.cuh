/* tcprobe_kernels.cuh - the probe kernels: one block runs a probe's sub-tests one after the
 * other, each one tensor-core instruction whose A row 0, B column 0 and C[0][0] are the
 * sub-test's operands (every other element zero), and stores D[0][0] as fp32. The operands
 * arrive as bit patterns and are moved into registers or shared memory as bits: no float
 * operation touches them, so nothing but the tensor core can round or flush them. T is the
 * input type: __half, __nv_bfloat16 (k 16, two elements per 32-bit register) or
 * __nv_fp8_e4m3, __nv_fp8_e5m2 (k 32, four per register).
 *  - mma.sync m16n8k16 / m16n8k32 (one warp; FP8 from sm_89, on sm_90 a compiler sequence:
 *    mma_m16n8k32_f32): row 0 of A and column 0 of B live in lanes 0..3 (k = e (lane % 4) +
 *    {0 .. e-1} in registers 0 / b0, those k + K/2 in registers 2 / b1, for e = 2 or 4
 *    elements per register and K = 16 or 32); D[0][0] is lane 0's c[0].
 *  - wgmma m64n8k16 / m64n8k32 (one warpgroup, Hopper): A (64 x k) and B (8 x k) K-major in
 *    shared memory (FP8 has no other layout), rows of 128 bytes in the 128-byte swizzle of
 *    sm90.cuh's descriptor (row 0 is not permuted, so its k-th element is at byte k sizeof(T));
 *    D[0][0] is warp 0 lane 0's d[0].
 * The FP8 instructions' wrappers are here (sm80.cuh / sm90.cuh wrap the fp16/bf16 ones). */
#ifndef KVAL_TCPROBE_KERNELS_CUH
#define KVAL_TCPROBE_KERNELS_CUH

#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "families/device/sm80.cuh"
#include "families/device/sm90.cuh"
#include "families/tcprobe/tcprobe_limits.h"

/* mma.sync with e4m3/e5m2 inputs exists from sm_89 on. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define KV_TCP_SM89 1
#else
#define KV_TCP_SM89 0
#endif

namespace kv_tcp {

constexpr int kMmaThreads = 32;
constexpr int kWgmmaThreads = 128;
constexpr int kRowBytes = 128;   /* one swizzled row of a wgmma operand tile */
constexpr int kARows = 64, kBRows = 8;

template <class T> constexpr bool is_fp8() {
  return std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;
}
template <class T> constexpr int k_of() { return is_fp8<T>() ? 32 : 16; }

__device__ __forceinline__ uint32_t pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }
/* Four 8-bit codes x[0..3] in one register, x[0] in the low byte. */
__device__ __forceinline__ uint32_t pack4(const uint16_t *x) {
  return (x[0] & 0xffu) | (x[1] & 0xffu) << 8 | (x[2] & 0xffu) << 16 | (uint32_t)(x[3] & 0xffu) << 24;
}

/* mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}: c += A B (a: 4 registers, b: 2; four
 * 8-bit elements per register). Empty below sm_89 (the adapter refuses such devices). On sm_90a
 * ptxas lowers it to FP8 -> fp16 unpacks (F2FP), two fp16 mma (HMMA.16816.F32, over the k with
 * k mod 4 in {0, 1} and in {2, 3}) and an fp32 add: the probes measure that sequence. */
template <class T>
__device__ __forceinline__ void mma_m16n8k32_f32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  static_assert(is_fp8<T>(), "e4m3 or e5m2 inputs");
#if KV_TCP_SM89
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3>)
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)c, (void)a, (void)b0, (void)b1;
#endif
}

template <class T>
__global__ void __launch_bounds__(kMmaThreads, 1) mma_kernel(const kv_tcp_operands *ops, int n, float *d) {
  const int lane = threadIdx.x, q = 2 * (lane % 4), q4 = 4 * (lane % 4);
  for (int t = 0; t < n; ++t) {
    const kv_tcp_operands &o = ops[t];
    uint32_t a[4] = {0u, 0u, 0u, 0u}, b0 = 0u, b1 = 0u;
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (lane < 4 && is_fp8<T>()) {
      a[0] = pack4(o.a + q4);
      a[2] = pack4(o.a + q4 + 16);
      b0 = pack4(o.b + q4);
      b1 = pack4(o.b + q4 + 16);
    } else if (lane < 4) {
      a[0] = pack(o.a[q], o.a[q + 1]);
      a[2] = pack(o.a[q + 8], o.a[q + 9]);
      b0 = pack(o.b[q], o.b[q + 1]);
      b1 = pack(o.b[q + 8], o.b[q + 9]);
    }
    if (lane == 0) c[0] = __uint_as_float(o.c);
    if constexpr (is_fp8<T>())
      mma_m16n8k32_f32<T>(c, a, b0, b1);
    else
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
  __syncthreads(); /* FP8 operand bytes share 16-bit words that other threads zeroed */
  const uint64_t desc_a = kv::ptx::wgmma_desc(kv::ptx::smem_addr(sa), 16, 8 * kRowBytes);
  const uint64_t desc_b = kv::ptx::wgmma_desc(kv::ptx::smem_addr(sb), 16, 8 * kRowBytes);
  for (int t = 0; t < n; ++t) {
    const kv_tcp_operands &o = ops[t];
    if (tid < k_of<T>()) {
      if constexpr (is_fp8<T>()) { /* byte k of row 0 */
        reinterpret_cast<uint8_t *>(sa)[tid] = (uint8_t)o.a[tid];
        reinterpret_cast<uint8_t *>(sb)[tid] = (uint8_t)o.b[tid];
      } else {
        sa[tid] = o.a[tid];
        sb[tid] = o.b[tid];
      }
    }
    kv::ptx::fence_proxy_async();
    __syncthreads();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (tid == 0) acc[0] = __uint_as_float(o.c);
#pragma unroll
    for (int i = 0; i < 4; ++i) kv::ptx::reg_fence(acc[i]);
    kv::ptx::wgmma_fence();
    if constexpr (is_fp8<T>())
      kv::ptx::wgmma_m64n8k32_f32<T>(acc, desc_a, desc_b, 1);
    else
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
