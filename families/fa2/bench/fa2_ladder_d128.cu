/* fa2_ladder_d128.cu - the head-dim-128 rungs of the kval-mma tile ladder (fa2_ladder.h): kval's
 * 128 x 48 tiles with a 2-stage K/V ring, the same with 3 stages, and 128 x 64 tiles. */
#include "families/fa2/bench/fa2_ladder_step.cuh"

const kv_fa2_ladder_step kv_fa2_ladder_d128[] = {
    KV_FA2_LADDER_STEP("d128_128x48_s2", 128, 128, 48, 2, false, 2),
    KV_FA2_LADDER_STEP("d128_128x48_s3", 128, 128, 48, 3, false, 2),
    KV_FA2_LADDER_STEP("d128_128x64_s2", 128, 128, 64, 2, false, 2),
};
const int kv_fa2_ladder_d128_count = sizeof kv_fa2_ladder_d128 / sizeof kv_fa2_ladder_d128[0];
