/* test_norm.c - the layernorm and rmsnorm families' CPU emulation and fp64
 * reference: constant rows (layernorm gives the bias exactly, rmsnorm a known value), a
 * hand-computed row, fp16/bf16 accumulators rounded after every add (by hand), emulation against the reference under the default tolerance for every
 * precision and distribution, the documented fp16-accumulator overflow on offset rows, and
 * the |mean| >> std property: two-pass statistics stay accurate where E[x^2] - E[x]^2 in
 * the same precision does not; the kernel choice (norm_limits.h) at every hidden size. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "families/norm/norm.h"
#include "families/norm/norm_limits.h"
#include "families/testkit/family_checks.h"
#include "tests/unit/test_util.h"

static const char *const precisions[] = {"fp16:fp32", "fp16:fp16", "bf16:fp32", "bf16:bf16", "fp32:fp32"};

/* Constant rows c in {2, -0.5, 4, 0.25} (sums of 100 of them are exact in every type). */
static void test_constant_rows(const char *prec) {
  static const double cs[] = {2.0, -0.5, 4.0, 0.25};
  char spec[96];
  snprintf(spec, sizeof spec, "precision=%s rows=4 hidden=100", prec);
  fcase f;
  fcase_make(&f, &kv_family_layernorm, spec);
  fcase_generate(&f, 5);
  kv_dtype st = f.c.prec.storage;
  for (size_t r = 0; r < 4; r++)
    for (size_t j = 0; j < 100; j++) kv_store(f.in[0], r * 100 + j, st, cs[r]);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  int bad = 0, bad_ref = 0;
  for (size_t r = 0; r < 4; r++)
    for (size_t j = 0; j < 100; j++) {
      double b = kv_load(f.in[2], j, st);
      bad += fcase_out(&f, r * 100 + j) != b;
      bad_ref += f.ref[r * 100 + j] != b;
    }
  EXPECT(bad == 0 && bad_ref == 0, "%s layernorm of constant rows = bias: %d emulated, %d reference differ", prec,
         bad, bad_ref);
  fcase_free(&f);

  /* rmsnorm of a row of 3s with weight 0.5 and eps 0: 3 / sqrt(9) * 0.5 = 0.5 */
  snprintf(spec, sizeof spec, "precision=%s rows=2 hidden=16 eps=0", prec);
  fcase_make(&f, &kv_family_rmsnorm, spec);
  st = f.c.prec.storage;
  for (size_t j = 0; j < 32; j++) kv_store(f.in[0], j, st, j < 16 ? 3.0 : -3.0);
  for (size_t j = 0; j < 16; j++) kv_store(f.in[1], j, st, 0.5);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  bad = bad_ref = 0;
  for (size_t j = 0; j < 32; j++) {
    double want = j < 16 ? 0.5 : -0.5;
    bad += fcase_out(&f, j) != want;
    bad_ref += fabs(f.ref[j] - want) > 1e-15;
  }
  EXPECT(bad == 0 && bad_ref == 0, "%s rmsnorm of +-3 rows = +-0.5: %d emulated, %d reference differ", prec, bad,
         bad_ref);
  fcase_free(&f);
}

/* x = 1 2 3 4, weight 2, bias 1, eps 0, by hand:
 * layernorm: mean 2.5, var 1.25, y = 2 (x - 2.5) / sqrt(1.25) + 1;
 * rmsnorm: mean square 7.5, y = 2 x / sqrt(7.5). */
