/* fa2bwd_wgmma_traits.h - tile, warpgroup and shared-memory configuration of kval-wgmma and
 * kval-wgmma-fused, the Hopper (sm_90a) FlashAttention-2 backward kernels (fa2bwd_wgmma.cuh). The kernels read their
 * sizes only from here; the block sizes come from families/fa2bwd/fa2bwd_limits.h
 * (KV_FA2BWD_WGMMA_*), which the path tags and the CPU side read too.
 *
 * Both kernels: one producer warpgroup (one thread issues every TMA load) and two consumer
 * warpgroups of 64 rows.
 * Every tile of R rows x D features is D/64 column chunks of R rows x 128 bytes, 128-byte
 * swizzled as TMA writes it and wgmma reads it, each chunk 1024-byte aligned.
 *   dK/dV kernel (BN = 128 keys; walks query blocks of BQ rows):
 *     K, V         BN x D each, loaded once; the epilogue stages dK and dV in them
 *     STAGES x {Q, dO: BQ x D each}
 *     per consumer, two buffers of {lse, D: BQ floats each} (its own cp.async, next block's
 *                  while it computes this one's)
 *     mbarriers    1 + 2 * STAGES
 *   fused dK/dV kernel (kval-wgmma-fused): the dK/dV kernel's, then
 *     kDsBuffers x {dS^T: BN x BQ}, 128-byte swizzled key rows of BQ = 64 queries
 *     2 x {a block's dQ shares: BQ x D fp32, in the consumers' accumulator order}
 *     mbarriers    1 + 2 * STAGES + 4 (two dQ-full, two dQ-empty)
 *   dQ kernel (BM = 128 query rows; walks key blocks of BK keys):
 *     Q, dO        BM x D each, loaded once; the epilogue stages dQ in Q
 *     STAGES x {K, V: BK x D each}
 *     mbarriers    1 + 2 * STAGES */
#ifndef KVAL_FA2BWD_WGMMA_TRAITS_H
#define KVAL_FA2BWD_WGMMA_TRAITS_H

#include "families/fa2bwd/fa2bwd_limits.h"

template <int D, int BQ, int BK, int STAGES, int PRODUCER_REGS, int CONSUMER_REGS, bool OVERLAP_DV>
struct kv_fa2bwd_wgmma_config {
  static constexpr int kHeadDim = D, kChunks = D / 64, kStages = STAGES;
  static constexpr int kConsumers = 2, kThreads = 128 * (kConsumers + 1);
  static constexpr int kProducerRegs = PRODUCER_REGS, kConsumerRegs = CONSUMER_REGS;
  static constexpr int kBoxRows = 64; /* rows of every TMA box (a 128-row tile is two boxes) */

  /* dK/dV kernel */
  static constexpr int kKeys = 64 * kConsumers, kQueryRows = BQ;
  /* dV += P^T dO issued before dS^T is computed (its P^T fragments then live beside dS^T's) */
  static constexpr bool kOverlapDv = OVERLAP_DV;
  static constexpr int kKvTileBytes = kKeys * D * 2, kQTileBytes = BQ * D * 2;
  static constexpr int kStatBytes = 2 * BQ * 4; /* one buffer: lse, then D */
  static constexpr int kDkdvStageBytes = 2 * kQTileBytes;
  static constexpr int kDkdvStagesOffset = 2 * kKvTileBytes;
  static constexpr int kDkdvStatsOffset = kDkdvStagesOffset + STAGES * kDkdvStageBytes;
  static constexpr int kDkdvBarOffset = kDkdvStatsOffset + kConsumers * 2 * kStatBytes;
  static constexpr int kDkdvSmemBytes = 1024 + kDkdvBarOffset + 8 * (1 + 2 * STAGES);

