/* test_tcprobe.c - the tcprobe family on the CPU, for fp16, bf16 and (with their own series)
 * e4m3, e5m2: every probe's decoder names the hypothesis whose arithmetic (kv_tcp_unit under
 * that hypothesis) produced the outputs - widths, rounding directions, block sizes, raw
 * exponents, rounded products, flushed subnormals, the non-monotone truncating sum, and for FP8
 * an accumulator narrower than fp32; crafted outputs no hypothesis produces decode as "other" /
 * "mixed" / "inconsistent"; the model's unit equals the emulation (the gemm emulation's fp32
 * loop, for FP8 with its 14-bit truncation) bit for bit and reports outcomes the model allows;
 * the outcome hook fails exactly the contradicting outputs; the fp64 reference is exact (equals
 * double-double); descriptor, rules, counts, tensors and path tags. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "families/tcprobe/tcprobe.h"
#include "families/testkit/family_checks.h"
#include "tests/unit/test_util.h"

static const kv_dtype types[2] = {KV_FP16, KV_BF16};
static const kv_dtype fp8_types[2] = {KV_E4M3, KV_E5M2};

/* A hypothesis: fused blocks of `block`, `width` bits, the given roundings. */
static kv_tcp_unit hyp(int width, int block, int align, int final) {
  kv_tcp_unit u = {.width = width, .align_round = align, .final_round = final, .block = block};
  return u;
}

/* The outcome a probe decodes from the outputs of hypothesis u. */
static int decode_under(const kv_tcp_unit *u, int probe, kv_dtype st, float *d_out) {
  kv_tcp_operands ops[KV_TCP_MAX_SUB];
  float d[KV_TCP_MAX_SUB];
  const int n = kv_tcp_subtests(probe, st);
  kv_tcp_build(probe, st, ops);
  for (int i = 0; i < n; i++) d[i] = kv_tcp_unit_eval(u, &ops[i], st);
  if (d_out) memcpy(d_out, d, (size_t)n * sizeof *d);
  return kv_tcp_decode(probe, st, ops, d, n);
}

static void expect_decodes(const kv_tcp_unit *u, int probe, kv_dtype st, int want, const char *what) {
  const int got = decode_under(u, probe, st, NULL);
  char gn[64], wn[64];
  EXPECT(got == want, "%s %s under %s: decoded %d (%s), want %d (%s)", kv_tcp_probe_names[probe], kv_dtype_name(st),
         what, got, kv_tcp_outcome_name(probe, st, got, gn, sizeof gn), want,
         kv_tcp_outcome_name(probe, st, want, wn, sizeof wn));
}


/* The products and subnormal probes under u (exact products, subnormals kept), then with
 * each property broken in turn. */
