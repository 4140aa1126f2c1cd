/* norm_fp16.cu - LayerNorm/RMSNorm kernels instantiated for fp16 storage: fast, peeled and
 * general paths (fp32 accumulation) and the serial path (fp16 accumulation). One file per
 * storage type. */
#include "families/norm/norm_kernels.cuh"

kv_norm_kernel kv_norm_kernel_fp16(bool layernorm, kv_dtype accum, int config) {
  return kv_norm_kernel_of<__half, kv_norm::acc_fp16, KV_FP16>(layernorm, accum, config);
}
