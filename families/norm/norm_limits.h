/* norm_limits.h - the LayerNorm/RMSNorm kernel configurations and which one a row takes, in
 * plain C that gcc and nvcc both compile: the dispatcher (norm_dispatch.cu) launches the
 * configuration kv_norm_choice() names, and the descriptor's path() reports the same choice,
 * so --dry-run and the coverage test see the dispatcher's own decision. Register-resident
 * paths hold each row in registers (TPR threads x NV 16-byte vectors); the general (rows
 * over 4096 vectors, unaligned tensors) and serial (reduced accumulators) paths do not. */
#ifndef KVAL_NORM_LIMITS_H
#define KVAL_NORM_LIMITS_H

#include "core/dtype.h"

typedef enum kv_norm_kind { KV_NORM_FAST, KV_NORM_PEELED } kv_norm_kind;
typedef struct kv_norm_config {
  int tpr, nv;
  kv_norm_kind kind;
} kv_norm_config;
#define KV_NORM_CONFIGS(X)                                                                                 \
  X(0, 8, 1, FAST) X(1, 16, 1, FAST) X(2, 32, 1, FAST) X(3, 32, 2, FAST) X(4, 32, 4, FAST) X(5, 64, 4, FAST) \
  X(6, 32, 8, FAST) X(7, 128, 2, FAST) X(8, 64, 8, FAST) X(9, 128, 4, FAST) X(10, 256, 2, FAST)            \
  X(11, 128, 8, FAST) X(12, 256, 4, FAST) X(13, 256, 8, FAST) X(14, 512, 4, FAST) X(15, 512, 8, FAST)      \
  X(16, 64, 2, FAST) X(17, 512, 2, FAST) X(18, 8, 1, PEELED) X(19, 16, 1, PEELED) X(20, 32, 1, PEELED)     \
  X(21, 32, 2, PEELED) X(22, 64, 2, PEELED) X(23, 64, 4, PEELED) X(24, 128, 4, PEELED)                     \
  X(25, 128, 6, PEELED) X(26, 256, 4, PEELED) X(27, 128, 8, PEELED) X(28, 256, 6, PEELED)                  \
  X(29, 256, 8, PEELED) X(30, 512, 4, PEELED) X(31, 512, 8, PEELED) X(32, 256, 2, PEELED)                  \
  X(33, 128, 2, PEELED) X(34, 1024, 4, FAST)
#define KV_NORM_N_CONFIGS 35
#define KV_NORM_GENERAL_BLOCK 128 /* threads per row of the general path */
#define KV_NORM_SERIAL_BLOCK 128  /* rows (one thread each) per block of the serial path */

/* Elements of a 16-byte vector of the storage type. */
static inline int kv_norm_vec_of(kv_dtype storage) { return storage == KV_FP32 ? 4 : 8; }