static void expect_products_and_subnormals(kv_tcp_unit u, kv_dtype st) {
  expect_decodes(&u, KV_TCP_PRODUCTS, st, 0, "exact products");
  expect_decodes(&u, KV_TCP_SUBNORMAL_IN, st, 0, "subnormals kept");
  expect_decodes(&u, KV_TCP_SUBNORMAL_OUT, st, 0, "subnormals kept");
  u.round_products = 1;
  expect_decodes(&u, KV_TCP_PRODUCTS, st, 1, "products rounded to the input type");
  u.round_products = 0, u.flush_in = 1;
  expect_decodes(&u, KV_TCP_SUBNORMAL_IN, st, 1, "subnormal inputs flushed");
  u.flush_in = 0, u.flush_out = 1;
  expect_decodes(&u, KV_TCP_SUBNORMAL_OUT, st, 1, "fp32 subnormals flushed");
}
static void test_hypotheses(kv_dtype st) {
  char what[96];
  for (int w = 16; w <= 43; w++) {
    const kv_tcp_unit u = hyp(w, 16, KV_TCP_RZ, KV_TCP_RZ);
    snprintf(what, sizeof what, "width %d", w);
    expect_decodes(&u, KV_TCP_ALIGN_BITS, st, w, what);
  }
  const kv_tcp_unit exact16 = hyp(0, 16, KV_TCP_RZ, KV_TCP_RZ);
  expect_decodes(&exact16, KV_TCP_ALIGN_BITS, st, 44, "exact alignment");
  static const int align[4] = {KV_TCP_RZ, KV_TCP_RNE, KV_TCP_RD, KV_TCP_RU};
  static const int align_want[4] = {KV_TCP_RZ, KV_TCP_RN, KV_TCP_RD, KV_TCP_RU};
  static const int finals[5] = {KV_TCP_RZ, KV_TCP_RNE, KV_TCP_RNA, KV_TCP_RD, KV_TCP_RU};
  static const int widths[4] = {20, 24, 27, 33};
  for (int wi = 0; wi < 4; wi++) {
    for (int a = 0; a < 4; a++) {
      const kv_tcp_unit u = hyp(widths[wi], 16, align[a], KV_TCP_RZ);
      snprintf(what, sizeof what, "width %d, alignment rounding %d", widths[wi], align[a]);
      expect_decodes(&u, KV_TCP_ACC_ROUND, st, align_want[a], what);
    }
    for (int f = 0; f < 5 && widths[wi] >= 24; f++) {
      const kv_tcp_unit u = hyp(widths[wi], 16, KV_TCP_RZ, finals[f]);
      snprintf(what, sizeof what, "width %d, final rounding %d", widths[wi], finals[f]);
      expect_decodes(&u, KV_TCP_FINAL_ROUND, st, finals[f], what);
    }
    for (int raw = 0; raw < 2; raw++) {
      kv_tcp_unit u = hyp(widths[wi], 16, KV_TCP_RZ, KV_TCP_RZ);
      u.raw_exponent = raw;
      snprintf(what, sizeof what, "width %d, raw exponent %d", widths[wi], raw);
      expect_decodes(&u, KV_TCP_NORMALISATION, st, raw, what);
    }
  }
  expect_decodes(&exact16, KV_TCP_NORMALISATION, st, 2, "exact alignment");
  expect_decodes(&exact16, KV_TCP_ACC_ROUND, st, KV_TCP_UNSEEN, "exact alignment");
  for (int b = 1; b <= 16; b++) {
    const kv_tcp_unit u = hyp(24, b, KV_TCP_RZ, KV_TCP_RZ);
    snprintf(what, sizeof what, "blocks of %d", b);
    expect_decodes(&u, KV_TCP_BLOCK, st, b, what);
  }
  const kv_tcp_unit u = hyp(24, 16, KV_TCP_RZ, KV_TCP_RZ);
  expect_decodes(&u, KV_TCP_MONOTONE, st, 1, "width 24 truncation");
  expect_products_and_subnormals(u, st);
  const kv_tcp_unit wide = hyp(30, 16, KV_TCP_RZ, KV_TCP_RZ);
  expect_decodes(&wide, KV_TCP_MONOTONE, st, 0, "width 30 (beyond the probe's reach)");
}

