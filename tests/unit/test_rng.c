/* test_rng.c - the counter-based input generator of src/numerics/rng.h: kv_mix64 is the
 * splitmix64 finaliser (published reference outputs), values are pure functions of
 * (key, i), both distributions have the documented range, resolution, mean and standard
 * deviation, streams are never all zero, and distinct seeds / cases / tensors differ; and the
 * backends' check of generated buffers (kv_generate_verify) accepts the generator's buffers and
 * names a wrong element where it looks. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "families/kit.h"
#include "numerics/rng.h"
#include "tests/unit/test_util.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL

static void test_mix(void) {
  TEST("kv_mix64 reproduces splitmix64 seeded with 0 (Vigna's reference outputs)");
  /* splitmix64's k-th output is the finaliser applied to state (k-1) * GOLDEN */
  EXPECT(kv_mix64(0) == 0xe220a8397b1dcdafULL, "first output");
  EXPECT(kv_mix64(GOLDEN) == 0x6e789e6aa1b965f4ULL, "second output");
  EXPECT(kv_mix64(2 * GOLDEN) == 0x06c45d188009454fULL, "third output");
}

static void test_determinism(void) {
  TEST("values are pure functions of (key, i): repeatable in any order");
  const uint64_t key = kv_stream_key(42, 7, 1);
  EXPECT(key == kv_stream_key(42, 7, 1), "the stream key is repeatable");
  int bad = 0;
  for (uint64_t i = 0; i < 1000; i++) {
    const uint64_t j = 999 - i; /* reverse order */
    bad += kv_base_value(key, j, KV_DIST_NORMAL) != kv_base_value(key, j, KV_DIST_NORMAL);
    bad += kv_gen_value(key, j, KV_DIST_UNIFORM, 0.5, 3.0) != 3.0 + 0.5 * kv_base_value(key, j, KV_DIST_UNIFORM);
  }
  EXPECT(bad == 0, "%d values differ between evaluations or from offset + scale * base", bad);
}

/* Mean and standard deviation of n values of a distribution, with range and grid checks. */
static void moments(int dist, uint64_t key, int n, double *mean, double *sd, double *lo, double *hi, int *off_grid) {
  double s = 0.0, s2 = 0.0;
  *lo = INFINITY, *hi = -INFINITY, *off_grid = 0;
  for (int i = 0; i < n; i++) {
    const double x = kv_base_value(key, (uint64_t)i, dist);
    s += x, s2 += x * x;
    *lo = x < *lo ? x : *lo;
    *hi = x > *hi ? x : *hi;
    /* uniform: multiples of 2^-23; normal: integers divided by 37837.2270 */
    const double grid = dist == KV_DIST_UNIFORM ? x * 8388608.0 : x * 37837.2270;
    *off_grid += fabs(grid - nearbyint(grid)) > (dist == KV_DIST_UNIFORM ? 0.0 : 1e-6);
  }
  *mean = s / n;
  *sd = sqrt(s2 / n - *mean * *mean);
}

static void test_distributions(void) {
  const int n = 1 << 20;
  double mean, sd, lo, hi;
  int off;
  TEST("normal: mean 0, sd 1 (within 5 standard errors), |x| <= 3.47, on its grid");
  moments(KV_DIST_NORMAL, kv_stream_key(1, 2, 3), n, &mean, &sd, &lo, &hi, &off);
  EXPECT(fabs(mean) < 5.0 / sqrt(n), "mean %g", mean);
  EXPECT(fabs(sd - 1.0) < 5.0 * sqrt(0.5 / n) + 1e-4, "sd %g", sd); /* + the Irwin-Hall discreteness */
  EXPECT(lo >= -3.47 && hi <= 3.47 && lo < -3.0 && hi > 3.0, "range [%g, %g]", lo, hi);
  EXPECT(off == 0, "%d values off the integer / 37837.227 grid", off);
  TEST("uniform: [-1, 1), mean 0, sd 1/sqrt(3), multiples of 2^-23");
  moments(KV_DIST_UNIFORM, kv_stream_key(1, 2, 4), n, &mean, &sd, &lo, &hi, &off);
  EXPECT(fabs(mean) < 5.0 * sqrt(1.0 / 3.0 / n), "mean %g", mean);
  EXPECT(fabs(sd - sqrt(1.0 / 3.0)) < 5.0 * sqrt(0.2 / n), "sd %g", sd);
  EXPECT(lo >= -1.0 && hi < 1.0 && lo < -0.999 && hi > 0.999, "range [%g, %g)", lo, hi);
  EXPECT(off == 0, "%d values off the 2^-23 grid", off);
}

