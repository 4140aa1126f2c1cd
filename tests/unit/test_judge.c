/* test_judge.c - the per-case verdict (src/run/judge.c) on constructed inputs: a clean case
 * passes; each check fails its own case with its own status and message (output tolerance,
 * non-finite output, the auxiliary output's tolerance and non-finite rows, the rounding bias
 * in both forms and where it is not judged, an impossible timing and the warm timing that is
 * not judged, nondeterministic launches, a changed guard band, the GPU-vs-CPU reference
 * cross-check, a harness finding, a probe family's outcome and its contradiction of the
 * precision model), the most severe finding wins, the host statistics path (no device
 * statistics) judges the output, sampled rows included, and the conformance verdict
 * (conform.c): an accuracy failure equal to the emulation bit for bit is inaccurate only for
 * a reduced accumulator where the model is exact; one differing bit, an fp32 accumulator or
 * any other finding keeps it failing; a passing case never runs the emulation; and the
 * statistics of an output's parts (parts.c): on the host from all or sampled rows, the part
 * named in a tolerance message and in a non-finite one, the backend's part statistics checked against the whole
 * output's (each way they can fail to tile it), rows that do not split evenly. Removing any
 * branch of judge.c or parts.c fails a check here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "numerics/tolerance.h"
#include "run/judge.h"
#include "run/parts.h"
#include "test_util.h"

static int unbiased_yes(const kv_case *c) { (void)c; return 1; }
static int unbiased_no(const kv_case *c) { (void)c; return 0; }

static int outcome_contradicts;
/* An outcome hook (tcprobe's kind): outcome 7, in words, contradicting when told to. */
static long long outcome_seven(const kv_case *c, const void *out, int *contradicts, char *words, size_t n) {
  (void)c;
  *contradicts = outcome_contradicts;
  snprintf(words, n, "probe: seven from %g%s", (double)*(const float *)out, outcome_contradicts ? "; needs six" : "");
  return 7;
}

/* The conformance family: one fp16 input of 64 elements, the emulation copies it to the
 * output, writes a NaN with a payload at element 5 (an fp16 sum that overflowed) and counts
 * its calls. */
#define TINY_N 64
static int emulate_calls;
static int exact_yes(const kv_case *c) { (void)c; return 1; }
static int exact_no(const kv_case *c) { (void)c; return 0; }
static void tiny_tensors(const kv_case *c, kv_tensors *t) {
  (void)c;
  t->n_in = t->n_out = 1;
  t->in[0] = (kv_tensor_spec){.name = "x", .dtype = KV_FP16, .count = TINY_N, .dist = KV_DIST_NORMAL, .scale = 1.0};
  t->out[0] = (kv_tensor_spec){.name = "y", .dtype = KV_FP16, .count = TINY_N};
}
static kv_status tiny_emulate(const kv_case *c, void *const *in, void *const *out) {
  (void)c;
  emulate_calls++;
  memcpy(out[0], in[0], TINY_N * sizeof(uint16_t));
  ((uint16_t *)out[0])[5] = 0x7fff;
  return KV_OK;
}

static kv_family fam;
static kv_family_plan fp;
static kv_case kcase;
static kv_run_settings rs;
static kv_rank_info info;
static kv_cost cost;
static double times[3];
static float aux[4];
static double aux_ref[4], aux_mag[4];

/* The default tolerance's c2 of the case's precision (the auxiliary output's bound is c2 * aux_mag). */
static double tolerance_default_c2(void) { return kv_tolerance_default(kcase.prec).c2; }

/* A clean case: fp16:fp32, device statistics that pass, three timings of 1 s for 1 GFLOP and
 * 1 GB on a device of 1000 GB/s (roofline fraction 0.001), no findings, no auxiliary output. */