static void test_hand_row(int ln) {
  static const double ln_want[] = {-1.6832815729997477, 0.10557280900008414, 1.8944271909999157,
                                   3.6832815729997477};
  static const double rms_want[] = {0.7302967433402214, 1.4605934866804429, 2.1908902300206643,
                                    2.9211869733608857};
  fcase f;
  fcase_make(&f, ln ? &kv_family_layernorm : &kv_family_rmsnorm, "precision=fp32:fp32 rows=1 hidden=4 eps=0");
  for (size_t j = 0; j < 4; j++) {
    kv_store(f.in[0], j, KV_FP32, (double)j + 1);
    kv_store(f.in[1], j, KV_FP32, 2.0);
    if (ln) kv_store(f.in[2], j, KV_FP32, 1.0);
  }
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  const double *want = ln ? ln_want : rms_want;
  for (size_t j = 0; j < 4; j++) {
    EXPECT(fabs(f.ref[j] - want[j]) <= 1e-15 * fabs(want[j]), "%s reference y[%zu] = %.17g, want %.17g",
           ln ? "layernorm" : "rmsnorm", j, f.ref[j], want[j]);
    EXPECT(fabs(fcase_out(&f, j) - want[j]) <= 4e-7 * fabs(want[j]), "%s fp32 emulation y[%zu] = %.9g, want %.9g",
           ln ? "layernorm" : "rmsnorm", j, fcase_out(&f, j), want[j]);
  }
  fcase_free(&f);
}

/* One row of 4 through the emulation (weight 1, bias 0, eps 0); y into out[4]. */
static void small_row(const kv_family *fam, const char *prec, const double *x, double *out) {
  char spec[96];
  snprintf(spec, sizeof spec, "precision=%s rows=1 hidden=4 eps=0", prec);
  fcase f;
  fcase_make(&f, fam, spec);
  kv_dtype st = f.c.prec.storage;
  for (size_t j = 0; j < 4; j++) {
    kv_store(f.in[0], j, st, x[j]);
    kv_store(f.in[1], j, st, 1.0);
  }
  fcase_emulate(&f);
  for (size_t j = 0; j < 4; j++) out[j] = fcase_out(&f, j);
  fcase_free(&f);
}

/* The statistics round to a 16-bit accumulator after every add, by hand:
 * rmsnorm fp16:fp16, x = 48 1 1 1: 2304 + 1 = 2305 rounds to 2304 (spacing 2) three times,
 *   mean square 576, rstd 1/24 (fp32 accumulation: 2307 / 4);
 * layernorm bf16:bf16, x = 256 1 1 0: 257 rounds to 256 (spacing 2) twice, mean 64;
 *   d = 192 -63 -63 -64; q: 36864, 36864 + 3969 -> 40960, + 3969 -> 45056, + 4096 = 49152
 *   (spacing 256), var 12288. */
static void test_accumulator_rounding(void) {
  const double xr[4] = {48, 1, 1, 1}, xl[4] = {256, 1, 1, 0};
  double y[4];
  small_row(&kv_family_rmsnorm, "fp16:fp16", xr, y);
  for (int j = 0; j < 4; j++) {
    float rstd = 1.0f / sqrtf(2304.0f / 4.0f);
    EXPECT(y[j] == kv_round_f64((double)((float)xr[j] * rstd), KV_FP16), "rmsnorm fp16 acc y[%d] = %.6g", j, y[j]);
  }
  small_row(&kv_family_rmsnorm, "fp16:fp32", xr, y);
  EXPECT(y[0] == kv_round_f64((double)(48.0f * (1.0f / sqrtf(2307.0f / 4.0f))), KV_FP16) && y[0] != 2.0,
         "rmsnorm fp32 acc y[0] = %.6g", y[0]);
  small_row(&kv_family_layernorm, "bf16:bf16", xl, y);
  for (int j = 0; j < 4; j++) {
    float rstd = 1.0f / sqrtf(12288.0f);
    EXPECT(y[j] == kv_round_f64((double)(((float)xl[j] - 64.0f) * rstd), KV_BF16), "layernorm bf16 acc y[%d] = %.6g",
           j, y[j]);
  }
}

static void test_emulation_vs_reference(void) {
  static const char *const dists[] = {"normal", "uniform", "offset"};
  static const int hiddens[] = {1, 100, 1000};
  for (int fam = 0; fam < 2; fam++)
    for (int p = 0; p < 5; p++)
      for (int d = 0; d < 3; d++)
        for (int h = 0; h < 3; h++) {
          int low_acc = strcmp(precisions[p] + 5, "fp32") != 0;
          if (low_acc && d == 2 && hiddens[h] > 1) continue; /* see test_low_precision_offset */
          char spec[128];
          snprintf(spec, sizeof spec, "precision=%s dist=%s rows=8 hidden=%d", precisions[p], dists[d], hiddens[h]);
          fcase f;
          fcase_make(&f, fam ? &kv_family_rmsnorm : &kv_family_layernorm, spec);
          fcase_generate(&f, 7);
          fcase_emulate(&f);
          fcase_reference(&f, 0);
          double ratio = fcase_bound_ratio(&f);
          EXPECT(ratio <= 1.0, "%s %s: max err / bound = %g", fam ? "rmsnorm" : "layernorm", spec, ratio);
          fcase_free(&f);
        }
}

