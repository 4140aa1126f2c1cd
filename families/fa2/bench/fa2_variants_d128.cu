/* fa2_variants_d128.cu - head-dim-128 tile configurations timed by fa2_driver variants. */
#include "families/fa2/bench/fa2_variants_common.cuh"

const fa2_variant fa2_variants_d128[] = {
    FA2_VARIANT("d128_128x48_s2", 128, 128, 48, 2, false, 2),
    FA2_VARIANT("d128_128x48_s3", 128, 128, 48, 3, false, 2),
    FA2_VARIANT("d128_128x64_s2", 128, 128, 64, 2, false, 2),
};
const int fa2_variants_d128_count = sizeof fa2_variants_d128 / sizeof fa2_variants_d128[0];
