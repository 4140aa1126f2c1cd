/* fa2bwd_wgmma_d128.cu - the head-dim-128 instantiations of kval-wgmma, the Hopper FlashAttention-2
 * backward kernels: fp16 and bf16 storage with fp32 accumulation, causal and not (one file per
 * head dim so make -j compiles them in parallel). */
#include "families/fa2bwd/fa2bwd_wgmma.cuh"

KV_FA2BWD_WGMMA_INSTANTIATE(128, KV_FP16)
KV_FA2BWD_WGMMA_INSTANTIATE(128, KV_BF16)
