/* gemm_ladder.h - the configuration ladder of kval-wgmma, the Hopper GEMM (the steps of
 * REFERENCES.md's Hopper ladder): members of kv_wgmma_config (gemm_traits.h) one step short of
 * the shipped kv_wgmma_traits, and the shipped and small-problem configurations themselves,
 * that gemm_bench.cu times on the family's prepared bf16:fp32 nn problem. Instantiated in
 * gemm_ladder.cu; not part of kval. */
#ifndef KVAL_GEMM_LADDER_H
#define KVAL_GEMM_LADDER_H

#include "families/gemm/gemm_api.h"

struct kv_gemm_ladder_step {
  const char *name; /* c<consumers>_s<stages>_g<group_m>_<persist|tile>_<tma|reg> */
  const char *what;
  /* The step's instantiation for a prepared kval-wgmma bf16:fp32 nn problem: TMA descriptors,
   * grid and shared-memory limit of the configuration; sets pr->launch and pr->resources. */
  kv_status (*prepare)(kv_gemm_problem *pr);
};

extern const kv_gemm_ladder_step kv_gemm_ladder[];
extern const int kv_gemm_ladder_count;

#endif
