/* norm_fp32.cu - LayerNorm/RMSNorm kernels instantiated for fp32 storage: fast, peeled and
 * general paths, fp32 accumulation. One file per storage type keeps each compilation unit
 * small. */
#include "families/norm/norm_kernels.cuh"

kv_norm_kernel kv_norm_kernel_fp32(bool layernorm, kv_dtype accum, int config) {
  return kv_norm_kernel_of<float, void, KV_FP32>(layernorm, accum, config);
}
