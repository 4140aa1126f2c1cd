/* decode_fp16.cu - the paged-KV decode kernels instantiated for fp16 storage and a fp16 KV
 * cache: head dims 64 and 128 (decode_kernels.cuh). One file per storage x cache type. */
#include "families/decode/decode_kernels.cuh"

KV_DECODE_INSTANTIATE(64, KV_FP16, KV_FP16)
KV_DECODE_INSTANTIATE(128, KV_FP16, KV_FP16)
