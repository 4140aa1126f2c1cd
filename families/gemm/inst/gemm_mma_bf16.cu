/* gemm_mma_bf16.cu - kval-mma instantiated for bf16 storage: precisions bf16:fp32 and
 * bf16:bf16 (the bf16 accumulation model; layouts nn, tn, nt). */
#include "families/gemm/gemm_mma.cuh"

template kv_status kv_gemm_mma_prepare<KV_BF16, KV_FP32>(kv_gemm_problem *);
template kv_status kv_gemm_mma_prepare<KV_BF16, KV_BF16>(kv_gemm_problem *);
