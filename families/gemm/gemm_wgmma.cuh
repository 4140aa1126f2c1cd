/* gemm_wgmma.cuh - kval-wgmma: the Hopper GEMM. A persistent grid of CTAs (one per SM) walks
 * the output tiles in groups of GROUP_M tile-rows. In each CTA one producer warpgroup (one
 * thread) streams A and B k-blocks with TMA into a STAGES-deep ring of 128-byte swizzled
 * shared-memory tiles, each stage guarded by a "full" mbarrier (TMA transaction bytes) and an
 * "empty" mbarrier (one arrival per consumer warp); CONSUMERS consumer warpgroups run
 * wgmma.mma_async m64nBNk16 (fp16/bf16) or m64nBNk32 (FP8) on their 64-row slices, keeping
 * one k-block in flight, and hand D = alpha acc + beta C to a TMA store through a swizzled
 * shared-memory buffer (or store it from registers when N is not a multiple of 8). FP8 adds
 * the wgmma accumulators into fp32 registers at the promotion interval (the tiles that promote). setmaxnreg moves
 * registers from the producer to the consumers. Tails: TMA zero-fills loads and clips stores
 * at the matrix edge. Layouts: A K-major (letter n) or M-major (t), B N-major (n) or K-major
 * (t), through wgmma's transpose bits (FP8: nt only). Host side: a problem is prepared once
 * (configuration and layout instantiation, the TMA descriptors, the persistent grid from the
 * SM count the dispatcher read, the shared-memory limit) and launched many times.
 * Configurations in gemm_traits.h; instantiated per precision in
 * families/gemm/inst/gemm_wgmma_<storage>_<accum>.cu. */
#ifndef KVAL_GEMM_WGMMA_CUH
#define KVAL_GEMM_WGMMA_CUH

#include <cudaTypedefs.h>
#include <string.h>

#include "families/gemm/gemm_common.cuh"
#include "families/gemm/gemm_api.h"
#include "families/device/sm80.cuh"
#include "families/device/sm90.cuh"
#include "families/gemm/gemm_traits.h"

namespace kv_gemm {

namespace ptx = kv::ptx;

/* Persistent tile order: GROUP_M tile-rows at a time, column by column inside a group, so
 * the CTAs in flight share A rows and B columns in L2. */
template <int GROUP_M>
__device__ __forceinline__ void grouped_tile(int t, int tiles_m, int tiles_n, int &tm, int &tn) {
  const int per_group = GROUP_M * tiles_n;
  const int first = (t / per_group) * GROUP_M;
  const int rows = min(GROUP_M, tiles_m - first);
  const int r = t % per_group;
  tm = first + r % rows;
  tn = r / rows;
}

/* Accumulators of one consumer warpgroup (64 x BN) for each accumulation mode: a tile's start
 * (begin: nothing to zero, the first k-step overwrites; the promoted sum is zeroed), one k-block
 * of wgmma, and the epilogue. PROMOTED: FP8 (T of one byte, ACC KV_FP32) on a tile that
 * promotes, with the promotion interval; FP8 on a tile that never promotes is the plain fp32
 * accumulator. */
template <class Tr, class T, kv_dtype ACC, int AT, int BT, bool PROMOTED = sizeof(T) == 1 && Tr::PROMOTES>
struct wgmma_acc;

/* Descriptors of k-step j of a stage: A K-major steps 32 bytes along its swizzled rows,
 * M-major KSTEP rows of 128 bytes; likewise B. */
template <class Tr, int AT, int BT> struct wgmma_descs {
  static __device__ __forceinline__ uint64_t a(uint32_t base, int j) {
    return AT ? ptx::wgmma_desc(base + j * Tr::KSTEP * 128, Tr::BK * 128, 1024)
              : ptx::wgmma_desc(base + j * 32, 16, 1024);
  }
  static __device__ __forceinline__ uint64_t b(uint32_t base, int j) {
    return BT ? ptx::wgmma_desc(base + j * 32, 16, 1024)
              : ptx::wgmma_desc(base + j * Tr::KSTEP * 128, Tr::BK * 128, 1024);
  }
};

/* d (+)= one k-step with fp32 accumulators: m64nBNk16 (16-bit T), m64nBNk32 (FP8 T). */
template <class Tr, class T, int AT, int BT>
__device__ __forceinline__ void wgmma_step_f32(float (&d)[Tr::BN / 2], uint64_t da, uint64_t db, int accumulate) {
  if constexpr (Tr::ELEM == 1) {
    static_assert(!AT && BT, "FP8 wgmma takes K-major A and B only (layout nt)");
    ptx::wgmma_m64nNk32_f32<T, Tr::BN>(d, da, db, accumulate);
  } else {
    ptx::wgmma_m64nNk16_f32<T, Tr::BN, AT, !BT>(d, da, db, accumulate);
  }
}

template <class Tr, class T, int AT, int BT> struct wgmma_acc<Tr, T, KV_FP32, AT, BT, false> {
  typedef wgmma_descs<Tr, AT, BT> D;
  static constexpr int N = Tr::BN / 2; /* registers */
  float d[N];
  static constexpr bool pipelined = true; /* k-block's wgmma may stay in flight */
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void kblock(uint32_t a_base, uint32_t b_base, bool first) {
    ptx::wgmma_fence();
#pragma unroll
    for (int j = 0; j < Tr::BK / Tr::KSTEP; ++j)
      wgmma_step_f32<Tr, T, AT, BT>(d, D::a(a_base, j), D::b(b_base, j), (first && j == 0) ? 0 : 1);
    ptx::wgmma_commit_group();
  }
  __device__ __forceinline__ void settle() {
#pragma unroll
    for (int i = 0; i < N; ++i) ptx::reg_fence(d[i]);
  }
  /* accumulators of columns 8j + 2(lane%4), +1 in row lane/4 + 8h of the warp's 16 rows */
  __device__ __forceinline__ float2 pair(int j, int h) const { return make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]); }
};

