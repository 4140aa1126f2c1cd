/* gemm_mma_fp16.cu - kval-mma instantiated for fp16 storage: precisions fp16:fp32 and
 * fp16:fp16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_mma.cuh"

template kv_status kv_gemm_mma_prepare<KV_FP16, KV_FP32>(kv_gemm_problem *);
template kv_status kv_gemm_mma_prepare<KV_FP16, KV_FP16>(kv_gemm_problem *);
