/* fa2_wgmma_ladder_d64.cu - the head-dim-64 rungs of the kval-wgmma tile ladder (fa2_ladder.h):
 * kval's 128 x 128 tiles (two consumer warpgroups, pingpong, 2-stage K/V ring), the same with
 * 3 stages, and 192 query rows (three consumers of 160 registers, FA3's choice at d 64) with
 * 2 and 3 stages. */
#include "families/fa2/bench/fa2_wgmma_ladder_step.cuh"

const kv_fa2_ladder_step kv_fa2_wgmma_ladder_d64[] = {
    KV_FA2_WGMMA_LADDER_STEP("d64_128x128_s2_pp", 64, 128, 2, 2, true, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d64_128x128_s3_pp", 64, 128, 3, 2, true, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d64_192x128_s2", 64, 128, 2, 3, false, 24, 160),
    KV_FA2_WGMMA_LADDER_STEP("d64_192x128_s3", 64, 128, 3, 3, false, 24, 160),
};
const int kv_fa2_wgmma_ladder_d64_count = sizeof kv_fa2_wgmma_ladder_d64 / sizeof kv_fa2_wgmma_ladder_d64[0];
