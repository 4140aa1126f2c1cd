/* checksum.h - the order-independent 64-bit checksum behind the launch checks (the outputs of
 * the first, last timed and verification launches must agree; the inputs must not change):
 * every 8-byte word w of a buffer (little-endian, the tail zero-padded) adds
 * kv_checksum_term(word, w, salt) modulo 2^64, so blocks may finish in any order and several
 * buffers (distinct salts) add into one sum. One definition for the device kernel
 * (src/backends/cuda/checks.cu) and the host (kv_checksum_bytes), which recomputes the
 * device's sum of the verification launch from the downloaded outputs (kv_checksum_finding):
 * a checksum that misses a word would otherwise blind every launch check silently. */
#ifndef KVAL_CHECKSUM_H
#define KVAL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "numerics/rng.h"

KV_HD uint64_t kv_checksum_term(uint64_t word, uint64_t index, unsigned salt) {
  return kv_mix64(word ^ kv_mix64(index ^ ((uint64_t)salt << 48)));
}

/* The sum over words [w0, w1) of a buffer of n bytes (a little-endian host: the device's byte
 * order): the parts of a buffer split at word boundaries add up to its checksum. */
static inline uint64_t kv_checksum_words(const void *buf, size_t n, size_t w0, size_t w1, unsigned salt) {
  const unsigned char *p = (const unsigned char *)buf;
  uint64_t sum = 0;
  for (size_t w = w0; w < w1; w++) {
    uint64_t v = 0;
    memcpy(&v, p + 8 * w, n - 8 * w < 8 ? n - 8 * w : 8);
    sum += kv_checksum_term(v, w, salt);
  }
  return sum;
}

/* The checksum of bytes [0, n) of buf on the host. */
static inline uint64_t kv_checksum_bytes(const void *buf, size_t n, unsigned salt) {
  return kv_checksum_words(buf, n, 0, (n + 7) / 8, salt);
}

#endif
