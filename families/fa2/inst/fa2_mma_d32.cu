/* fa2_mma_d32.cu - the head-dim-32 instantiations of kval-mma, the FlashAttention-2 forward
 * kernel: fp16 storage with fp32 and fp16 accumulation, bf16 storage with fp32 and bf16
 * accumulation, causal and not (one file per head dim so make -j compiles them in parallel). */
#include "families/fa2/fa2_mma.cuh"

KV_FA2_INSTANTIATE(32, KV_FP16, KV_FP32)
KV_FA2_INSTANTIATE(32, KV_FP16, KV_FP16)
KV_FA2_INSTANTIATE(32, KV_BF16, KV_FP32)
KV_FA2_INSTANTIATE(32, KV_BF16, KV_BF16)
