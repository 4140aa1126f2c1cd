/* fa2_mma_traits.h - tile and warp configuration of kval-mma, the FlashAttention-2 forward
 * kernel, per head dimension, and the shared-memory layout (swizzle or padding) that makes its
 * cp.async writes and ldmatrix reads bank-conflict free. The kernel (fa2_mma.cuh) reads its
 * sizes only from here; the block sizes themselves come from families/fa2/fa2_limits.h, which
 * the CPU emulation reads too. */
#ifndef KVAL_FA2_MMA_TRAITS_H
#define KVAL_FA2_MMA_TRAITS_H

#include "families/fa2/fa2_limits.h"

/* The kernel is instantiated per storage type STORE (KV_FP16, KV_BF16) and accumulator type
 * ACC, kval's kv_dtype: KV_FP32: fp32 mma accumulators; KV_FP16: native fp16 mma
 * accumulators (fp16 storage only); KV_BF16: fp32 mma accumulators rounded to bf16 after
 * every k-step of 16 (bf16 storage only; the precision model of bf16 accumulation, which
 * tensor cores do not have). */

/* One kernel configuration.
 *   D        head dimension (multiple of 16)
 *   BM, BN   query rows per thread block, keys per K/V tile (the online-softmax block)
 *   STAGES   depth of the cp.async K/V ring (STAGES - 1 tiles in flight ahead of the compute)
 *   QREGS    Q fragments held in registers for the whole block (else re-read with ldmatrix)
 *   MINB     __launch_bounds__ minimum resident blocks per SM
 * 4 warps split the BM rows (split-Q): warp w owns rows [w * 16 * MT, (w + 1) * 16 * MT),
 * MT = BM / 64 m-tiles of 16 rows, and every key of every tile: no inter-warp reduction.
 *
 * Shared memory: Q (BM rows), then STAGES K tiles, then STAGES V tiles, each row D 16-bit
 * elements = D/8 chunks of 16 bytes. Chunk c of row r lives at chunk index swz(r, c):
 *   D/8 a multiple of 8 (d = 64, 128, 256): r * D/8 + (c ^ (r & 7)): the XOR permutes the 8
 *     chunks of each 128-byte span, so the 8 rows one ldmatrix phase addresses (r..r+7, same c)
 *     and the 8 chunks one cp.async phase writes hit 8 different 16-byte bank groups;
 *   D/8 == 4 (d = 32): two rows share a 128-byte line: r * 4 + (c ^ ((r >> 1) & 3));
 *   otherwise (d = 96): rows padded by one chunk, r * (D/8 + 1) + c (13 is odd, so 8
 *     consecutive rows start in 8 different bank groups).
 * In every layout swz(r + 8k, c) = swz(r, c) + 8k * ROW_STRIDE, and for a chunk bit b in {0, 1}
 * swz(r, 2 kt + b) * 16 = r * ROW_STRIDE * 16 + 128 (kt / 4) + (32 (kt % 4) ^ x(r, b)),
 * x(r, b) = (swz(r, b) - r * ROW_STRIDE) * 16 (XOR layouts; linear in the padded one): a
 * lane's ldmatrix address is its per-tile base XOR a compile-time constant plus an immediate. */
template <int D, int BM, int BN, int STAGES, bool QREGS, int MINB>
struct kv_fa2_config {
  static constexpr int kHeadDim = D, kBlockM = BM, kBlockN = BN, kStages = STAGES;
  static constexpr bool kQInRegs = QREGS;
  static constexpr int kWarps = 4, kThreads = 32 * kWarps, kMinBlocksPerSm = MINB;
  static constexpr int kMTiles = BM / (16 * kWarps); /* m16 tiles per warp */
  static constexpr int kRowChunks = D / 8;
  static constexpr bool kPadded = kRowChunks % 8 != 0 && kRowChunks != 4;
  static constexpr int kRowStride = kPadded ? kRowChunks + 1 : kRowChunks; /* chunks */
  static constexpr int kTileBytes = BN * kRowStride * 16;                   /* one K or V tile */
  static constexpr int kQBytes = BM * kRowStride * 16;
  static constexpr int kSmemBytes = kQBytes + 2 * STAGES * kTileBytes;

  __host__ __device__ static constexpr int swz(int row, int chunk) {
    return kPadded ? row * kRowStride + chunk
                   : kRowChunks == 4 ? row * 4 + (chunk ^ ((row >> 1) & 3)) : row * kRowStride + (chunk ^ (row & 7));
  }

  static_assert(D % 16 == 0 && D >= 32 && D <= 256, "head dimension");
  static_assert(BM % (16 * kWarps) == 0, "BM: whole m16 tiles per warp");
  static_assert(BN % 16 == 0, "BN: whole k16 steps of P.V");
  static_assert(STAGES >= 2, "at least double-buffered K/V");
  static_assert(BM % (kThreads / (kRowChunks < 8 ? kRowChunks : 8)) == 0 &&
                    BN % (kThreads / (kRowChunks < 8 ? kRowChunks : 8)) == 0,
                "tiles split into whole cp.async passes (8 threads per row, 4 for d = 32)");
  static_assert((16 * kMTiles * kRowChunks) % 32 == 0, "output rows of a warp split evenly over its lanes");
};

/* The configuration kval runs for each head dimension (every `fa2_bench` row gives the registers,
 * local memory and occupancy of its instantiation: 2 blocks = 8 warps per SM throughout).
 * Q stays in registers only for d = 32; from d = 64 up the registers go to the S and O
 * accumulators (d = 64: 128 x 128 tiles with Q in shared memory timed 1-3 % faster than
 * 128 x 64 with Q in registers on the H200; d = 128: 128 x 48, the widest tile whose 8
 * instantiations all fit 255 registers without spilling; 3 stages gained nothing). */
template <int D>
struct kv_fa2_traits;
template <>
struct kv_fa2_traits<32> : kv_fa2_config<32, KV_FA2_BLOCK_M(32), KV_FA2_BLOCK_N(32), 2, true, 2> {};
template <>
struct kv_fa2_traits<64> : kv_fa2_config<64, KV_FA2_BLOCK_M(64), KV_FA2_BLOCK_N(64), 2, false, 2> {};
template <>
struct kv_fa2_traits<96> : kv_fa2_config<96, KV_FA2_BLOCK_M(96), KV_FA2_BLOCK_N(96), 2, false, 2> {};
template <>
struct kv_fa2_traits<128> : kv_fa2_config<128, KV_FA2_BLOCK_M(128), KV_FA2_BLOCK_N(128), 2, false, 2> {};
template <>
struct kv_fa2_traits<256> : kv_fa2_config<256, KV_FA2_BLOCK_M(256), KV_FA2_BLOCK_N(256), 2, false, 2> {};

#endif