static void fresh(kv_case_data *d, kv_result *r) {
  memset(&fam, 0, sizeof fam);
  fam.name = "test";
  fam.unbiased = unbiased_yes;
  memset(&fp, 0, sizeof fp);
  fp.family = &fam;
  memset(&kcase, 0, sizeof kcase);
  kcase.fp = &fp;
  kcase.prec.storage = KV_FP16;
  kcase.prec.accum = KV_FP32;
  memset(&rs, 0, sizeof rs);
  rs.l2_flush = 1;
  rs.bias_limit = 0.1;
  memset(&info, 0, sizeof info);
  info.copy_gbps = 1000.0;
  info.matrix_tflops = NAN;
  info.cold_timing = 1; /* the cuda backend's L2-cold timing */
  memset(&cost, 0, sizeof cost);
  cost.flops = 1e9;
  cost.bytes = 1e9;
  cost.red_len = 64;
  memset(d, 0, sizeof *d);
  kv_result_init(r, 0, 0, 0);
  times[0] = times[1] = times[2] = 1.0;
  d->times = times;
  d->n_times = 3;
  d->ref_xcheck = NAN;
  d->has_stats = 1;
  d->n_rows = 4;
  d->row_len = 1;
  d->stats.max_bound_ratio = 0.5;
  d->stats.n_bias = 5000;
  d->stats.bias_ulp = 0.01;
  d->stats.bias_mag_ulp = -0.01;
  d->stats.bias_se = 0.004;
}

/* fa2-like auxiliary output: four rows, the last fully masked (-inf met exactly). */
static void with_aux(kv_case_data *d) {
  for (int i = 0; i < 3; i++) {
    aux_ref[i] = 2.0 + i;
    aux_mag[i] = 1.0;
    aux[i] = (float)aux_ref[i];
  }
  aux_ref[3] = -INFINITY;
  aux[3] = -INFINITY;
  aux_mag[3] = 0.0;
  d->aux = aux;
  d->aux_ref = aux_ref;
  d->aux_mag = aux_mag;
}

static int judge(kv_case_data *d, kv_result *r) {
  kv_status st = kv_judge_case(&kcase, &cost, &rs, &info, d, r);
  EXPECT(st == KV_OK, "kv_judge_case returned %d", (int)st);
  return r->status;
}

/* A clean case of a family with the outcome hook on output out; contradicts 0 or 1, or 2: not
 * contradicting, but the launches were nondeterministic. */
static void probe_case(kv_case_data *d, kv_result *r, float *out, int contradicts) {
  fresh(d, r);
  fam.outcome = outcome_seven;
  d->out = out;
  outcome_contradicts = contradicts == 1;
  if (contradicts == 2) snprintf(d->nondeterministic, sizeof d->nondeterministic, "launches differ");
  judge(d, r);
}

/* Eight outputs 1..8, each its reference rounded to fp16 (a clean output of 4 rows of 2). */
static void ramp(uint16_t *out, double *ref, double *mag) {
  for (int i = 0; i < 8; i++) {
    ref[i] = 1.0 + i;
    mag[i] = 0.0;
    out[i] = kv_f64_to_f16(ref[i]);
  }
}

#define EXPECT_STATUS(r, want)                                                                   \
  EXPECT((r).status == (want), "status %s, expected %s (message \"%s\")",                        \
         kv_status_name((kv_case_status)(r).status), kv_status_name(want), (r).message)

