/* selftest.c - kval checks its own checker before it trusts it (selftest.h): known answers of
 * the code that turns a backend's measurements into a verdict, on synthetic data of a
 * stand-in family (fp16 storage, fp32 accumulation, reduction length 64, 64 rows of 64):
 *   outputs rounded to nearest          pass, at most half an ulp, every element compared;
 *   one output 3 ulps off at 1.25       fail_tolerance at that element with the bound ratio of
 *                                       docs/NUMERICS.md's defaults (c1 = c2 = 2), pinned; the
 *                                       same two answers for bf16 storage;
 *   one output NaN                      fail_nonfinite, one NaN counted;
 *   every output truncated toward zero  fail_bias (inside the bound on every element);
 *   outputs equal to the emulation of a reduced accumulator but 6 % off the reference:
 *                                       inaccurate; one of them an ulp off the emulation:
 *                                       fail_tolerance, not the model;
 *   one auxiliary row 50 bounds off     fail_tolerance of the auxiliary output;
 *   a reference of three sampled rows   pass; 3 ulps off in one of them: found at its index;
 *   a rate twice the ceiling            fail_timing;
 *   a guard band byte, one timed repetition's checksum, the recomputed checksum, one input
 *   element, the GPU-vs-CPU reference disagreement (finite and infinite): each its status;
 *   the cross-checks' comparisons (run/crosscheck.c): a GPU reference equal to the CPU one
 *   agrees; its last value, magnitude, auxiliary value or auxiliary magnitude 1e-6 off: a
 *   disagreement of 1e-6; a CPU row never written (NaN): infinite; device statistics equal to
 *   the host's agree, one ulp on a maximum, 1e-9 on a sum (1e-14: its order), one histogram
 *   bin, the whole output one element short, or its largest bound ratio below the sample's:
 *   each named;
 *   the fleet comparison of one case: A A B names the third rank, A B (a tie) both, a rank in
 *   error none;
 *   the fingerprint of "abc" (XXH64's published value) and a launch checksum, pinned (the
 *   checksum on one thread and split over three, as the host recomputes large outputs).
 * A checker that would pass a wrong kernel (a looser bound, a bias or timing verdict switched
 * off, a finding ignored) fails here, in every run, before any case. */
#include "run/selftest.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/checksum.h"
#include "numerics/fingerprint.h"
#include "numerics/tolerance.h"
#include "run/crosscheck.h"
#include "run/fleet.h"
#include "run/judge.h"

#define ROWS 64
#define LEN 64
#define N (ROWS * LEN)
#define PLANT (N - 1) /* the element the tolerance and NaN answers plant in: the last (a loop one short misses it) */
#define RATIO_3ULP 2.3975415833373983      /* 3 fp16 ulps at 1.25 over the default bound (K = 64) */
#define RATIO_3ULP_BF16 2.3997070670084217 /* 3 bf16 ulps at 1.25 over the default bound of bf16:fp32 */
#define CHECKSUM_PATTERN 0x002b3e58b9910666ULL /* kv_checksum_bytes of the 1001-byte pattern, salt 0 */

static int always(const kv_case *c) {
  (void)c;
  return 1;
}
static const kv_family stand_in = {.name = "selftest", .summary = "kval's self-test", .unbiased = always};

/* A stand-in of a reduced accumulator whose kernel must equal its emulation bit for bit:
 * y = x * 17 / 16, one output. */
static void reduced_tensors(const kv_case *c, kv_tensors *t) {
  (void)c;
  memset(t, 0, sizeof *t);
  t->n_in = t->n_out = 1;
  kv_spec_in(&t->in[0], "x", KV_FP16, N, KV_DIST_NORMAL, 1.0, 0.0);
  kv_spec_out(&t->out[0], "y", KV_FP16, N);
}
static kv_status reduced_emulate(const kv_case *c, void *const *in, void *const *out) {
  (void)c;
  for (size_t i = 0; i < N; i++) kv_store(out[0], i, KV_FP16, kv_load(in[0], i, KV_FP16) * 1.0625);
  return KV_OK;
}
static const kv_family reduced = {.name = "selftest-reduced", .summary = "kval's self-test, conformance",
                                  .tensors = reduced_tensors, .emulate = reduced_emulate, .emulation_exact = always};

