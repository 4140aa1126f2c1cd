/* fa2_ladder.h - the tile ladder of kval-mma, the FlashAttention-2 forward kernel: alternative
 * configurations (kv_fa2_config: query rows and keys per tile, K/V ring depth, Q in registers)
 * with fp32 accumulation, fp16 or bf16 storage, causal or not, that fa2_bench.cu times next to
 * the ones kval runs (kv_fa2_traits, fa2_mma_traits.h; those are the ladder's first rung per
 * head dim) to choose them. Instantiated per head dim in fa2_ladder_d64.cu and
 * fa2_ladder_d128.cu; not part of kval. */
#ifndef KVAL_FA2_LADDER_H
#define KVAL_FA2_LADDER_H

#include "families/fa2/fa2_api.h"

struct kv_fa2_ladder_step {
  const char *name; /* d<D>_<BM>x<BN>_s<stages>[_qr] (qr: Q fragments in registers) */
  int headdim;
  /* The step's instantiation for a prepared kval-mma problem of this head dim with fp32
   * accumulation: sets pr->launch and pr->info (kv_fa2::prepare of the configuration). */
  kv_status (*prepare)(kv_fa2_problem *pr, const char **why);
};

extern const kv_fa2_ladder_step kv_fa2_ladder_d64[], kv_fa2_ladder_d128[];
extern const int kv_fa2_ladder_d64_count, kv_fa2_ladder_d128_count;

#endif
