/* gemm_mma.cuh - kval-mma: the warp-level tensor-core GEMM (mma.sync m16n8k16). Each CTA
 * computes a BM x BN tile with WARPS_M x WARPS_N warps; A and B k-blocks stream through a
 * STAGES-deep cp.async ring of padded shared-memory tiles (16-byte copies, zero-filled past
 * the matrix edge; element-wise loads when a row stride is not a multiple of 8 elements) and
 * reach the tensor cores through ldmatrix (.trans for M-major A and N-major B). Host side: a
 * problem is prepared once (layout instantiation, load path, grid, shared-memory limit) and
 * launched many times. Instantiated per storage type in families/gemm/inst/gemm_mma_fp16.cu
 * and gemm_mma_bf16.cu. */
#ifndef KVAL_GEMM_MMA_CUH
#define KVAL_GEMM_MMA_CUH

#include <type_traits>

#include "families/gemm/gemm_common.cuh"
#include "families/gemm/gemm_api.h"
#include "families/gemm/gemm_traits.h"
#include "families/device/sm80.cuh"

namespace kv_gemm {

namespace ptx = kv::ptx;

/* Accumulators of one warp tile (MI x NI mma tiles) per accumulation mode: per mma tile four
 * fp32 values (F32, and BF16, rounded to bf16 after every k-step: the bf16 accumulation
 * model), or two fp16 pairs, the native fp16 accumulator (F16). */
template <class T, kv_dtype ACC> struct mma_acc {
  typedef kv_mma_traits Tr;
  static constexpr bool F16 = ACC == KV_FP16;
  std::conditional_t<F16, uint32_t[2], float[4]> c[Tr::MI][Tr::NI];
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < Tr::MI; ++i)
#pragma unroll
      for (int j = 0; j < Tr::NI; ++j)
#pragma unroll
        for (int e = 0; e < (F16 ? 2 : 4); ++e) c[i][j][e] = 0;
  }
  __device__ __forceinline__ void step(const uint32_t (&a)[Tr::MI][4], const uint32_t (&b)[Tr::NI][2]) {
#pragma unroll
    for (int i = 0; i < Tr::MI; ++i)
#pragma unroll
      for (int j = 0; j < Tr::NI; ++j) {
        if constexpr (F16) {
          ptx::mma_m16n8k16_f16(c[i][j], a[i], b[j][0], b[j][1]);
        } else {
          ptx::mma_m16n8k16_f32<T>(c[i][j], a[i], b[j][0], b[j][1]);
          if (ACC == KV_BF16)
#pragma unroll
            for (int e = 0; e < 4; ++e) c[i][j][e] = round_bf16(c[i][j][e]);
        }
      }
  }
  __device__ __forceinline__ float4 get(int i, int j) const {
    if constexpr (F16)
      return make_float4(ptx::f16x2_lo(c[i][j][0]), ptx::f16x2_hi(c[i][j][0]), ptx::f16x2_lo(c[i][j][1]),
                         ptx::f16x2_hi(c[i][j][1]));
    else
      return make_float4(c[i][j][0], c[i][j][1], c[i][j][2], c[i][j][3]);
  }
};

/* Copy a ROWS x COLS tile at (r0, c0) of a row-major matrix (row stride ld, rows_lim x
 * cols_lim) into shared memory with row stride COLS + PAD; zeros outside the matrix. */
template <class T, int ROWS, int COLS>
__device__ __forceinline__ void mma_load_tile(T *s, const T *g, int ld, int r0, int c0, int rows_lim, int cols_lim,
                                              bool vec) {
  typedef kv_mma_traits Tr;
  constexpr int CHUNKS = COLS / 8;
  static_assert((ROWS * CHUNKS) % Tr::THREADS == 0, "whole chunks per thread");
#pragma unroll
  for (int it = 0; it < ROWS * CHUNKS / Tr::THREADS; ++it) {
    const int i = threadIdx.x + it * Tr::THREADS;
    const int r = i / CHUNKS, cc = (i % CHUNKS) * 8;
    const int gr = r0 + r, gc = c0 + cc;
    int valid = gr < rows_lim ? cols_lim - gc : 0;
    valid = valid < 0 ? 0 : (valid > 8 ? 8 : valid);
    T *dst = s + r * (COLS + Tr::PAD) + cc;
    const T *src = g + (size_t)gr * (size_t)ld + gc;
    if (vec) {
      ptx::cp_async_16(ptx::smem_addr(dst), valid > 0 ? src : g, valid * 2);
    } else {
      __align__(16) T v[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = e < valid ? src[e] : storage<T>::from_float(0.0f);
      *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(v);
    }
  }
}

}  // namespace kv_gemm

