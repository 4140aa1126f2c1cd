/* decode_limits.h - what the paged-KV decode kernel can run and how it splits the cache, in
 * plain C that gcc and nvcc both compile: the descriptor's invalid() and path(), the CPU
 * emulation and the dispatcher ask the same rules, so the emulation visits the same splits and
 * tiles as the kernel and --dry-run reports the dispatcher's own choice.
 *
 * The kernel (decode_kernels.cuh): one block of KV_DECODE_THREADS threads per (batch, kv
 * head, split) handles all rows of its GQA group (q_len query tokens x q_heads / kv_heads
 * heads), staging KV_DECODE_TILE tokens of K and V per step in shared memory; a split is a
 * run of whole pages. With more than one split a second kernel combines the splits' partial
 * outputs through their LSEs, in split order. */
#ifndef KVAL_DECODE_LIMITS_H
#define KVAL_DECODE_LIMITS_H

#include "core/dtype.h"

#define KV_DECODE_THREADS 128
#define KV_DECODE_TILE 64       /* tokens per shared-memory stage */
#define KV_DECODE_MAX_ROWS 16   /* query rows (q_len x group) per block */
#define KV_DECODE_MAX_SPLITS 256
#define KV_DECODE_SPLIT_MIN 512 /* fewest tokens per split the split count aims at */
#define KV_DECODE_SM_SMEM 233472 /* shared memory of an sm_90 SM (228 KB), 1 KB of it reserved per block */
#define KV_DECODE_NOMINAL_SMS 132 /* SM count assumed where no GPU is asked (cpu backend, --dry-run): an H200 */

/* NULL when the kernel runs this case, else why not (the precision itself is assumed valid:
 * kv_precision_invalid_reason). */
static inline const char *kv_decode_unsupported(long long headdim, kv_precision p, long long page_size,
                                                long long q_heads, long long kv_heads, long long q_len) {
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "decode: storage must be fp16 or bf16";
  if (p.accum != KV_FP32) return "decode: fp32 accumulation only";
  if (headdim != 64 && headdim != 128) return "decode: headdim must be 64 or 128";
  if (page_size != 16 && page_size != 32 && page_size != 64 && page_size != 128)
    return "decode: page_size must be 16, 32, 64 or 128 tokens";
  if (kv_heads < 1 || q_heads % kv_heads != 0) return "decode: q_heads must be a multiple of kv_heads";
  if (q_len * (q_heads / kv_heads) > KV_DECODE_MAX_ROWS)
    return "decode: q_len * q_heads / kv_heads must be at most 16 (query rows per block)";
  return NULL;
}

/* The kernel instantiation's row capacity for `rows` query rows per block: 1, 2, 4, 8 or 16. */
static inline int kv_decode_rows_cap(long long rows) {
  int cap = 1;
  while (cap < rows) cap *= 2;
  return cap;
}

/* Dynamic shared memory of the split kernel for head dim d and row capacity cap (bytes): two
 * stages of K (rows padded by one 16-byte vector) and V, the q rows and the scores in fp32,
 * m, l and alpha per row. decode_kernels.cuh allocates exactly this. */
#define KV_DECODE_SMEM_BYTES(d, cap)                                                                          \
  (2 * KV_DECODE_TILE * ((d) + 8) * 2 + 2 * KV_DECODE_TILE * (d) * 2 + (cap) * (d) * 4 + (cap) * KV_DECODE_TILE * 4 + \
   3 * (cap) * 4)

/* Split kernel blocks resident per SM, as the split rule assumes it: shared memory bound (the
 * kernel's 48..72 registers allow 7 blocks of 128 threads), at most 6. */
static inline int kv_decode_blocks_per_sm(int headdim, int cap) {
  const int b = KV_DECODE_SM_SMEM / (KV_DECODE_SMEM_BYTES(headdim, cap) + 1024);
  return b < 1 ? 1 : (b > 6 ? 6 : b);
}

/* The P V step's thread layout for head dim D and row capacity cap: the KV_DECODE_THREADS
 * threads are D / 8 dim groups (one 16-byte vector of 8 dims each) x *nr row sets x *nt token
 * sets; a thread accumulates rows rs, rs + *nr, ... (cap / *nr of them) over the tile's tokens
 * ts, ts + *nt, ..., and the *nt partial sums are added in token-set order at the split's end.
 * The QK^T step: thread tid scores token tid % KV_DECODE_TILE for the rows of its parity
 * tid / KV_DECODE_TILE. */
static inline void kv_decode_pv_layout(int headdim, int cap, int *nr, int *nt) {
  const int sets = KV_DECODE_THREADS / (headdim / 8);
  *nr = cap < sets ? cap : sets;
  *nt = sets / *nr;
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