template <class Tr, class T, int AT, int BT> struct wgmma_acc<Tr, T, KV_FP16, AT, BT, false> {
  typedef wgmma_descs<Tr, AT, BT> D;
  static constexpr int N = Tr::BN / 4; /* registers: two fp16 accumulators each */
  uint32_t d[N];
  static constexpr bool pipelined = true;
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void kblock(uint32_t a_base, uint32_t b_base, bool first) {
    ptx::wgmma_fence();
#pragma unroll
    for (int j = 0; j < Tr::BK / Tr::KSTEP; ++j)
      ptx::wgmma_m64nNk16_f16<Tr::BN, AT, !BT>(d, D::a(a_base, j), D::b(b_base, j), (first && j == 0) ? 0 : 1);
    ptx::wgmma_commit_group();
  }
  __device__ __forceinline__ void settle() {
#pragma unroll
    for (int i = 0; i < N; ++i) ptx::reg_fence(d[i]);
  }
  __device__ __forceinline__ float2 pair(int j, int h) const {
    return make_float2(ptx::f16x2_lo(d[2 * j + h]), ptx::f16x2_hi(d[2 * j + h]));
  }
};

/* bf16 accumulation model: every k-step of 16 completes and is rounded to bf16 before the
 * next one starts (serialised: a precision-study path, not a performance path). */
template <class Tr, class T, int AT, int BT> struct wgmma_acc<Tr, T, KV_BF16, AT, BT, false> {
  typedef wgmma_descs<Tr, AT, BT> D;
  wgmma_acc<Tr, T, KV_FP32, AT, BT, false> f;
  static constexpr bool pipelined = false;
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void kblock(uint32_t a_base, uint32_t b_base, bool first) {
#pragma unroll
    for (int j = 0; j < Tr::BK / Tr::KSTEP; ++j) {
      ptx::wgmma_fence();
      wgmma_step_f32<Tr, T, AT, BT>(f.d, D::a(a_base, j), D::b(b_base, j), (first && j == 0) ? 0 : 1);
      ptx::wgmma_commit_group();
      ptx::wgmma_wait_group<0>();
      f.settle();
#pragma unroll
      for (int i = 0; i < f.N; ++i) f.d[i] = round_bf16(f.d[i]);
    }
  }
  __device__ __forceinline__ void settle() { f.settle(); }
  __device__ __forceinline__ float2 pair(int j, int h) const { return f.pair(j, h); }
};

