/* gemm_limits.h - which GEMM problems each variant can run, in plain C that gcc and nvcc both
 * compile: the descriptor's invalid() and the dispatcher (gemm_dispatch.cu) ask the same
 * kv_gemm_unsupported(). */
#ifndef KVAL_GEMM_LIMITS_H
#define KVAL_GEMM_LIMITS_H

#include <string.h>

#include "core/dtype.h"

/* The family's kernels by deck name: kval's wgmma (Hopper) and mma.sync GEMMs, and cuBLASLt. */
enum kv_gemm_variant { KV_GEMM_WGMMA = 0, KV_GEMM_MMA = 1, KV_GEMM_CUBLAS = 2 };

/* Tiles (rows x columns x k-step) of the kernels, checked against the traits
 * (gemm_traits.h static_asserts): kval-wgmma's three 16-bit tiles (large: two consumer
 * warpgroups of 64 x 256; mid: two of 64 x 128; small: one of 64 x 128), kval-mma's. */
#define KV_GEMM_WGMMA_BM 128
#define KV_GEMM_WGMMA_BN 256
#define KV_GEMM_WGMMA_MID_BM 128
#define KV_GEMM_WGMMA_MID_BN 128
#define KV_GEMM_WGMMA_SMALL_BM 64
#define KV_GEMM_WGMMA_SMALL_BN 128
#define KV_GEMM_WGMMA_BK 64
#define KV_GEMM_MMA_BM 128
#define KV_GEMM_MMA_BN 128
#define KV_GEMM_MMA_BK 32
/* The SM count that --dry-run and the recorded path assume for kval-wgmma's grid choice (the
 * H200's); on the GPU the dispatcher asks the device. */
#define KV_GEMM_PATH_SMS 132

/* The tiles of bm x bn that cover an m x n output (a persistent grid takes min(tiles x splits,
 * SMs) CTAs: beyond one wave a CTA goes round its tile loop again). */
static inline long long kv_gemm_tiles(long long m, long long n, long long bm, long long bn) {
  return ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
}
/* Tiles enough to fill at least 90 % of one wave of SMs (kval-wgmma's tile choices). */
static inline int kv_gemm_fills_wave(long long tiles, int sms) { return tiles * 10 >= 9LL * sms; }
/* The rows and columns of kval-wgmma's 16-bit tile t (large, mid, small); path tags name a
 * tile `tile<rows>x<columns>`. */
enum kv_gemm_wgmma_tile_id { KV_GEMM_TILE_LARGE = 0, KV_GEMM_TILE_MID = 1, KV_GEMM_TILE_SMALL = 2 };
static inline void kv_gemm_wgmma_tile_dims(int t, long long *bm, long long *bn) {
  *bm = t == KV_GEMM_TILE_LARGE ? KV_GEMM_WGMMA_BM : t == KV_GEMM_TILE_MID ? KV_GEMM_WGMMA_MID_BM : KV_GEMM_WGMMA_SMALL_BM;
  *bn = t == KV_GEMM_TILE_LARGE ? KV_GEMM_WGMMA_BN : t == KV_GEMM_TILE_MID ? KV_GEMM_WGMMA_MID_BN : KV_GEMM_WGMMA_SMALL_BN;
}
/* kval-wgmma's tile for fp16/bf16 storage: the first of large, mid, small whose tiles fill at
 * least 90 % of one wave of SMs, else small (measured on the H200, `gemm_bench ladder`: a
 * problem of too few large tiles leaves SMs idle; more, smaller tiles come within 2-4 % of
 * cuBLAS on 1024^3, 512x4096^2 and 128x8192^2). Sets the tile's rows and columns. */