/* Configuration `config` of KV_NORM_CONFIGS ({0, 0, FAST} for an unknown index). */
static inline kv_norm_config kv_norm_config_of(int config) {
  switch (config) {
#define KV_X(idx, TPR, NV, KIND) \
  case idx: {                    \
    kv_norm_config c = {TPR, NV, KV_NORM_##KIND}; \
    return c;                    \
  }
    KV_NORM_CONFIGS(KV_X)
#undef KV_X
    default: {
      kv_norm_config c = {0, 0, KV_NORM_FAST};
      return c;
    }
  }
}

/* Whole 16-byte vectors a row holds: hidden / N (for the peeled kernel, the most a row
 * starting anywhere holds; the rest are its end elements). */
static inline long long kv_norm_vectors(kv_dtype storage, long long hidden) { return hidden / kv_norm_vec_of(storage); }

/* Whether configuration `config` holds a row of `hidden` elements (aligned tensors). */
static inline int kv_norm_holds(kv_dtype storage, long long hidden, int config) {
  const kv_norm_config c = kv_norm_config_of(config);
  if (c.tpr <= 0 || hidden <= 0) return 0;
  if (c.kind == KV_NORM_FAST && hidden % kv_norm_vec_of(storage) != 0) return 0;
  return (long long)c.tpr * c.nv >= kv_norm_vectors(storage, hidden);
}

/* NULL when a norm kernel exists for the precision (fp16, bf16, fp32 storage), else why not. */
static inline const char *kv_norm_unsupported(kv_precision p) {
  return p.storage == KV_E4M3 || p.storage == KV_E5M2 ? "norm: 8-bit storage is a GEMM storage type (no norm kernel)"
                                                      : NULL;
}

/* The measured choice for 16-byte aligned tensors, by storage width, rows of whole vectors
 * (the fast kernel) or not (the peeled kernel, whose end elements cost no vector slot), and
 * norm: each bucket {the most whole vectors a row may have, configuration}, the first that
 * holds the row. Measured on an H200 (families/norm/bench/norm_bench.cu: `sweep` times every
 * configuration that holds rows of 48 - 4096 vectors of each storage type, `configs` the bench
 * shapes; docs/PERFORMANCE.md): one warp or less per row up to 32 vectors, then as many
 * threads per row as two, four, six or eight vectors each take, the count per thread chosen
 * where it measured fastest (LayerNorm's 513 - 768 peeled vectors on 128 x 6, RMSNorm's 1025 -
 * 1536 on 256 x 6; fp32 RMSNorm's 1537 - 2048 on 512 x 4, 16-bit ones' on 256 x 8). Whole-vector
 * fp32 rows take the peeled kernel's 256 x 6 where it measured faster than the fast kernel
 * (LayerNorm 1025 - 1536 vectors, RMSNorm 1025 - 1280), and fp32 RMSNorm rows of 2049 - 4096
 * whole vectors the 1024-thread entry.
 * -1: no register-resident configuration (reduced accumulators: the serial path; rows over
 * 4096 vectors: the general path). */
static inline int kv_norm_choice(int layernorm, kv_dtype storage, kv_dtype accum, long long hidden) {
  if (accum != KV_FP32 || hidden <= 0) return -1;
  typedef struct {
    int cap, config;
  } kv_norm_bucket;
  /* [fp32 storage][peeled][layernorm] */
  static const kv_norm_bucket by_size[2][2][2][12] = {
      {{{{8, 0}, {16, 1}, {32, 2}, {64, 3}, {128, 16}, {256, 7}, {512, 9}, {1024, 12}, {1536, 13}, {2048, 14}, {4096, 15}},
        {{8, 0}, {16, 1}, {32, 2}, {64, 3}, {128, 16}, {256, 7}, {512, 9}, {1024, 12}, {2048, 14}, {4096, 15}}},
       {{{8, 18}, {16, 19}, {32, 20}, {64, 21}, {128, 22}, {256, 33}, {512, 25}, {768, 27}, {1024, 26}, {1536, 28},
         {2048, 29}, {4096, 31}},
        {{8, 18}, {16, 19}, {32, 20}, {64, 21}, {128, 22}, {256, 23}, {512, 24}, {768, 25}, {1024, 26}, {1536, 28},
         {2048, 29}, {4096, 31}}}},
      {{{{8, 0}, {16, 1}, {32, 2}, {64, 3}, {128, 16}, {256, 7}, {512, 9}, {1024, 12}, {1280, 28}, {2048, 14}, {4096, 34}},
        {{8, 0}, {16, 1}, {32, 2}, {64, 3}, {128, 16}, {256, 7}, {512, 10}, {1024, 12}, {1536, 28}, {2048, 14}, {4096, 15}}},
       {{{8, 18}, {16, 19}, {32, 20}, {64, 21}, {128, 22}, {256, 33}, {512, 24}, {1024, 26}, {1536, 28}, {2048, 30},
         {4096, 31}},
        {{8, 18}, {16, 19}, {32, 20}, {64, 21}, {128, 22}, {256, 23}, {512, 24}, {768, 25}, {1024, 26}, {1536, 28},
         {2048, 29}, {4096, 31}}}}};
  const int peeled = hidden % kv_norm_vec_of(storage) != 0;
  const long long nvec = kv_norm_vectors(storage, hidden);
  const kv_norm_bucket *b = by_size[storage == KV_FP32][peeled][layernorm ? 1 : 0];
  for (int i = 0; i < 12 && b[i].cap > 0; i++)
    if (nvec <= b[i].cap) return b[i].config;
  return -1;
}

#endif
