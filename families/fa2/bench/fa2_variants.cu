/* fa2_variants.cu - the list of alternative configurations: head dim 64, then 128. */
#include <vector>

#include "families/fa2/bench/fa2_variants.h"

const fa2_variant *fa2_variants() {
  static const std::vector<fa2_variant> all = [] {
    std::vector<fa2_variant> v(fa2_variants_d64, fa2_variants_d64 + fa2_variants_d64_count);
    v.insert(v.end(), fa2_variants_d128, fa2_variants_d128 + fa2_variants_d128_count);
    return v;
  }();
  return all.data();
}
int fa2_variant_count() { return fa2_variants_d64_count + fa2_variants_d128_count; }
