/* test_errstats.c - kv_errstats_compute and kv_errstats_verdict: every statistic on small
 * hand-computed cases (dense and sampled index arrays), NaN/Inf rules, the histogram at
 * every decade edge, the exact p99 against a sort on many sizes and orders, bound ratios
 * bit-identical to kv_tolerance_bound(), and the verdict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/errstats.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "tests/unit/test_util.h"

static const kv_precision FP16_FP32 = {KV_FP16, KV_FP32};
static const kv_precision FP32_FP32 = {KV_FP32, KV_FP32};

static uint16_t h16(double x) { return kv_f64_to_f16(x); }

/* Four finite elements, fp16:fp32, K = 16, c1 = c2 = 2, no abs floor, rel floor 0.5:
 * coefficient of |ref| 2 * 2^-11 = 2^-10, of mag 2 * 4 * 2^-24 = 2^-21. */
static void test_basic(void) {
  TEST("statistics of four finite elements (hand-computed)");
  const uint16_t out[4] = {h16(1.0), h16(1.0 + 0x1p-10), h16(2.0), h16(-0.25)};
  const double ref[4] = {1.0 + 0x1p-12, 1.0, 2.5, -0.25 - 0x1p-12};
  const double mag[4] = {0.0, 0.0, 0x1p20, 1.0};
  const kv_tolerance tol = {2.0, 2.0, 0.0, 0.5};
  kv_errstats st;
  EXPECT(kv_errstats_compute(out, KV_FP16, NULL, ref, mag, 4, FP16_FP32, &tol, 16.0, &st) == 0, "computes");
  /* errors 2^-12, 2^-10, 0.5, 2^-12 */
  EXPECT(st.n_checked == 4 && st.n_nan == 0 && st.n_inf == 0, "counts");
  EXPECT(st.max_abs == 0.5, "max_abs %g", st.max_abs);
  EXPECT(st.mean_abs == (0x1p-12 + 0x1p-10 + 0.5 + 0x1p-12) / 4, "mean_abs %.17g", st.mean_abs);
  const double l2 = sqrt(0x1p-24 + 0x1p-20 + 0.25 + 0x1p-24);
  const double rl2 = sqrt((1 + 0x1p-12) * (1 + 0x1p-12) + 1.0 + 6.25 + (0.25 + 0x1p-12) * (0.25 + 0x1p-12));
  EXPECT(fabs(st.rel_l2 - l2 / rl2) <= 1e-15 * st.rel_l2, "rel_l2 %.17g vs %.17g", st.rel_l2, l2 / rl2);
  /* relative: 2^-12/(1+2^-12), 2^-10/1, 0.5/2.5, 2^-12/max(0.25+2^-12, 0.5) */
  EXPECT(st.max_rel == 0.2, "max_rel %.17g", st.max_rel);
  /* ulps at the reference: 2^-12/2^-10, 2^-10/2^-10, 0.5/2^-9, 2^-12/2^-12 */
  EXPECT(st.max_ulp == 256.0, "max_ulp %g", st.max_ulp);
  EXPECT(st.p99_ulp == 256.0, "p99 of 4 values is the largest (nearest rank 4): %g", st.p99_ulp);
  /* bounds: 2^-10(1+2^-12), 2^-10, 2^-10*2.5 + 0.5, 2^-10(0.25+2^-12) + 2^-21 */
  EXPECT(st.max_bound_ratio == 1.0 && st.worst_index == 1, "element 1 sits exactly on its bound: %.17g at %lld",
         st.max_bound_ratio, (long long)st.worst_index);
  EXPECT(kv_errstats_verdict(&st) == KV_PASS, "a ratio of exactly 1 passes");
  /* histogram: 2^-12 = 2.4e-4 and 2^-10 = 9.8e-4 in [1e-4, 1e-3) = bin 2+8; 0.5 in bin 2+11 */
  EXPECT(st.hist[10] == 3 && st.hist[13] == 1 && st.hist[0] == 0, "hist bins %llu %llu",
         (unsigned long long)st.hist[10], (unsigned long long)st.hist[13]);
  /* rounding floor: |round16(1+2^-12) - (1+2^-12)| = 2^-12, the other references are fp16 values */
  EXPECT(st.floor_ratio == 0.5 / 0x1p-12, "floor_ratio %g", st.floor_ratio);
}