/* FP8 with promotion every `per` k-blocks (the kernel's promote_kblocks = promote / BK; 0:
 * never): f accumulates one interval in the tensor cores; when the next interval starts (its
 * k-block first waits for the wgmma group) and when the tile's k-loop ends (settle),
 * sum[i] = sum[i] + f.d[i] in fp32 (sum from +0 per tile: begin) and the next interval's first k-step
 * overwrites f. Without promotion the result is f itself. */
template <class Tr, class T, int AT, int BT> struct wgmma_acc<Tr, T, KV_FP32, AT, BT, true> {
  typedef wgmma_acc<Tr, T, KV_FP32, AT, BT, false> F;
  F f;
  float sum[F::N];
  int per = 0, left = 0; /* k-blocks per interval, and left in this one */
  static constexpr bool pipelined = true;
  /* a tile's start, before its first k-block (outside kblock: a branch there on the first
   * k-block made ptxas move and spill the accumulators of the 128 x 192 tile) */
  __device__ __forceinline__ void begin() {
#pragma unroll
    for (int i = 0; i < F::N; ++i) sum[i] = 0.0f;
    left = per;
  }
  __device__ __forceinline__ void kblock(uint32_t a_base, uint32_t b_base, bool first) {
    bool fresh = first;
    if (!first && per && left == 0) {
      ptx::wgmma_wait_group<0>();
      f.settle();
#pragma unroll
      for (int i = 0; i < F::N; ++i) sum[i] = __fadd_rn(sum[i], f.d[i]);
      left = per;
      fresh = true;
    }
    f.kblock(a_base, b_base, fresh);
    --left;
  }
  __device__ __forceinline__ void settle() {
    f.settle();
#pragma unroll
    for (int i = 0; i < F::N; ++i) sum[i] = per ? __fadd_rn(sum[i], f.d[i]) : f.d[i];
  }
  __device__ __forceinline__ float2 pair(int j, int h) const {
    return make_float2(sum[4 * j + 2 * h], sum[4 * j + 2 * h + 1]);
  }
};

/* Epilogue of consumer c (64 rows of tile (tm, tn)) from its accumulators, in the output type
 * O of storage type T. TMA path: wait until the previous tile's store has read the buffer,
 * write the outputs into BN / 64 boxes of 64 x 64 with the 128-byte swizzle (conflict-free:
 * the 8 rows of a warp's store hit 8 different 16-byte chunks), then one thread stores the
 * boxes with TMA (clipped at the matrix edge) and the warpgroup moves on. Direct path:
 * bounds-checked stores from registers. */
template <class Tr, class T, class Acc>
__device__ __forceinline__ void wgmma_epilogue(const Acc &acc, const kv_gemm_epi &epi, const CUtensorMap *map_d,
                                               bool tma_store, unsigned char *dbuf, int c, int tm, int tn) {
  typedef output_t<T> O;
  const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
  const int r0 = warp * 16 + lane / 4; /* row within the consumer's 64 */
  const int row = tm * Tr::BM + c * 64 + r0, col = tn * Tr::BN + 2 * (lane % 4);
  if (Tr::EPI_TMA && tma_store) {
    if (lt == 0) ptx::bulk_wait_group_read<0>();
    ptx::bar_sync(1 + c, 128);
#pragma unroll
    for (int j = 0; j < Tr::BN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 v = acc.pair(j, h);
        const int r = r0 + 8 * h;
        const uint32_t out = out_pair<O>(epi, row + 8 * h, col + 8 * j, v.x, v.y);
        unsigned char *p = dbuf + (j / 8) * Tr::D_BOX_BYTES + r * 128 + (((j % 8) ^ (r % 8)) * 16) + (lane % 4) * 4;
        *reinterpret_cast<uint32_t *>(p) = out;
      }
    ptx::fence_proxy_async();
    ptx::bar_sync(1 + c, 128);
    if (lt == 0) {
#pragma unroll
      for (int b = 0; b < Tr::BN / Tr::D_COLS; ++b)
        ptx::tma_store_2d(map_d, dbuf + b * Tr::D_BOX_BYTES, tn * Tr::BN + b * Tr::D_COLS, tm * Tr::BM + c * 64);
      ptx::bulk_commit_group();
    }
  } else {
#pragma unroll
    for (int j = 0; j < Tr::BN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 v = acc.pair(j, h);
        store_pair<O>(epi, row + 8 * h, col + 8 * j, v.x, v.y);
      }
  }
}