template <class T, kv_dtype ACC, int AT, int BT>
__global__ void __launch_bounds__(kv_mma_traits::THREADS)
    kv_gemm_mma_kernel(const T *__restrict__ a, const T *__restrict__ b, const kv_gemm_epi epi, const int k,
                       const int vec) {
  typedef kv_mma_traits Tr;
  /* A: K-major [BM][BK+PAD] or M-major [BK][BM+PAD]; B: K-major [BN][BK+PAD] or N-major [BK][BN+PAD] */
  constexpr int A_ELEMS = AT ? Tr::BK * (Tr::BM + Tr::PAD) : Tr::BM * (Tr::BK + Tr::PAD);
  constexpr int B_ELEMS = BT ? Tr::BN * (Tr::BK + Tr::PAD) : Tr::BK * (Tr::BN + Tr::PAD);
  extern __shared__ __align__(16) unsigned char kv_mma_smem_raw[];
  T *sa = reinterpret_cast<T *>(kv_mma_smem_raw);
  T *sb = sa + Tr::STAGES * A_ELEMS;

  const int m = epi.m, n = epi.n;
  const int tiles_n = (n + Tr::BN - 1) / Tr::BN;
  const int bm = (int)(blockIdx.x / tiles_n) * Tr::BM, bn = (int)(blockIdx.x % tiles_n) * Tr::BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / Tr::WARPS_N, wn = warp % Tr::WARPS_N;
  const int kblocks = (k + Tr::BK - 1) / Tr::BK;

  auto load = [&](int stage, int kb) {
    const int k0 = kb * Tr::BK;
    T *ta = sa + stage * A_ELEMS, *tb = sb + stage * B_ELEMS;
    if (AT)
      kv_gemm::mma_load_tile<T, Tr::BK, Tr::BM>(ta, a, m, k0, bm, k, m, vec);
    else
      kv_gemm::mma_load_tile<T, Tr::BM, Tr::BK>(ta, a, k, bm, k0, m, k, vec);
    if (BT)
      kv_gemm::mma_load_tile<T, Tr::BN, Tr::BK>(tb, b, k, bn, k0, n, k, vec);
    else
      kv_gemm::mma_load_tile<T, Tr::BK, Tr::BN>(tb, b, n, k0, bn, k, n, vec);
  };

  kv_gemm::mma_acc<T, ACC> acc;
  acc.zero();
#pragma unroll
  for (int s = 0; s < Tr::STAGES - 1; ++s) {
    if (s < kblocks) load(s, s);
    kv::ptx::cp_async_commit_group();
  }

  const int q = lane / 8, r = lane % 8;
  for (int kb = 0; kb < kblocks; ++kb) {
    kv::ptx::cp_async_wait_group<Tr::STAGES - 2>();
    kv::block_sync();
    const int next = kb + Tr::STAGES - 1;
    if (next < kblocks) load(next % Tr::STAGES, next);
    kv::ptx::cp_async_commit_group();

    const T *ta = sa + (kb % Tr::STAGES) * A_ELEMS, *tb = sb + (kb % Tr::STAGES) * B_ELEMS;
#pragma unroll
    for (int kk = 0; kk < Tr::BK; kk += 16) {
      uint32_t af[Tr::MI][4], bf[Tr::NI][2];
#pragma unroll
      for (int i = 0; i < Tr::MI; ++i) {
        const int m0 = wm * Tr::WM + i * 16;
        if (AT)
          kv::ptx::ldmatrix_x4_trans(
              af[i], kv::ptx::smem_addr(ta + (kk + (q >> 1) * 8 + r) * (Tr::BM + Tr::PAD) + m0 + (q & 1) * 8));
        else
          kv::ptx::ldmatrix_x4(
              af[i], kv::ptx::smem_addr(ta + (m0 + (q & 1) * 8 + r) * (Tr::BK + Tr::PAD) + kk + (q >> 1) * 8));
      }
#pragma unroll
      for (int j = 0; j < Tr::NI / 2; ++j) {
        const int n0 = wn * Tr::WN + j * 16;
        uint32_t t4[4];
        if (BT)
          kv::ptx::ldmatrix_x4(
              t4, kv::ptx::smem_addr(tb + (n0 + (q >> 1) * 8 + r) * (Tr::BK + Tr::PAD) + kk + (q & 1) * 8));
        else
          kv::ptx::ldmatrix_x4_trans(
              t4, kv::ptx::smem_addr(tb + (kk + (q & 1) * 8 + r) * (Tr::BN + Tr::PAD) + n0 + (q >> 1) * 8));
        bf[2 * j][0] = t4[0];
        bf[2 * j][1] = t4[1];
        bf[2 * j + 1][0] = t4[2];
        bf[2 * j + 1][1] = t4[3];
      }
      acc.step(af, bf);
    }
  }
  kv::ptx::cp_async_wait_group<0>();

#pragma unroll
  for (int i = 0; i < Tr::MI; ++i)
#pragma unroll
    for (int j = 0; j < Tr::NI; ++j) {
      const int row = bm + wm * Tr::WM + i * 16 + lane / 4, col = bn + wn * Tr::WN + j * 8 + 2 * (lane % 4);
      const float4 v = acc.get(i, j);
      kv_gemm::store_pair<T>(epi, row, col, v.x, v.y);
      kv_gemm::store_pair<T>(epi, row + 8, col, v.z, v.w);
    }
}

