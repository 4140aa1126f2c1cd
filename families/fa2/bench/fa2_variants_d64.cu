/* fa2_variants_d64.cu - head-dim-64 tile configurations timed by fa2_driver variants. */
#include "families/fa2/bench/fa2_variants_common.cuh"

const fa2_variant fa2_variants_d64[] = {
    FA2_VARIANT("d64_128x128_s2", 64, 128, 128, 2, false, 2),
    FA2_VARIANT("d64_128x128_s3", 64, 128, 128, 3, false, 2),
    FA2_VARIANT("d64_128x64_s2_qr", 64, 128, 64, 2, true, 2),
};
const int fa2_variants_d64_count = sizeof fa2_variants_d64 / sizeof fa2_variants_d64[0];