/* Split K: consumer c's 64 rows of tile (tm, tn) as fp32 sums of its split into `part` (row-major
 * m x n, the split's slice of the workspace), bounds-checked; kv_gemm_split_reduce_kernel adds
 * the splits. */
template <class Tr, class Acc>
__device__ __forceinline__ void wgmma_store_partial(const Acc &acc, float *part, int m, int n, int c, int tm, int tn) {
  const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
  const int row = tm * Tr::BM + c * 64 + warp * 16 + lane / 4, col = tn * Tr::BN + 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < Tr::BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row + 8 * h, cc = col + 8 * j;
      if (r >= m || cc >= n) continue;
      const float2 v = acc.pair(j, h);
      float *p = part + (size_t)r * (size_t)n + (size_t)cc;
      if (n % 2 == 0) {
        *reinterpret_cast<float2 *>(p) = v;
      } else {
        p[0] = v.x;
        if (cc + 1 < n) p[1] = v.y;
      }
    }
}

}  // namespace kv_gemm

/* Split K, second kernel: every output pair (row, col), (row, col + 1) of D adds its splits'
 * fp32 sums in split order from +0 and goes through the epilogue (alpha, beta C, rounding to
 * the output type O). */
template <class O>
__global__ void kv_gemm_split_reduce_kernel(const float *__restrict__ part, const int splits, const kv_gemm_epi epi) {
  const long long half = (epi.n + 1) / 2, i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)epi.m * half) return;
  const int row = (int)(i / half), col = 2 * (int)(i % half);
  const size_t mn = (size_t)epi.m * (size_t)epi.n, at = (size_t)row * (size_t)epi.n + (size_t)col;
  float v0 = 0.0f, v1 = 0.0f;
  for (int s = 0; s < splits; ++s) {
    v0 = __fadd_rn(v0, part[s * mn + at]);
    if (col + 1 < epi.n) v1 = __fadd_rn(v1, part[s * mn + at + 1]);
  }
  kv_gemm::store_pair<O>(epi, row, col, v0, v1);
}