typedef struct {
  kv_family_plan fp;
  kv_case c;
  kv_cost cost;
  kv_run_settings rs;
  kv_rank_info info;
  kv_tensors t;
  double ref[N], mag[N], aux_ref[ROWS], aux_mag[ROWS], times[5];
  double xref[2][N], xmag[2][N], xaux[2][ROWS], xaux_mag[2][ROWS]; /* cross-checks: [0] GPU, [1] CPU */
  uint16_t out[N], in[N];
  float aux[ROWS];
  uint64_t sums[6];
  kv_case_data d;
  kv_result r;
} bench;

/* The clean case: outputs and auxiliary output rounded to nearest from their references. */
static void reset(bench *b) {
  kv_case_data *d = &b->d;
  memset(d, 0, sizeof *d);
  for (size_t i = 0; i < N; i++) kv_store(b->out, i, KV_FP16, b->ref[i]);
  for (size_t i = 0; i < ROWS; i++) b->aux[i] = (float)b->aux_ref[i];
  for (int i = 0; i < 5; i++) b->times[i] = 2e-2; /* half the ceiling */
  for (int i = 0; i < 6; i++) b->sums[i] = 42;
  d->out = b->out, d->out_count = N, d->out_type = KV_FP16;
  d->aux = b->aux, d->aux_count = ROWS;
  d->n_rows = ROWS, d->row_len = LEN;
  d->ref = b->ref, d->mag = b->mag, d->aux_ref = b->aux_ref, d->aux_mag = b->aux_mag;
  d->times = b->times, d->n_times = 5, d->launch_sums = b->sums;
  d->ref_xcheck = 0.0;
}

static void setup(bench *b, const kv_run_settings *run) {
  memset(b, 0, sizeof *b);
  b->fp.family = &stand_in;
  b->c.fp = &b->fp;
  b->c.prec = (kv_precision){KV_FP16, KV_FP32};
  b->c.key = 7;
  b->cost = (kv_cost){.flops = 1e12, .bytes = 1e9, .red_len = LEN, .rows = ROWS, .row_len = LEN};
  kv_plan_run_defaults(&b->rs);
  b->rs.seed = run->seed;
  b->info.copy_gbps = 1000.0; /* with 100 TFLOP/s: a ceiling of 1e14 FLOP/s for this intensity */
  b->info.matrix_tflops = 100.0;
  b->info.cold_timing = 1;
  const uint64_t key = kv_stream_key(3, 5, 0);
  for (size_t i = 0; i < N; i++) {
    b->ref[i] = kv_gen_value(key, i, KV_DIST_NORMAL, 1.0, 0.0);
    b->mag[i] = fabs(b->ref[i]);
  }
  b->ref[PLANT] = b->mag[PLANT] = 1.25;
  for (size_t i = 0; i < ROWS; i++) {
    b->aux_ref[i] = 5.0 + kv_gen_value(key, N + i, KV_DIST_UNIFORM, 1.0, 0.0);
    b->aux_mag[i] = 1e-6;
  }
  b->t.n_in = 1;
  b->t.n_out = 2;
  kv_spec_in(&b->t.in[0], "x", KV_FP16, N, KV_DIST_NORMAL, 1.0, 0.0);
  kv_spec_out(&b->t.out[0], "y", KV_FP16, N);
  kv_spec_out(&b->t.out[1], "lse", KV_FP32, ROWS);
  kv_generate_host(&b->t.in[0], kv_stream_key(b->rs.seed, b->c.key, 0), b->in);
  reset(b);
}

typedef struct {
  char *what;
  size_t len;
  int passed;
} tally;

static int answer(tally *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int answer(tally *t, int ok, const char *fmt, ...) {
  if (ok) return ++t->passed, 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->what, t->len, fmt, ap);
  va_end(ap);
  return 0;
}

/* The verdict of the bench's current data for case c is `want` (and, given, its message holds
 * `words`); the answer names what was planted. Its statistics are in b->r for the answers
 * that follow (an answer's arguments are read only after this call has returned). */
