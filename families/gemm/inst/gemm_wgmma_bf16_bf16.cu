/* gemm_wgmma_bf16_bf16.cu - kval-wgmma instantiated for precision bf16:bf16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

const kv_gemm_impl kv_gemm_wgmma_bf16_bf16 = {kv_wgmma_run<__nv_bfloat16, KV_BF16>, kv_wgmma_resources<__nv_bfloat16, KV_BF16>};
