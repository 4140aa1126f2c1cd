/* fa2bwd_limits.h - what the FlashAttention-2 backward kernels can run, with which tiles and, for
 * kval-wgmma-fused, in which order, in plain C that gcc and nvcc both compile: the descriptor's
 * invalid() and path(), and the dispatcher ask the same kv_fa2bwd_unsupported() and read the
 * same block sizes; the fused kernel and test_fa2bwd compute the same schedule.
 * kval-mma (mma.sync m16n8k16, fp32 accumulation) runs two deterministic passes after the
 * preprocessing of D = rowsum(dO * O): the dK/dV kernel (one thread block per KV_FA2BWD_BLOCK_N
 * keys of one (batch, head), walking the query blocks of KV_FA2BWD_BLOCK_M rows) and the dQ
 * kernel (one thread block per KV_FA2BWD_BLOCK_M query rows, walking the key blocks of
 * KV_FA2BWD_BLOCK_N keys). No atomics: every output element is written by one thread, its
 * sums taken in a fixed order, so dQ, dK and dV are bitwise identical run to run.
 * kval-wgmma (Hopper sm_90a: TMA and wgmma, fp32 accumulation) runs the same two passes with
 * its own blocks: the dK/dV kernel KV_FA2BWD_WGMMA_KEYS keys a thread block, walking query
 * blocks of KV_FA2BWD_WGMMA_QUERIES(d) rows; the dQ kernel KV_FA2BWD_WGMMA_ROWS query rows,
 * walking key blocks of KV_FA2BWD_WGMMA_KEY_BLOCK(d) keys. Deterministic likewise.
 * kval-wgmma-fused runs one pass after D: the dK/dV kernel's blocks, each also adding its share
 * of dQ into an fp32 workspace (kv_fa2bwd_workspace) in a fixed order of key blocks, then dQ
 * from the workspace. Deterministic likewise (no data-dependent order of adds). */
#ifndef KVAL_FA2BWD_LIMITS_H
#define KVAL_FA2BWD_LIMITS_H

#include <string.h>

#include "core/dtype.h"

#define KV_FA2BWD_BLOCK_M(d) 64
#define KV_FA2BWD_BLOCK_N(d) 64
#define KV_FA2BWD_WGMMA_KEYS 128
#define KV_FA2BWD_WGMMA_QUERIES(d) 64
#define KV_FA2BWD_WGMMA_ROWS 128
#define KV_FA2BWD_WGMMA_KEY_BLOCK(d) ((d) == 64 ? 128 : 64)

enum kv_fa2bwd_variant { KV_FA2BWD_MMA = 0, KV_FA2BWD_WGMMA = 1, KV_FA2BWD_WGMMA_FUSED = 2 };

/* The variant of a deck name, -1 for an unknown one. */
static inline int kv_fa2bwd_variant_of(const char *name) {
  if (name && strcmp(name, "kval-mma") == 0) return KV_FA2BWD_MMA;
  if (name && strcmp(name, "kval-wgmma") == 0) return KV_FA2BWD_WGMMA;
  if (name && strcmp(name, "kval-wgmma-fused") == 0) return KV_FA2BWD_WGMMA_FUSED;
  return -1;
}

/* The blocks of a variant's two passes: the query blocks the dK/dV pass walks and the query
 * rows a dQ block owns (*query_blocks[0], [1]); the keys a dK/dV block owns and the key blocks
 * the dQ pass walks (*key_blocks[0], [1]); kval-wgmma-fused's one pass both times. */
static inline void kv_fa2bwd_blocks(int variant, long long headdim, long long query_blocks[2], long long key_blocks[2]) {
  if (variant == KV_FA2BWD_WGMMA_FUSED) {
    query_blocks[0] = query_blocks[1] = KV_FA2BWD_WGMMA_QUERIES(headdim);
    key_blocks[0] = key_blocks[1] = KV_FA2BWD_WGMMA_KEYS;
  } else if (variant == KV_FA2BWD_WGMMA) {
    query_blocks[0] = KV_FA2BWD_WGMMA_QUERIES(headdim);
    query_blocks[1] = KV_FA2BWD_WGMMA_ROWS;
    key_blocks[0] = KV_FA2BWD_WGMMA_KEYS;
    key_blocks[1] = KV_FA2BWD_WGMMA_KEY_BLOCK(headdim);
  } else {
    query_blocks[0] = query_blocks[1] = KV_FA2BWD_BLOCK_M(headdim);
    key_blocks[0] = key_blocks[1] = KV_FA2BWD_BLOCK_N(headdim);
  }
}