template <class Tr, class T, kv_dtype ACC, int AT, int BT>
__global__ void __launch_bounds__(Tr::THREADS, 1)
    kv_gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                         const __grid_constant__ CUtensorMap map_d, const kv_gemm_epi epi, const int k,
                         const int tma_store, const int promote_kblocks, float *const partials, const int splits,
                         const int kb_per) {
#if KV_SM90A
  extern __shared__ unsigned char kv_wgmma_smem[];
  unsigned char *smem = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(kv_wgmma_smem) + 1023) &
                                                          ~static_cast<uintptr_t>(1023));
  T *sa = reinterpret_cast<T *>(smem);
  T *sb = reinterpret_cast<T *>(smem + Tr::STAGES * Tr::A_STAGE_BYTES);
  unsigned char *dsmem = smem + Tr::STAGES * (Tr::A_STAGE_BYTES + Tr::B_STAGE_BYTES);
  uint64_t *full = reinterpret_cast<uint64_t *>(dsmem + Tr::D_BYTES);
  uint64_t *empty = full + Tr::STAGES;

  const int tiles_m = (epi.m + Tr::BM - 1) / Tr::BM, tiles_n = (epi.n + Tr::BN - 1) / Tr::BN;
  const int n_tiles = tiles_m * tiles_n, kblocks = (k + Tr::BK - 1) / Tr::BK;
  const int n_items = n_tiles * splits; /* (tile, split) pairs, split-major */
  if (threadIdx.x == 0) {
    for (int s = 0; s < Tr::STAGES; ++s) {
      kv::ptx::mbarrier_init(&full[s], 1);
      kv::ptx::mbarrier_init(&empty[s], Tr::CONSUMERS * 4);
    }
    kv::ptx::fence_mbarrier_init();
  }
  kv::block_sync();

  const int wg = threadIdx.x / 128;
  int s = 0;
  uint32_t phase = 0;
  if (wg == 0) {
    kv::ptx::setmaxnreg_dec<Tr::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      for (int t = blockIdx.x; t < n_items; t += gridDim.x) {
        int tm, tn;
        kv_gemm::grouped_tile<Tr::GROUP_M>(t % n_tiles, tiles_m, tiles_n, tm, tn);
        const int kb0 = (t / n_tiles) * kb_per, kb1 = min(kb0 + kb_per, kblocks);
        for (int kb = kb0; kb < kb1; ++kb) {
          kv::ptx::mbarrier_wait_parity(&empty[s], phase ^ 1);
          kv::ptx::mbarrier_arrive_expect_tx(&full[s], Tr::A_STAGE_BYTES + Tr::B_STAGE_BYTES);
          T *a = sa + s * (Tr::BM * Tr::BK), *b = sb + s * (Tr::BN * Tr::BK);
          if (AT) {
#pragma unroll
            for (int i = 0; i < Tr::BM / Tr::SWIZZLE_ELEMS; ++i)
              kv::ptx::tma_load_2d(a + i * Tr::SWIZZLE_ELEMS * Tr::BK, &map_a, &full[s],
                                   tm * Tr::BM + i * Tr::SWIZZLE_ELEMS, kb * Tr::BK);
          } else {
            kv::ptx::tma_load_2d(a, &map_a, &full[s], kb * Tr::BK, tm * Tr::BM);
          }
          if (BT) {
            kv::ptx::tma_load_2d(b, &map_b, &full[s], kb * Tr::BK, tn * Tr::BN);
          } else {
#pragma unroll
            for (int i = 0; i < Tr::BN / Tr::SWIZZLE_ELEMS; ++i)
              kv::ptx::tma_load_2d(b + i * Tr::SWIZZLE_ELEMS * Tr::BK, &map_b, &full[s],
                                   tn * Tr::BN + i * Tr::SWIZZLE_ELEMS, kb * Tr::BK);
          }
          if (++s == Tr::STAGES) { s = 0; phase ^= 1; }
        }
      }
    }
  } else {
    kv::ptx::setmaxnreg_inc<Tr::CONSUMER_REGS>();
    const int c = wg - 1, lane = threadIdx.x % 32;
    /* This consumer's 64-row slice of the A stage: rows 64c.. (K-major) or chunk c (M-major). */
    const uint32_t a_off = AT ? c * Tr::SWIZZLE_ELEMS * Tr::BK * Tr::ELEM : c * 64 * 128;
    kv_gemm::wgmma_acc<Tr, T, ACC, AT, BT> acc;
    if constexpr (sizeof(T) == 1 && Tr::PROMOTES) acc.per = promote_kblocks;
    for (int t = blockIdx.x; t < n_items; t += gridDim.x) {
      int tm, tn;
      kv_gemm::grouped_tile<Tr::GROUP_M>(t % n_tiles, tiles_m, tiles_n, tm, tn);
      const int split = t / n_tiles, kb0 = split * kb_per, kb1 = min(kb0 + kb_per, kblocks);
      int prev = 0;
      acc.begin();
      for (int kb = kb0; kb < kb1; ++kb) {
        kv::ptx::mbarrier_wait_parity(&full[s], phase);
        acc.kblock(kv::ptx::smem_addr(sa + s * (Tr::BM * Tr::BK)) + a_off,
                   kv::ptx::smem_addr(sb + s * (Tr::BN * Tr::BK)), kb == kb0);
        if (acc.pipelined) {
          /* keep this k-block in flight; the previous one is done: free its stage */
          if (kb > kb0) {
            kv::ptx::wgmma_wait_group<1>();
            if (lane == 0) kv::ptx::mbarrier_arrive(&empty[prev]);
          }
        } else if (lane == 0) {
          kv::ptx::mbarrier_arrive(&empty[s]);
        }
        prev = s;
        if (++s == Tr::STAGES) { s = 0; phase ^= 1; }
      }
      if (acc.pipelined) {
        kv::ptx::wgmma_wait_group<0>();
        if (lane == 0) kv::ptx::mbarrier_arrive(&empty[prev]);
      }
      acc.settle();
      if (splits > 1)
        kv_gemm::wgmma_store_partial<Tr>(acc, partials + (size_t)split * epi.m * epi.n, epi.m, epi.n, c, tm, tn);
      else
        kv_gemm::wgmma_epilogue<Tr, T>(acc, epi, &map_d, tma_store, dsmem + c * (Tr::D_BYTES / Tr::CONSUMERS), c, tm, tn);
    }
    if (Tr::EPI_TMA && tma_store && threadIdx.x % 128 == 0) kv::ptx::bulk_wait_group<0>(); /* stores done before exit */
  }