/* Offset rows (100 + N(0,1), 1000 wide) with an fp16 accumulator: the layernorm sum passes
 * 65504 and the output is not finite; the rmsnorm sum of squares overflows, rstd becomes 0
 * and the output fails the tolerance. */
static void test_low_precision_offset(void) {
  fcase f;
  fcase_make(&f, &kv_family_layernorm, "precision=fp16:fp16 dist=offset rows=4 hidden=1000");
  fcase_generate(&f, 3);
  fcase_emulate(&f);
  EXPECT(!isfinite(fcase_out(&f, 0)), "fp16-accumulated layernorm of offset rows: y[0] = %g", fcase_out(&f, 0));
  fcase_free(&f);
  fcase_make(&f, &kv_family_rmsnorm, "precision=fp16:fp16 dist=offset rows=4 hidden=1000");
  fcase_generate(&f, 3);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  EXPECT(fcase_out(&f, 0) == 0.0 && fcase_bound_ratio(&f) > 1.0,
         "fp16-accumulated rmsnorm of offset rows: y[0] = %g, ratio %g", fcase_out(&f, 0), fcase_bound_ratio(&f));
  fcase_free(&f);
}

/* Rows 1e4 + N(0,1) in fp32: the emulation's two-pass statistics against the one-pass
 * E[x^2] - E[x]^2 evaluated in the same fp32 arithmetic, both against the fp64 reference. */
static void test_large_mean(void) {
  const size_t rows = 16, n = 1024;
  fcase f;
  fcase_make(&f, &kv_family_layernorm, "precision=fp32:fp32 rows=16 hidden=1024");
  kv_tensor_spec x = f.t.in[0];
  x.offset = 1e4;
  double err[5], naive_err[5];
  for (int s = 0; s < 5; s++) {
    fcase_generate(&f, 40 + (uint64_t)s);
    kv_generate_host(&x, kv_stream_key(40 + (uint64_t)s, 99, 0), f.in[0]);
    fcase_emulate(&f);
    fcase_reference(&f, 0);
    EXPECT(fcase_bound_ratio(&f) <= 1.0, "seed %d: within tolerance (ratio %g)", s, fcase_bound_ratio(&f));
    const float *xv = f.in[0], *w = f.in[1], *b = f.in[2];
    err[s] = naive_err[s] = 0.0;
    for (size_t r = 0; r < rows; r++) {
      float s1 = 0.0f, s2 = 0.0f;
      for (size_t j = 0; j < n; j++) {
        s1 += xv[r * n + j];
        s2 += xv[r * n + j] * xv[r * n + j];
      }
      float mean = s1 / (float)n, var = s2 / (float)n - mean * mean;
      float rstd = 1.0f / sqrtf(fmaxf(var, 0.0f) + 1e-5f);
      for (size_t j = 0; j < n; j++) {
        size_t i = r * n + j;
        double naive = ((xv[i] - mean) * rstd) * w[j] + b[j];
        err[s] = fmax(err[s], fabs(fcase_out(&f, i) - f.ref[i]));
        naive_err[s] = fmax(naive_err[s], isfinite(naive) ? fabs(naive - f.ref[i]) : INFINITY);
      }
    }
  }
  double e = median_of(err, 5), ne = median_of(naive_err, 5);
  printf("|mean|/std = 1e4, fp32: two-pass max |err| %.3e, one-pass E[x^2]-E[x]^2 %.3e\n", e, ne);
  EXPECT(e < 0.05, "two-pass layernorm stays accurate: max |err| %g", e);
  EXPECT(ne > 20.0 * e, "the one-pass formula is much worse (%g vs %g)", ne, e);
  fcase_free(&f);
}

