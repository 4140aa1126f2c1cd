/* gemm_ladder.h - the configuration ladders of kval-wgmma, the Hopper GEMM: members of
 * kv_wgmma_config (gemm_traits.h) that gemm_bench.cu times on the family's prepared nn problem.
 * The large-problem ladder (the steps of REFERENCES.md's Hopper ladder up to the shipped
 * kv_wgmma_traits) on bf16:fp32 8192^3; the small-problem ladder (tiles 64 and 128 rows by 256,
 * 128 and 64 columns, pipeline depths) on problems of less than one wave of the large tile, in
 * fp32 and fp16 accumulation; the FP8 tiles (e4m3, layout nt, never promoted, and the tiles
 * that promote, promoted every 512 products) on 2048^3 - 8192^3. Instantiated in gemm_ladder.cu; not part of kval. */
#ifndef KVAL_GEMM_LADDER_H
#define KVAL_GEMM_LADDER_H

#include "families/gemm/gemm_api.h"

struct kv_gemm_ladder_step {
  const char *name; /* c<consumers>_s<stages>_g<group_m>_<persist|tile>_<tma|reg>[_n<BN>] */
  const char *what;
  const char *precision; /* the problem's storage:accumulator, e.g. bf16:fp32 */
  const char *shapes;    /* MxNxK of the problems it runs on, space-separated */
  /* The step's instantiation for a prepared kval-wgmma nn problem of that precision: TMA
   * descriptors, grid and shared-memory limit of the configuration; sets pr->launch and
   * pr->resources. */
  kv_status (*prepare)(kv_gemm_problem *pr);
  const char *promote; /* FP8: the problem's promotion interval in products; left out (NULL): "0", never */
};

extern const kv_gemm_ladder_step kv_gemm_ladder[];
extern const int kv_gemm_ladder_count;

#endif
