/* decode_bf16_e4m3.cu - the paged-KV decode kernels instantiated for bf16 storage (q, out, the
 * mma operands) and an 8-bit e4m3 KV cache: head dims 64 and 128 (decode_kernels.cuh). One
 * file per storage x cache type. */
#include "families/decode/decode_kernels.cuh"

KV_DECODE_INSTANTIATE(64, KV_BF16, KV_E4M3)
KV_DECODE_INSTANTIATE(128, KV_BF16, KV_E4M3)
