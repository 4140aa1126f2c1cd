/* gemm_wgmma_e4m3_fp32.cu - kval-wgmma instantiated for precision e4m3:fp32 (layout nt; bf16 C and D). */
#include "families/gemm/gemm_wgmma.cuh"

template kv_status kv_gemm_wgmma_prepare<KV_E4M3, KV_FP32>(kv_gemm_problem *);