static int verdict_of(bench *b, tally *t, const kv_case *c, int want, const char *words, const char *planted) {
  kv_result_init(&b->r, 0, 0, 0);
  const int ok = kv_judge_case(c, &b->cost, &b->rs, &b->info, &b->d, &b->r) == KV_OK && b->r.status == want &&
                 (!words || strstr(b->r.message, words));
  return answer(t, ok, "%s: %s (\"%s\"), expected %s%s%s", planted, kv_status_name(b->r.status), b->r.message,
                kv_status_name(want), words ? " with " : "", words ? words : "");
}
static int verdict(bench *b, tally *t, int want, const char *words, const char *planted) {
  return verdict_of(b, t, &b->c, want, words, planted);
}

/* Storage `type` (ulp: its ulp at 1.25): the outputs rounded to nearest pass with at most half an
 * ulp, every element compared, no NaN; one output 3 ulps off at 1.25 fails at that element with
 * the pinned bound ratio `ratio`. */
static int storage(bench *b, tally *t, kv_dtype type, double ulp, double ratio) {
  kv_case c = b->c;
  c.prec.storage = type;
  reset(b);
  for (size_t i = 0; i < N; i++) kv_store(b->out, i, type, b->ref[i]);
  b->d.out_type = type;
  const char *name = kv_dtype_name(type);
  const kv_errstats *s = &b->r.stats;
  char what[64];
  snprintf(what, sizeof what, "%s outputs rounded to nearest", name);
  if (!verdict_of(b, t, &c, KV_PASS, NULL, what) ||
      !answer(t, s->max_ulp <= 0.5 && s->n_checked == N && s->n_nan == 0,
              "%s: max_ulp %g, %lld compared, %lld NaN (expected <= 0.5, %d, 0)", what, s->max_ulp,
              (long long)s->n_checked, (long long)s->n_nan, N))
    return 0;
  kv_store(b->out, PLANT, type, 1.25 + 3.0 * ulp);
  snprintf(what, sizeof what, "an %s output 3 ulps off", name);
  return verdict_of(b, t, &c, KV_FAIL_TOLERANCE, NULL, what) &&
         answer(t, s->worst_index == PLANT && fabs(s->max_bound_ratio / ratio - 1.0) < 1e-9,
                "%s: ratio %.17g at %lld (expected %.17g at %d)", what, s->max_bound_ratio,
                (long long)s->worst_index, ratio, PLANT);
}

static int verdicts(bench *b, tally *t) {
  const kv_errstats *s = &b->r.stats;
  if (!storage(b, t, KV_BF16, 1.0 / 128.0, RATIO_3ULP_BF16) || !storage(b, t, KV_FP16, 1.0 / 1024.0, RATIO_3ULP))
    return 0;
  kv_store(b->out, PLANT, KV_FP16, NAN);
  if (!verdict(b, t, KV_FAIL_NONFINITE, NULL, "an output NaN") ||
      !answer(t, s->n_nan == 1, "an output NaN: %lld NaN counted (expected 1)", (long long)s->n_nan))
    return 0;
  reset(b);
  for (size_t i = 0; i < N; i++)
    if (fabs(kv_load(b->out, i, KV_FP16)) > fabs(b->ref[i])) b->out[i]--; /* one ulp toward zero */
  if (!verdict(b, t, KV_FAIL_BIAS, NULL, "outputs truncated toward zero")) return 0;
  reset(b);
  b->aux[5] = (float)(b->aux_ref[5] + 1e-4);
  if (!verdict(b, t, KV_FAIL_TOLERANCE, "auxiliary", "an auxiliary row 50 bounds off")) return 0;
  reset(b);
  for (int i = 0; i < 5; i++) b->times[i] = 5e-3;
  return verdict(b, t, KV_FAIL_TIMING, NULL, "a rate twice the ceiling");
}

/* A reference of sampled rows (the cpu backend's large cases): rows 3, 10 and the last, packed;
 * an output 3 ulps off in the last row is found at its own index. */
