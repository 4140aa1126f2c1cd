/* gemm_wgmma_fp16_fp32.cu - kval-wgmma instantiated for precision fp16:fp32 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

const kv_gemm_impl kv_gemm_wgmma_f16_f32 = {kv_wgmma_run<__half, KV_FP32>, kv_wgmma_resources<__half, KV_FP32>};