#endif
}

/* ---- host side ---- */

typedef void (*kv_wgmma_kernel_fn)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const kv_gemm_epi,
                                   const int, const int, const int, float *, const int, const int);

/* cuTensorMapEncodeTiled (kv::tma_encode_fn, families/device/sm90.cuh), its absence reported. */
static inline kv_status kv_wgmma_encode_fn(PFN_cuTensorMapEncodeTiled_v12000 *fn) {
  cudaError_t e;
  *fn = kv::tma_encode_fn(&e);
  if (e == cudaErrorSymbolNotFound) {
    kv_report(__FILE__, __LINE__, "CUDA", "cuTensorMapEncodeTiled not found in the driver");
    return KV_ERR;
  }
  return CHECK_CUDA(e);
}

/* A 2-D row-major tensor of `rows` rows of `cols` elements, loaded in boxes of
 * box_cols x box_rows with 128-byte swizzle and zero fill out of bounds; FP8 codes as bytes. */
template <class T>
static kv_status kv_wgmma_map(CUtensorMap *map, const void *base, int cols, int rows, int box_cols, int box_rows) {
  PFN_cuTensorMapEncodeTiled_v12000 encode;
  KV_TRY(kv_wgmma_encode_fn(&encode));
  const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(T)};
  const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUtensorMapDataType type = sizeof(T) == 1                    ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                    : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUresult r = encode(map, type, 2, const_cast<void *>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    kv_report(__FILE__, __LINE__, "CUDA", "cuTensorMapEncodeTiled(%d x %d, box %d x %d) failed: CUresult %d", rows,
              cols, box_rows, box_cols, (int)r);
    return KV_ERR;
  }
  return KV_OK;
}

template <class Tr, class T, kv_dtype ACC, int AT, int BT>
static kv_status kv_wgmma_launch(const kv_gemm_problem *pr, cudaStream_t st) {
  const kv_gemm_args &g = pr->g;
  const kv_gemm_epi epi = {g.d, g.c, g.m, g.n, kv_gemm_epilogue_alpha(g.alpha, g.scale_a, g.scale_b), (float)g.beta};
  kv_gemm_wgmma_kernel<Tr, T, ACC, AT, BT><<<pr->grid, Tr::THREADS, Tr::SMEM_BYTES, st>>>(
      pr->map_a, pr->map_b, pr->map_d, epi, g.k, pr->tma_store, g.promote / Tr::BK, pr->partials, pr->splits,
      pr->kb_per);
  KV_TRY(CHECK_LAUNCH("kv_gemm_wgmma_kernel"));
  if (pr->splits == 1) return KV_OK;
  const long long pairs = (long long)g.m * ((g.n + 1) / 2);
  kv_gemm_split_reduce_kernel<kv_gemm::output_t<T>><<<(unsigned)((pairs + 255) / 256), 256, 0, st>>>(
      pr->partials, pr->splits, epi);
  return CHECK_LAUNCH("kv_gemm_split_reduce_kernel");
}