static int sampled(bench *b, tally *t) {
  size_t rows[3] = {3, 10, ROWS - 1};
  double ref[3 * LEN], mag[3 * LEN], aux_ref[3], aux_mag[3];
  reset(b);
  for (size_t r = 0; r < 3; r++) {
    memcpy(ref + r * LEN, b->ref + rows[r] * LEN, LEN * sizeof *ref);
    memcpy(mag + r * LEN, b->mag + rows[r] * LEN, LEN * sizeof *mag);
    aux_ref[r] = b->aux_ref[rows[r]], aux_mag[r] = b->aux_mag[rows[r]];
  }
  kv_case_data *d = &b->d;
  d->rows = rows, d->n_rows = 3, d->ref = ref, d->mag = mag, d->aux_ref = aux_ref, d->aux_mag = aux_mag;
  const kv_errstats *s = &b->r.stats;
  if (!verdict(b, t, KV_PASS, NULL, "three sampled rows") ||
      !answer(t, s->n_checked == 3 * LEN, "three sampled rows: %lld compared (expected %d)", (long long)s->n_checked,
              3 * LEN))
    return 0;
  const size_t e = (ROWS - 1) * LEN + 5;
  ref[2 * LEN + 5] = mag[2 * LEN + 5] = 1.25;
  kv_store(b->out, e, KV_FP16, 1.25 + 3.0 / 1024.0);
  return verdict(b, t, KV_FAIL_TOLERANCE, NULL, "an output 3 ulps off in a sampled row") &&
         answer(t, s->worst_index == (int64_t)e, "an output 3 ulps off in a sampled row: found at %lld (expected %zu)",
                (long long)s->worst_index, e);
}

static int findings(bench *b, tally *t) {
  unsigned char band[2][KV_GUARD_BYTES];
  memset(band, KV_GUARD_BYTE, sizeof band);
  band[1][7] = 0;
  reset(b);
  kv_guard_finding(&b->d, "y", 0, band[0], band[1]);
  if (!verdict(b, t, KV_FAIL_OUT_OF_BOUNDS, "+7", "a guard band byte")) return 0;
  reset(b);
  b->sums[3] = 43;
  kv_launch_finding(&b->d, 42);
  if (!verdict(b, t, KV_FAIL_NONDETERMINISTIC, "repetition 3", "a timed repetition's checksum")) return 0;
  reset(b);
  kv_checksum_finding(&b->d, &b->t, 42, 3);
  if (!verdict(b, t, KV_ERROR, "launch checksum", "a checksum the host does not recompute")) return 0;
  reset(b);
  const void *in[1] = {b->in};
  kv_input_finding(&b->d, &b->c, &b->rs, &b->t, in);
  if (!answer(t, !b->d.harness[0], "the generator's inputs: \"%s\" (expected no finding)", b->d.harness)) return 0;
  b->in[N - 1] ^= 1;
  kv_input_finding(&b->d, &b->c, &b->rs, &b->t, in);
  b->in[N - 1] ^= 1;
  if (!verdict(b, t, KV_ERROR, "input x: element 4095", "an input element")) return 0;
  const double xcheck[3] = {1e-6, INFINITY, NAN};
  const int want[3] = {KV_ERROR, KV_ERROR, KV_PASS};
  const char *what[3] = {"a reference disagreement of 1e-6", "an infinite reference disagreement",
                         "a reference not cross-checked (NaN)"};
  for (int k = 0; k < 3; k++) {
    reset(b);
    b->d.ref_xcheck = xcheck[k];
    if (!verdict(b, t, want[k], NULL, what[k])) return 0;
  }
  return 1;
}

/* The GPU (side 0) and CPU (side 1) references of the cross-check: copies of the bench's. */
static void xcheck_sides(bench *b, kv_ref_sample side[2]) {
  for (int k = 0; k < 2; k++) {
    memcpy(b->xref[k], b->ref, sizeof b->ref);
    memcpy(b->xmag[k], b->mag, sizeof b->mag);
    memcpy(b->xaux[k], b->aux_ref, sizeof b->aux_ref);
    memcpy(b->xaux_mag[k], b->aux_mag, sizeof b->aux_mag);
    side[k] = (kv_ref_sample){b->xref[k], b->xmag[k], b->xaux[k], b->xaux_mag[k], ROWS, LEN};
  }
}

/* The GPU-vs-CPU reference comparison: equal references agree; the last value, magnitude,
 * auxiliary value and auxiliary magnitude of the GPU side 1e-6 off (relative to the CPU
 * magnitude, which the bench's last value equals): 1e-6; a CPU row never written: +inf. */
