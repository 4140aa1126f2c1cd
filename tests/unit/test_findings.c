/* test_findings.c - the findings of the checks every backend makes around a case's launches
 * (src/backends/backend.c), on synthetic buffers: guard bands (the first changed byte before or
 * after an output or an input; an input's bands are NaN bits in every float type), launch
 * checksums (any timed repetition or the verification launch that differs from the first
 * launch, with the first such repetition and the count; no checksums at all is a harness
 * error), and the host's recomputation of the verification launch's checksum over the
 * downloaded outputs (output and auxiliary output, one changed byte; split over threads: any
 * split, the same sum). The check of the inputs against the generator runs on every family's
 * cases in families/testkit/test_descriptors. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "families/kit.h"
#include "numerics/checksum.h"
#include "tests/unit/test_util.h"

static void test_guard(void) {
  TEST("guard bands: intact passes; the first changed byte before or after the tensor is named");
  unsigned char before[KV_GUARD_BYTES], after[KV_GUARD_BYTES];
  memset(before, KV_GUARD_BYTE, sizeof before);
  memset(after, KV_GUARD_BYTE, sizeof after);
  kv_case_data d;
  kv_case_data_init(&d);
  kv_guard_finding(&d, "O", 0, before, after);
  EXPECT(d.out_of_bounds[0] == '\0', "intact bands: \"%s\"", d.out_of_bounds);
  after[5] = 0;
  kv_guard_finding(&d, "O", 0, before, after);
  EXPECT(strstr(d.out_of_bounds, "output O: written past its end (at byte +5)") != NULL, "%s", d.out_of_bounds);
  kv_case_data_init(&d);
  after[5] = KV_GUARD_BYTE;
  before[KV_GUARD_BYTES - 2] = 1;
  kv_guard_finding(&d, "O", 0, before, after);
  EXPECT(strstr(d.out_of_bounds, "written before its start (at byte -2)") != NULL, "%s", d.out_of_bounds);
  /* an input's bands hold NaN bits: the output's fill byte there is a change */
  kv_case_data_init(&d);
  kv_guard_finding(&d, "Q", 1, before, after);
  EXPECT(strstr(d.out_of_bounds, "input Q: written before its start") != NULL, "output bands as an input's: %s",
         d.out_of_bounds);
  memset(before, KV_INPUT_GUARD_BYTE, sizeof before);
  memset(after, KV_INPUT_GUARD_BYTE, sizeof after);
  kv_case_data_init(&d);
  kv_guard_finding(&d, "Q", 1, before, after);
  EXPECT(d.out_of_bounds[0] == '\0', "intact input bands: \"%s\"", d.out_of_bounds);
  after[KV_GUARD_BYTES - 1] = 0x7f;
  kv_guard_finding(&d, "Q", 1, before, after);
  EXPECT(strstr(d.out_of_bounds, "input Q: written past its end (at byte +4095)") != NULL, "%s", d.out_of_bounds);
  const unsigned short nan_bits = (unsigned short)(KV_INPUT_GUARD_BYTE * 0x101);
  EXPECT(isnan(kv_load(&nan_bits, 0, KV_FP16)) && isnan(kv_load(&nan_bits, 0, KV_BF16)),
         "the input band's bits are NaN in fp16 and bf16");
  unsigned char word[8];
  memset(word, KV_INPUT_GUARD_BYTE, sizeof word);
  EXPECT(isnan(kv_load(word, 0, KV_FP32)) && isnan(kv_load(word, 0, KV_FP64)), "and in fp32 and fp64");
}

