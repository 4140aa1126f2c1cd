/* test_fingerprint.c - kv_fingerprint is XXH64 with seed 0: the published reference values
 * of xxHash's sanity check (a generated buffer at lengths 0, 1, 14, 101, covering the
 * 32-byte stripes and the 8-, 4- and 1-byte tails) and of short strings; every length and
 * alignment agrees with a copy, and a single flipped bit anywhere changes the fingerprint.
 * The launch checksum (numerics/checksum.h) is the sum of its per-word terms (words read
 * little-endian, the tail zero-padded), adds over buffers, and sees every flipped bit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/checksum.h"
#include "numerics/fingerprint.h"
#include "tests/unit/test_util.h"

static void test_reference_values(void) {
  TEST("XXH64 reference values (xxHash sanity check buffer, seed 0)");
  /* the buffer of xxHash's sanity check: bytes of a repeatedly squared 32-bit prime */
  unsigned char buf[101];
  uint32_t gen = 2654435761u;
  for (int i = 0; i < 101; i++) {
    buf[i] = (unsigned char)(gen >> 24);
    gen *= gen;
  }
  EXPECT(kv_fingerprint(buf, 0) == 0xEF46DB3751D8E999ULL, "empty");
  EXPECT(kv_fingerprint(buf, 1) == 0x4FCE394CC88952D8ULL, "1 byte");
  EXPECT(kv_fingerprint(buf, 14) == 0xCFFA8DB881BC3A3DULL, "14 bytes");
  EXPECT(kv_fingerprint(buf, 101) == 0x0EAB543384F878ADULL, "101 bytes");
  EXPECT(kv_fingerprint("a", 1) == 0xD24EC4F1A98C6E5BULL && kv_fingerprint("abc", 3) == 0x44BC2CF5AD770999ULL,
         "a, abc");
  const char *text = "Nobody inspects the spammish repetition";
  EXPECT(kv_fingerprint(text, strlen(text)) == 0xFBCEA83C8A378BF1ULL, "39-byte string");
}

static void test_alignment_and_bits(void) {
  TEST("independent of alignment; every single-bit flip of a 1000-byte buffer changes it");
  enum { N = 1000 };
  unsigned char *a = malloc(N + 8), *b = malloc(N);
  for (int i = 0; i < N + 8; i++) a[i] = (unsigned char)(i * 37 + 11);
  int bad_align = 0;
  for (int len = 0; len <= 200; len++)
    for (int off = 1; off < 8; off++) {
      memcpy(b, a + off, (size_t)len);
      bad_align += kv_fingerprint(a + off, (size_t)len) != kv_fingerprint(b, (size_t)len);
    }
  EXPECT(bad_align == 0, "%d misaligned buffers hash differently from an aligned copy", bad_align);
  memcpy(b, a, N);
  const uint64_t h = kv_fingerprint(b, N);
  int same = 0;
  for (int bit = 0; bit < 8 * N; bit++) {
    b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    same += kv_fingerprint(b, N) == h;
    b[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  EXPECT(same == 0, "%d flips leave the fingerprint unchanged", same);
  EXPECT(kv_fingerprint(b, N - 1) != h, "the length matters");
  free(a);
  free(b);
}

static void test_checksum(void) {
  TEST("launch checksum: the sum of kv_checksum_term over little-endian words, tail zero-padded; every bit counts");
  enum { N = 1001 };
  unsigned char a[N + 7];
  memset(a, 0, sizeof a);
  for (int i = 0; i < N; i++) a[i] = (unsigned char)(i * 53 + 7);
  uint64_t want = 0;
  for (size_t w = 0; 8 * w < N; w++) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = (v << 8) | a[8 * w + (size_t)b]; /* zero past N (memset) */
    want += kv_checksum_term(v, w, 3);
  }
  EXPECT(kv_checksum_bytes(a, N, 3) == want, "the word sum");
  EXPECT(kv_checksum_bytes(a, 16, 0) + kv_checksum_bytes(a, 16, 1) != 2 * kv_checksum_bytes(a, 16, 0), "the salt");
  EXPECT(kv_checksum_bytes(a, 0, 0) == 0, "an empty buffer adds nothing");
  int same = 0;
  const uint64_t h = kv_checksum_bytes(a, N, 0);
  for (int bit = 0; bit < 8 * N; bit++) {
    a[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    same += kv_checksum_bytes(a, N, 0) == h;
    a[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  EXPECT(same == 0, "%d flips leave the checksum unchanged", same);
  unsigned char t[8];
  memcpy(t, a, 8), memcpy(a, a + 8, 8), memcpy(a + 8, t, 8);
  EXPECT(kv_checksum_bytes(a, N, 0) != h, "two words swapped: the word's index counts");
  memcpy(a + 8, a, 8), memcpy(a, t, 8);
  EXPECT(kv_checksum_bytes(a, N, 0) == 0x002b3e58b9910666ULL, "the pinned value (device and host share the term)");
}

int main(void) {
  test_reference_values();
  test_alignment_and_bits();
  test_checksum();
  return TEST_RETURN();
}