static int reference_crosscheck(bench *b, tally *t) {
  kv_ref_sample side[2];
  xcheck_sides(b, side);
  double x = kv_xcheck_disagreement(&side[0], &side[1]);
  if (!answer(t, x == 0.0, "equal GPU and CPU references: disagreement %.3g (expected 0)", x)) return 0;
  double *const planted[4] = {&b->xref[0][N - 1], &b->xmag[0][N - 1], &b->xaux[0][ROWS - 1], &b->xaux_mag[0][ROWS - 1]};
  const char *what[4] = {"value", "magnitude", "auxiliary value", "auxiliary magnitude"};
  for (int k = 0; k < 4; k++) {
    xcheck_sides(b, side);
    *planted[k] *= 1.0 + 1e-6;
    x = kv_xcheck_disagreement(&side[0], &side[1]);
    if (!answer(t, fabs(x / 1e-6 - 1.0) < 1e-6, "the GPU reference's last %s 1e-6 off: disagreement %.17g (expected 1e-6)",
                what[k], x))
      return 0;
  }
  xcheck_sides(b, side);
  for (size_t j = 0; j < LEN; j++) b->xref[1][(ROWS - 1) * LEN + j] = NAN;
  x = kv_xcheck_disagreement(&side[0], &side[1]);
  return answer(t, isinf(x), "a CPU reference row never written (NaN): disagreement %.3g (expected inf)", x);
}

/* The device statistics against the host's: the host's of the bench's clean outputs as all
 * three (sample, device sample, whole output) agree; each planted difference is named. */
static int stats_crosscheck(bench *b, tally *t) {
  reset(b);
  const kv_tolerance tol = kv_tolerance_default(b->c.prec);
  kv_errstats host;
  if (!answer(t, kv_errstats_compute(b->out, KV_FP16, NULL, b->ref, b->mag, N, b->c.prec, &tol, LEN, &host) == 0,
              "the host statistics of the bench's outputs failed"))
    return 0;
  const struct {
    const char *planted, *named;
    int field; /* 0 none, 1 max_abs one ulp up, 2 rel_l2 1e-14 off, 3 rel_l2 1e-9 off, 4 a histogram bin,
                  5 the whole output one element short, 6 the whole output's bound ratio halved */
  } plant[] = {{"device statistics equal to the host's", NULL, 0},
               {"a device max_abs one ulp above the host's", "max_abs", 1},
               {"a device rel_l2 1e-14 off the host's (summation order)", NULL, 2},
               {"a device rel_l2 1e-9 off the host's", "rel_l2", 3},
               {"a device histogram bin one count off", "histograms", 4},
               {"a whole output one element short", "whole output", 5},
               {"a whole output's largest bound ratio below the sample's", "whole output", 6}};
  for (size_t i = 0; i < sizeof plant / sizeof plant[0]; i++) {
    kv_errstats dev = host, all = host;
    switch (plant[i].field) {
      case 1: dev.max_abs = nextafter(host.max_abs, INFINITY); break;
      case 2: dev.rel_l2 = host.rel_l2 * (1.0 + 1e-14); break;
      case 3: dev.rel_l2 = host.rel_l2 * (1.0 + 1e-9); break;
      case 4: dev.hist[KV_HIST_BINS - 1] += 1; break;
      case 5: all.n_checked -= 1; break;
      case 6: all.max_bound_ratio = host.max_bound_ratio / 2.0; break;
      default: break;
    }
    char msg[256] = "";
    kv_xcheck_compare_stats(&dev, &host, &all, N, msg, sizeof msg);
    const int ok = plant[i].named ? strstr(msg, plant[i].named) != NULL : msg[0] == 0;
    if (!answer(t, ok, "%s: \"%s\" (expected %s%s)", plant[i].planted, msg, plant[i].named ? "a finding naming " : "none",
                plant[i].named ? plant[i].named : ""))
      return 0;
  }
  return 1;
}

/* Outputs equal to the emulation but far from the reference: inaccurate (a finding); one
 * element one ulp off the emulation: the failure stays, "not the model". Changes the bench's
 * reference: the last answers on it. */
