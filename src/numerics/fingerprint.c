/* fingerprint.c - the 64-bit fingerprint of an output's bytes: XXH64 with seed 0 (Yann
 * Collet's xxHash, 64-bit variant), four independent 8-byte lanes, then the tail and the
 * xxHash avalanche. Words are read little-endian on every host (byte-swapped on a big-endian
 * one), so a fingerprint is a property of the bytes alone and can be recomputed elsewhere,
 * e.g. `xxhash.xxh64_intdigest(buf)` in Python. Several GB/s per core. */
#include "numerics/fingerprint.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t read64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint32_t read32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t w) { return rotl(acc + w * P2, 31) * P1; }

static inline uint64_t merge(uint64_t h, uint64_t lane) { return (h ^ round64(0, lane)) * P1 + P4; }

uint64_t kv_fingerprint(const void *data, size_t nbytes) {
  const unsigned char *p = data;
  const unsigned char *const end = p + nbytes;
  uint64_t h;
  if (nbytes >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    do {
      v1 = round64(v1, read64(p));
      v2 = round64(v2, read64(p + 8));
      v3 = round64(v3, read64(p + 16));
      v4 = round64(v4, read64(p + 24));
      p += 32;
    } while (end - p >= 32);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = P5;
  }
  h += (uint64_t)nbytes;
  for (; end - p >= 8; p += 8) h = rotl(h ^ round64(0, read64(p)), 27) * P1 + P4;
  if (end - p >= 4) {
    h = rotl(h ^ (uint64_t)read32(p) * P1, 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; p++) h = rotl(h ^ *p * P5, 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}