/* Outputs no hypothesis produces: the decoders say so instead of naming one. */
static void test_crafted(kv_dtype st) {
  const kv_tcp_unit trunc24 = hyp(24, 16, KV_TCP_RZ, KV_TCP_RZ);
  kv_tcp_operands ops[KV_TCP_MAX_SUB];
  float d[KV_TCP_MAX_SUB];
  int n = kv_tcp_subtests(KV_TCP_SUBNORMAL_IN, st);
  decode_under(&trunc24, KV_TCP_SUBNORMAL_IN, st, d);
  kv_tcp_build(KV_TCP_SUBNORMAL_IN, st, ops);
  d[1] = 0.0f;
  EXPECT(kv_tcp_decode(KV_TCP_SUBNORMAL_IN, st, ops, d, n) == 2, "%s: one flushed subnormal is mixed",
         kv_dtype_name(st));
  n = kv_tcp_subtests(KV_TCP_FINAL_ROUND, st);
  decode_under(&trunc24, KV_TCP_FINAL_ROUND, st, d);
  kv_tcp_build(KV_TCP_FINAL_ROUND, st, ops);
  d[2] = nextafterf(nextafterf(d[2], -INFINITY), -INFINITY);
  EXPECT(kv_tcp_decode(KV_TCP_FINAL_ROUND, st, ops, d, n) == KV_TCP_OTHER_ROUNDING,
         "%s: a sum two ulps off is no rounding", kv_dtype_name(st));
  n = kv_tcp_subtests(KV_TCP_BLOCK, st);
  const kv_tcp_unit b4 = hyp(24, 4, KV_TCP_RZ, KV_TCP_RZ);
  decode_under(&b4, KV_TCP_BLOCK, st, d);
  kv_tcp_build(KV_TCP_BLOCK, st, ops);
  d[4] = (float)kv_tcp_exact(&ops[4], st, NULL); /* q at k = 6 survives too */
  EXPECT(kv_tcp_decode(KV_TCP_BLOCK, st, ops, d, n) == 0, "%s: survivors at 4, 6, 8, 12 are inconsistent",
         kv_dtype_name(st));
  n = kv_tcp_subtests(KV_TCP_ACC_ROUND, st);
  decode_under(&trunc24, KV_TCP_ACC_ROUND, st, d);
  kv_tcp_build(KV_TCP_ACC_ROUND, st, ops);
  for (int i = 0; i < n; i++)
    if (kv_tcp_exact(&ops[i], st, NULL) > 0 && d[i] != (float)kv_tcp_exact(&ops[i], st, NULL)) {
      d[i] = (float)(2.0 * kv_tcp_exact(&ops[i], st, NULL)); /* one positive sum rounded away */
      break;
    }
  EXPECT(kv_tcp_decode(KV_TCP_ACC_ROUND, st, ops, d, n) == KV_TCP_OTHER_ROUNDING,
         "%s: away on one side only, toward zero on the other is no rounding", kv_dtype_name(st));
}

/* FP8 (k 32, its own series): widths 10..29 of the fused alignment and 10..23 of the accumulator
 * after the sum, the alignment's and the final rounding (unseen once C loses bits), raw
 * exponents, blocks 1..32, rounded products, flushed subnormals, monotonicity. */
static void test_hypotheses_fp8(kv_dtype st) {
  char what[96];
  for (int w = 8; w <= 29; w++) {
    const kv_tcp_unit u = hyp(w, 32, KV_TCP_RZ, KV_TCP_RZ);
    snprintf(what, sizeof what, "width %d", w);
    expect_decodes(&u, KV_TCP_ALIGN_BITS, st, w < 9 ? 9 : w, what);
    expect_decodes(&u, KV_TCP_MONOTONE, st, w >= 10 && w <= 27, what);
  }
  const kv_tcp_unit exact = hyp(0, 32, KV_TCP_RZ, KV_TCP_RZ);
  expect_decodes(&exact, KV_TCP_ALIGN_BITS, st, 29, "exact alignment");
  expect_decodes(&exact, KV_TCP_MONOTONE, st, 0, "exact alignment");
  expect_decodes(&exact, KV_TCP_ACC_ROUND, st, KV_TCP_UNSEEN, "exact alignment");
  expect_decodes(&exact, KV_TCP_NORMALISATION, st, 2, "exact alignment");
  for (int b = 9; b <= 23; b++) {
    kv_tcp_unit u = kv_tcp_model; /* fp32 adds */
    u.acc_bits = b;
    snprintf(what, sizeof what, "fp32 adds, accumulator of %d bits", b);
    expect_decodes(&u, KV_TCP_ALIGN_BITS, st, b, what);
    expect_decodes(&u, KV_TCP_FINAL_ROUND, st, KV_TCP_UNSEEN, what);
    u = hyp(b + 3, 32, KV_TCP_RZ, KV_TCP_RZ);
    u.acc_bits = b;
    snprintf(what, sizeof what, "width %d, accumulator of %d bits", b + 3, b);
    expect_decodes(&u, KV_TCP_ALIGN_BITS, st, b, what);
    u = hyp(b - 3, 32, KV_TCP_RZ, KV_TCP_RZ);
    u.acc_bits = b;
    snprintf(what, sizeof what, "width %d, accumulator of %d bits", b - 3, b);
    expect_decodes(&u, KV_TCP_ALIGN_BITS, st, b - 3 < 9 ? 9 : b - 3, what);
  }
  static const int align[4] = {KV_TCP_RZ, KV_TCP_RNE, KV_TCP_RD, KV_TCP_RU};
  static const int align_want[4] = {KV_TCP_RZ, KV_TCP_RN, KV_TCP_RD, KV_TCP_RU};
  static const int finals[5] = {KV_TCP_RZ, KV_TCP_RNE, KV_TCP_RNA, KV_TCP_RD, KV_TCP_RU};
  static const int widths[6] = {9, 10, 14, 20, 24, 28};
  for (int wi = 0; wi < 6; wi++) {
    for (int a = 0; a < 4; a++) {
      const kv_tcp_unit u = hyp(widths[wi], 32, align[a], KV_TCP_RZ);
      snprintf(what, sizeof what, "width %d, alignment rounding %d", widths[wi], align[a]);
      expect_decodes(&u, KV_TCP_ACC_ROUND, st, align_want[a], what);
    }
    for (int f = 0; f < 5; f++) {
      const kv_tcp_unit u = hyp(widths[wi], 32, KV_TCP_RZ, finals[f]);
      snprintf(what, sizeof what, "width %d, final rounding %d", widths[wi], finals[f]);
      expect_decodes(&u, KV_TCP_FINAL_ROUND, st, widths[wi] >= 24 ? finals[f] : KV_TCP_UNSEEN, what);
    }
    for (int raw = 0; raw < 2; raw++) {
      kv_tcp_unit u = hyp(widths[wi], 32, KV_TCP_RZ, KV_TCP_RZ);
      u.raw_exponent = raw;
      snprintf(what, sizeof what, "width %d, raw exponent %d", widths[wi], raw);
      expect_decodes(&u, KV_TCP_NORMALISATION, st, raw, what);
    }
  }
  expect_decodes(&exact, KV_TCP_FINAL_ROUND, st, KV_TCP_RZ, "exact alignment, truncated sum");
  for (int b = 1; b <= 32; b++) {
    const kv_tcp_unit u = hyp(b % 2 ? 24 : 14, b, KV_TCP_RZ, KV_TCP_RZ);
    snprintf(what, sizeof what, "blocks of %d", b);
    expect_decodes(&u, KV_TCP_BLOCK, st, b, what);
  }
  expect_products_and_subnormals(hyp(14, 32, KV_TCP_RZ, KV_TCP_RZ), st);
}

