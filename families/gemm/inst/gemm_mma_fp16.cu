/* gemm_mma_fp16.cu - kval-mma instantiated for fp16 storage: precisions fp16:fp32 and
 * fp16:fp16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_mma.cuh"

const kv_gemm_impl kv_gemm_mma_f16_f32 = {kv_mma_run<__half, KV_FP32>, kv_mma_resources<__half, KV_FP32>};
const kv_gemm_impl kv_gemm_mma_f16_f16 = {kv_mma_run<__half, KV_FP16>, kv_mma_resources<__half, KV_FP16>};
