/* gemm_ladder.cu - the rungs of kval-wgmma's configuration ladder (gemm_ladder.h), bf16 storage
 * with fp32 accumulation, layout nn. */
#include "families/gemm/bench/gemm_ladder.h"
#include "families/gemm/gemm_wgmma.cuh"

template <class Tr>
static kv_status rung(kv_gemm_problem *pr) {
  return kv_wgmma_prepare_layout<Tr, __nv_bfloat16, KV_FP32, 0, 0>(pr);
}

const kv_gemm_ladder_step kv_gemm_ladder[] = {
    {"c1_s4_g16_tile_reg", "1 consumer warpgroup (64x256), CTA per tile, register stores",
     rung<kv_wgmma_config<1, 4, 16, 0, 0>>},
    {"c2_s4_g16_tile_reg", "2 consumer warpgroups (128x256), CTA per tile, register stores",
     rung<kv_wgmma_config<2, 4, 16, 0, 0>>},
    {"c2_s4_g1_persist_reg", "+ persistent, row-major tile order", rung<kv_wgmma_config<2, 4, 1, 1, 0>>},
    {"c2_s4_g16_persist_reg", "+ grouped tile order", rung<kv_wgmma_config<2, 4, 16, 1, 0>>},
    {"c2_s3_g16_persist_tma", "+ TMA-store epilogue, 3 stages (kv_wgmma_traits, shipped)", rung<kv_wgmma_traits>},
    {"c1_s4_g16_persist_tma", "1 consumer warpgroup, persistent, TMA store (kv_wgmma_small_traits)",
     rung<kv_wgmma_small_traits>},
};
const int kv_gemm_ladder_count = sizeof kv_gemm_ladder / sizeof kv_gemm_ladder[0];