static void test_sampled(void) {
  TEST("sampled elements: index selects the output, worst_index is the flat index");
  uint16_t out[8];
  for (int i = 0; i < 8; i++) out[i] = h16(i);
  const int64_t index[3] = {6, 1, 3};
  const double ref[3] = {6.0, 1.0, 3.0 + 0x1p-4};
  const double mag[3] = {0, 0, 0};
  const kv_tolerance tol = {1.0, 0.0, 0.0, 1.0};
  kv_errstats st;
  EXPECT(kv_errstats_compute(out, KV_FP16, index, ref, mag, 3, FP16_FP32, &tol, 1.0, &st) == 0, "computes");
  EXPECT(st.n_checked == 3 && st.max_abs == 0x1p-4 && st.worst_index == 3, "n %lld max_abs %g worst %lld",
         (long long)st.n_checked, st.max_abs, (long long)st.worst_index);
  EXPECT(st.hist[0] == 2, "two exact elements");
  EXPECT(st.max_ulp == 0x1p-4 / 0x1p-9, "3+1/16 is 32 fp16 ulps from 3: %g", st.max_ulp);
  EXPECT(st.max_bound_ratio == 0x1p-4 / (0x1p-11 * (3.0 + 0x1p-4)), "ratio %.17g", st.max_bound_ratio);
  EXPECT(kv_errstats_verdict(&st) == KV_FAIL_TOLERANCE, "beyond its bound");
}

static void test_nonfinite(void) {
  TEST("NaN/Inf: counted only where the reference is finite; correct overflow is exact");
  const uint16_t out[6] = {0x7e00, 0x7c00, 0x7c00, 0xfc00, 0x7e00, h16(1.0)};
  const double ref[6] = {1.0, 2.0, 70000.0, 70000.0, NAN, INFINITY};
  const double mag[6] = {0};
  const kv_precision p = FP16_FP32;
  const kv_tolerance tol = kv_tolerance_default(p);
  kv_errstats st;
  EXPECT(kv_errstats_compute(out, KV_FP16, NULL, ref, mag, 6, p, &tol, 64.0, &st) == 0, "computes");
  EXPECT(st.n_nan == 1 && st.n_inf == 2,
         "NaN where ref 1, +Inf where ref 2, -Inf where ref overflows to +Inf: %lld %lld", (long long)st.n_nan,
         (long long)st.n_inf);
  EXPECT(st.hist[KV_HIST_BINS - 1] == 3, "three non-finite outputs in the last bin");
  EXPECT(st.hist[0] == 2, "+Inf for 70000 and NaN for a NaN reference are exact");
  EXPECT(st.hist[KV_HIST_BINS - 2] == 1, "a finite output for an infinite reference is an infinite error");
  EXPECT(st.max_abs == 0.0 && st.mean_abs == 0.0 && st.rel_l2 == 0.0, "no finite pair: finite statistics stay 0");
  EXPECT(isinf(st.max_bound_ratio) && st.worst_index == 0, "worst is the first non-finite element");
  EXPECT(isinf(st.max_ulp) && isinf(st.p99_ulp), "ULP statistics are infinite");
  EXPECT(kv_errstats_verdict(&st) == KV_FAIL_NONFINITE, "verdict fail_nonfinite");

  TEST("a non-finite reference missed by a finite output fails the tolerance, uncounted");
  const double ref2[2] = {INFINITY, 1.0};
  const uint16_t out2[2] = {h16(65504.0), h16(1.0)};
  EXPECT(kv_errstats_compute(out2, KV_FP16, NULL, ref2, mag, 2, p, &tol, 64.0, &st) == 0, "computes");
  EXPECT(st.n_nan == 0 && st.n_inf == 0 && isinf(st.max_bound_ratio), "ratio inf, no NaN/Inf count");
  EXPECT(kv_errstats_verdict(&st) == KV_FAIL_TOLERANCE, "verdict fail_tolerance");

  TEST("a finite output for a reference beyond the fp16 range is an ordinary element");
  const double ref3[1] = {65530.0};
  const uint16_t out3[1] = {h16(65504.0)};
  EXPECT(kv_errstats_compute(out3, KV_FP16, NULL, ref3, mag, 1, p, &tol, 64.0, &st) == 0, "computes");
  EXPECT(st.max_abs == 26.0 && kv_errstats_verdict(&st) == KV_PASS, "error 26 within 2 u |ref| = 64");
}