static inline int kv_gemm_wgmma_tile(long long m, long long n, int sms, long long *bm, long long *bn) {
  int t = KV_GEMM_TILE_LARGE;
  for (;; ++t) {
    kv_gemm_wgmma_tile_dims(t, bm, bn);
    if (t == KV_GEMM_TILE_SMALL || kv_gemm_fills_wave(kv_gemm_tiles(m, n, *bm, *bn), sms)) return t;
  }
}
/* kval-wgmma splits K when even its small tile leaves half the SMs idle or more (fp32
 * accumulation, fp16/bf16 storage): as many splits as whole copies of the tiles fit a wave,
 * each of at least KV_GEMM_SPLIT_MIN_KBLOCKS k-blocks, at most KV_GEMM_SPLIT_MAX. Each split
 * accumulates its run of k-blocks in fp32 and writes the sum to a workspace; a second kernel
 * adds the splits in index order (deterministic: no atomics) and applies the epilogue.
 * Returns the splits (1: no split) and sets *kb_per, the k-blocks of each split but the last
 * (the last takes the rest). */
#define KV_GEMM_SPLIT_MIN_KBLOCKS 4
#define KV_GEMM_SPLIT_MAX 16
static inline int kv_gemm_wgmma_splits(long long m, long long n, long long k, kv_precision p, int sms,
                                       long long *kb_per) {
  long long bm, bn;
  const long long kblocks = (k + KV_GEMM_WGMMA_BK - 1) / KV_GEMM_WGMMA_BK;
  *kb_per = kblocks;
  if (p.accum != KV_FP32 || p.storage == KV_E4M3 || p.storage == KV_E5M2 ||
      kv_gemm_wgmma_tile(m, n, sms, &bm, &bn) != KV_GEMM_TILE_SMALL)
    return 1;
  long long s = sms / kv_gemm_tiles(m, n, bm, bn);
  if (s > kblocks / KV_GEMM_SPLIT_MIN_KBLOCKS) s = kblocks / KV_GEMM_SPLIT_MIN_KBLOCKS;
  if (s > KV_GEMM_SPLIT_MAX) s = KV_GEMM_SPLIT_MAX;
  if (s < 2) return 1;
  *kb_per = (kblocks + s - 1) / s;
  return (int)((kblocks + *kb_per - 1) / *kb_per);
}

/* kval-wgmma stores D through TMA: rows of D a multiple of 16 bytes (and D 16-byte aligned). */
static inline int kv_gemm_wgmma_tma_store(long long n) { return n % 8 == 0; }
/* kval-mma loads 16-byte vectors: both stored row lengths multiples of 8 (and aligned bases). */
static inline int kv_gemm_mma_vector_loads(long long m, long long n, long long k, int a_t, int b_t) {
  return (a_t ? m : k) % 8 == 0 && (b_t ? k : n) % 8 == 0;
}

/* The variant of a deck name, -1 for an unknown one. */
static inline int kv_gemm_variant_of(const char *name) {
  if (name && strcmp(name, "kval-wgmma") == 0) return KV_GEMM_WGMMA;
  if (name && strcmp(name, "kval-mma") == 0) return KV_GEMM_MMA;
  if (name && strcmp(name, "cublas") == 0) return KV_GEMM_CUBLAS;
  return -1;
}

/* FP8 (e4m3, e5m2 storage, fp32 accumulation): kval-wgmma and cublas, both operands K-major
 * (layout nt: A stored M x K, B stored N x K; Hopper's FP8 wgmma has no transpose), K a
 * multiple of 16 (16-byte rows for TMA). `promote`: products along K that the tensor cores
 * accumulate before the partial sum is added into fp32 registers; 0 = never (the whole K in
 * the tensor-core accumulator, cuBLASLt's "fast accumulation"). kval-wgmma promotes at its
 * k-block boundaries (multiples of KV_GEMM_FP8_BK); cublas with promote > 0 runs with fast
 * accumulation off, promoting at an interval cuBLASLt does not publish. kval-wgmma's FP8 tiles
 * (gemm_traits.h): KV_GEMM_FP8_BM rows by KV_GEMM_FP8_BN or KV_GEMM_FP8_MID_BN columns and
 * KV_GEMM_FP8_SMALL_BM by KV_GEMM_FP8_BN or KV_GEMM_FP8_SKINNY_BN (the ones that can promote: a
 * second set of fp32 registers beside the accumulators), KV_GEMM_FP8_BM by KV_GEMM_FP8_WIDE_BN (never promotes:
 * its accumulators take the registers); k-blocks of KV_GEMM_FP8_BK. */
