/* fa2_wgmma_ladder_d128.cu - the head-dim-128 rungs of the kval-wgmma tile ladder (fa2_ladder.h):
 * kval's 128 x 128 tiles (two consumer warpgroups, 2-stage K/V ring), the same with pingpong
 * and with 3 stages (225 KB of shared memory), 128 x 64 tiles with 3 stages, and 192 query
 * rows of 64-key tiles (three consumers of 160 registers). */
#include "families/fa2/bench/fa2_wgmma_ladder_step.cuh"

const kv_fa2_ladder_step kv_fa2_wgmma_ladder_d128[] = {
    KV_FA2_WGMMA_LADDER_STEP("d128_128x128_s2", 128, 128, 2, 2, false, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d128_128x128_s2_pp", 128, 128, 2, 2, true, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d128_128x128_s3", 128, 128, 3, 2, false, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d128_128x64_s3", 128, 64, 3, 2, false, 24, 240),
    KV_FA2_WGMMA_LADDER_STEP("d128_192x64_s2", 128, 64, 2, 3, false, 24, 160),
};
const int kv_fa2_wgmma_ladder_d128_count = sizeof kv_fa2_wgmma_ladder_d128 / sizeof kv_fa2_wgmma_ladder_d128[0];