static void test_histogram_edges(void) {
  TEST("histogram: every decade edge from 1e-12 to 1e4, zero, tiny, huge");
  const int n = 2 * 17 + 3;
  float out[2 * 17 + 3];
  double ref[2 * 17 + 3], mag[2 * 17 + 3] = {0};
  int want[KV_HIST_BINS] = {0};
  int m = 0;
  for (int d = -12; d <= 4; d++) { /* error exactly 10^d and the double just below it */
    const double e = pow(10.0, d);
    ref[m] = -e, want[d == 4 ? KV_HIST_BINS - 2 : 2 + d + 12]++, m++;
    ref[m] = -nextafter(e, 0.0), want[d == -12 ? 1 : 1 + d + 12]++, m++;
  }
  ref[m] = 0.0, want[0]++, m++;
  ref[m] = -1e-300, want[1]++, m++;
  ref[m] = -1e300, want[KV_HIST_BINS - 2]++, m++;
  for (int i = 0; i < n; i++) out[i] = 0.0f;
  const kv_tolerance tol = kv_tolerance_default(FP32_FP32);
  kv_errstats st;
  EXPECT(kv_errstats_compute(out, KV_FP32, NULL, ref, mag, (size_t)n, FP32_FP32, &tol, 1.0, &st) == 0, "computes");
  int bad = 0;
  for (int b = 0; b < KV_HIST_BINS; b++) bad += st.hist[b] != (uint64_t)want[b];
  EXPECT(bad == 0, "%d bins differ", bad);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* p99 by sorting every ULP error: the ceil(0.99 n)-th smallest. */
static double p99_by_sort(const uint16_t *out, const double *ref, size_t n) {
  double *u = malloc(n * sizeof *u);
  for (size_t i = 0; i < n; i++) u[i] = kv_ulp_distance(kv_f16_to_f32(out[i]), ref[i], KV_FP16);
  qsort(u, n, sizeof *u, cmp_double);
  const double p = u[(99 * n + 99) / 100 - 1];
  free(u);
  return p;
}

/* Outputs with errors in kind-dependent patterns: 0 random, 1 ascending, 2 descending,
 * 3 all equal, 4 mostly exact with whole-ULP errors (many ties). */
static void fill(uint16_t *out, double *ref, size_t n, int kind, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    const uint64_t r = kv_mix64(seed + i);
    ref[i] = 1.0 + (double)(r >> 11) * 0x1p-53;
    double e = (double)(r & 0xffff) * 0x1p-16;
    if (kind == 1) e = (double)i / (double)n;
    if (kind == 2) e = 1.0 - (double)i / (double)n;
    if (kind == 3) e = 0.5;
    if (kind == 4) ref[i] = 1.0 + 0x1p-10 * (double)((r >> 20) & 0xff), e = (r & 7) == 0 ? (double)((r >> 3) & 3) : 0.0;
    out[i] = h16(ref[i] + e * 0x1p-9);
  }
}

static void test_p99(void) {
  TEST("p99 equals the sorted nearest-rank value for sizes 1..400 and 2e5, five orderings");
  const size_t big = 200000;
  uint16_t *out = malloc(big * sizeof *out);
  double *ref = malloc(big * sizeof *ref), *mag = calloc(big, sizeof *mag);
  const kv_tolerance tol = kv_tolerance_default(FP16_FP32);
  int bad = 0, runs = 0;
  for (int kind = 0; kind < 5; kind++)
    for (size_t n = 1; n <= big; n = n < 400 ? n + 1 : big + (n == big)) {
      fill(out, ref, n, kind, 1000 * (uint64_t)kind + n);
      kv_errstats st;
      if (kv_errstats_compute(out, KV_FP16, NULL, ref, mag, n, FP16_FP32, &tol, 1.0, &st) != 0) bad++;
      bad += st.p99_ulp != p99_by_sort(out, ref, n);
      runs++;
    }
  EXPECT(runs == 5 * 401 && bad == 0, "%d of %d runs differ", bad, runs);
  free(out);
  free(ref);
  free(mag);
}

