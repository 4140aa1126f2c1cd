/* fa2_wgmma_traits.h - tile, warpgroup and shared-memory configuration of kval-wgmma, the Hopper
 * (sm_90a) FlashAttention-2 forward kernel (fa2_wgmma.cuh). The kernel reads its sizes only from
 * here; the CPU emulation of this variant reads the block sizes from families/fa2/fa2_limits.h
 * (KV_FA2_WGMMA_BLOCK_M/N), which this header checks against.
 *
 * One CTA = one producer warpgroup (one thread issues every TMA load) and CONSUMERS consumer
 * warpgroups of 64 query rows each (BM = 64 * CONSUMERS). Shared memory, every tile 128-byte
 * swizzled as TMA writes it and wgmma reads it (a tile of R rows is D/64 column chunks of
 * R rows x 128 bytes, each chunk 1024-byte aligned):
 *   Q   BM x D                       loaded once, reused as the output staging buffer
 *   K   STAGES tiles of BN x D       ring, "full" (TMA bytes) and "empty" (consumer warps)
 *   V   STAGES tiles of BN x D       mbarriers per stage, K and V separately
 *   mbarriers                        1 + 4 * STAGES */
#ifndef KVAL_FA2_WGMMA_TRAITS_H
#define KVAL_FA2_WGMMA_TRAITS_H

#include "families/fa2/fa2_limits.h"

template <int D, int BN, int STAGES, int CONSUMERS, bool PINGPONG, int PRODUCER_REGS, int CONSUMER_REGS>
struct kv_fa2_wgmma_config {
  static constexpr int kHeadDim = D, kBlockN = BN, kStages = STAGES, kConsumers = CONSUMERS;
  static constexpr bool kPingpong = PINGPONG; /* consumers take turns to issue wgmma */
  static constexpr int kBlockM = 64 * CONSUMERS;
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
  static constexpr int kProducerRegs = PRODUCER_REGS, kConsumerRegs = CONSUMER_REGS;
  static constexpr int kChunks = D / 64;             /* 64-element column chunks of a row */
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kTileBytes = BN * D * 2;      /* one K or V tile */
  static constexpr int kBarOffset = kQBytes + 2 * STAGES * kTileBytes;
  static constexpr int kBarriers = 1 + 4 * STAGES;
  static constexpr int kSmemBytes = 1024 + kBarOffset + 8 * kBarriers; /* + alignment slack */

  static_assert(D % 64 == 0 && D <= 256, "head dim: whole 128-byte chunks");
  static_assert(BN % 16 == 0 && BN <= 256, "BN: whole k16 steps of P.V, one wgmma N <= 256");
  static_assert(STAGES >= 2, "at least double-buffered K/V");
  static_assert(!PINGPONG || CONSUMERS == 2, "pingpong pairs two consumer warpgroups");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one CTA");
  static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 &&
                    PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536,
                "setmaxnreg split of the register file");
};

/* The tile of each head dim, with the causal mask or without, chosen from timings of the
 * ladder (families/fa2/bench, docs/PERFORMANCE.md):
 * - d = 64, causal: 128 query rows (two consumer warpgroups) x 128-key tiles, two stages,
 *   pingpong (+1 to +8 % on every shape of the H200).
 * - d = 64, no mask: 192 query rows (three consumers of 160 registers, FA3's choice) x 128-key
 *   tiles, three stages (24 + 3 x 2 x 16 = 120 KB): +4 - 5 % at seqlen 2048 and +12 - 13 % at
 *   8192 over the 128-row pingpong tile in an H100's ladder; with the mask it was 3 - 8 % slower.
 * - d = 128: 128 x 128, two stages, no pingpong (32 + 2 x 2 x 32 = 160 KB, one CTA per SM); at
 *   d = 128 pingpong was -3 to +13 % up to seqlen 2048 but -5 to +1.5 % from 4096 up.
 * - d = 256: 128 query rows x 64-key tiles, two stages (64 + 2 x 2 x 32 = 192 KB); a consumer
 *   thread holds O's 128 accumulators, S's 32 and P's 16 registers.
 * KV_FA2_WGMMA_BLOCK_M/N (fa2_limits.h) give the same tiles to the emulation and the path. */
template <int D, bool CAUSAL>
struct kv_fa2_wgmma_traits;
template <>
struct kv_fa2_wgmma_traits<64, true>
    : kv_fa2_wgmma_config<64, KV_FA2_WGMMA_BLOCK_N(64), 2, KV_FA2_WGMMA_BLOCK_M(64, 1) / 64, true, 24, 240> {};
template <>
struct kv_fa2_wgmma_traits<64, false>
    : kv_fa2_wgmma_config<64, KV_FA2_WGMMA_BLOCK_N(64), 3, KV_FA2_WGMMA_BLOCK_M(64, 0) / 64, false, 24, 160> {};
template <bool CAUSAL>
struct kv_fa2_wgmma_traits<128, CAUSAL>
    : kv_fa2_wgmma_config<128, KV_FA2_WGMMA_BLOCK_N(128), 2, KV_FA2_WGMMA_BLOCK_M(128, CAUSAL) / 64, false, 24, 240> {};
template <bool CAUSAL>
struct kv_fa2_wgmma_traits<256, CAUSAL>
    : kv_fa2_wgmma_config<256, KV_FA2_WGMMA_BLOCK_N(256), 2, KV_FA2_WGMMA_BLOCK_M(256, CAUSAL) / 64, false, 24, 240> {};

#endif
