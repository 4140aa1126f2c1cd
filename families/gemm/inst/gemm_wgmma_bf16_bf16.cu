/* gemm_wgmma_bf16_bf16.cu - kval-wgmma instantiated for precision bf16:bf16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

template kv_status kv_gemm_wgmma_prepare<KV_BF16, KV_BF16>(kv_gemm_problem *);
