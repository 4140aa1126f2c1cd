/* gemm_wgmma_fp16_fp16.cu - kval-wgmma instantiated for precision fp16:fp16 (layouts nn, tn, nt). */
#include "families/gemm/gemm_wgmma.cuh"

const kv_gemm_impl kv_gemm_wgmma_f16_f16 = {kv_wgmma_run<__half, KV_FP16>, kv_wgmma_resources<__half, KV_FP16>};