template <class Tr, class T, kv_dtype ACC, int AT, int BT>
static kv_status kv_wgmma_resources_of(const kv_gemm_problem *, kv_kernel_resources *r) {
  kv_wgmma_kernel_fn kernel = kv_gemm_wgmma_kernel<Tr, T, ACC, AT, BT>;
  cudaFuncAttributes fa;
  KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&fa, kernel)));
  KV_TRY(CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r->occupancy, kernel, Tr::THREADS, Tr::SMEM_BYTES)));
  r->registers = fa.numRegs;
  r->smem_bytes = (int)fa.sharedSizeBytes + Tr::SMEM_BYTES;
  r->local_bytes = (int)fa.localSizeBytes;
  return KV_OK;
}

/* Configuration Tr and layout (AT, BT) for the problem: the TMA descriptors of A, B and, when
 * D can be stored by TMA (its rows 16-byte strides from a 16-byte aligned base; not when K is
 * split), of D; the grid (one CTA per SM, persistent, or one per tile and split); the
 * shared-memory limit. pr->splits > 1 (the family's choice, with kb_per and the workspace)
 * is kept; otherwise one split of every k-block. */
template <class Tr, class T, kv_dtype ACC, int AT, int BT> static kv_status kv_wgmma_prepare_layout(kv_gemm_problem *pr) {
  const kv_gemm_args &g = pr->g;
  if (sizeof(T) == 1 && !Tr::PROMOTES && g.promote != 0) {
    kv_report(__FILE__, __LINE__, "gemm",
              "kval-wgmma: the FP8 %dx%d tile never promotes (promote %d needs a tile of at most %d columns)",
              Tr::BM, Tr::BN, g.promote, KV_GEMM_FP8_MID_BN);
    return KV_ERR;
  }
  if (AT)
    KV_TRY(kv_wgmma_map<T>(&pr->map_a, g.a, g.m, g.k, Tr::SWIZZLE_ELEMS, Tr::BK));
  else
    KV_TRY(kv_wgmma_map<T>(&pr->map_a, g.a, g.k, g.m, Tr::BK, Tr::BM));
  if (BT)
    KV_TRY(kv_wgmma_map<T>(&pr->map_b, g.b, g.k, g.n, Tr::BK, Tr::BN));
  else
    KV_TRY(kv_wgmma_map<T>(&pr->map_b, g.b, g.n, g.k, Tr::SWIZZLE_ELEMS, Tr::BK));
  if (pr->splits <= 1) {
    pr->splits = 1;
    pr->kb_per = (g.k + Tr::BK - 1) / Tr::BK;
  }
  pr->tma_store = pr->splits == 1 && Tr::EPI_TMA && kv_gemm_wgmma_tma_store(g.n) &&
                  reinterpret_cast<uintptr_t>(g.d) % 16 == 0;
  if (pr->tma_store)
    KV_TRY(kv_wgmma_map<kv_gemm::output_t<T>>(&pr->map_d, g.d, g.n, g.m, Tr::D_COLS, 64));
  else
    memset(&pr->map_d, 0, sizeof pr->map_d);
  const long long items = kv_gemm_tiles(g.m, g.n, Tr::BM, Tr::BN) * pr->splits;
  if (items > 0x7fffffffLL) {
    kv_report(__FILE__, __LINE__, "gemm", "kval-wgmma: %dx%d in %d splits of K needs %lld tiles, above the grid limit",
              g.m, g.n, pr->splits, items);
    return KV_ERR;
  }
  pr->grid = (unsigned)(items < pr->sms || !Tr::PERSISTENT ? items : pr->sms);
  KV_TRY(CHECK_CUDA(cudaFuncSetAttribute(kv_gemm_wgmma_kernel<Tr, T, ACC, AT, BT>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::SMEM_BYTES)));
  pr->launch = kv_wgmma_launch<Tr, T, ACC, AT, BT>;
  pr->resources = kv_wgmma_resources_of<Tr, T, ACC, AT, BT>;
  return KV_OK;
}

