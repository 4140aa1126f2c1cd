/* gemm_traits.h - tile configuration of the hand-written GEMM kernels (kval-wgmma, kval-mma).
 * The kernels read their tile sizes, pipeline depths, thread counts and register budgets only
 * from here. They are instantiated per accumulator type ACC, kval's kv_dtype (docs/NUMERICS.md,
 * precision model): KV_FP32: fp32 accumulators; KV_FP16: native fp16 tensor-core accumulators;
 * KV_BF16: fp32 accumulators rounded to bf16 after every k-step of 16 (the model of bf16
 * accumulation, which tensor cores do not have). FP8 storage accumulates in fp32, promoted
 * into a second set of fp32 registers at the problem's interval (kval-wgmma). */
#ifndef KVAL_GEMM_TRAITS_H
#define KVAL_GEMM_TRAITS_H

#include "families/gemm/gemm_limits.h"

/* kval-wgmma: Hopper wgmma fed by TMA through an mbarrier ring, one producer warpgroup and
 * CONSUMERS consumer warpgroups, persistent CTAs (one per SM; PERSISTENT 0: one CTA per
 * tile) walking the tiles in groups of GROUP_M tile-rows. Each consumer owns
 * BM / CONSUMERS = 64 rows and all BN columns of the tile (one m64nBNkKSTEP wgmma per k-step).
 * ELEM: bytes per operand element, 2 (fp16/bf16: m64nBNk16, BN 256, 128 or 64) or 1 (FP8:
 * m64nBNk32, BN 256, 192, 128 or 64); either way a k-block row is one 128-byte swizzle row (BK = 128 / ELEM) and a
 * k-step 32 bytes of it.
 * EPI_TMA 1: the epilogue writes the tile into a swizzled shared-memory buffer per consumer
 * and one TMA store sends it out while the next tile's k-loop runs (when N is a multiple of 8);
 * EPI_TMA 0: bounds-checked stores straight from the registers. C and D are 16-bit whatever ELEM.
 * kv_wgmma_config<...> is the family of configurations (`gemm_bench ladder` times the steps of
 * families/gemm/bench/gemm_ladder.cu, other members); the family launches, for fp16/bf16
 * storage, kv_wgmma_traits (128 x 256), kv_wgmma_mid_traits (128 x 128) or kv_wgmma_small_traits
 * (64 x 128), whichever kv_gemm_wgmma_tile (gemm_limits.h) names for the problem, and for FP8
 * storage the tile kv_gemm_fp8_tile names: kv_wgmma_fp8_traits (128 x 128, two 64 x 128 fp32
 * register sets per consumer: the wgmma accumulators and the promoted sum), kv_wgmma_fp8_mid_traits
 * (128 x 192: two 64 x 192 sets, 4 stages), kv_wgmma_fp8_small_traits (64 x 128, one consumer,
 * 8 stages), kv_wgmma_fp8_skinny_traits (64 x 64, one consumer, 12 stages) or kv_wgmma_fp8_wide_traits (128 x 256: 64 x 256 accumulators, no promoted sum:
 * PROMOTES 0, for problems that never promote). */
template <int CONSUMERS_, int STAGES_, int GROUP_M_, int PERSISTENT_, int EPI_TMA_, int ELEM_ = 2, int BN_ = 256,
          int PROMOTES_ = 1>
