/* gemm_wgmma_fp16_fp32.cu - kval-wgmma instantiated for precision fp16:fp32 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

template kv_status kv_gemm_wgmma_prepare<KV_FP16, KV_FP32>(kv_gemm_problem *);
