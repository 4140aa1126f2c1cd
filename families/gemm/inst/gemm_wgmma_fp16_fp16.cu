/* gemm_wgmma_fp16_fp16.cu - kval-wgmma instantiated for precision fp16:fp16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

template kv_status kv_gemm_wgmma_prepare<KV_FP16, KV_FP16>(kv_gemm_problem *);
