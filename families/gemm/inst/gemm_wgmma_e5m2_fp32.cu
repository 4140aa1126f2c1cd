/* gemm_wgmma_e5m2_fp32.cu - kval-wgmma instantiated for precision e5m2:fp32 (layout nt; bf16 C and D). */
#include "families/gemm/gemm_wgmma.cuh"

template kv_status kv_gemm_wgmma_prepare<KV_E5M2, KV_FP32>(kv_gemm_problem *);
