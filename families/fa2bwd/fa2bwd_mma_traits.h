/* fa2bwd_mma_traits.h - tile, warp and shared-memory configuration of kval-mma, the
 * FlashAttention-2 backward kernels (fa2bwd_mma.cuh), per head dimension. The block sizes come
 * from families/fa2bwd/fa2bwd_limits.h; everything else the kernels size themselves by is here. */
#ifndef KVAL_FA2BWD_MMA_TRAITS_H
#define KVAL_FA2BWD_MMA_TRAITS_H

#include "families/fa2bwd/fa2bwd_limits.h"

/* One configuration.
 *   D        head dimension (64 or 128: a row is a whole number of 128-byte spans)
 *   BM, BN   query rows and keys of a block: the dK/dV kernel owns BN keys and walks query
 *            blocks of BM rows, the dQ kernel owns BM query rows and walks key blocks of BN keys
 *   SUB_M    queries per compute step of the dK/dV kernel (the query block is loaded whole and
 *            computed in BM / SUB_M steps, which bounds the S^T and dP^T accumulators)
 *   KV_REGS  the dK/dV kernel keeps its warp's K and V rows in registers as mma A fragments
 *            (else it re-reads them from shared memory with ldmatrix every step)
 *   SUB_N    keys per compute step of the dQ kernel (the key block likewise in BN / SUB_N steps)
 *   QDO_REGS the dQ kernel keeps its warp's Q and dO rows in registers as mma A fragments
 *   MINB     __launch_bounds__ minimum resident blocks per SM of both kernels
 * Each warp owns 16 rows: the dK/dV kernel has BN / 16 warps (16 keys each), the dQ kernel
 * BM / 16 warps (16 query rows each). Splitting a block into compute steps does not change the
 * arithmetic: every accumulator still adds its k-steps of 16 in ascending order.
 *
 * Shared memory (16-bit elements, row = D/8 chunks of 16 bytes; chunk c of row r at chunk index
 * r * D/8 + (c ^ (r & 7)), the XOR layout of families/fa2/fa2_mma_traits.h, conflict free for
 * cp.async writes and ldmatrix reads):
 *   dK/dV kernel: K tile, V tile (BN rows each; the epilogue stages dK and dV in them), then two
 *     stages of {Q tile, dO tile} (BM rows each), then two stages of {lse, D} (BM floats each).
 *   dQ kernel: Q tile, dO tile (BM rows each; the epilogue stages dQ in the Q tile), then two
 *     stages of {K tile, V tile} (BN rows each).
 * The D = rowsum(dO * O) kernel uses no shared memory: D/8 threads per row, 16-byte loads. */
template <int D, int BM, int BN, int SUB_M, bool KV_REGS, int SUB_N, bool QDO_REGS, int MINB>
struct kv_fa2bwd_config {
  static constexpr int kHeadDim = D, kBlockM = BM, kBlockN = BN;
  static constexpr int kDkdvSubM = SUB_M, kDqSubN = SUB_N, kMinBlocksPerSm = MINB;
  static constexpr bool kKvInRegs = KV_REGS, kQdoInRegs = QDO_REGS;
  static constexpr int kRowChunks = D / 8, kRowBytes = 2 * D;
  static constexpr int kQTileBytes = BM * kRowBytes, kKvTileBytes = BN * kRowBytes;

  static constexpr int kDkdvThreads = 32 * (BN / 16);
  static constexpr int kDkdvStageBytes = 2 * kQTileBytes; /* Q, dO */
  static constexpr int kDkdvStatBytes = 2 * BM * 4;       /* lse, D of one stage */
  static constexpr int kDkdvStagesOffset = 2 * kKvTileBytes;
  static constexpr int kDkdvStatsOffset = kDkdvStagesOffset + 2 * kDkdvStageBytes;
  static constexpr int kDkdvSmemBytes = kDkdvStatsOffset + 2 * kDkdvStatBytes;

  static constexpr int kDqThreads = 32 * (BM / 16);
  static constexpr int kDqStageBytes = 2 * kKvTileBytes; /* K, V */
  static constexpr int kDqStagesOffset = 2 * kQTileBytes;
  static constexpr int kDqSmemBytes = kDqStagesOffset + 2 * kDqStageBytes;

  static constexpr int kDsumThreads = 256;
  static constexpr int kDsumRowsPerBlock = kDsumThreads / kRowChunks;

  /* The launch shapes in the form kv_fa2_common::kernel_info reads. */
  struct dkdv_shape {
    static constexpr int kThreads = kDkdvThreads, kSmemBytes = kDkdvSmemBytes;
  };

  __host__ __device__ static constexpr int swz(int row, int chunk) { return row * kRowChunks + (chunk ^ (row & 7)); }

  static_assert(D == 64 || D == 128, "head dimension 64 or 128 (whole 128-byte spans per row)");
  static_assert(BN % 16 == 0 && BN >= 32 && BN <= 256, "BN: 2 to 16 warps of 16 keys");
  static_assert(BM % 16 == 0 && BM >= 32 && BM <= 256, "BM: 2 to 16 warps of 16 query rows");
  static_assert(BM % SUB_M == 0 && SUB_M % 16 == 0, "dK/dV compute steps: whole k16 steps of queries");
  static_assert(BN % SUB_N == 0 && SUB_N % 16 == 0, "dQ compute steps: whole k16 steps of keys");
  static_assert(BM % (kDkdvThreads / 8) == 0 && BN % (kDkdvThreads / 8) == 0, "dK/dV tiles: whole loader passes");
  static_assert(BM % (kDqThreads / 8) == 0 && BN % (kDqThreads / 8) == 0, "dQ tiles: whole loader passes");
  static_assert(kDkdvSmemBytes <= 227 * 1024 && kDqSmemBytes <= 227 * 1024, "shared memory per block");
};

/* The configuration kval runs per head dimension (4 warps per block at 64 x 64 tiles; every
 * instantiation without spills). d = 64: 3 blocks per SM (168 registers), K and V (dK/dV) and Q
 * and dO (dQ) in registers, 32 queries or keys per compute step (whole 64-row steps spill at
 * 168 registers in the dK/dV kernel). d = 128: the dK and dV accumulators alone take 128
 * registers, so 2 blocks per SM (also the shared-memory limit, 97 KB per block), the dK/dV
 * kernel computes 16 queries per step with K and V re-read from shared memory (in registers
 * they spill), the dQ kernel 32 keys per step with Q and dO in registers. */
template <int D>
struct kv_fa2bwd_traits;
template <>
struct kv_fa2bwd_traits<64>
    : kv_fa2bwd_config<64, KV_FA2BWD_BLOCK_M(64), KV_FA2BWD_BLOCK_N(64), 32, true, 32, true, 3> {};
template <>
struct kv_fa2bwd_traits<128>
    : kv_fa2bwd_config<128, KV_FA2BWD_BLOCK_M(128), KV_FA2BWD_BLOCK_N(128), 16, false, 32, true, 2> {};

#endif
