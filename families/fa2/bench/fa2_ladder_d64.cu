/* fa2_ladder_d64.cu - the head-dim-64 rungs of the kval-mma tile ladder (fa2_ladder.h): kval's
 * 128 x 128 tiles with a 2-stage K/V ring, the same with 3 stages, and 128 x 64 tiles with Q
 * in registers. */
#include "families/fa2/bench/fa2_ladder_step.cuh"

const kv_fa2_ladder_step kv_fa2_ladder_d64[] = {
    KV_FA2_LADDER_STEP("d64_128x128_s2", 64, 128, 128, 2, false, 2),
    KV_FA2_LADDER_STEP("d64_128x128_s3", 64, 128, 128, 3, false, 2),
    KV_FA2_LADDER_STEP("d64_128x64_s2_qr", 64, 128, 64, 2, true, 2),
};
const int kv_fa2_ladder_d64_count = sizeof kv_fa2_ladder_d64 / sizeof kv_fa2_ladder_d64[0];