/* ---- host side ---- */

template <int AT, int BT> constexpr int kv_mma_smem_bytes() {
  typedef kv_mma_traits Tr;
  return Tr::STAGES * 2 *
         ((AT ? Tr::BK * (Tr::BM + Tr::PAD) : Tr::BM * (Tr::BK + Tr::PAD)) +
          (BT ? Tr::BN * (Tr::BK + Tr::PAD) : Tr::BK * (Tr::BN + Tr::PAD)));
}

template <class T, kv_dtype ACC, int AT, int BT> static kv_status kv_mma_launch(const kv_gemm_problem *pr, cudaStream_t st) {
  const kv_gemm_args &g = pr->g;
  const kv_gemm_epi epi = {g.d, g.c, g.m, g.n, (float)g.alpha, (float)g.beta};
  kv_gemm_mma_kernel<T, ACC, AT, BT><<<pr->grid, kv_mma_traits::THREADS, kv_mma_smem_bytes<AT, BT>(), st>>>(
      static_cast<const T *>(g.a), static_cast<const T *>(g.b), epi, g.k, pr->vec);
  return CHECK_LAUNCH("kv_gemm_mma_kernel");
}

template <class T, kv_dtype ACC, int AT, int BT>
static kv_status kv_mma_resources_of(const kv_gemm_problem *, kv_kernel_resources *r) {
  typedef kv_mma_traits Tr;
  constexpr int smem = kv_mma_smem_bytes<AT, BT>();
  void (*kernel)(const T *, const T *, const kv_gemm_epi, const int, const int) = kv_gemm_mma_kernel<T, ACC, AT, BT>;
  cudaFuncAttributes fa;
  KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&fa, kernel)));
  KV_TRY(CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r->occupancy, kernel, Tr::THREADS, smem)));
  r->registers = fa.numRegs;
  r->smem_bytes = (int)fa.sharedSizeBytes + smem;
  r->local_bytes = (int)fa.localSizeBytes;
  return KV_OK;
}

/* Layout (AT, BT) for the problem: the load path (16-byte cp.async when both row strides are
 * multiples of 8 elements and both bases 16-byte aligned), one CTA per tile, the
 * shared-memory limit. */
template <class T, kv_dtype ACC, int AT, int BT> static kv_status kv_mma_prepare_layout(kv_gemm_problem *pr) {
  typedef kv_mma_traits Tr;
  const kv_gemm_args &g = pr->g;
  pr->vec = kv_gemm_mma_vector_loads(g.m, g.n, g.k, g.a_t, g.b_t) && reinterpret_cast<uintptr_t>(g.a) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(g.b) % 16 == 0;
  const long long tiles = (long long)((g.m + Tr::BM - 1) / Tr::BM) * ((g.n + Tr::BN - 1) / Tr::BN);
  if (tiles > 0x7fffffffLL) {
    kv_report(__FILE__, __LINE__, "gemm", "kval-mma: %dx%d needs %lld tiles, above the grid limit", g.m, g.n, tiles);
    return KV_ERR;
  }
  pr->grid = (unsigned)tiles;
  KV_TRY(CHECK_CUDA(cudaFuncSetAttribute(kv_gemm_mma_kernel<T, ACC, AT, BT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kv_mma_smem_bytes<AT, BT>())));
  pr->launch = kv_mma_launch<T, ACC, AT, BT>;
  pr->resources = kv_mma_resources_of<T, ACC, AT, BT>;
  return KV_OK;
}

/* The three layouts of the sweep: nn, tn, nt. */
template <kv_dtype STORE, kv_dtype ACC> kv_status kv_gemm_mma_prepare(kv_gemm_problem *pr) {
  typedef kv_gemm::storage_t<STORE> T;
  if (!pr->g.a_t && !pr->g.b_t) return kv_mma_prepare_layout<T, ACC, 0, 0>(pr);
  if (pr->g.a_t && !pr->g.b_t) return kv_mma_prepare_layout<T, ACC, 1, 0>(pr);
  if (!pr->g.a_t && pr->g.b_t) return kv_mma_prepare_layout<T, ACC, 0, 1>(pr);
  kv_report(__FILE__, __LINE__, "gemm", "kval-mma: layout tt is not instantiated (nn, tn, nt are)");
  return KV_ERR;
}

#endif
