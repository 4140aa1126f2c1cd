/* test_timing.c - kv_timing_summarize (hand-computed statistics, linear-interpolated
 * percentiles, in-place sort, n = 0 and 1), kv_timing_median_rse (order-statistic interval,
 * small n, constant samples) and kv_wtime (monotonic, advances with real time). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <math.h>
#include <time.h>

#include "tests/unit/test_util.h"
#include "core/timing.h"

static void test_summarize(void) {
  TEST("summary of {5, 1, 4, 2, 3} and {4, 1, 3, 2}");
  double s5[5] = {5, 1, 4, 2, 3};
  kv_timing t;
  kv_timing_summarize(s5, 5, &t);
  EXPECT(t.reps == 5 && t.min == 1 && t.median == 3 && t.mean == 3, "min %g median %g mean %g", t.min, t.median,
         t.mean);
  EXPECT(fabs(t.p10 - 1.4) < 1e-15 && fabs(t.p90 - 4.6) < 1e-15, "p10 %g p90 %g (position 0.4 and 3.6)", t.p10, t.p90);
  EXPECT(fabs(t.stddev - sqrt(2.5)) < 1e-15, "sample stddev %g", t.stddev);
  EXPECT(s5[0] == 1 && s5[4] == 5, "sorted in place");
  double s4[4] = {4, 1, 3, 2};
  kv_timing_summarize(s4, 4, &t);
  EXPECT(t.median == 2.5 && fabs(t.p10 - 1.3) < 1e-15 && fabs(t.p90 - 3.7) < 1e-15, "median %g p10 %g p90 %g", t.median,
         t.p10, t.p90);

  TEST("one sample and no samples");
  double one[1] = {0.25};
  kv_timing_summarize(one, 1, &t);
  EXPECT(t.reps == 1 && t.min == 0.25 && t.median == 0.25 && t.p90 == 0.25 && t.stddev == 0.0, "one sample");
  kv_timing_summarize(one, 0, &t);
  EXPECT(t.reps == 0 && isnan(t.median) && isnan(t.min) && isnan(t.stddev), "no samples: NaN statistics");
}

static void test_rse(void) {
  TEST("relative standard error of the median");
  const double few[4] = {1, 2, 3, 4};
  EXPECT(isinf(kv_timing_median_rse(few, 4)), "n < 5 is +inf");
  double s[100];
  for (int i = 0; i < 100; i++) s[i] = 100 - i; /* 1..100, reversed: the input is not sorted */
  /* z sqrt(n)/2 = 9.80: ranks floor(50 - 9.80) = 40 and ceil(51 + 9.80) = 61 -> values 40, 61 */
  const double want = (61.0 - 40.0) / (2 * 1.959963984540054 * 50.5);
  EXPECT(fabs(kv_timing_median_rse(s, 100) - want) < 1e-15, "1..100: %.17g vs %.17g", kv_timing_median_rse(s, 100),
         want);
  EXPECT(s[0] == 100, "the samples are not reordered");
  double c[7] = {2, 2, 2, 2, 2, 2, 2};
  EXPECT(kv_timing_median_rse(c, 7) == 0.0, "constant samples: 0");
  /* n = 5: the interval is the whole range */
  const double s5[5] = {10, 11, 12, 13, 20};
  EXPECT(fabs(kv_timing_median_rse(s5, 5) - 10.0 / (2 * 1.959963984540054 * 12.0)) < 1e-15, "n = 5 spans min..max");
  /* the error shrinks like 1/sqrt(n) for the same spread of values */
  double a[400], b[1600];
  for (int i = 0; i < 400; i++) a[i] = 1.0 + (double)i / 400;
  for (int i = 0; i < 1600; i++) b[i] = 1.0 + (double)i / 1600;
  const double ra = kv_timing_median_rse(a, 400), rb = kv_timing_median_rse(b, 1600);
  EXPECT(fabs(ra / rb - 2.0) < 0.1, "quadrupling n halves the error: %g / %g", ra, rb);
}

static void test_wtime(void) {
  TEST("kv_wtime is monotonic and advances with a 20 ms sleep");
  const double t0 = kv_wtime();
  const struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  const double t1 = kv_wtime();
  EXPECT(t1 - t0 >= 0.019 && t1 - t0 < 5.0, "elapsed %g s", t1 - t0);
  int back = 0;
  double prev = kv_wtime();
  for (int i = 0; i < 100000; i++) {
    const double now = kv_wtime();
    back += now < prev;
    prev = now;
  }
  EXPECT(back == 0, "%d steps backwards", back);
}

int main(void) {
  test_summarize();
  test_rse();
  test_wtime();
  return TEST_RETURN();
}