/* Configuration Tr for the problem's layout: nn, tn or nt (the bench driver's ladder prepares
 * other configurations through this). */
template <class Tr, class T, kv_dtype ACC> static kv_status kv_wgmma_prepare_as(kv_gemm_problem *pr) {
  if (!pr->g.a_t && !pr->g.b_t) return kv_wgmma_prepare_layout<Tr, T, ACC, 0, 0>(pr);
  if (pr->g.a_t && !pr->g.b_t) return kv_wgmma_prepare_layout<Tr, T, ACC, 1, 0>(pr);
  if (!pr->g.a_t && pr->g.b_t) return kv_wgmma_prepare_layout<Tr, T, ACC, 0, 1>(pr);
  kv_report(__FILE__, __LINE__, "gemm", "kval-wgmma: layout tt is not instantiated (nn, tn, nt are)");
  return KV_ERR;
}

/* The family's configuration: FP8 kv_wgmma_fp8_wide_traits, kv_wgmma_fp8_mid_traits,
 * kv_wgmma_fp8_traits, kv_wgmma_fp8_small_traits or kv_wgmma_fp8_skinny_traits, whichever
 * kv_gemm_fp8_tile names for the problem, the promotion interval and the SM count, layout nt (the
 * only one the support rule lets through); else the tile kv_gemm_wgmma_tile names for the problem
 * and the SM count:
 * kv_wgmma_traits, kv_wgmma_mid_traits or kv_wgmma_small_traits, and the splits of K that
 * kv_gemm_wgmma_splits names, with their fp32 workspace (freed by kv_gemm_release). */
template <kv_dtype STORE, kv_dtype ACC> kv_status kv_gemm_wgmma_prepare(kv_gemm_problem *pr) {
  typedef kv_gemm::storage_t<STORE> T;
  if constexpr (sizeof(T) == 1) {
    long long bm, bn;
    switch (kv_gemm_fp8_tile(pr->g.m, pr->g.n, pr->g.promote, pr->sms, &bm, &bn)) {
      case KV_GEMM_FP8_TILE_WIDE:
        return kv_wgmma_prepare_layout<kv_wgmma_fp8_wide_traits, T, ACC, 0, 1>(pr);
      case KV_GEMM_FP8_TILE_MID:
        return kv_wgmma_prepare_layout<kv_wgmma_fp8_mid_traits, T, ACC, 0, 1>(pr);
      case KV_GEMM_FP8_TILE_SMALL:
        return kv_wgmma_prepare_layout<kv_wgmma_fp8_small_traits, T, ACC, 0, 1>(pr);
      case KV_GEMM_FP8_TILE_SKINNY:
        return kv_wgmma_prepare_layout<kv_wgmma_fp8_skinny_traits, T, ACC, 0, 1>(pr);
      default:
        return kv_wgmma_prepare_layout<kv_wgmma_fp8_traits, T, ACC, 0, 1>(pr);
    }
  } else {
    long long bm, bn, kb_per;
    pr->splits = kv_gemm_wgmma_splits(pr->g.m, pr->g.n, pr->g.k, pr->g.prec, pr->sms, &kb_per);
    pr->kb_per = (int)kb_per;
    if (pr->splits > 1)
      KV_TRY(CHECK_CUDA(cudaMalloc(&pr->partials, sizeof(float) * pr->splits * (size_t)pr->g.m * (size_t)pr->g.n)));
    switch (kv_gemm_wgmma_tile(pr->g.m, pr->g.n, pr->sms, &bm, &bn)) {
      case KV_GEMM_TILE_LARGE:
        return kv_wgmma_prepare_as<kv_wgmma_traits, T, ACC>(pr);
      case KV_GEMM_TILE_MID:
        return kv_wgmma_prepare_as<kv_wgmma_mid_traits, T, ACC>(pr);
      default:
        return kv_wgmma_prepare_as<kv_wgmma_small_traits, T, ACC>(pr);
    }
  }
}

#endif