static void test_launches(void) {
  TEST("launch checksums: every timed repetition and the verification launch against the first launch");
  enum { REPS = 50 };
  kv_case_data d;
  kv_case_data_init(&d);
  d.n_times = REPS;
  d.launch_sums = malloc((REPS + 1) * sizeof *d.launch_sums);
  for (int i = 0; i <= REPS; i++) d.launch_sums[i] = 0x1234;
  kv_launch_finding(&d, 0x1234);
  EXPECT(!d.nondeterministic[0] && !d.harness[0], "all equal: \"%s\" \"%s\"", d.nondeterministic, d.harness);
  d.launch_sums[17] = d.launch_sums[33] = 0x99; /* a race that hits two launches in fifty */
  kv_launch_finding(&d, 0x1234);
  EXPECT(strstr(d.nondeterministic, "timed repetition 17 of 50") && strstr(d.nondeterministic, "(2 differ)"), "%s",
         d.nondeterministic);
  d.nondeterministic[0] = '\0';
  d.launch_sums[17] = d.launch_sums[33] = 0x1234;
  kv_launch_finding(&d, 0x4321);
  EXPECT(strstr(d.nondeterministic, "verification launch") != NULL, "the verification launch: %s", d.nondeterministic);
  d.nondeterministic[0] = '\0';
  free(d.launch_sums);
  d.launch_sums = NULL;
  kv_launch_finding(&d, 0x1234);
  EXPECT(strstr(d.harness, "no launch checksums") != NULL, "none kept: a harness error (%s)", d.harness);
}

static void test_checksum_recomputed(void) {
  TEST("the verification launch's checksum recomputed on the host over output and auxiliary output");
  kv_tensors t;
  memset(&t, 0, sizeof t);
  t.n_out = 2;
  kv_spec_out(&t.out[0], "O", KV_BF16, 333);
  kv_spec_out(&t.out[1], "LSE", KV_FP32, 7);
  uint16_t out[333];
  float aux[7];
  for (int i = 0; i < 333; i++) out[i] = (uint16_t)(i * 7919);
  for (int i = 0; i < 7; i++) aux[i] = (float)i / 3.0f;
  const uint64_t sum = kv_checksum_bytes(out, sizeof out, 0) + kv_checksum_bytes(aux, sizeof aux, 1);
  kv_case_data d;
  kv_case_data_init(&d);
  d.out = out;
  d.aux = aux;
  kv_checksum_finding(&d, &t, sum, 1);
  EXPECT(!d.harness[0], "the same outputs: \"%s\"", d.harness);
  ((unsigned char *)out)[665] ^= 0x80; /* the last byte of the output (a partial last word) */
  kv_checksum_finding(&d, &t, sum, 2);
  EXPECT(strstr(d.harness, "recomputed on the host") != NULL, "a changed output byte: \"%s\"", d.harness);
  ((unsigned char *)out)[665] ^= 0x80;
  d.harness[0] = '\0';
  aux[6] = 0.0f;
  kv_checksum_finding(&d, &t, sum, 1);
  EXPECT(strstr(d.harness, "recomputed on the host") != NULL, "a changed auxiliary output: \"%s\"", d.harness);
}

/* Large outputs are summed on several threads: any split, the same sum; a changed byte in
 * any part (the first, a part's last, the partial last word) is seen. */
static void test_checksum_threaded(void) {
  TEST("the host's checksum of a large output split over threads");
  enum { BYTES = 3 * (1 << 20) + 5 };
  unsigned char *buf = malloc(BYTES);
  EXPECT(buf != NULL, "out of memory");
  if (!buf) return;
  for (size_t i = 0; i < BYTES; i++) buf[i] = (unsigned char)(i * 131 + (i >> 9));
  const uint64_t one = kv_checksum_bytes(buf, BYTES, 1);
  const int threads[] = {1, 2, 3, 4, 7, 64, 1000};
  for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
    EXPECT(kv_checksum_threaded(buf, BYTES, 1, threads[k], KV_CHECKSUM_PART_BYTES) == one, "%d threads", threads[k]);
    EXPECT(kv_checksum_threaded(buf, BYTES, 1, threads[k], 8) == one, "%d threads, parts of one word", threads[k]);
  }
  EXPECT(kv_checksum_threaded(buf, 0, 1, 4, 8) == 0, "an empty buffer adds nothing");
  const size_t at[] = {0, BYTES / 3 - 1, BYTES / 3, (size_t)(BYTES / 8) * 8 - 1, BYTES - 1};
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    buf[at[k]] ^= 0x10;
    EXPECT(kv_checksum_threaded(buf, BYTES, 1, 3, KV_CHECKSUM_PART_BYTES) != one, "byte %zu changed, 3 threads", at[k]);
    buf[at[k]] ^= 0x10;
  }
  free(buf);
}

int main(void) {
  test_guard();
  test_launches();
  test_checksum_recomputed();
  test_checksum_threaded();
  return TEST_RETURN();
}