static void test_streams(void) {
  TEST("streams: never all zero; distinct seeds, cases and tensors give distinct keys and values");
  uint64_t keys[4 * 4 * 4];
  int nk = 0, zero_streams = 0;
  for (uint64_t seed = 0; seed < 4; seed++)
    for (uint64_t c = 0; c < 4; c++)
      for (uint64_t t = 0; t < 4; t++) {
        const uint64_t key = kv_stream_key(seed, c, t);
        int nonzero = 0;
        for (uint64_t i = 0; i < 64; i++) nonzero += kv_base_value(key, i, KV_DIST_UNIFORM) != 0.0;
        zero_streams += nonzero == 0;
        keys[nk++] = key;
      }
  int same_key = 0, same_values = 0;
  for (int a = 0; a < nk; a++)
    for (int b = a + 1; b < nk; b++) {
      same_key += keys[a] == keys[b];
      int eq = 0;
      for (uint64_t i = 0; i < 8; i++)
        eq += kv_base_value(keys[a], i, KV_DIST_NORMAL) == kv_base_value(keys[b], i, KV_DIST_NORMAL);
      same_values += eq == 8;
    }
  EXPECT(zero_streams == 0, "%d all-zero streams", zero_streams);
  EXPECT(same_key == 0 && same_values == 0, "%d equal keys, %d equal streams among %d", same_key, same_values, nk);
  EXPECT(kv_stream_key(0, 1, 0) != kv_stream_key(0, 0, 1) && kv_stream_key(1, 0, 0) != kv_stream_key(0, 1, 0),
         "the roles of seed, case and tensor do not commute");
  int zeros = 0;
  for (uint64_t i = 0; i < 100000; i++) zeros += kv_base_value(kv_stream_key(0, 0, 0), i, KV_DIST_UNIFORM) == 0.0;
  EXPECT(zeros < 10, "zero is as rare as any other uniform value: %d in 1e5", zeros);
}

/* One element of buf (dtype t) with its lowest bit flipped. */
static void flip(void *buf, kv_dtype t, size_t i) { ((unsigned char *)buf)[i * kv_dtype_size(t)] ^= 1u; }

static void test_verify(void) {
  TEST("kv_generate_verify: the generator's buffers pass; a changed element at the edges or sampled is named");
  const kv_dtype types[] = {KV_FP16, KV_BF16, KV_FP32};
  const size_t counts[] = {1, 100, 2 * KV_GEN_EDGE + KV_GEN_SAMPLES, 1000003};
  int bad = 0, total = 0;
  for (int ti = 0; ti < 3; ti++)
    for (int ci = 0; ci < 4; ci++) {
      kv_tensor_spec t;
      kv_spec_in(&t, "x", types[ti], counts[ci], ci % 2 ? KV_DIST_UNIFORM : KV_DIST_NORMAL, 0.5, ci == 3 ? 4.0 : 0.0);
      const uint64_t key = kv_stream_key(9, (uint64_t)ci, (uint64_t)ti);
      void *buf = malloc(t.count * kv_dtype_size(t.dtype));
      kv_generate_host(&t, key, buf);
      total++;
      bad += kv_generate_verify(&t, key, buf) != -1;
      bad += kv_generate_verify(&t, key ^ 1, buf) == -1; /* another tensor's stream */
      const size_t at[] = {0, t.count - 1, t.count / 2};
      for (int k = 0; k < (t.count > 2 * KV_GEN_EDGE + KV_GEN_SAMPLES ? 2 : 3); k++) {
        flip(buf, t.dtype, at[k]);
        bad += kv_generate_verify(&t, key, buf) != (long long)at[k];
        flip(buf, t.dtype, at[k]);
      }
      kv_spec_in(&t, "x", t.dtype, t.count, ci % 2 ? KV_DIST_NORMAL : KV_DIST_UNIFORM, 0.5, t.offset);
      bad += t.count > 1 && kv_generate_verify(&t, key, buf) == -1; /* the other distribution */
      free(buf);
    }
  EXPECT(bad == 0, "%d wrong answers over %d buffers", bad, total);
  TEST("kv_generate_verify samples a large buffer: a zeroed tail beyond the edge checks is seen by the samples");
  kv_tensor_spec t;
  kv_spec_in(&t, "x", KV_BF16, 1 << 20, KV_DIST_NORMAL, 1.0, 0.0);
  uint16_t *buf = malloc(t.count * 2);
  kv_generate_host(&t, 5, buf);
  for (size_t i = t.count - t.count / 64; i < t.count - KV_GEN_EDGE; i++) buf[i] = 0; /* 1/64 of it, edges kept */
  const long long e = kv_generate_verify(&t, 5, buf);
  EXPECT(e >= (long long)(t.count - t.count / 64), "a zeroed sixty-fourth: %lld", e);
  free(buf);
}

int main(void) {
  test_mix();
  test_determinism();
  test_distributions();
  test_streams();
  test_verify();
  return TEST_RETURN();
}
