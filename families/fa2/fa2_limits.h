/* fa2_limits.h - tile sizes of the FlashAttention-2 forward kernel: BLOCK_M query rows per
 * thread block, BLOCK_N keys per step of the blocked online softmax. The CUDA kernel
 * (fa2_mma_traits.h) and the CPU emulation (fa2_emulate.c) both read them from here, so the
 * emulation rescales at the same key-block boundaries as the kernel. Owned by the FA2 kernel
 * engineer; headdims other than 32, 64, 96, 128 and 256 are rejected by the family before
 * these are used. Chosen from H200 timings of the alternatives
 * (families/fa2/bench/fa2_variants_d*.cu) among the tiles whose every instantiation fits 255
 * registers without spilling (kval-mma), and the wgmma variant's own tile. */
#ifndef KVAL_FA2_LIMITS_H
#define KVAL_FA2_LIMITS_H

#define KV_FA2_BLOCK_M(d) ((d) == 256 ? 64 : 128)
#define KV_FA2_BLOCK_N(d) ((d) == 32 || (d) == 64 ? 128 : (d) == 256 ? 32 : 48)

/* kval-wgmma, the Hopper variant (head dims 64 and 128, fa2_wgmma_traits.h): 128 query
 * rows (two consumer warpgroups of 64) x 128-key tiles. */
#define KV_FA2_WGMMA_BLOCK_M(d) 128
#define KV_FA2_WGMMA_BLOCK_N(d) 128

#endif