static const axis_want norm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32 fp32:fp32", NULL, 0, 0},
    {"rows", KV_AXIS_INT, "1024", NULL, 1, 1LL << 26},
    {"hidden", KV_AXIS_INT, "1024 4096", NULL, 1, 65536},
    {"dist", KV_AXIS_STR, "normal", "normal uniform offset", 0, 0},
    {"eps", KV_AXIS_REAL, "1e-5", NULL, 0, 1},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want norm_params[] = {{"general", 0, 0, 1}, {NULL, 0, 0, 0}};

static void test_invalid_norm(void) {
  for (int ln = 0; ln < 2; ln++) {
    const kv_family *fam = ln ? &kv_family_layernorm : &kv_family_rmsnorm;
    EXPECT_STREQ(invalid_of(fam, "precision=fp32:fp32", "cuda"), NULL);
    EXPECT_STREQ(invalid_of(fam, "precision=fp16:fp16 hidden=65536", "cpu"), NULL);
    EXPECT(invalid_of(fam, "precision=fp16:bf16", "cpu") != NULL, "%s fp16:bf16", fam->name);
    EXPECT(invalid_of(fam, "precision=fp32:fp16", "cpu") != NULL, "%s fp32:fp16", fam->name);
  }
}

static void test_cost_norm(void) {
  kv_cost l = cost_of(&kv_family_layernorm, "precision=fp16:fp32 rows=1024 hidden=4096");
  kv_cost r = cost_of(&kv_family_rmsnorm, "precision=fp32:fp32 rows=1024 hidden=4096");
  EXPECT(l.flops == 8.0 * 4194304 && l.bytes == (2.0 * 4194304 + 2 * 4096) * 2, "layernorm %g %g", l.flops, l.bytes);
  EXPECT(r.flops == 5.0 * 4194304 && r.bytes == (2.0 * 4194304 + 4096) * 4, "rmsnorm %g %g", r.flops, r.bytes);
  EXPECT(l.rows == 1024 && l.row_len == 4096 && l.red_len == 4096, "norm rows %zu x %zu", l.rows, l.row_len);
}

/* fp32 statistics and an fp32 affine step round the 16-bit output once, to nearest: judged for
 * bias; the serial kernels' 16-bit accumulators are not (their rounding is the model's). */
static void test_bias_declaration_norm(void) {
  static const kv_family *const fams[] = {&kv_family_layernorm, &kv_family_rmsnorm};
  for (int i = 0; i < 2; i++) {
    EXPECT(unbiased_of(fams[i], "precision=fp16:fp32") && unbiased_of(fams[i], "precision=bf16:fp32"),
           "%s: 16-bit storage with fp32 accumulation is judged for bias", fams[i]->name);
    EXPECT(!unbiased_of(fams[i], "precision=fp16:fp16") && !unbiased_of(fams[i], "precision=bf16:bf16"),
           "%s: 16-bit accumulation is not", fams[i]->name);
  }
}

static void test_tensors_norm(void) {
  fcase f;
  fcase_make(&f, &kv_family_layernorm, "precision=fp32:fp32 rows=3 hidden=5 dist=offset");
  EXPECT(f.t.n_in == 3 && spec_is(&f.t.in[0], "x", KV_FP32, 15, KV_DIST_NORMAL, 1.0, 100.0) &&
             spec_is(&f.t.in[1], "weight", KV_FP32, 5, KV_DIST_NORMAL, 0.1, 1.0) &&
             spec_is(&f.t.in[2], "bias", KV_FP32, 5, KV_DIST_NORMAL, 0.1, 0.0),
         "layernorm inputs");
  fcase_free(&f);
  fcase_make(&f, &kv_family_rmsnorm, "rows=3 hidden=5");
  EXPECT(f.t.n_in == 2 && f.t.n_out == 1 && spec_is(&f.t.in[0], "x", KV_FP16, 15, KV_DIST_NORMAL, 1.0, 0.0),
         "rmsnorm inputs");
  fcase_free(&f);
}