static int conformance(bench *b, tally *t) {
  kv_family_plan fp = {.family = &reduced};
  kv_case c = b->c;
  c.fp = &fp;
  c.prec = (kv_precision){KV_FP16, KV_FP16};
  reset(b);
  b->d.aux = NULL;
  void *in[1] = {b->in}, *out[1] = {b->out};
  reduced_emulate(&c, in, out);
  for (size_t i = 0; i < N; i++) b->mag[i] = fabs(b->ref[i] = kv_load(b->in, i, KV_FP16));
  if (!verdict_of(b, t, &c, KV_INACCURATE, "equals the emulation",
                  "outputs equal to the emulation, 6 % off the reference"))
    return 0;
  b->out[77] ^= 1;
  return verdict_of(b, t, &c, KV_FAIL_TOLERANCE, "not the model: 1 elements differ",
                    "one output an ulp off the emulation");
}

/* The fleet comparison of one case: three ranks A A B (the third named, two distinct), two
 * ranks A B (a tie: both named), three ranks A A A with the third in error (no output). */
static int fleet(tally *t) {
  const int members[3] = {0, 1, 2};
  const signed char pass3[3] = {KV_PASS, KV_PASS, KV_PASS}, error3[3] = {KV_PASS, KV_FAIL_TOLERANCE, KV_ERROR};
  const uint64_t aab[3] = {7, 7, 9}, aaa[3] = {7, 7, 7};
  unsigned char agrees[3];
  int distinct = kv_fleet_compare_case(members, 3, pass3, aab, 1, 0, agrees);
  if (!answer(t, distinct == 2 && agrees[0] == 1 && agrees[1] == 1 && agrees[2] == 0,
              "fingerprints A A B: %d distinct, agrees %d %d %d (expected 2, 1 1 0)", distinct, agrees[0], agrees[1],
              agrees[2]))
    return 0;
  distinct = kv_fleet_compare_case(members, 2, pass3, aab + 1, 1, 0, agrees);
  if (!answer(t, distinct == 2 && agrees[0] == 0 && agrees[1] == 0,
              "fingerprints A B: %d distinct, agrees %d %d (expected 2, 0 0: no majority)", distinct, agrees[0],
              agrees[1]))
    return 0;
  distinct = kv_fleet_compare_case(members, 3, error3, aaa, 1, 0, agrees);
  return answer(t, distinct == 1 && agrees[0] == 1 && agrees[1] == 1 && agrees[2] == 2,
                "fingerprints A A and an error: %d distinct, agrees %d %d %d (expected 1, 1 1 2)", distinct, agrees[0],
                agrees[1], agrees[2]);
}

static int hashes(tally *t) {
  unsigned char pattern[1001];
  for (int i = 0; i < 1001; i++) pattern[i] = (unsigned char)(i * 53 + 7);
  const uint64_t fp = kv_fingerprint("abc", 3), sum = kv_checksum_bytes(pattern, sizeof pattern, 0);
  const uint64_t split = kv_checksum_threaded(pattern, sizeof pattern, 0, 3, 64);
  return answer(t, fp == 0x44BC2CF5AD770999ULL, "the fingerprint of \"abc\" is %016llx, XXH64's is 44bc2cf5ad770999",
                (unsigned long long)fp) &&
         answer(t, sum == CHECKSUM_PATTERN, "the launch checksum of the pattern is %016llx, not %016llx",
                (unsigned long long)sum, CHECKSUM_PATTERN) &&
         answer(t, split == CHECKSUM_PATTERN, "the launch checksum of the pattern on three threads is %016llx, not %016llx",
                (unsigned long long)split, CHECKSUM_PATTERN);
}

int kv_selftest(const kv_run_settings *run, char *what, size_t len) {
  bench *b = KV_MALLOC(sizeof *b);
  if (!b) {
    snprintf(what, len, "out of memory");
    return -1;
  }
  tally t = {what, len, 0};
  setup(b, run);
  const int ok = verdicts(b, &t) && sampled(b, &t) && findings(b, &t) && reference_crosscheck(b, &t) &&
                 stats_crosscheck(b, &t) && conformance(b, &t) && fleet(&t) && hashes(&t);
  free(b);
  return ok ? t.passed : -1;
}