struct kv_wgmma_config {
  static constexpr int CONSUMERS = CONSUMERS_;
  static constexpr int ELEM = ELEM_;
  static constexpr int BM = 64 * CONSUMERS, BN = BN_, BK = 128 / ELEM;
  static constexpr int KSTEP = 32 / ELEM; /* k of one wgmma */
  static constexpr int STAGES = STAGES_;
  static constexpr int THREADS = 128 * (CONSUMERS + 1);
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232; /* setmaxnreg budgets */
  static constexpr int GROUP_M = GROUP_M_;
  static constexpr bool PERSISTENT = PERSISTENT_ != 0, EPI_TMA = EPI_TMA_ != 0;
  static constexpr bool PROMOTES = ELEM == 1 && PROMOTES_ != 0; /* FP8: holds a promoted sum */
  static constexpr int SWIZZLE_ELEMS = 128 / ELEM; /* 128-byte swizzle span of operand elements */
  static constexpr int A_STAGE_BYTES = BM * BK * ELEM, B_STAGE_BYTES = BN * BK * ELEM;
  static constexpr int D_COLS = 64;                                    /* 128-byte swizzle span of 16-bit D */
  static constexpr int D_BOX_BYTES = 64 * D_COLS * 2;                  /* 64 rows x 64 columns */
  static constexpr int D_BYTES = EPI_TMA ? CONSUMERS * 64 * BN * 2 : 0; /* epilogue buffers */
  static constexpr int SMEM_BYTES =
      STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + D_BYTES + 2 * STAGES * 8 + 1024; /* + barriers, alignment */
  static_assert(BK == SWIZZLE_ELEMS, "one 128-byte swizzle row per k-block row");
  static_assert(BM / CONSUMERS == 64, "a consumer warpgroup issues m64 wgmma");
  static_assert((ELEM == 2 && (BN == 256 || BN == 128 || BN == 64)) ||
                    (ELEM == 1 && (BN == 256 || BN == 192 || BN == 128 || BN == 64)),
                "the wgmma wrappers are m64nNk16, N = 256, 128, 64 (16-bit) and m64nNk32, N = 256, 192, 128, 64 (FP8)");
  static_assert(!PROMOTES || BN <= 192, "a promoted sum beside 64 x 256 accumulators exceeds the register budget");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536, "register file");
  static_assert(SMEM_BYTES <= 232448, "shared memory per block of sm_90");
};
typedef kv_wgmma_config<2, 3, 16, 1, 1> kv_wgmma_traits;
typedef kv_wgmma_config<2, 6, 16, 1, 1, 2, 128> kv_wgmma_mid_traits;
typedef kv_wgmma_config<1, 8, 16, 1, 1, 2, 128> kv_wgmma_small_traits;
typedef kv_wgmma_config<2, 6, 16, 1, 1, 1, 128> kv_wgmma_fp8_traits;
typedef kv_wgmma_config<2, 4, 16, 1, 1, 1, 192> kv_wgmma_fp8_mid_traits;
typedef kv_wgmma_config<1, 8, 16, 1, 1, 1, 128> kv_wgmma_fp8_small_traits;
typedef kv_wgmma_config<1, 12, 16, 1, 1, 1, 64> kv_wgmma_fp8_skinny_traits;
typedef kv_wgmma_config<2, 3, 16, 1, 1, 1, 256, 0> kv_wgmma_fp8_wide_traits;
static_assert(kv_wgmma_traits::BM == KV_GEMM_WGMMA_BM && kv_wgmma_traits::BN == KV_GEMM_WGMMA_BN &&
                  kv_wgmma_mid_traits::BM == KV_GEMM_WGMMA_MID_BM && kv_wgmma_mid_traits::BN == KV_GEMM_WGMMA_MID_BN &&
                  kv_wgmma_small_traits::BM == KV_GEMM_WGMMA_SMALL_BM &&
                  kv_wgmma_small_traits::BN == KV_GEMM_WGMMA_SMALL_BN && kv_wgmma_traits::BK == KV_GEMM_WGMMA_BK &&
                  kv_wgmma_mid_traits::BK == KV_GEMM_WGMMA_BK && kv_wgmma_small_traits::BK == KV_GEMM_WGMMA_BK,
              "gemm_limits.h names kval-wgmma's tiles");
static_assert(kv_wgmma_fp8_traits::BM == KV_GEMM_FP8_BM && kv_wgmma_fp8_traits::BN == KV_GEMM_FP8_BN &&
                  kv_wgmma_fp8_traits::BK == KV_GEMM_FP8_BK && kv_wgmma_fp8_traits::PROMOTES &&
                  kv_wgmma_fp8_mid_traits::BM == KV_GEMM_FP8_BM && kv_wgmma_fp8_mid_traits::BN == KV_GEMM_FP8_MID_BN &&
                  kv_wgmma_fp8_mid_traits::BK == KV_GEMM_FP8_BK && kv_wgmma_fp8_mid_traits::PROMOTES &&
                  kv_wgmma_fp8_small_traits::BM == KV_GEMM_FP8_SMALL_BM &&
                  kv_wgmma_fp8_small_traits::BN == KV_GEMM_FP8_BN && kv_wgmma_fp8_small_traits::BK == KV_GEMM_FP8_BK &&
                  kv_wgmma_fp8_small_traits::PROMOTES &&
                  kv_wgmma_fp8_skinny_traits::BM == KV_GEMM_FP8_SMALL_BM &&
                  kv_wgmma_fp8_skinny_traits::BN == KV_GEMM_FP8_SKINNY_BN &&
                  kv_wgmma_fp8_skinny_traits::BK == KV_GEMM_FP8_BK && kv_wgmma_fp8_skinny_traits::PROMOTES &&
                  kv_wgmma_fp8_wide_traits::BM == KV_GEMM_FP8_BM &&
                  kv_wgmma_fp8_wide_traits::BN == KV_GEMM_FP8_WIDE_BN &&
                  kv_wgmma_fp8_wide_traits::BK == KV_GEMM_FP8_BK && !kv_wgmma_fp8_wide_traits::PROMOTES,
              "gemm_limits.h names kval-wgmma's FP8 tiles");

/* kval-mma: mma.sync m16n8k16 with ldmatrix from padded shared memory filled by a
 * STAGES-deep cp.async ring; WARPS_M x WARPS_N warps, each a (BM/WARPS_M) x (BN/WARPS_N)
 * warp tile. */
struct kv_mma_traits {
  static constexpr int BM = 128, BN = 128, BK = 32;
  static constexpr int STAGES = 4;
  static constexpr int WARPS_M = 2, WARPS_N = 4;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MI = WM / 16, NI = WN / 8; /* mma tiles per warp */
  static constexpr int PAD = 8;                   /* elements added to each smem row */
  static_assert(NI % 2 == 0, "B fragments are loaded two n8 tiles at a time");
  static_assert(BK % 16 == 0, "k-steps of 16");
  static_assert(BM == KV_GEMM_MMA_BM && BN == KV_GEMM_MMA_BN && BK == KV_GEMM_MMA_BK, "gemm_limits.h names these tiles");
};

#endif
