/* sm80.cuh - thin wrappers over the Ampere (sm_80) PTX of the mma.sync kernels
 * (families/fa2/fa2_mma.cuh, families/gemm/gemm_mma.cuh), in namespace kv::ptx and named
 * after their instructions: the shared-memory address of a generic pointer, cp.async of 16
 * bytes global -> shared (zero-filled past src_bytes) with its commit and wait groups,
 * ldmatrix x4 (and .trans), mma.sync m16n8k16 with fp32 accumulators (fp16 or bf16 inputs)
 * and with fp16 accumulators, and the conversions between fp32 and the 16-bit pairs that one
 * 32-bit register holds. The Hopper wrappers (sm90.cuh) build on it. */
#ifndef KVAL_DEVICE_SM80_CUH
#define KVAL_DEVICE_SM80_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "families/device/race_delay.cuh"

namespace kv::ptx {

/* The shared-window address of a generic pointer into shared memory. */
__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/* ---- cp.async ---- */

/* 16-byte global -> shared copy that reads the first src_bytes (0..16) bytes of src and
 * zero-fills the rest of dst; src_bytes 0 reads nothing. */
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/* Wait until at most N committed groups are still pending (race-delay builds: then a delay,
 * race_delay.cuh). */
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
  kv::race_delay(kv::kRaceSiteCpAsyncWait);
}

/* ---- ldmatrix: four 8x8 matrices of 16-bit elements; lanes 8i..8i+7 address the rows of
 * matrix i, which lands in r[i] ---- */

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/* ---- mma.sync m16n8k16, A row-major, B column-major: c (16x8) += a (16x16) b (16x8) ---- */

/* fp32 accumulators; inputs of type T, __half or __nv_bfloat16. */
template <class T>
__device__ __forceinline__ void mma_m16n8k16_f32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 inputs");
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* fp16 accumulators (fp16 inputs), two per register. */
__device__ __forceinline__ void mma_m16n8k16_f16(uint32_t (&c)[2], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
      : "+r"(c[0]), "+r"(c[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* ---- 16-bit pairs in a 32-bit register, low half first ---- */

/* (lo, hi) rounded to nearest even to a pair of T (__half or __nv_bfloat16). */
template <class T>
__device__ __forceinline__ uint32_t cvt_rn_pair(float lo, float hi) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 pairs");
  uint32_t r;
  if constexpr (std::is_same_v<T, __half>)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/* The low and the high fp16 of a pair as fp32 (exact). */
__device__ __forceinline__ float f16x2_lo(uint32_t h) {
  float f;
  asm("{ .reg .f16 l, u; mov.b32 {l, u}, %1; cvt.f32.f16 %0, l; }\n" : "=f"(f) : "r"(h));
  return f;
}
__device__ __forceinline__ float f16x2_hi(uint32_t h) {
  float f;
  asm("{ .reg .f16 l, u; mov.b32 {l, u}, %1; cvt.f32.f16 %0, u; }\n" : "=f"(f) : "r"(h));
  return f;
}
/* The low and the high bf16 of a pair as fp32 (exact: a bf16 is the top half of an fp32). */
__device__ __forceinline__ float bf16x2_lo(uint32_t h) { return __uint_as_float(h << 16); }
__device__ __forceinline__ float bf16x2_hi(uint32_t h) { return __uint_as_float(h & 0xffff0000u); }

}  // namespace kv::ptx

#endif
