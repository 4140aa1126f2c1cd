/* fa2_blocks.h - tile sizes of the FlashAttention-2 forward kernel: BLOCK_M query rows per
 * thread block, BLOCK_N keys per step of the blocked online softmax. The CUDA kernel
 * (cuda/fa2_traits.h) and the CPU emulation (fa2_emulate.c) both read them from here, so the
 * emulation rescales at the same key-block boundaries as the kernel. Owned by the FA2 kernel
 * engineer; headdims other than 32, 64, 96, 128 and 256 are rejected by the family before
 * these are used. The values are the largest tiles whose every instantiation fits the 255
 * registers of a thread without spilling (ptxas -v): d = 96 and 128 take 48-key tiles since
 * 64-key tiles spill. */
#ifndef KVAL_FA2_BLOCKS_H
#define KVAL_FA2_BLOCKS_H

#define KV_FA2_BLOCK_M(d) ((d) == 256 ? 64 : 128)
#define KV_FA2_BLOCK_N(d) ((d) == 32 ? 128 : (d) == 64 ? 64 : (d) == 256 ? 32 : 48)

#endif