#define KV_GEMM_FP8_BM 128
#define KV_GEMM_FP8_SMALL_BM 64
#define KV_GEMM_FP8_BN 128
#define KV_GEMM_FP8_SKINNY_BN 64
#define KV_GEMM_FP8_MID_BN 192
#define KV_GEMM_FP8_WIDE_BN 256
#define KV_GEMM_FP8_BK 128
/* Rounds of a persistent grid of sms CTAs over the m x n problem's bm x bn tiles. */
static inline long long kv_gemm_waves(long long m, long long n, long long bm, long long bn, int sms) {
  return (kv_gemm_tiles(m, n, bm, bn) + sms - 1) / sms;
}
/* kval-wgmma's FP8 tiles: wide 128x256, mid 128x192, the 128x128 tile, small 64x128, skinny 64x64. */
enum kv_gemm_fp8_tile_id {
  KV_GEMM_FP8_TILE_WIDE = 0,
  KV_GEMM_FP8_TILE_MID = 1,
  KV_GEMM_FP8_TILE_128 = 2,
  KV_GEMM_FP8_TILE_SMALL = 3,
  KV_GEMM_FP8_TILE_SKINNY = 4
};
static inline void kv_gemm_fp8_tile_dims(int t, long long *bm, long long *bn) {
  *bm = t >= KV_GEMM_FP8_TILE_SMALL ? KV_GEMM_FP8_SMALL_BM : KV_GEMM_FP8_BM;
  *bn = t == KV_GEMM_FP8_TILE_WIDE     ? KV_GEMM_FP8_WIDE_BN
        : t == KV_GEMM_FP8_TILE_MID    ? KV_GEMM_FP8_MID_BN
        : t == KV_GEMM_FP8_TILE_SKINNY ? KV_GEMM_FP8_SKINNY_BN
                                       : KV_GEMM_FP8_BN;
}
/* kval-wgmma's FP8 tile for the problem (its id; *bm x *bn): the wide tile when the problem never
 * promotes and its wide tiles fill at least 90 % of one wave of SMs; when the 128x128 tiles do
 * not fill 90 % of a wave, the small 64x128 tile where it does, else the skinny 64x64 tile where
 * it does (else 128x128); else the 128x192 tile when its
 * rounds take no longer than the 128x128 tile's (a round of 128x192 tiles is 1.5 times the work:
 * 3 x its waves <= 2 x the 128x128 tile's), else the 128x128 tile. */