/* FP8 outputs no hypothesis produces: a width series with a hole, one of the two final_round
 * C-alone sub-tests changed, a normalisation two bits apart, and the fp16/bf16 set (subnormals, final rounding, blocks,
 * alignment rounding) on the FP8 sub-tests. */
static void test_crafted_fp8(kv_dtype st) {
  kv_tcp_operands ops[KV_TCP_MAX_SUB];
  float d[KV_TCP_MAX_SUB];
  const kv_tcp_unit w14 = hyp(14, 32, KV_TCP_RZ, KV_TCP_RZ), w26 = hyp(26, 32, KV_TCP_RZ, KV_TCP_RZ);
  int n = kv_tcp_subtests(KV_TCP_ALIGN_BITS, st);
  kv_tcp_build(KV_TCP_ALIGN_BITS, st, ops);
  for (int series = 0; series < 2; series++) {
    decode_under(&w14, KV_TCP_ALIGN_BITS, st, d);
    const int i = series ? kv_tcp_align_n(st) + 8 : 8; /* a width of 18 kept after 15 was lost */
    d[i] = (float)kv_tcp_exact(&ops[i], st, NULL);
    EXPECT(kv_tcp_decode(KV_TCP_ALIGN_BITS, st, ops, d, n) == 0, "%s: a hole in width series %d is inconsistent",
           kv_dtype_name(st), series);
  }
  n = kv_tcp_subtests(KV_TCP_FINAL_ROUND, st);
  kv_tcp_build(KV_TCP_FINAL_ROUND, st, ops);
  decode_under(&w14, KV_TCP_FINAL_ROUND, st, d);
  d[n - 1] = (float)kv_tcp_exact(&ops[n - 1], st, NULL);
  EXPECT(kv_tcp_decode(KV_TCP_FINAL_ROUND, st, ops, d, n) == KV_TCP_OTHER_ROUNDING,
         "%s: C kept with one sign, not the other, is no rounding", kv_dtype_name(st));
  decode_under(&w26, KV_TCP_FINAL_ROUND, st, d);
  d[n - 2] = 0.0f;
  EXPECT(kv_tcp_decode(KV_TCP_FINAL_ROUND, st, ops, d, n) == KV_TCP_OTHER_ROUNDING,
         "%s: C lost with one sign only is no rounding", kv_dtype_name(st));
  n = kv_tcp_subtests(KV_TCP_NORMALISATION, st);
  kv_tcp_build(KV_TCP_NORMALISATION, st, ops);
  decode_under(&w14, KV_TCP_NORMALISATION, st, d);
  for (int i = 5; i < 7; i++) d[i] = (float)kv_tcp_exact(&ops[i], st, NULL); /* P' series two widths ahead */
  EXPECT(kv_tcp_decode(KV_TCP_NORMALISATION, st, ops, d, n) == 3, "%s: two more bits on raw exponents is other",
         kv_dtype_name(st));
  test_crafted(st);
}