static void test_bound_consistency(void) {
  TEST("max_bound_ratio and worst_index agree bit for bit with kv_tolerance_bound()");
  enum { N = 5000 };
  static uint16_t out[N];
  static double ref[N], mag[N];
  const kv_precision precs[3] = {{KV_FP16, KV_FP32}, {KV_BF16, KV_BF16}, {KV_BF16, KV_FP32}};
  for (int p = 0; p < 3; p++) {
    const kv_precision prec = precs[p];
    const kv_tolerance tol = kv_tolerance_default(prec);
    const double K = 300.0 + 100 * p;
    for (int i = 0; i < N; i++) {
      const double x = kv_base_value(7 + p, (uint64_t)i, KV_DIST_NORMAL);
      ref[i] = 30.0 * x;
      mag[i] = 50.0 + 10 * fabs(kv_base_value(9, (uint64_t)i, KV_DIST_UNIFORM));
      kv_store(out, (size_t)i, prec.storage, ref[i] * (1.0 + 0.01 * kv_base_value(8, (uint64_t)i, KV_DIST_UNIFORM)));
    }
    double worst = -1.0;
    int64_t wi = -1;
    for (int i = 0; i < N; i++) {
      const double r =
          fabs(kv_load(out, (size_t)i, prec.storage) - ref[i]) / kv_tolerance_bound(&tol, prec, ref[i], mag[i], K);
      if (r > worst) worst = r, wi = i;
    }
    kv_errstats st;
    EXPECT(kv_errstats_compute(out, prec.storage, NULL, ref, mag, N, prec, &tol, K, &st) == 0, "computes");
    EXPECT(st.max_bound_ratio == worst && st.worst_index == wi, "precision %d: %.17g at %lld vs %.17g at %lld", p,
           st.max_bound_ratio, (long long)st.worst_index, worst, (long long)wi);
  }
}

static void test_edges(void) {
  TEST("no elements, zero references, verdict precedence");
  const kv_tolerance tol = kv_tolerance_default(FP16_FP32);
  kv_errstats st;
  EXPECT(kv_errstats_compute(NULL, KV_FP16, NULL, NULL, NULL, 0, FP16_FP32, &tol, 1.0, &st) == 0, "n = 0 computes");
  EXPECT(st.n_checked == 0 && st.worst_index == -1 && kv_errstats_verdict(&st) == KV_PASS, "n = 0: nothing failed");
  const uint16_t zeros[2] = {0, 0x8000}, small[2] = {0, 0x0001};
  const double zref[2] = {0.0, 0.0}, zmag[2] = {0.0, 0.0};
  EXPECT(kv_errstats_compute(zeros, KV_FP16, NULL, zref, zmag, 2, FP16_FP32, &tol, 1.0, &st) == 0, "computes");
  EXPECT(st.rel_l2 == 0.0 && st.max_rel == 0.0 && st.max_bound_ratio == 0.0, "0/0 is 0 (and -0 equals 0)");
  EXPECT(kv_errstats_compute(small, KV_FP16, NULL, zref, zmag, 2, FP16_FP32, &tol, 1.0, &st) == 0, "computes");
  EXPECT(isinf(st.rel_l2) && st.max_bound_ratio == 1.0 && kv_errstats_verdict(&st) == KV_PASS,
         "the smallest subnormal against an exact zero: rel_l2 inf, on the abs floor, passes");
  EXPECT(st.floor_ratio == 0x1p-24 / 0x1p-14, "floor ratio against the smallest normal: %g", st.floor_ratio);
  const double nan_mag[2] = {NAN, 0.0};
  EXPECT(kv_errstats_compute(small, KV_FP16, NULL, zref, nan_mag, 2, FP16_FP32, &tol, 1.0, &st) == 0, "computes");
  EXPECT(st.max_bound_ratio == 1.0, "an exact element with a NaN magnitude term is still exact");
  const uint16_t off[2] = {0x0001, 0};
  EXPECT(kv_errstats_compute(off, KV_FP16, NULL, zref, nan_mag, 2, FP16_FP32, &tol, 1.0, &st) == 0, "computes");
  EXPECT(isinf(st.max_bound_ratio) && kv_errstats_verdict(&st) == KV_FAIL_TOLERANCE,
         "an error against a NaN magnitude term cannot be verified: ratio inf");
  kv_errstats v = {0};
  v.max_bound_ratio = 2.0;
  EXPECT(kv_errstats_verdict(&v) == KV_FAIL_TOLERANCE, "ratio 2 fails the tolerance");
  v.n_inf = 1;
  EXPECT(kv_errstats_verdict(&v) == KV_FAIL_NONFINITE, "non-finite takes precedence");
}

int main(void) {
  test_basic();
  test_sampled();
  test_nonfinite();
  test_histogram_edges();
  test_p99();
  test_bound_consistency();
  test_edges();
  return TEST_RETURN();
}
