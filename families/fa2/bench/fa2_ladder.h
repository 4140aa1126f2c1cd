/* fa2_ladder.h - the tile ladders of the FlashAttention-2 forward kernels: alternative
 * configurations with fp32 accumulation, fp16 or bf16 storage, causal or not, that fa2_bench.cu
 * times next to the ones kval runs (kval-mma: each ladder's first rung per head dim; kval-wgmma:
 * the rungs its traits name) to choose them.
 * kval-mma (kv_fa2_config, fa2_mma_traits.h): query rows and keys per tile, K/V ring depth, Q
 * in registers; fa2_ladder_d64.cu, fa2_ladder_d128.cu. kval-wgmma (kv_fa2_wgmma_config,
 * fa2_wgmma_traits.h): keys per tile, ring depth, consumer warpgroups (64 query rows each),
 * pingpong and the setmaxnreg split; fa2_wgmma_ladder_d64.cu, fa2_wgmma_ladder_d128.cu. Not
 * part of kval. */
#ifndef KVAL_FA2_LADDER_H
#define KVAL_FA2_LADDER_H

#include "families/fa2/fa2_api.h"

struct kv_fa2_ladder_step {
  /* d<D>_<BM>x<BN>_s<stages>[_qr|_pp] (qr: Q fragments in registers; pp: pingpong) */
  const char *name;
  const char *variant; /* the deck's variant the rung replaces: kval-mma or kval-wgmma */
  int headdim;
  /* The step's instantiation for a prepared problem of its variant and head dim with fp32
   * accumulation: sets pr->launch and pr->info (the variant's prepare of the configuration). */
  kv_status (*prepare)(kv_fa2_problem *pr, const char **why);
};

extern const kv_fa2_ladder_step kv_fa2_ladder_d64[], kv_fa2_ladder_d128[];
extern const int kv_fa2_ladder_d64_count, kv_fa2_ladder_d128_count;
extern const kv_fa2_ladder_step kv_fa2_wgmma_ladder_d64[], kv_fa2_wgmma_ladder_d128[];
extern const int kv_fa2_wgmma_ladder_d64_count, kv_fa2_wgmma_ladder_d128_count;

#endif