static inline int kv_gemm_fp8_tile(long long m, long long n, long long promote, int sms, long long *bm, long long *bn) {
  int t = KV_GEMM_FP8_TILE_128;
  if (promote == 0 && kv_gemm_fills_wave(kv_gemm_tiles(m, n, KV_GEMM_FP8_BM, KV_GEMM_FP8_WIDE_BN), sms))
    t = KV_GEMM_FP8_TILE_WIDE;
  else if (!kv_gemm_fills_wave(kv_gemm_tiles(m, n, KV_GEMM_FP8_BM, KV_GEMM_FP8_BN), sms)) {
    if (kv_gemm_fills_wave(kv_gemm_tiles(m, n, KV_GEMM_FP8_SMALL_BM, KV_GEMM_FP8_BN), sms))
      t = KV_GEMM_FP8_TILE_SMALL;
    else if (kv_gemm_fills_wave(kv_gemm_tiles(m, n, KV_GEMM_FP8_SMALL_BM, KV_GEMM_FP8_SKINNY_BN), sms))
      t = KV_GEMM_FP8_TILE_SKINNY;
  } else if (3 * kv_gemm_waves(m, n, KV_GEMM_FP8_BM, KV_GEMM_FP8_MID_BN, sms) <=
             2 * kv_gemm_waves(m, n, KV_GEMM_FP8_BM, KV_GEMM_FP8_BN, sms)) {
    t = KV_GEMM_FP8_TILE_MID;
  }
  kv_gemm_fp8_tile_dims(t, bm, bn);
  return t;
}
static inline const char *kv_gemm_fp8_unsupported(int variant, long long m, long long n, long long k, int a_t,
                                                  int b_t, kv_precision p, long long promote) {
  if (p.accum != KV_FP32) return "gemm: FP8 storage accumulates in fp32 (e4m3:fp32, e5m2:fp32)";
  if (variant != KV_GEMM_WGMMA && variant != KV_GEMM_CUBLAS) return "gemm: FP8 runs on kval-wgmma and cublas (kval-mma has no FP8 path)";
  if (variant == KV_GEMM_CUBLAS && p.storage == KV_E5M2) return "cublas: cuBLASLt has no e5m2 x e5m2 FP8 matmul (e4m3:fp32 runs)";
  if (variant == KV_GEMM_CUBLAS && (n % 16 != 0 || m % 8 != 0))
    return "cublas: cuBLASLt's FP8 matmul needs N a multiple of 16 and M of 8";
  if (a_t || !b_t) return "gemm: FP8 needs both operands K-major: layout nt (A stored M x K, B stored N x K)";
  if (k % 16 != 0) return "gemm: FP8 needs K a multiple of 16 (16-byte rows of A and B)";
  if (promote < 0) return "gemm: promote must be 0 (never) or a positive number of products";
  if (variant == KV_GEMM_WGMMA && promote % KV_GEMM_FP8_BK != 0)
    return "kval-wgmma: promote must be a multiple of its FP8 k-block, 128 (or 0: never)";
  return NULL;
}

/* The epilogue's one multiplier of the accumulator, alpha scale_a scale_b (scales 1 unless FP8),
 * formed in double and rounded once to fp32: the kernels, cuBLASLt's alpha and the emulation
 * use this value. */
static inline float kv_gemm_epilogue_alpha(double alpha, double scale_a, double scale_b) {
  return (float)(alpha * scale_a * scale_b);
}

/* NULL when the variant runs D = alpha op(A) op(B) + beta C of this shape, layout (a_t / b_t:
 * A stored K x M / B stored N x K), precision and promotion interval (FP8 only), else why not. */
static inline const char *kv_gemm_unsupported(int variant, long long m, long long n, long long k, int a_t, int b_t,
                                              kv_precision p, long long promote) {
  if (m < 1 || n < 1 || k < 1) return "gemm: M, N and K must be positive";
  if (p.storage == KV_E4M3 || p.storage == KV_E5M2) return kv_gemm_fp8_unsupported(variant, m, n, k, a_t, b_t, p, promote);
  if (promote != 0) return "gemm: promote applies to FP8 storage only (0 for fp16/bf16)";
  if (p.storage == KV_FP32) return "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "gemm: storage must be fp16 or bf16";
  if (p.accum != KV_FP32 && p.accum != p.storage) return "gemm: the accumulator must be fp32 or the storage type";
  if (a_t && b_t) return "gemm: layout tt is not implemented (nn, tn, nt are)";
  switch (variant) {
    case KV_GEMM_CUBLAS:
      return p.accum == KV_BF16 ? "cublas has no bf16 accumulation" : NULL;
    case KV_GEMM_WGMMA:
      /* TMA global strides are multiples of 16 bytes: the stored row lengths of A (K for
       * layout n, M for t) and of B (N for n, K for t) must be multiples of 8 elements. */
      if ((a_t ? m : k) % 8 != 0 || (b_t ? k : n) % 8 != 0)
        return "kval-wgmma: TMA needs the stored row lengths of A and B (K or M, N or K) to be multiples of 8";
      return NULL;
    case KV_GEMM_MMA:
      return NULL;
    default:
      return "gemm: unknown variant";
  }
}

#endif
