/* norm_bf16.cu - LayerNorm/RMSNorm kernels instantiated for bf16 storage: fast, peeled and
 * general paths (fp32 accumulation) and the serial path (bf16 accumulation). One file per
 * storage type. */
#include "families/norm/norm_kernels.cuh"

kv_norm_kernel kv_norm_kernel_bf16(bool layernorm, kv_dtype accum, int config) {
  return kv_norm_kernel_of<__nv_bfloat16, kv_norm::acc_bf16, KV_BF16>(layernorm, accum, config);
}