  /* fused kernel (the dK/dV kernel's tiles, ring and stats, then): kDsBuffers tiles of a
   * block's dS^T, two buffers of a block's dQ shares and the barriers (once, ST full, ST empty,
   * two dQ-full, two dQ-empty) */
  static constexpr int kDsBytes = kKeys * BQ * 2, kDqPartBytes = BQ * D * 4;
  static constexpr int kDsBuffers = D == 64 ? 2 : 1; /* d 128: no room for a second */
  /* dQ's share issued with dV and dK (d 128: its accumulators beside their register operands
   * would spill) */
  static constexpr bool kDqWithDkdv = D == 64;
  /* the rotated walks of kv_fa2bwd_rotated (fa2bwd_limits.h) compiled in: the key blocks reach
   * a query block one after another in the order of its adds instead of all waiting for the
   * last key block's first add (d 128: +6.5 % at 2048 tokens; at d 64 the same walk ran 14 %
   * slower, so it keeps the plain one) */
  static constexpr bool kRotateWalks = D == KV_FA2BWD_ROTATED_HEADDIM;
  static constexpr int kFusedDsOffset = kDkdvStatsOffset + kConsumers * 2 * kStatBytes;
  static constexpr int kFusedDqOffset = kFusedDsOffset + kDsBuffers * kDsBytes;
  static constexpr int kFusedBarOffset = kFusedDqOffset + 2 * kDqPartBytes;
  static constexpr int kFusedSmemBytes = 1024 + kFusedBarOffset + 8 * (1 + 2 * STAGES + 4);
  /* its register split: the producer's two threads need few, the consumers hold dK, dV, S^T,
   * dP^T and the addresses of the dQ share */
  static constexpr int kFusedProducerRegs = 24, kFusedConsumerRegs = 240;

  /* dQ kernel */
  static constexpr int kRows = 64 * kConsumers, kKeyBlock = BK;
  static constexpr int kRowTileBytes = kRows * D * 2, kKeyTileBytes = BK * D * 2;
  static constexpr int kDqStageBytes = 2 * kKeyTileBytes;
  static constexpr int kDqStagesOffset = 2 * kRowTileBytes;
  static constexpr int kDqBarOffset = kDqStagesOffset + STAGES * kDqStageBytes;
  static constexpr int kDqSmemBytes = 1024 + kDqBarOffset + 8 * (1 + 2 * STAGES);

  /* The launch shapes in the form kv_fa2_common::kernel_info reads. */
  struct dkdv_shape {
    static constexpr int kThreads = 128 * (kConsumers + 1), kSmemBytes = kDkdvSmemBytes;
  };
  struct fused_shape {
    static constexpr int kThreads = 128 * (kConsumers + 1), kSmemBytes = kFusedSmemBytes;
  };
  struct dq_shape {
    static constexpr int kThreads = 128 * (kConsumers + 1), kSmemBytes = kDqSmemBytes;
  };

  static_assert(D == 64 || D == 128, "head dim: whole 128-byte chunks, one wgmma N");
  static_assert(BQ == 64, "dK/dV kernel: one wgmma N of queries (S^T, dP^T), 4 k16 steps of dV, dK, and a "
                          "consumer thread for each of a block's lse and D values");
  static_assert(BK == 64 || BK == 128, "dQ kernel: one wgmma N of keys (S, dP), whole TMA boxes");
  static_assert(kKeys == KV_FA2BWD_WGMMA_KEYS && BQ == KV_FA2BWD_WGMMA_QUERIES(D), "blocks of fa2bwd_limits.h");
  static_assert(kRows == KV_FA2BWD_WGMMA_ROWS && BK == KV_FA2BWD_WGMMA_KEY_BLOCK(D), "blocks of fa2bwd_limits.h");
  static_assert(STAGES >= 2, "at least double-buffered");
  static_assert(kDkdvSmemBytes <= 227 * 1024 && kDqSmemBytes <= 227 * 1024 && kFusedSmemBytes <= 227 * 1024,
                "shared memory of one CTA");
  static_assert(kFusedDsOffset % 1024 == 0 && BQ * 2 == 128, "dS^T: key rows of one 128-byte swizzled chunk");
  static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 &&
                    PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * kConsumers <= 65536,
                "setmaxnreg split of the register file");
  static_assert(kFusedProducerRegs * 128 + kFusedConsumerRegs * 128 * kConsumers <= 65536,
                "the fused kernel's setmaxnreg split");
};

/* Per head dim: 64-row query blocks in the dK/dV kernel (its consumer thread holds dK's and
 * dV's D / 2 accumulators each, S^T's and dP^T's 32); key blocks of the dQ kernel 128 at d = 64
 * and 64 at d = 128 (dQ's D / 2 accumulators, S's and dP's BK / 2). Two stages; 40 registers for
 * the producer warpgroup, 232 for each consumer. */
template <int D>
struct kv_fa2bwd_wgmma_traits
    : kv_fa2bwd_wgmma_config<D, KV_FA2BWD_WGMMA_QUERIES(D), KV_FA2BWD_WGMMA_KEY_BLOCK(D), 2, 40, 232, D == 64> {};

#endif
