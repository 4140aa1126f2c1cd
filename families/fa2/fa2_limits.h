/* fa2_limits.h - what the FlashAttention-2 forward kernels can run and with which tiles, in
 * plain C that gcc and nvcc both compile: the descriptor's invalid() and the dispatcher ask the
 * same kv_fa2_unsupported(), and the CPU emulation reads the same block sizes as the kernels,
 * so it rescales at the same key-block boundaries. The tiles were chosen from H200 timings of
 * the alternatives (families/fa2/bench) among those whose every instantiation fits 255
 * registers without spilling (kval-mma: BLOCK_M query rows per thread block, BLOCK_N keys per
 * step of the blocked online softmax), and kval-wgmma's own tiles: 128 query rows (two
 * consumer warpgroups of 64) x 128-key tiles, but 192 rows (three consumers) at d = 64
 * without the causal mask and 64-key tiles at d = 256. */
#ifndef KVAL_FA2_LIMITS_H
#define KVAL_FA2_LIMITS_H

#include <string.h>

#include "core/dtype.h"

#define KV_FA2_BLOCK_M(d) ((d) == 256 ? 64 : 128)
#define KV_FA2_BLOCK_N(d) ((d) == 32 || (d) == 64 ? 128 : (d) == 256 ? 32 : 48)
#define KV_FA2_WGMMA_BLOCK_M(d, causal) ((d) == 64 && !(causal) ? 192 : 128)
#define KV_FA2_WGMMA_BLOCK_N(d) ((d) == 256 ? 64 : 128)

/* The family's two kernels: kval-mma (mma.sync: every head dim and precision) and kval-wgmma
 * (Hopper wgmma + TMA). */
enum kv_fa2_variant { KV_FA2_MMA = 0, KV_FA2_WGMMA = 1 };

/* The variant of a deck name, -1 for an unknown one. */
static inline int kv_fa2_variant_of(const char *name) {
  if (name && strcmp(name, "kval-mma") == 0) return KV_FA2_MMA;
  if (name && strcmp(name, "kval-wgmma") == 0) return KV_FA2_WGMMA;
  return -1;
}

/* NULL when the variant has a kernel for this head dim and precision, else why not (the
 * precision itself is assumed valid: kv_precision_invalid_reason). */
static inline const char *kv_fa2_unsupported(int variant, long long headdim, kv_precision p) {
  if (variant != KV_FA2_MMA && variant != KV_FA2_WGMMA) return "fa2: unknown variant";
  if (p.storage == KV_FP32) return "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "fa2: storage must be fp16 or bf16";
  if (p.accum != KV_FP32 && p.accum != p.storage) return "fa2: the accumulator must be fp32 or the storage type";
  if (headdim != 32 && headdim != 64 && headdim != 96 && headdim != 128 && headdim != 256)
    return "headdim must be 32, 64, 96, 128 or 256";
  if (variant == KV_FA2_WGMMA) {
    if (headdim != 64 && headdim != 128 && headdim != 256)
      return "kval-wgmma: headdim must be 64, 128 or 256 (kval-mma also has 32 and 96)";
    if (p.accum != KV_FP32) return "kval-wgmma: fp32 accumulation only (the reduced-accumulator models run on kval-mma)";
  }
  return NULL;
}

#endif
