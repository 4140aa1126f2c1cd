/* fa2_wgmma_d256.cu - the head-dim-256 instantiations of kval-wgmma, the Hopper FlashAttention-2
 * forward kernel: fp16 and bf16 storage with fp32 accumulation, causal and not (one file per
 * head dim so make -j compiles them in parallel). */
#include "families/fa2/fa2_wgmma.cuh"

KV_FA2_WGMMA_INSTANTIATE(256, KV_FP16)
KV_FA2_WGMMA_INSTANTIATE(256, KV_BF16)