/* The model's unit is the emulation's arithmetic bit for bit, its outcomes are the model's, and
 * the reference is exact. */
static void test_model(kv_dtype st) {
  static const int want16[KV_TCP_NPROBES] = {0, 24, KV_TCP_RN, KV_TCP_RNE, 0, 0, 0, 1, 0};
  /* FP8: what the H200's FP8 wgmma shows - 14 bits aligned on the raw exponent and truncated,
   * no final rounding seen, one fused sum of 32, not monotone */
  static const int want8[KV_TCP_NPROBES] = {0, 14, KV_TCP_RZ, KV_TCP_UNSEEN, 1, 0, 0, 32, 1};
  const int *want = kv_tcp_is_fp8(st) ? want8 : want16;
  for (int p = 0; p < KV_TCP_NPROBES; p++) {
    char spec[128];
    snprintf(spec, sizeof spec, "probe=%s precision=%s:fp32 instruction=wgmma", kv_tcp_probe_names[p],
             kv_dtype_name(st));
    fcase f;
    fcase_make(&f, &kv_family_tcprobe, spec);
    fcase_emulate(&f);
    fcase_reference(&f, 0);
    float d[KV_TCP_MAX_SUB];
    const int o = decode_under(kv_tcp_model_of(st), p, st, d);
    const int n = kv_tcp_subtests(p, st);
    int differ = 0, inexact = 0;
    for (int i = 0; i < n; i++) differ += memcmp(&d[i], (const float *)f.out[0] + i, sizeof(float)) != 0;
    EXPECT(differ == 0, "%s: the model's unit differs from the emulation in %d of %d sub-tests", spec, differ, n);
    EXPECT(o == want[p], "%s: the model decodes as %d, want %d", spec, o, want[p]);
    EXPECT(kv_tcp_model_allows(p, st, o), "%s: the model allows its own outcome", spec);
    char why[96] = "";
    int bad = -1;
    EXPECT(kv_family_tcprobe.outcome(&f.c, f.out[0], &bad, why, sizeof why) == o && bad == 0,
           "%s: the outcome hook decodes the emulation without complaint (%s)", spec, why);
    EXPECT(strncmp(why, kv_tcp_probe_names[p], strlen(kv_tcp_probe_names[p])) == 0, "%s: outcome in words: %s", spec,
           why);
    double ref[KV_TCP_MAX_SUB];
    memcpy(ref, f.ref, (size_t)n * sizeof *ref);
    fcase_reference(&f, 1);
    for (int i = 0; i < n; i++) inexact += ref[i] != f.ref[i];
    EXPECT(inexact == 0, "%s: fp64 reference differs from double-double in %d sub-tests", spec, inexact);
    fcase_free(&f);
  }
}

