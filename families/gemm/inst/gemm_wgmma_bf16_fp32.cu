/* gemm_wgmma_bf16_fp32.cu - kval-wgmma instantiated for precision bf16:fp32 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

const kv_gemm_impl kv_gemm_wgmma_bf16_f32 = {kv_wgmma_run<__nv_bfloat16, KV_FP32>, kv_wgmma_resources<__nv_bfloat16, KV_FP32>};
