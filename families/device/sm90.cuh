/* sm90.cuh - thin wrappers over the Hopper (sm_90a) PTX of the kval-wgmma kernels
 * (families/gemm/gemm_wgmma.cuh, families/fa2/fa2_wgmma.cuh), in namespace kv::ptx and named
 * after their instructions: mbarrier (init, expect-tx arrival, arrival, parity wait), TMA 2-D
 * and 4-D tile loads (cp.async.bulk.tensor completing on an mbarrier) and stores with their
 * bulk groups, bulk copies and fp32 bulk adds of contiguous bytes (cp.async.bulk,
 * cp.reduce.async.bulk), proxy fences, a flag read with acquire and bumped with release, named
 * barrier, the wgmma shared-memory matrix descriptor for 128-byte swizzled tiles,
 * wgmma.mma_async m64nNk16 (N = 256, 128, 64, and 32 with A from shared memory; A from shared
 * memory or from registers) and m64n8k16 (fp32 accumulators for fp16/bf16 inputs, fp16 accumulators for
 * fp16 inputs), m64nNk32 (N = 256, 192, 128, 64; fp32 accumulators for e4m3/e5m2 inputs) and
 * setmaxnreg; on the host, kv::tma_encode_fn, the
 * driver's cuTensorMapEncodeTiled. The shared-memory address helper is sm80.cuh's. */
#ifndef KVAL_DEVICE_SM90_CUH
#define KVAL_DEVICE_SM90_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "families/device/sm80.cuh"

/* wgmma, setmaxnreg and friends exist only in the arch-specific sm_90a target. */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KV_SM90A 1
#else
#define KV_SM90A 0
#endif

namespace kv {

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda); nullptr with
 * *err set when the driver lacks it. Looked up once. */
static inline PFN_cuTensorMapEncodeTiled_v12000 tma_encode_fn(cudaError_t *err) {
  static PFN_cuTensorMapEncodeTiled_v12000 cached = nullptr;
  *err = cudaSuccess;
  if (!cached) {
    void *ptr = nullptr;
    cudaDriverEntryPointQueryResult q;
    *err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q);
    if (*err == cudaSuccess && (q != cudaDriverEntryPointSuccess || !ptr)) *err = cudaErrorSymbolNotFound;
    if (*err == cudaSuccess) cached = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }
  return cached;
}