/* The outcome hook fails a contradiction and says which probe and why. */
static void test_outcome_hook(void) {
  fcase f;
  fcase_make(&f, &kv_family_tcprobe, "probe=subnormal_in precision=bf16:fp32");
  kv_tcp_unit u = hyp(24, 16, KV_TCP_RZ, KV_TCP_RZ);
  u.flush_in = 1;
  decode_under(&u, KV_TCP_SUBNORMAL_IN, KV_BF16, f.out[0]);
  char why[96] = "";
  int bad = 0;
  EXPECT(kv_family_tcprobe.outcome(&f.c, f.out[0], &bad, why, sizeof why) == 1 && bad, "flushed inputs contradict");
  EXPECT_CONTAINS(why, "subnormal_in: flushed");
  fcase_free(&f);
  fcase_make(&f, &kv_family_tcprobe, "probe=align_bits precision=fp16:fp32");
  u = hyp(22, 16, KV_TCP_RZ, KV_TCP_RZ);
  decode_under(&u, KV_TCP_ALIGN_BITS, KV_FP16, f.out[0]);
  bad = 0;
  EXPECT(kv_family_tcprobe.outcome(&f.c, f.out[0], &bad, why, sizeof why) == 22 && bad, "22 bits contradict");
  EXPECT_CONTAINS(why, "22 bits (-2 extra)");
  fcase_free(&f);
  fcase_make(&f, &kv_family_tcprobe, "probe=align_bits precision=e4m3:fp32 instruction=wgmma");
  u = hyp(13, 32, KV_TCP_RZ, KV_TCP_RZ);
  decode_under(&u, KV_TCP_ALIGN_BITS, KV_E4M3, f.out[0]);
  bad = 0;
  EXPECT(kv_family_tcprobe.outcome(&f.c, f.out[0], &bad, why, sizeof why) == 13 && bad, "13 FP8 bits contradict");
  EXPECT_CONTAINS(why, "align_bits: 13 bits; the model needs at least 14 bits");
  u = hyp(14, 32, KV_TCP_RZ, KV_TCP_RZ);
  decode_under(&u, KV_TCP_ALIGN_BITS, KV_E4M3, f.out[0]);
  bad = 1;
  EXPECT(kv_family_tcprobe.outcome(&f.c, f.out[0], &bad, why, sizeof why) == 14 && !bad, "14 FP8 bits hold (%s)", why);
  fcase_free(&f);
  for (int t = 0; t < 4; t++) {
    const kv_dtype st = t < 2 ? types[t] : fp8_types[t - 2];
    EXPECT(!kv_tcp_model_allows(KV_TCP_ACC_ROUND, st, KV_TCP_OTHER_ROUNDING) &&
               !kv_tcp_model_allows(KV_TCP_FINAL_ROUND, st, KV_TCP_OTHER_ROUNDING) &&
               kv_tcp_model_allows(KV_TCP_FINAL_ROUND, st, KV_TCP_RD) &&
               kv_tcp_model_allows(KV_TCP_FINAL_ROUND, st, KV_TCP_UNSEEN) &&
               kv_tcp_model_allows(KV_TCP_ACC_ROUND, st, KV_TCP_RZ),
           "%s: the model needs faithful rounding, any direction", kv_dtype_name(st));
    EXPECT(!kv_tcp_model_allows(KV_TCP_PRODUCTS, st, 1) && !kv_tcp_model_allows(KV_TCP_SUBNORMAL_OUT, st, 2) &&
               !kv_tcp_model_allows(KV_TCP_SUBNORMAL_IN, st, 1) && kv_tcp_model_allows(KV_TCP_BLOCK, st, 0) &&
               kv_tcp_model_allows(KV_TCP_MONOTONE, st, 1) && kv_tcp_model_allows(KV_TCP_NORMALISATION, st, 3),
           "%s: the model's requirements: exact products, kept subnormals; block, order, monotonicity free",
           kv_dtype_name(st));
    const int bits = kv_tcp_is_fp8(st) ? 14 : 24;
    EXPECT(kv_tcp_model_allows(KV_TCP_ALIGN_BITS, st, bits) && !kv_tcp_model_allows(KV_TCP_ALIGN_BITS, st, bits - 1) &&
               !kv_tcp_model_allows(KV_TCP_ALIGN_BITS, st, 0),
           "%s: at least %d bits", kv_dtype_name(st), bits);
    for (int p = 0; p < KV_TCP_NPROBES; p++) {
      char name[64];
      EXPECT(kv_tcp_outcome_name(p, st, 1, name, sizeof name)[0] && kv_tcp_model_requires(p, st)[0], "%s has words",
             kv_tcp_probe_names[p]);
    }
  }
}