int main(void) {
  kv_case_data d;
  kv_result r;

  TEST("a clean case passes and its row carries the measured quantities");
  fresh(&d, &r);
  with_aux(&d);
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  EXPECT(r.message[0] == '\0', "message \"%s\" on a pass", r.message);
  EXPECT(fabs(r.roofline_frac - 0.001) < 1e-12, "roofline_frac %g, expected 0.001", r.roofline_frac);
  EXPECT(r.aux_bound_ratio == 0.0, "aux_bound_ratio %g of an exact auxiliary output", r.aux_bound_ratio);
  EXPECT(r.ref_rows == 4 && r.red_len == 64, "ref_rows %lld, red_len %g", (long long)r.ref_rows, r.red_len);

  TEST("output beyond its bound: fail_tolerance naming the element");
  fresh(&d, &r);
  d.stats.max_bound_ratio = 1.5;
  d.stats.worst_index = 17;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
  EXPECT_CONTAINS(r.message, "at element 17");

  TEST("a probe family's outcome: recorded, its words the message; a contradiction fails the case");
  {
    float probe_out = 3.0f;
    probe_case(&d, &r, &probe_out, 0);
    EXPECT_STATUS(r, KV_PASS);
    EXPECT(r.outcome == 7, "outcome %lld recorded", (long long)r.outcome);
    EXPECT_STREQ(r.message, "probe: seven from 3");
    probe_case(&d, &r, &probe_out, 1);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(r.outcome == 7, "outcome %lld recorded when it contradicts", (long long)r.outcome);
    EXPECT_CONTAINS(r.message, "needs six");
    probe_case(&d, &r, &probe_out, 2);
    EXPECT_STATUS(r, KV_FAIL_NONDETERMINISTIC);
  }

  TEST("NaN output where the reference is finite: fail_nonfinite");
  fresh(&d, &r);
  d.stats.n_nan = 1;
  d.stats.max_bound_ratio = INFINITY;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_NONFINITE);
  EXPECT_CONTAINS(r.message, "1 NaN, 0 Inf");

  TEST("auxiliary output beyond c2 * aux_mag: fail_tolerance naming the row");
  fresh(&d, &r);
  with_aux(&d);
  aux[1] = (float)(aux_ref[1] + 3.0 * tolerance_default_c2()); /* 3 x bound */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
  EXPECT_CONTAINS(r.message, "auxiliary output beyond its bound in 1 rows (worst row 1");
  EXPECT(fabs(r.aux_bound_ratio - 3.0) < 1e-5, "aux_bound_ratio %g, expected 3", r.aux_bound_ratio);
  EXPECT(fabs(r.aux_max_abs - 3.0 * tolerance_default_c2()) < 1e-5, "aux_max_abs %g", r.aux_max_abs);

  TEST("auxiliary output inside its bound passes");
  fresh(&d, &r);
  with_aux(&d);
  aux[2] = (float)(aux_ref[2] + 0.5 * tolerance_default_c2());
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);

  TEST("auxiliary output non-finite where its reference is finite, or finite where it is -inf");
  fresh(&d, &r);
  with_aux(&d);
  aux[0] = NAN;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_NONFINITE);
  EXPECT_CONTAINS(r.message, "auxiliary output: 1 rows non-finite");
  EXPECT(isinf(r.aux_bound_ratio), "aux_bound_ratio %g, expected inf", r.aux_bound_ratio);
  fresh(&d, &r);
  with_aux(&d);
  aux[3] = 0.0f; /* a fully masked row must keep -inf */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_NONFINITE);

  TEST("rounding bias: mean signed error, then mean error toward zero");
  fresh(&d, &r);
  d.stats.bias_ulp = -0.3;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_BIAS);
  EXPECT_CONTAINS(r.message, "directed rounding?");
  fresh(&d, &r);
  d.stats.bias_mag_ulp = -0.3;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_BIAS);
  EXPECT_CONTAINS(r.message, "toward zero");
  fresh(&d, &r);
  d.stats.bias_mag_ulp = 0.3;
  judge(&d, &r);
  EXPECT_CONTAINS(r.message, "away from zero");

  TEST("rounding bias within max(bias_limit, 6 se) passes");
  fresh(&d, &r);
  d.stats.bias_ulp = 0.25;
  d.stats.bias_se = 0.05; /* limit 0.3 */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);

  TEST("rounding bias not judged: limit 0, family says biased, fp32 storage, too few elements");
  fresh(&d, &r);
  d.stats.bias_ulp = -0.3;
  rs.bias_limit = 0.0;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r);
  d.stats.bias_ulp = -0.3;
  fam.unbiased = unbiased_no;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r);
  d.stats.bias_ulp = -0.3;
  kcase.prec.storage = KV_FP32;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r);
  d.stats.bias_ulp = -0.3;
  d.stats.n_bias = KV_BIAS_MIN_ELEMENTS - 1;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);

  TEST("a rate above KV_ROOFLINE_LIMIT x the ceiling: fail_timing; warm timing (a warm deck, the cpu backend) is not judged");
  fresh(&d, &r);
  info.copy_gbps = 0.5; /* 1 GFLOP/s achieved on a 0.5 GFLOP/s ceiling: 2 x */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TIMING);
  EXPECT_CONTAINS(r.message, "cannot be true");
  fresh(&d, &r);
  info.copy_gbps = 1.0 / (KV_ROOFLINE_LIMIT - 0.01); /* just below the limit */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r);
  info.copy_gbps = 0.5;
  rs.l2_flush = 0;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  rs.l2_flush = 1;
  fresh(&d, &r);
  info.cold_timing = 0; /* the cpu backend: its emulations may run from caches */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  info.cold_timing = 1;
  fresh(&d, &r);
  info.copy_gbps = 1000.0;
  info.matrix_tflops = 0.0005; /* the matrix rate is the lower ceiling: 0.5 GFLOP/s */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TIMING);
  kcase.prec.storage = KV_E4M3; /* 8-bit products: twice the bf16 rate, 1 GFLOP/s, is possible */
  fresh(&d, &r);
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r);
  info.matrix_tflops = 0.0005 / KV_FP8_RATE_FACTOR / (KV_ROOFLINE_LIMIT + 0.01); /* just above the limit */
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TIMING);
  kcase.prec.storage = KV_FP16;

  TEST("launches that disagree: fail_nondeterministic with the backend's words");
  fresh(&d, &r);
  snprintf(d.nondeterministic, sizeof d.nondeterministic, "launch 1 and launch 3 differ");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_NONDETERMINISTIC);
  EXPECT_STREQ(r.message, "launch 1 and launch 3 differ");

  TEST("a changed guard band: fail_out_of_bounds");
  fresh(&d, &r);
  snprintf(d.out_of_bounds, sizeof d.out_of_bounds, "guard band after o changed at byte 0");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_OUT_OF_BOUNDS);
  EXPECT_STREQ(r.message, "guard band after o changed at byte 0");

  TEST("GPU and CPU references disagree beyond KV_REF_XCHECK_BOUND: error (harness)");
  fresh(&d, &r);
  d.ref_xcheck = 10.0 * KV_REF_XCHECK_BOUND;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_ERROR);
  EXPECT_CONTAINS(r.message, "harness: GPU and CPU fp64 references disagree");
  EXPECT(r.ref_xcheck == d.ref_xcheck, "ref_xcheck %g not recorded", r.ref_xcheck);
  fresh(&d, &r);
  d.ref_xcheck = 0.5 * KV_REF_XCHECK_BOUND;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);
  fresh(&d, &r); /* a row one reference left unwritten (NaN poison) disagrees without bound */
  d.ref_xcheck = INFINITY;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_ERROR);
  EXPECT_CONTAINS(r.message, "references disagree by inf");
  fresh(&d, &r); /* NaN: the case was not cross-checked */
  d.ref_xcheck = NAN;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_PASS);

  TEST("a harness finding (device statistics vs host): error");
  fresh(&d, &r);
  snprintf(d.harness, sizeof d.harness, "device max_abs 1 vs host 2");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_ERROR);
  EXPECT_STREQ(r.message, "harness: device max_abs 1 vs host 2");

  TEST("the most severe finding wins, whatever the order of the checks");
  fresh(&d, &r);
  d.stats.max_bound_ratio = 2.0;
  d.stats.bias_ulp = -0.3;
  info.copy_gbps = 0.5;
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_TOLERANCE); /* over bias and timing */
  fresh(&d, &r);
  d.stats.n_inf = 1;
  snprintf(d.nondeterministic, sizeof d.nondeterministic, "launches differ");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_NONDETERMINISTIC); /* over non-finite */
  fresh(&d, &r);
  snprintf(d.nondeterministic, sizeof d.nondeterministic, "launches differ");
  snprintf(d.out_of_bounds, sizeof d.out_of_bounds, "guard changed");
  snprintf(d.harness, sizeof d.harness, "statistics disagree");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_ERROR); /* over out of bounds and nondeterminism */
  fresh(&d, &r);
  snprintf(d.out_of_bounds, sizeof d.out_of_bounds, "guard changed");
  snprintf(d.nondeterministic, sizeof d.nondeterministic, "launches differ");
  judge(&d, &r);
  EXPECT_STATUS(r, KV_FAIL_OUT_OF_BOUNDS);

  TEST("conformance: an accuracy failure equal to the emulation, fp16:fp16 where the model is exact: inaccurate");
  {
    uint16_t out[TINY_N];
    kv_tensors t;
    memset(&t, 0, sizeof t);
    tiny_tensors(&kcase, &t);
#define CONFORM_CASE(acc, exact, ratio, nan)                                                       \
  do {                                                                                         \
    fresh(&d, &r);                                                                             \
    fam.tensors = tiny_tensors;                                                                \
    fam.emulate = tiny_emulate;                                                                \
    fam.emulation_exact = (exact);                                                             \
    kcase.prec.accum = (acc);                                                                  \
    kcase.key = 99;                                                                            \
    rs.seed = 7;                                                                               \
    d.out = out;                                                                               \
    d.out_count = TINY_N;                                                                      \
    d.out_type = KV_FP16;                                                                      \
    d.stats.max_bound_ratio = (ratio);                                                         \
    d.stats.n_nan = (nan);                                                                     \
    emulate_calls = 0;                                                                         \
  } while (0)
    EXPECT(kv_generate_host(&t.in[0], kv_stream_key(7, 99, 0), out) == KV_OK, "input generation");
    out[5] = 0x7e00; /* the GPU's canonical NaN where the emulation writes one with a payload */
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 1);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_INACCURATE);
    EXPECT_CONTAINS(r.message, "equals the emulation; 1 NaN");
    EXPECT(r.emu_max_ulp == 0.0 && emulate_calls == 1, "emu_max_ulp %g, %d emulations", r.emu_max_ulp, emulate_calls);
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 0);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_INACCURATE);
    EXPECT_CONTAINS(r.message, "equals the emulation; output beyond its bound: 3 x bound");

    TEST("conformance: a NaN where the emulation writes a number keeps fail_nonfinite");
    const uint16_t keep = out[6];
    out[6] = 0x7e00;
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 2);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_NONFINITE);
    EXPECT_CONTAINS(r.message, "not the model: 1 elements differ from the emulation (first 6,");
    EXPECT(isinf(r.emu_max_ulp), "emu_max_ulp %g of a NaN against a number", r.emu_max_ulp);
    out[6] = keep;

    TEST("conformance: one element one ulp from the emulation keeps fail_tolerance, the deviation recorded");
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 0);
    out[17] ^= 1;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT_CONTAINS(r.message, "not the model: 1 elements differ from the emulation (first 17, max 1 ulp)");
    EXPECT(r.emu_max_ulp == 1.0, "emu_max_ulp %g, expected 1", r.emu_max_ulp);
    out[17] ^= 1;

    TEST("conformance not judged: fp32 accumulation, a model that is not exact, a case that passes");
    CONFORM_CASE(KV_FP32, exact_yes, 3.0, 0);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(isnan(r.emu_max_ulp) && emulate_calls == 0, "fp32: emu_max_ulp %g, %d emulations", r.emu_max_ulp,
           emulate_calls);
    CONFORM_CASE(KV_FP16, exact_no, 3.0, 0);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(emulate_calls == 0, "not exact: %d emulations", emulate_calls);
    CONFORM_CASE(KV_FP16, exact_yes, 0.5, 0);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_PASS);
    EXPECT(isnan(r.emu_max_ulp) && emulate_calls == 0, "pass: emu_max_ulp %g, %d emulations", r.emu_max_ulp,
           emulate_calls);

    TEST("conformance: every other finding still fails an inaccurate case");
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 0);
    snprintf(d.nondeterministic, sizeof d.nondeterministic, "launches differ");
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_NONDETERMINISTIC);
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 0);
    info.copy_gbps = 0.5;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TIMING);
    CONFORM_CASE(KV_FP16, exact_yes, 3.0, 0);
    snprintf(d.out_of_bounds, sizeof d.out_of_bounds, "guard changed");
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_OUT_OF_BOUNDS);
#undef CONFORM_CASE
  }

  TEST("host statistics (no device statistics): all rows, then a sample of rows");
  {
    uint16_t out[8];
    double ref[8], mag[8];
    ramp(out, ref, mag);
    fresh(&d, &r);
    d.has_stats = 0;
    d.out = out;
    d.out_type = KV_FP16;
    d.out_count = 8;
    d.ref = ref;
    d.mag = mag;
    d.n_rows = 4;
    d.row_len = 2;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_PASS);
    EXPECT(r.stats.n_checked == 8, "n_checked %lld, expected 8", (long long)r.stats.n_checked);
    out[5] = kv_f64_to_f16(ref[5] + 0.25); /* far beyond 2 u |ref| */
    fresh(&d, &r);
    d.has_stats = 0;
    d.out = out;
    d.out_type = KV_FP16;
    d.ref = ref;
    d.mag = mag;
    d.n_rows = 4;
    d.row_len = 2;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(r.stats.worst_index == 5, "worst_index %lld, expected 5", (long long)r.stats.worst_index);
    /* sampled rows 2 and 3 of 4: the reference holds their 4 values, the output all 8 */
    size_t rows[2] = {2, 3};
    double sref[4] = {ref[4], ref[5], ref[6], ref[7]}, smag[4] = {0, 0, 0, 0};
    fresh(&d, &r);
    d.has_stats = 0;
    d.out = out;
    d.out_type = KV_FP16;
    d.ref = sref;
    d.mag = smag;
    d.rows = rows;
    d.n_rows = 2;
    d.row_len = 2;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(r.stats.worst_index == 5, "sampled: worst_index %lld, expected 5 (row 2, column 1)",
           (long long)r.stats.worst_index);
    EXPECT(r.ref_rows == 2, "ref_rows %lld, expected 2", (long long)r.ref_rows);
  }

  TEST("parts of the output: host statistics of all and of sampled rows, the part in the message, the tiling check");
  {
    static const char *const two[] = {"a", "b", NULL};
    uint16_t out[8];
    double ref[8], mag[8];
    ramp(out, ref, mag);
    out[5] = kv_f64_to_f16(ref[5] + 0.25);
#define PARTS_CASE()          \
  fresh(&d, &r);              \
  fam.out_parts = two;        \
  cost.rows = 4;              \
  cost.row_len = 2;           \
  d.has_stats = 0;            \
  d.out = out;                \
  d.out_type = KV_FP16;       \
  d.ref = ref;                \
  d.mag = mag;                \
  d.n_rows = 4;               \
  d.row_len = 2;
    PARTS_CASE()
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(strstr(r.message, "at element 5 (b)") != NULL, "message \"%s\" names element 5 of part b", r.message);
    EXPECT(r.part_stats[0][KV_PART_n_checked] == 4 && r.part_stats[1][KV_PART_n_checked] == 4,
           "parts checked %g and %g, expected 4 each", r.part_stats[0][KV_PART_n_checked], r.part_stats[1][KV_PART_n_checked]);
    EXPECT(r.part_stats[0][KV_PART_max_bound_ratio] == 0.0 && r.part_stats[1][KV_PART_worst_index] == 5.0 &&
               r.part_stats[1][KV_PART_max_bound_ratio] == r.stats.max_bound_ratio,
           "part a's bound ratio %g (expected 0), part b's worst index %g (expected 5)",
           r.part_stats[0][KV_PART_max_bound_ratio], r.part_stats[1][KV_PART_worst_index]);
    EXPECT(isnan(r.part_stats[2][KV_PART_max_abs]), "a third part's statistics %g, expected NaN", r.part_stats[2][KV_PART_max_abs]);
    /* sampled rows 1 and 2: one in each part, the reference holds their 4 values */
    size_t rows[2] = {1, 2};
    double sref[4] = {ref[2], ref[3], ref[4], ref[5]}, smag[4] = {0, 0, 0, 0};
    PARTS_CASE()
    d.ref = sref;
    d.mag = smag;
    d.rows = rows;
    d.n_rows = 2;
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
    EXPECT(r.part_stats[0][KV_PART_n_checked] == 2 && r.part_stats[1][KV_PART_n_checked] == 2 &&
               r.part_stats[1][KV_PART_worst_index] == 5.0 && r.part_stats[0][KV_PART_worst_index] == 2.0,
           "sampled parts: checked %g, %g (expected 2, 2), worst %g, %g (expected 2, 5)",
           r.part_stats[0][KV_PART_n_checked], r.part_stats[1][KV_PART_n_checked],
           r.part_stats[0][KV_PART_worst_index], r.part_stats[1][KV_PART_worst_index]);
    /* a NaN output in part b: the message names the part and its count */
    out[6] = 0x7e00;
    PARTS_CASE()
    judge(&d, &r);
    EXPECT_STATUS(r, KV_FAIL_NONFINITE);
    EXPECT(strstr(r.message, "1 NaN, 0 Inf outputs where the reference is finite; in b 1") != NULL,
           "message \"%s\" names part b's NaN", r.message);
    out[6] = kv_f64_to_f16(ref[6]);
    /* the backend's part statistics: the host's pass the tiling check; each broken field fails it */
    kv_errstats good[2];
    PARTS_CASE()
    judge(&d, &r);
    const kv_errstats whole = r.stats;
    kv_tolerance tol = kv_tolerance_default(kcase.prec);
    EXPECT(kv_parts_host_stats(&kcase, &cost, &tol, &d, good) == KV_OK, "host part statistics");
    for (int k = 0; k < 6; k++) {
      fresh(&d, &r);
      fam.out_parts = two;
      cost.rows = 4;
      cost.row_len = 2;
      d.stats = whole;
      d.has_part_stats = 1;
      memcpy(d.part_stats, good, sizeof good);
      if (k == 1) d.part_stats[0].n_checked++;
      if (k == 2) d.part_stats[0].hist[3]++;
      if (k == 3) d.part_stats[1].worst_index = 6;
      if (k == 4) d.part_stats[0].bias_ulp += 0.25;
      if (k == 5) cost.rows = 5;
      judge(&d, &r);
      if (k == 0) {
        EXPECT_STATUS(r, KV_FAIL_TOLERANCE);
      } else {
        EXPECT_STATUS(r, KV_ERROR);
        EXPECT(strncmp(r.message, "harness: parts: ", 16) == 0, "break %d: message \"%s\"", k, r.message);
      }
    }
    /* bias sums that cancel to nearly zero over the whole output: the parts' totals differ
     * from the whole's by their summation order's rounding (1e-8 here), far beyond 1e-12 of
     * the total, but not beyond the rounding that 2e6 terms of about 0.3 ulp allow */
    kv_errstats w2, p2[2];
    memset(&w2, 0, sizeof w2);
    w2.n_checked = w2.n_bias = 2000000;
    w2.bias_ulp = w2.bias_mag_ulp = 1e-12;
    w2.bias_se = sqrt(0.09 * 2e6) / 2e6;
    w2.worst_index = -1;
    w2.max_bound_ratio = 0.0;
    p2[0] = p2[1] = w2;
    p2[0].n_checked = p2[0].n_bias = p2[1].n_checked = p2[1].n_bias = 1000000;
    p2[0].bias_ulp = p2[0].bias_mag_ulp = 0.1;
    p2[1].bias_ulp = p2[1].bias_mag_ulp = -0.1 + 2e-12 + 1e-14;
    char why[KV_MESSAGE_LEN];
    kv_parts_consistency(&w2, p2, 2, why, sizeof why);
    EXPECT(why[0] == '\0', "cancelling bias sums within their rounding: \"%s\"", why);
    p2[1].bias_ulp += 1e-6; /* one element a whole ulp off in 1e6: beyond any rounding */
    kv_parts_consistency(&w2, p2, 2, why, sizeof why);
    EXPECT(strstr(why, "bias sums") != NULL, "bias sums off by one ulp: \"%s\"", why);
    /* a family without parts records none */
    fresh(&d, &r);
    judge(&d, &r);
    EXPECT_STATUS(r, KV_PASS);
    EXPECT(isnan(r.part_stats[0][KV_PART_max_abs]), "no parts: statistics %g, expected NaN", r.part_stats[0][KV_PART_max_abs]);
#undef PARTS_CASE
  }
  return TEST_RETURN();
}