/* fp32 rows 1e4 + N(0,1), 1000 wide (the mean is not exact): layernorm's statistics are
 * conditioned by |mean| / std = 1e4 (rmsnorm's sum of squares is not ill-conditioned). */
static void test_reference_dd(int ln) {
  const kv_family *fam = ln ? &kv_family_layernorm : &kv_family_rmsnorm;
  const char *spec = "precision=fp32:fp32 rows=16 hidden=1000";
  fcase p, c;
  fcase_make(&p, fam, spec);
  fcase_make(&c, fam, spec);
  fcase_generate(&p, 10);
  kv_tensor_spec x = p.t.in[0];
  x.offset = 1e4;
  kv_generate_host(&x, 79, p.in[0]);
  copy_inputs(&c, &p);
  run_both(&p, &c);
  expect_agreement(fam->name, compare(&p, &c), ln ? 1e3 : 0.5);
  fcase_free(&p);
  fcase_free(&c);
}

/* kv_norm_choice, the kernel the dispatcher launches for aligned tensors: for every hidden
 * size of the axis range (1..65536) and every storage type with fp32 accumulation, a
 * configuration that holds the row's whole vectors, of the peeled kind wherever a row has end
 * elements, and the general path (-1) exactly past 4096 whole vectors; reduced accumulators
 * always take the serial path (-1). */
static void test_choice(void) {
  static const kv_dtype storages[] = {KV_FP16, KV_BF16, KV_FP32};
  int bad = 0;
  for (int s = 0; s < 3; s++)
    for (int ln = 0; ln < 2; ln++)
      for (long long h = 1; h <= 65536; h++) {
        const int c = kv_norm_choice(ln, storages[s], KV_FP32, h);
        const long long whole = h / kv_norm_vec_of(storages[s]);
        const int peeled = h % kv_norm_vec_of(storages[s]) != 0;
        /* rows with end elements need the peeled kernel; whole-vector rows take either kernel
         * (which one is norm_limits.h's measured choice) */
        const int ok = c < 0 ? whole > 4096
                             : whole <= 4096 && kv_norm_holds(storages[s], h, c) &&
                                   (!peeled || kv_norm_config_of(c).kind == KV_NORM_PEELED);
        if (!ok && bad++ < 5) fprintf(stderr, "  storage %d %s hidden %lld: configuration %d\n", (int)storages[s],
                                      ln ? "layernorm" : "rmsnorm", h, c);
        if (storages[s] != KV_FP32) bad += kv_norm_choice(ln, storages[s], storages[s], h) != -1;
      }
  EXPECT(bad == 0, "%d hidden sizes take a configuration that does not hold them (or the wrong kind)", bad);
}

int main(void) {
  TEST("constant rows: layernorm = bias, rmsnorm = known value, every precision");
  for (int p = 0; p < 5; p++) test_constant_rows(precisions[p]);
  TEST("hand-computed rows");
  test_hand_row(1);
  test_hand_row(0);
  TEST("statistics rounded to a 16-bit accumulator after every add");
  test_accumulator_rounding();
  TEST("emulation vs fp64 reference within the default tolerance");
  test_emulation_vs_reference();
  TEST("fp16 accumulation overflows on offset rows");
  test_low_precision_offset();
  TEST("|mean| >> std: two-pass statistics stay accurate");
  test_large_mean();
  TEST("descriptors: axes and params as agreed");
  check_descriptor(&kv_family_layernorm, norm_axes, norm_params);
  check_descriptor(&kv_family_rmsnorm, norm_axes, norm_params);
  TEST("rules of invalid()");
  test_invalid_norm();
  TEST("FLOP, byte and row counts");
  test_cost_norm();
  TEST("the rounding-bias verdict: fp32 accumulation");
  test_bias_declaration_norm();
  TEST("input tensors per distribution");
  test_tensors_norm();
  TEST("the kernel choice holds every hidden size");
  test_choice();
  TEST("fp64 two-pass reference vs double-double on |mean| >> std");
  test_reference_dd(1);
  test_reference_dd(0);
  return TEST_RETURN();
}
