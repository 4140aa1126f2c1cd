/* gemm_ladder.cu - the rungs of kval-wgmma's configuration ladders (gemm_ladder.h), layout nn
 * (FP8: nt, the only one its wgmma takes). */
#include "families/gemm/bench/gemm_ladder.h"
#include "families/gemm/gemm_wgmma.cuh"

template <class Tr, class T = __nv_bfloat16, kv_dtype ACC = KV_FP32>
static kv_status rung(kv_gemm_problem *pr) {
  return kv_wgmma_prepare_layout<Tr, T, ACC, 0, sizeof(T) == 1>(pr);
}

#define LARGE "8192x8192x8192"
#define SMALL "1024x1024x1024 2048x2048x2048 16x8192x8192 128x8192x8192 512x4096x4096"
#define FP8 "8192x8192x8192 4096x4096x4096 2048x2048x2048"

const kv_gemm_ladder_step kv_gemm_ladder[] = {
    {"c1_s4_g16_tile_reg", "1 consumer warpgroup (64x256), CTA per tile, register stores", "bf16:fp32", LARGE,
     rung<kv_wgmma_config<1, 4, 16, 0, 0>>},
    {"c2_s4_g16_tile_reg", "2 consumer warpgroups (128x256), CTA per tile, register stores", "bf16:fp32", LARGE,
     rung<kv_wgmma_config<2, 4, 16, 0, 0>>},
    {"c2_s4_g1_persist_reg", "+ persistent, row-major tile order", "bf16:fp32", LARGE,
     rung<kv_wgmma_config<2, 4, 1, 1, 0>>},
    {"c2_s4_g16_persist_reg", "+ grouped tile order", "bf16:fp32", LARGE, rung<kv_wgmma_config<2, 4, 16, 1, 0>>},
    {"c2_s3_g16_persist_tma", "+ TMA-store epilogue, 3 stages (kv_wgmma_traits, shipped)", "bf16:fp32", LARGE,
     rung<kv_wgmma_traits>},
    /* small problems: fewer 128x256 tiles than SMs (the rungs run the whole K: no split) */
    {"c2_s3_g16_persist_tma", "128x256 (kv_wgmma_traits)", "bf16:fp32", SMALL, rung<kv_wgmma_traits>},
    {"c1_s4_g16_persist_tma", "64x256, 4 stages (the small tile before 6f44fc4)", "bf16:fp32", SMALL,
     rung<kv_wgmma_config<1, 4, 16, 1, 1>>},
    {"c1_s6_g16_persist_tma_n128", "64x128, 6 stages", "bf16:fp32", SMALL, rung<kv_wgmma_config<1, 6, 16, 1, 1, 2, 128>>},
    {"c1_s8_g16_persist_tma_n128", "64x128, 8 stages (kv_wgmma_small_traits)", "bf16:fp32", SMALL,
     rung<kv_wgmma_small_traits>},
    {"c1_s8_g16_persist_tma_n64", "64x64, 8 stages", "bf16:fp32", SMALL, rung<kv_wgmma_config<1, 8, 16, 1, 1, 2, 64>>},
    {"c1_s12_g16_persist_tma_n64", "64x64, 12 stages", "bf16:fp32", SMALL, rung<kv_wgmma_config<1, 12, 16, 1, 1, 2, 64>>},
    {"c2_s4_g16_persist_tma_n128", "128x128, 4 stages", "bf16:fp32", SMALL, rung<kv_wgmma_config<2, 4, 16, 1, 1, 2, 128>>},
    {"c2_s6_g16_persist_tma_n128", "128x128, 6 stages (kv_wgmma_mid_traits)", "bf16:fp32", SMALL,
     rung<kv_wgmma_mid_traits>},
    {"c2_s3_g16_persist_tma", "128x256 (kv_wgmma_traits)", "fp16:fp16", SMALL, rung<kv_wgmma_traits, __half, KV_FP16>},
    {"c1_s4_g16_persist_tma", "64x256, 4 stages", "fp16:fp16", SMALL, rung<kv_wgmma_config<1, 4, 16, 1, 1>, __half, KV_FP16>},
    {"c1_s8_g16_persist_tma_n128", "64x128, 8 stages (kv_wgmma_small_traits)", "fp16:fp16", SMALL,
     rung<kv_wgmma_small_traits, __half, KV_FP16>},
    {"c1_s12_g16_persist_tma_n64", "64x64, 12 stages", "fp16:fp16", SMALL,
     rung<kv_wgmma_config<1, 12, 16, 1, 1, 2, 64>, __half, KV_FP16>},
    {"c2_s6_g16_persist_tma_n128", "128x128, 6 stages (kv_wgmma_mid_traits)", "fp16:fp16", SMALL,
     rung<kv_wgmma_mid_traits, __half, KV_FP16>},
    /* FP8 never promoted (promote 0): the promoting tile against wide tiles without the promoted sum */
    {"c2_s6_g16_persist_tma_n128", "FP8 128x128, 6 stages (kv_wgmma_fp8_traits)", "e4m3:fp32", FP8,
     rung<kv_wgmma_fp8_traits, __nv_fp8_e4m3>},
    {"c2_s3_g16_persist_tma", "FP8 128x256, 3 stages (kv_wgmma_fp8_wide_traits)", "e4m3:fp32", FP8,
     rung<kv_wgmma_fp8_wide_traits, __nv_fp8_e4m3>},
    {"c2_s4_g16_persist_reg", "FP8 128x256, 4 stages, register stores", "e4m3:fp32", FP8,
     rung<kv_wgmma_config<2, 4, 16, 1, 0, 1, 256, 0>, __nv_fp8_e4m3>},
    {"c2_s3_g8_persist_tma", "FP8 128x256, 3 stages, groups of 8 tile-rows", "e4m3:fp32", FP8,
     rung<kv_wgmma_config<2, 3, 8, 1, 1, 1, 256, 0>, __nv_fp8_e4m3>},
    /* FP8 promoted every 512 products: the promoting tiles, 128 and 192 columns (the promoted sum
     * beside the accumulators: 64 + 64 and 96 + 96 fp32 registers a thread) */
    {"c2_s6_g16_persist_tma_n128", "FP8 128x128, 6 stages, promoted every 512 (kv_wgmma_fp8_traits)", "e4m3:fp32",
     FP8, rung<kv_wgmma_fp8_traits, __nv_fp8_e4m3>, "512"},
    {"c2_s4_g16_persist_tma_n192", "FP8 128x192, 4 stages, promoted every 512 (kv_wgmma_fp8_mid_traits)",
     "e4m3:fp32", FP8, rung<kv_wgmma_fp8_mid_traits, __nv_fp8_e4m3>, "512"},
    {"c2_s4_g16_persist_tma_n192", "FP8 128x192, 4 stages, never promoted (kv_wgmma_fp8_mid_traits)", "e4m3:fp32",
     FP8, rung<kv_wgmma_fp8_mid_traits, __nv_fp8_e4m3>},
};
const int kv_gemm_ladder_count = sizeof kv_gemm_ladder / sizeof kv_gemm_ladder[0];
