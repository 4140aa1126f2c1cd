/* decode_limits.h - what the paged-KV decode kernel can run and how it splits the cache, in
 * plain C that gcc and nvcc both compile: the descriptor's invalid() and path(), the CPU
 * emulation and the dispatcher ask the same rules, so the emulation visits the same splits,
 * warps and slabs as the kernel and --dry-run reports the dispatcher's own choice.
 *
 * The kernel (decode_kernels.cuh): one block of KV_DECODE_WARPS warps per (batch, kv head,
 * split) handles all rows of its GQA group (q_len query tokens x q_heads / kv_heads heads, at
 * most KV_DECODE_MAX_ROWS: one 16-row tensor-core tile); the split's tokens come in slabs of
 * KV_DECODE_SLAB, slab i to warp i % KV_DECODE_WARPS, which streams its own slabs through
 * KV_DECODE_STAGES shared-memory stages and keeps its own softmax state; the warps' states
 * are merged in warp order at the split's end. A split is a run of whole pages (so a slab never
 * spans two pages). With more than one split the last block of a (batch, kv head) to finish
 * combines the splits' partial outputs through their LSEs, in split order.
 *
 * Types: q, out and the tensor-core operands in the storage type (fp16 or bf16); the KV cache
 * in the same type or 8-bit (e4m3, e5m2: the deck's kv_type, widened exactly in the kernel). */
#ifndef KVAL_DECODE_LIMITS_H
#define KVAL_DECODE_LIMITS_H

#include "core/dtype.h"

#define KV_DECODE_WARPS 4
#define KV_DECODE_THREADS (32 * KV_DECODE_WARPS)
#define KV_DECODE_SLAB 16       /* tokens of one warp step (the k of the P V mma) */
#define KV_DECODE_STAGES 3      /* shared-memory stages of each warp's slabs */
#define KV_DECODE_MAX_ROWS 16   /* query rows (q_len x group) per block: the mma's 16 rows */
#define KV_DECODE_MAX_SPLITS 256
#define KV_DECODE_SPLIT_MIN 512 /* fewest tokens per split the split count aims at */
#define KV_DECODE_SM_SMEM 233472 /* shared memory of an sm_90 SM (228 KB), 1 KB of it reserved per block */
#define KV_DECODE_NOMINAL_SMS 132 /* SM count assumed where no GPU is asked (cpu backend, --dry-run): an H200 */

/* NULL when the kernel runs this case, else why not (the precision itself is assumed valid:
 * kv_precision_invalid_reason); kv is the KV cache's type. */
static inline const char *kv_decode_unsupported(long long headdim, kv_precision p, kv_dtype kv, long long page_size,
                                                long long q_heads, long long kv_heads, long long q_len) {
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "decode: storage must be fp16 or bf16";
  if (kv != p.storage && kv != KV_E4M3 && kv != KV_E5M2)
    return "decode: kv_type must be the storage type, e4m3 or e5m2";
  if (p.accum != KV_FP32) return "decode: fp32 accumulation only";
  if (headdim != 64 && headdim != 128) return "decode: headdim must be 64 or 128";
  if (page_size != 16 && page_size != 32 && page_size != 64 && page_size != 128)
    return "decode: page_size must be 16, 32, 64 or 128 tokens";
  if (kv_heads < 1 || q_heads % kv_heads != 0) return "decode: q_heads must be a multiple of kv_heads";
  if (q_len * (q_heads / kv_heads) > KV_DECODE_MAX_ROWS)
    return "decode: q_len * q_heads / kv_heads must be at most 16 (query rows per block)";
  return NULL;
}

/* Bytes of one slab row of the KV cache in shared memory for head dim d and elem_bytes (2 or
 * 1) bytes per element: the row padded by one 16-byte vector (the ldmatrix rows of a slab fall
 * in different banks). */
#define KV_DECODE_ROW_BYTES(d, elem_bytes) ((d) * (elem_bytes) + 16)

/* Dynamic shared memory of the split kernel (bytes): per warp and stage one slab of K and one
 * of V. decode_kernels.cuh allocates exactly this; the warps' final states (per warp m[16],
 * l[16] and O[16][d] in fp32) reuse it. */
#define KV_DECODE_SMEM_BYTES(d, elem_bytes) \
  (KV_DECODE_WARPS * KV_DECODE_STAGES * 2 * KV_DECODE_SLAB * KV_DECODE_ROW_BYTES(d, elem_bytes))
#define KV_DECODE_STATE_BYTES(d) (KV_DECODE_WARPS * (32 + 16 * (d)) * 4)
/* What a block allocates: the stages, or the warps' states where those are larger. */
#define KV_DECODE_BLOCK_SMEM_BYTES(d, elem_bytes)                                                   \
  (KV_DECODE_SMEM_BYTES(d, elem_bytes) > KV_DECODE_STATE_BYTES(d) ? KV_DECODE_SMEM_BYTES(d, elem_bytes) \
                                                                  : KV_DECODE_STATE_BYTES(d))

/* The fewest split-kernel blocks an SM holds by registers: __launch_bounds__'s minimum, so the
 * compiler keeps each thread within 65536 / (this x KV_DECODE_THREADS) registers (head dim
 * 128: 3, 170 registers; 64: 5, 102). */
#define KV_DECODE_REG_BLOCKS(d) ((d) == 128 ? 3 : 5)

/* Split kernel blocks resident per SM, as the split rule assumes it: the smaller of the shared
 * memory bound (the larger of the stages and the warps' states) and the register bound, at
 * most 8, for a KV cache of type kv (fp16/bf16: 2 at head dim 128, 4 at 64; 8-bit: 3 and 5). */
static inline int kv_decode_blocks_per_sm(int headdim, kv_dtype kv) {
  int b = KV_DECODE_SM_SMEM / (KV_DECODE_BLOCK_SMEM_BYTES(headdim, (int)kv_dtype_size(kv)) + 1024);
  if (b > KV_DECODE_REG_BLOCKS(headdim)) b = KV_DECODE_REG_BLOCKS(headdim);
  return b < 1 ? 1 : (b > 8 ? 8 : b);
}

/* The split of a sequence of ctx tokens in pages of page_size over `work` = batch x kv_heads
 * blocks on a GPU of sms SMs holding blocks_per_sm blocks each: as many splits as fit one wave
 * of resident blocks (floor(sms x blocks_per_sm / work); a second, partial wave would double
 * the time), none shorter than about KV_DECODE_SPLIT_MIN tokens, at most KV_DECODE_MAX_SPLITS;
 * each split is *split_pages whole pages (the last one shorter). Returns the number of splits. */
static inline int kv_decode_splits(long long ctx, long long page_size, long long work, int sms, int blocks_per_sm,
                                   long long *split_pages) {
  const long long pages = (ctx + page_size - 1) / page_size;
  long long want = (long long)sms * blocks_per_sm / work;
  const long long by_len = ctx / KV_DECODE_SPLIT_MIN > 1 ? ctx / KV_DECODE_SPLIT_MIN : 1;
  if (want > by_len) want = by_len;
  if (want > KV_DECODE_MAX_SPLITS) want = KV_DECODE_MAX_SPLITS;
  if (want > pages) want = pages;
  if (want < 1) want = 1;
  *split_pages = (pages + want - 1) / want;
  return (int)((pages + *split_pages - 1) / *split_pages);
}

#endif