/* The device workspace of a problem (bytes): kval-wgmma-fused's kernel adds each key block's
 * share of dQ into an fp32 buffer of whole query blocks (accum) in an order that a counter per
 * query block of each (batch, head) enforces (sems); kval-mma needs none. */
static inline void kv_fa2bwd_workspace(int variant, long long batch, long long heads, long long seqlen,
                                       long long headdim, long long *accum_bytes, long long *sem_bytes) {
  const long long blocks = batch * heads * ((seqlen + KV_FA2BWD_WGMMA_QUERIES(headdim) - 1) /
                                            KV_FA2BWD_WGMMA_QUERIES(headdim));
  *accum_bytes = variant == KV_FA2BWD_WGMMA_FUSED ? blocks * KV_FA2BWD_WGMMA_QUERIES(headdim) * headdim * 4 : 0;
  *sem_bytes = variant == KV_FA2BWD_WGMMA_FUSED ? blocks * 4 : 0;
}

/* kval-wgmma-fused without the causal mask at head dim KV_FA2BWD_ROTATED_HEADDIM walks rotated
 * where a head has at most KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS key blocks (and they fit on the SMs at
 * once, which the kernel's prepare step checks too): key block kb walks the query blocks from
 * its own diagonal block kb KEYS / QUERIES on, cyclically, and adds its dQ shares in the order
 * in which the walks reach a query block; else every key block walks them from the first, and
 * the last key block adds first. 1 for a case of the rotated walk, 0 otherwise. */
#define KV_FA2BWD_ROTATED_HEADDIM 128
#define KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS 32
static inline int kv_fa2bwd_rotated(int variant, long long headdim, int causal, long long seqlen) {
  return variant == KV_FA2BWD_WGMMA_FUSED && headdim == KV_FA2BWD_ROTATED_HEADDIM && !causal &&
         (seqlen + KV_FA2BWD_WGMMA_KEYS - 1) / KV_FA2BWD_WGMMA_KEYS <= KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS;
}

#ifdef __CUDACC__
#define KV_FA2BWD_FN __host__ __device__ __forceinline__
#else
#define KV_FA2BWD_FN static inline
#endif

/* kval-wgmma-fused's schedule, what its producer, consumers and dQ writers compute on the device
 * and test_fa2bwd checks on the host (every walk a permutation, every query block's adds in
 * an order that the CTAs reach without waiting forever). Key block kb of nkb (bn keys) walks
 * the query blocks (bq rows) that see it; rotated (no mask, so all nmb of them), its step-th
 * is kv_fa2bwd_rotated_block(step, kv_fa2bwd_diagonal_block(kb, bq, bn), nmb); with the mask
 * it walks from that diagonal block to the last. A query block m
 * receives the shares of the key blocks that see it in the order kv_fa2bwd_add_rank gives
 * (0 adds first): plain, descending from the last key block that sees m; rotated, the order in
 * which the rotated walks reach m (key block m bq / bn first, then the one before,
 * cyclically). */
/* The first query block that sees key block kb's first key: where the causal walk starts and
 * the rotated one too. */
KV_FA2BWD_FN int kv_fa2bwd_diagonal_block(int kb, int bq, int bn) { return kb * bn / bq; }
KV_FA2BWD_FN int kv_fa2bwd_rotated_block(int step, int first, int nmb) {
  return step + first >= nmb ? step + first - nmb : step + first;
}
/* The last key block that sees query block m (of nkb key blocks). */
KV_FA2BWD_FN int kv_fa2bwd_last_key_block(int causal, int m, int nkb, int bq, int bn) {
  const int last = (m * bq + bq - 1) / bn;
  return causal && last < nkb - 1 ? last : nkb - 1;
}
KV_FA2BWD_FN int kv_fa2bwd_add_rank(int rotated, int causal, int m, int kb, int nkb, int bq, int bn) {
  return rotated ? (m * bq / bn - kb + nkb) % nkb : kv_fa2bwd_last_key_block(causal, m, nkb, bq, bn) - kb;
}

/* NULL when the variant has a kernel for this head dim and precision, else why not (the
 * precision itself is assumed valid: kv_precision_invalid_reason). */
static inline const char *kv_fa2bwd_unsupported(int variant, long long headdim, kv_precision p) {
  if (variant != KV_FA2BWD_MMA && variant != KV_FA2BWD_WGMMA && variant != KV_FA2BWD_WGMMA_FUSED)
    return "fa2bwd: unknown variant";
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "fa2bwd: storage must be fp16 or bf16";
  if (p.accum != KV_FP32) return "fa2bwd: fp32 accumulation only";
  if (headdim != 64 && headdim != 128) return "fa2bwd: headdim must be 64 or 128";
  return NULL;
}

#endif