namespace ptx {

/* ---- mbarrier ---- */
/* Initialise an mbarrier (race-delay builds: after a delay, so that a thread which waits on it
 * with no barrier after the initialisation finds it not yet initialised). */
__device__ __forceinline__ void mbarrier_init(uint64_t *bar, uint32_t count) {
  kv::race_delay(kv::kRaceSiteMbarrierInit);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
/* Make barrier initialisation visible to the async proxy (TMA) and the other threads. */
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
/* Wait until the phase of the given parity has completed (race-delay builds: then a delay). */
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t *bar, uint32_t parity) {
  const uint32_t addr = smem_addr(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
  kv::race_delay(kv::kRaceSiteMbarrierWait);
}

/* ---- TMA: one 2-D box (c0 = innermost coordinate) into shared memory ---- */
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}

/* ---- TMA: one 4-D box (c0 = innermost coordinate) into shared memory, and back ---- */
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_store_4d(const CUtensorMap *map, const void *src, int c0, int c1, int c2,
                                             int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

/* ---- TMA store of a 2-D box from shared memory, bulk-group completion ---- */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* Wait until at most N bulk groups are pending: reading their shared memory (READ) or all. */
template <int N> __device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
/* ---- bulk copies of contiguous bytes, shared memory to global, bulk-group completion:
 * a plain copy and an fp32 element-wise add (the adds of one copy performed atomically in L2,
 * in no order among themselves). bytes: a multiple of 16, both addresses 16-byte aligned. */
__device__ __forceinline__ void bulk_store(void *dst, const void *src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(reinterpret_cast<uint64_t>(dst)),
               "r"(smem_addr(src)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, const void *src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(
                   reinterpret_cast<uint64_t>(dst)),
               "r"(smem_addr(src)), "r"(bytes)
               : "memory");
}
/* Order this thread's generic-proxy global accesses with its async-proxy (bulk) ones. */
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }
/* A flag in global memory read with acquire and bumped with release semantics, GPU scope. */
__device__ __forceinline__ int ld_acquire_gpu(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(int *p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/* Order this thread's ordinary shared-memory writes before later async-proxy (TMA) reads. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* Barrier among `threads` threads (a warpgroup) on hardware barrier `id` (1..15), then (a build
 * configured --enable-race-delays, race_delay.cuh) a warp's delay. */
__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
  kv::race_delay(static_cast<uint32_t>(id));
}

/* ---- wgmma ---- */
/* Shared-memory matrix descriptor, 128-byte swizzle; byte offsets as the PTX ISA defines
 * them (K-major: sbo = stride of 8-row groups; MN-major: lbo = stride of 64-element
 * MN chunks, sbo = stride of 8-row k groups). Tiles start on 1024-byte boundaries. */
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit_group() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Keep the compiler from moving accumulator reads or writes across a wgmma wait. */
__device__ __forceinline__ void reg_fence(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void reg_fence(uint32_t &r) { asm volatile("" : "+r"(r)::"memory"); }

/* Operand lists of the wgmma accumulators: %0 .. %(N-1), composed in runs of 32. */
#define KV_WG_OPS32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KV_WG_OPS64 \
  KV_WG_OPS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
              "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KV_WG_OPS96 \
  KV_WG_OPS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
              "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define KV_WG_OPS128 \
  KV_WG_OPS96 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
              "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define KV_WG_REGS128 "{" KV_WG_OPS128 "}"
#define KV_WG_REGS96 "{" KV_WG_OPS96 "}"
#define KV_WG_REGS64 "{" KV_WG_OPS64 "}"
#define KV_WG_REGS32 "{" KV_WG_OPS32 "}"
#define KV_WG_REGS16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"

#define KV_WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define KV_WG_F16(i) KV_WG_F4(i), KV_WG_F4(i + 4), KV_WG_F4(i + 8), KV_WG_F4(i + 12)
#define KV_WG_F128                                                                            \
  KV_WG_F16(0), KV_WG_F16(16), KV_WG_F16(32), KV_WG_F16(48), KV_WG_F16(64), KV_WG_F16(80),    \
      KV_WG_F16(96), KV_WG_F16(112)
#define KV_WG_F96 KV_WG_F16(0), KV_WG_F16(16), KV_WG_F16(32), KV_WG_F16(48), KV_WG_F16(64), KV_WG_F16(80)
#define KV_WG_F64 KV_WG_F16(0), KV_WG_F16(16), KV_WG_F16(32), KV_WG_F16(48)
#define KV_WG_F32 KV_WG_F16(0), KV_WG_F16(16)
#define KV_WG_R4(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3])
#define KV_WG_R16(i) KV_WG_R4(i), KV_WG_R4(i + 4), KV_WG_R4(i + 8), KV_WG_R4(i + 12)
#define KV_WG_R64 KV_WG_R16(0), KV_WG_R16(16), KV_WG_R16(32), KV_WG_R16(48)
#define KV_WG_R32 KV_WG_R16(0), KV_WG_R16(16)

/* d (+)= A B for a 64 x N x 16 step (N = 256, 128 or 64), fp32 accumulators (N / 2 a thread);
 * TA / TB: A M-major / B N-major. KV_WG_SS spells the instruction with its operand numbers:
 * descriptors DA, DB, the accumulate flag P, the transpose immediates TA, TB. */
#define KV_WG_SS(SHAPE_TYPES, REGS, DA, DB, P, TA, TB)                                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\nwgmma.mma_async.sync.aligned." SHAPE_TYPES " " REGS \
  ", %" #DA ", %" #DB ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"
#define KV_WG_SS_IN "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB)
template <class T, int N, int TA, int TB>
__device__ __forceinline__ void wgmma_m64nNk16_f32(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                   int accumulate) {
  static_assert(N == 256 || N == 128 || N == 64 || N == 32, "wgmma m64nNk16 wrappers: N = 256, 128, 64, 32");
  constexpr bool H = std::is_same<T, __half>::value;
  if constexpr (N == 32 && H)
    asm volatile(KV_WG_SS("m64n32k16.f32.f16.f16", KV_WG_REGS16, 16, 17, 18, 19, 20) : KV_WG_F16(0) : KV_WG_SS_IN);
  else if constexpr (N == 32)
    asm volatile(KV_WG_SS("m64n32k16.f32.bf16.bf16", KV_WG_REGS16, 16, 17, 18, 19, 20) : KV_WG_F16(0) : KV_WG_SS_IN);
  else if constexpr (N == 256 && H)
    asm volatile(KV_WG_SS("m64n256k16.f32.f16.f16", KV_WG_REGS128, 128, 129, 130, 131, 132) : KV_WG_F128 : KV_WG_SS_IN);
  else if constexpr (N == 256)
    asm volatile(KV_WG_SS("m64n256k16.f32.bf16.bf16", KV_WG_REGS128, 128, 129, 130, 131, 132) : KV_WG_F128 : KV_WG_SS_IN);
  else if constexpr (N == 128 && H)
    asm volatile(KV_WG_SS("m64n128k16.f32.f16.f16", KV_WG_REGS64, 64, 65, 66, 67, 68) : KV_WG_F64 : KV_WG_SS_IN);
  else if constexpr (N == 128)
    asm volatile(KV_WG_SS("m64n128k16.f32.bf16.bf16", KV_WG_REGS64, 64, 65, 66, 67, 68) : KV_WG_F64 : KV_WG_SS_IN);
  else if constexpr (H)
    asm volatile(KV_WG_SS("m64n64k16.f32.f16.f16", KV_WG_REGS32, 32, 33, 34, 35, 36) : KV_WG_F32 : KV_WG_SS_IN);
  else
    asm volatile(KV_WG_SS("m64n64k16.f32.bf16.bf16", KV_WG_REGS32, 32, 33, 34, 35, 36) : KV_WG_F32 : KV_WG_SS_IN);
}

/* The same with fp16 accumulators (fp16 inputs), two per register (N / 4 a thread). */
template <int N, int TA, int TB>
__device__ __forceinline__ void wgmma_m64nNk16_f16(uint32_t (&d)[N / 4], uint64_t desc_a, uint64_t desc_b,
                                                   int accumulate) {
  static_assert(N == 256 || N == 128 || N == 64, "wgmma m64nNk16 wrappers: N = 256, 128, 64");
  if constexpr (N == 256)
    asm volatile(KV_WG_SS("m64n256k16.f16.f16.f16", KV_WG_REGS64, 64, 65, 66, 67, 68) : KV_WG_R64 : KV_WG_SS_IN);
  else if constexpr (N == 128)
    asm volatile(KV_WG_SS("m64n128k16.f16.f16.f16", KV_WG_REGS32, 32, 33, 34, 35, 36) : KV_WG_R32 : KV_WG_SS_IN);
  else
    asm volatile(KV_WG_SS("m64n64k16.f16.f16.f16", KV_WG_REGS16, 16, 17, 18, 19, 20) : KV_WG_R16(0) : KV_WG_SS_IN);
}
#undef KV_WG_SS_IN
#undef KV_WG_SS

/* d (+)= A B for a 64 x N x 16 step (N = 256, 128 or 64) with A from registers (a: the mma
 * m16n8k16 A fragment of each warp's 16 rows) and B from shared memory (TB: N-major), fp32
 * accumulators (N / 2 a thread). KV_WG_RS spells the instruction with its operand numbers: A's
 * four registers A0 - A3, descriptor DB, the accumulate flag P, the transpose immediate TB. */
#define KV_WG_RS(SHAPE_TYPES, REGS, A0, A1, A2, A3, DB, P, TB)                                          \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\nwgmma.mma_async.sync.aligned." SHAPE_TYPES " " REGS \
  ", {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #DB ", p, 1, 1, %" #TB ";\n}\n"
#define KV_WG_RS_IN "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate), "n"(TB)
template <class T, int N, int TB>
__device__ __forceinline__ void wgmma_m64nNk16_rs_f32(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                      int accumulate) {
  static_assert(N == 256 || N == 128 || N == 64, "wgmma m64nNk16 register-A wrappers: N = 256, 128, 64");
  constexpr bool H = std::is_same<T, __half>::value;
  if constexpr (N == 256 && H)
    asm volatile(KV_WG_RS("m64n256k16.f32.f16.f16", KV_WG_REGS128, 128, 129, 130, 131, 132, 133, 134)
                 : KV_WG_F128 : KV_WG_RS_IN);
  else if constexpr (N == 256)
    asm volatile(KV_WG_RS("m64n256k16.f32.bf16.bf16", KV_WG_REGS128, 128, 129, 130, 131, 132, 133, 134)
                 : KV_WG_F128 : KV_WG_RS_IN);
  else if constexpr (N == 128 && H)
    asm volatile(KV_WG_RS("m64n128k16.f32.f16.f16", KV_WG_REGS64, 64, 65, 66, 67, 68, 69, 70) : KV_WG_F64 : KV_WG_RS_IN);
  else if constexpr (N == 128)
    asm volatile(KV_WG_RS("m64n128k16.f32.bf16.bf16", KV_WG_REGS64, 64, 65, 66, 67, 68, 69, 70) : KV_WG_F64 : KV_WG_RS_IN);
  else if constexpr (H)
    asm volatile(KV_WG_RS("m64n64k16.f32.f16.f16", KV_WG_REGS32, 32, 33, 34, 35, 36, 37, 38) : KV_WG_F32 : KV_WG_RS_IN);
  else
    asm volatile(KV_WG_RS("m64n64k16.f32.bf16.bf16", KV_WG_REGS32, 32, 33, 34, 35, 36, 37, 38) : KV_WG_F32 : KV_WG_RS_IN);
}
#undef KV_WG_RS_IN
#undef KV_WG_RS

/* d (+)= A B for a 64 x N x 32 step of FP8 inputs (T __nv_fp8_e4m3 or __nv_fp8_e5m2, both
 * operands), N = 256, 192, 128 or 64, fp32 accumulators (N / 2 a thread); A and B K-major (FP8 wgmma has
 * no transpose). KV_WG_FP8 spells the instruction with its operand numbers: descriptors DA, DB
 * and the accumulate flag P. */
#define KV_WG_FP8(SHAPE_TYPES, REGS, DA, DB, P) \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\nwgmma.mma_async.sync.aligned." SHAPE_TYPES " " REGS ", %" #DA ", %" #DB ", p, 1, 1;\n}\n"
#define KV_WG_FP8_IN "l"(desc_a), "l"(desc_b), "r"(accumulate)
template <class T, int N>
__device__ __forceinline__ void wgmma_m64nNk32_f32(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(N == 256 || N == 192 || N == 128 || N == 64, "FP8 wgmma wrappers: N = 256, 192, 128, 64");
  constexpr bool E4M3 = std::is_same<T, __nv_fp8_e4m3>::value;
  static_assert(E4M3 || std::is_same<T, __nv_fp8_e5m2>::value, "FP8 wgmma takes e4m3 or e5m2");
  if constexpr (N == 256 && E4M3)
    asm volatile(KV_WG_FP8("m64n256k32.f32.e4m3.e4m3", KV_WG_REGS128, 128, 129, 130) : KV_WG_F128 : KV_WG_FP8_IN);
  else if constexpr (N == 256)
    asm volatile(KV_WG_FP8("m64n256k32.f32.e5m2.e5m2", KV_WG_REGS128, 128, 129, 130) : KV_WG_F128 : KV_WG_FP8_IN);
  else if constexpr (N == 192 && E4M3)
    asm volatile(KV_WG_FP8("m64n192k32.f32.e4m3.e4m3", KV_WG_REGS96, 96, 97, 98) : KV_WG_F96 : KV_WG_FP8_IN);
  else if constexpr (N == 192)
    asm volatile(KV_WG_FP8("m64n192k32.f32.e5m2.e5m2", KV_WG_REGS96, 96, 97, 98) : KV_WG_F96 : KV_WG_FP8_IN);
  else if constexpr (N == 128 && E4M3)
    asm volatile(KV_WG_FP8("m64n128k32.f32.e4m3.e4m3", KV_WG_REGS64, 64, 65, 66) : KV_WG_F64 : KV_WG_FP8_IN);
  else if constexpr (N == 128)
    asm volatile(KV_WG_FP8("m64n128k32.f32.e5m2.e5m2", KV_WG_REGS64, 64, 65, 66) : KV_WG_F64 : KV_WG_FP8_IN);
  else if constexpr (E4M3)
    asm volatile(KV_WG_FP8("m64n64k32.f32.e4m3.e4m3", KV_WG_REGS32, 32, 33, 34) : KV_WG_F32 : KV_WG_FP8_IN);
  else
    asm volatile(KV_WG_FP8("m64n64k32.f32.e5m2.e5m2", KV_WG_REGS32, 32, 33, 34) : KV_WG_F32 : KV_WG_FP8_IN);
}
#undef KV_WG_FP8_IN
#undef KV_WG_FP8

/* d (+)= A B for a 64 x 8 x 16 step, fp32 accumulators, A (64 x 16) and B (8 x 16) K-major
 * from shared memory: the single-warpgroup instruction of the tensor-core probes. */
template <class T>
__device__ __forceinline__ void wgmma_m64n8k16_f32(float (&d)[4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  if constexpr (std::is_same<T, __half>::value)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

/* The same for a 64 x 8 x 32 step of e4m3 or e5m2 inputs (no transpose immediates for FP8). */
template <class T>
__device__ __forceinline__ void wgmma_m64n8k32_f32(float (&d)[4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

/* ---- register reallocation between warpgroups ---- */
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

}  // namespace ptx
}  // namespace kv

#endif
