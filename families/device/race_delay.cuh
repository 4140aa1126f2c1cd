/* race_delay.cuh - kv::race_delay(site), the delay a test build puts after the kernels'
 * synchronisation points, and kv::block_sync(), the kernels' __syncthreads() followed by it.
 * In a build configured --enable-race-delays (KVAL_RACE_DELAYS: the mutation suite's gpu-race
 * kind, never a measured build) a warp leaves a barrier (block_sync, kv::ptx::bar_sync), a
 * cp.async wait or an mbarrier wait, and enters an mbarrier's initialisation, after a
 * pseudo-random delay of 0 - 4 us (half the time none; the same for the warp's active lanes),
 * so that code which should wait for another warp at a barrier that is missing runs ahead of
 * it and its race shows in the results. In every other build race_delay is nothing and
 * block_sync is __syncthreads(). */
#ifndef KVAL_DEVICE_RACE_DELAY_CUH
#define KVAL_DEVICE_RACE_DELAY_CUH

#include <stdint.h>

namespace kv {

/* race_delay's sites, a hash input so that two points a warp passes in the same microsecond draw
 * different delays: 0 block_sync, 1 - 15 a named barrier's id (bar_sync), then these. */
enum : uint32_t { kRaceSiteMbarrierWait = 16, kRaceSiteCpAsyncWait = 17, kRaceSiteMbarrierInit = 18 };

__device__ __forceinline__ void race_delay(uint32_t site) {
#if KVAL_RACE_DELAYS
  const unsigned lanes = __activemask();
  const uint32_t now = __shfl_sync(lanes, static_cast<uint32_t>(clock64() >> 10), __ffs(lanes) - 1);
  uint32_t h = (blockIdx.x * 0x9E3779B1u) ^ (blockIdx.y * 0x85EBCA77u) ^ (blockIdx.z * 0x165667B1u) ^
               ((threadIdx.x / 32) * 0xC2B2AE3Du) ^ (site * 0x27D4EB2Fu) ^ now;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  if (h & 1u) __nanosleep((h >> 1) % 4096u);
  __syncwarp(lanes);
#else
  (void)site;
#endif
}

/* __syncthreads(), then (race-delay builds) a warp's delay. */
__device__ __forceinline__ void block_sync() {
  __syncthreads();
  race_delay(0);
}

}  // namespace kv

#endif