static const axis_want tcp_axes[] = {
    {"probe", KV_AXIS_STR,
     "products align_bits acc_round final_round normalisation subnormal_in subnormal_out block monotone",
     "products align_bits acc_round final_round normalisation subnormal_in subnormal_out block monotone", 0, 0},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"instruction", KV_AXIS_STR, "mma wgmma", "mma wgmma", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want tcp_params[] = {{NULL, 0, 0, 0}};

static void test_rules(void) {
  EXPECT_STREQ(invalid_of(&kv_family_tcprobe, "precision=bf16:fp32 instruction=wgmma", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_tcprobe, "precision=e4m3:fp32 instruction=mma", "cuda"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_tcprobe, "precision=e5m2:fp32 instruction=wgmma", "cpu"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_tcprobe, "precision=fp16:fp16", "cuda"), "fp32 accumulation");
  EXPECT_CONTAINS(invalid_of(&kv_family_tcprobe, "precision=fp32:fp32", "cuda"), "fp16, bf16, e4m3 or e5m2");
  EXPECT_CONTAINS(invalid_of(&kv_family_tcprobe, "precision=e4m3:e4m3", "cuda"), "8-bit");
  const kv_cost c = cost_of(&kv_family_tcprobe, "probe=acc_round");
  EXPECT(c.rows == 1 && c.row_len == 208 && c.red_len == 16 && c.flops == 2.0 * 16 * 208, "acc_round counts");
  const kv_cost c8 = cost_of(&kv_family_tcprobe, "probe=acc_round precision=e5m2:fp32");
  EXPECT(c8.rows == 1 && c8.row_len == 152 && c8.red_len == 32 && c8.flops == 2.0 * 32 * 152, "FP8 acc_round counts");
  fcase f;
  fcase_make(&f, &kv_family_tcprobe, "probe=subnormal_out precision=bf16:fp32");
  EXPECT(f.t.n_in == 0 && f.t.n_out == 1 && f.t.out[0].dtype == KV_FP32 && f.t.out[0].count == 7,
         "no inputs, one fp32 output per sub-test");
  char path[256];
  kv_family_tcprobe.path(&f.c, path, sizeof path);
  EXPECT_STREQ(path, "tcprobe:mma:bf16:fp32 tcprobe:mma:probe=subnormal_out");
  fcase_free(&f);
  int tags = 0;
  char tag[128];
  while (kv_family_tcprobe.path_tag(tags, tag, sizeof tag)) tags++;
  EXPECT(tags == 2 * (4 + KV_TCP_NPROBES), "%d path tags", tags);
  for (int p = 0; p < KV_TCP_NPROBES; p++)
    for (int t = 0; t < 4; t++) {
      const kv_dtype st = t < 2 ? types[t] : fp8_types[t - 2];
      EXPECT(kv_tcp_subtests(p, st) >= 1 && kv_tcp_subtests(p, st) <= KV_TCP_MAX_SUB, "%s sub-tests",
             kv_tcp_probe_names[p]);
    }
}

int main(void) {
  for (int t = 0; t < 2; t++) {
    TEST("decoders name the hypothesis that produced the outputs");
    test_hypotheses(types[t]);
    TEST("outputs no hypothesis produces");
    test_crafted(types[t]);
    TEST("the model: emulation, outcomes, exact reference");
    test_model(types[t]);
  }
  for (int t = 0; t < 2; t++) {
    TEST("FP8: decoders name the hypothesis that produced the outputs");
    test_hypotheses_fp8(fp8_types[t]);
    TEST("FP8: outputs no hypothesis produces");
    test_crafted_fp8(fp8_types[t]);
    TEST("FP8: the model: emulation, outcomes, exact reference");
    test_model(fp8_types[t]);
  }
  TEST("outcome hook");
  test_outcome_hook();
  TEST("descriptor: axes as agreed");
  check_descriptor(&kv_family_tcprobe, tcp_axes, tcp_params);
  TEST("rules, counts, tensors, path tags");
  test_rules();
  return TEST_RETURN();
}
