/* fa2_variants.h - alternative tile configurations of the FlashAttention-2 forward kernel
 * (fp32 accumulation, fp16 and bf16 storage, causal and not) that bench/fa2_driver times next
 * to the production ones to choose families/fa2_blocks.h; not part of kval. */
#ifndef KVAL_BENCH_FA2_VARIANTS_H
#define KVAL_BENCH_FA2_VARIANTS_H

#include "families/fa2/fa2_api.h"

struct fa2_variant {
  const char *name; /* d<D>_<BM>x<BN>_s<stages>[_qr] (qr: Q fragments in registers) */
  int d;
  cudaError_t (*run)(const kv_fa2_args &a, int store, int causal, cudaStream_t stream);
  cudaError_t (*info)(int store, int causal, kv_fa2_kernel_info *info);
};

const fa2_variant *fa2_variants();
int fa2_variant_count();

/* Per head dim (fa2_variants_d64.cu, fa2_variants_d128.cu, compiled in parallel). */
extern const fa2_variant fa2_variants_d64[], fa2_variants_d128[];
extern const int fa2_variants_d64_count, fa2_variants_d128_count;

#endif
