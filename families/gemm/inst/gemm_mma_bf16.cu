/* gemm_mma_bf16.cu - kval-mma instantiated for bf16 storage: precisions bf16:fp32 and
 * bf16:bf16 (the bf16 accumulation model; layouts nn, tn, nt). */
#include "families/gemm/gemm_mma.cuh"

const kv_gemm_impl kv_gemm_mma_bf16_f32 = {kv_mma_run<__nv_bfloat16, KV_FP32>,
                                           kv_mma_resources<__nv_bfloat16, KV_FP32>};
const kv_gemm_impl kv_gemm_mma_bf16_bf16 = {kv_mma_run<__nv_bfloat16, KV_BF16>,
                                            kv_mma_resources<__nv_bfloat16, KV_BF16>};
