/* test_halfprec.c - fp16/bf16 conversions of src/numerics/halfprec.c: exhaustive over all
 * 65536 bit patterns of each format (exact widening, round trip, monotonicity), ties to even
 * at every midpoint between consecutive values (from fp32 and fp64, +-1 ulp), fp64 double-
 * rounding traps, subnormal and overflow boundaries, NaN handling, an independent
 * nearest-value oracle on random inputs, gcc's _Float16 conversions where available, the
 * integer fp64->fp32 narrowing against the FPU, and load/store/ulp/max helpers. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "tests/unit/test_util.h"


/* A 16-bit format: stored mantissa bits and exponent bias, and the functions under test. */
typedef struct {
  const char *name;
  int mant, bias;
  uint16_t (*from32)(float);
  uint16_t (*from64)(double);
  float (*to32)(uint16_t);
} format;

static const format formats[] = {
    {"fp16", 10, 15, kv_f32_to_f16, kv_f64_to_f16, kv_f16_to_f32},
    {"bf16", 7, 127, kv_f32_to_bf16, kv_f64_to_bf16, kv_bf16_to_f32},
};

static uint16_t inf_bits(const format *f) { return (uint16_t)((2 * f->bias + 1) << f->mant); }

/* Independent decoding of a pattern (ldexp on integers, no bit tricks). */
static double decode(const format *f, uint16_t h) {
  const int e = (h & 0x7fff) >> f->mant;
  const int m = h & ((1 << f->mant) - 1);
  double v;
  if (e == 2 * f->bias + 1)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp(m, 1 - f->bias - f->mant);
  else
    v = ldexp(m + (1 << f->mant), e - f->bias - f->mant);
  return (h & 0x8000) ? -v : v;
}

/* Magnitude of pattern h, for h up to and including the infinity pattern, which stands for
 * the next value after the largest finite one (2^(emax+1)) so the overflow midpoint is one
 * more midpoint. */
static double ladder(const format *f, uint16_t h) { return h == inf_bits(f) ? ldexp(1.0, f->bias + 1) : decode(f, h); }

/* Nearest-value oracle: binary search the ladder, compare with the (exact) midpoint. */
static uint16_t oracle(const format *f, double x) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double a = fabs(x);
  if (isnan(x)) return 0xffff;
  unsigned lo = 0, hi = inf_bits(f);
  if (a >= ladder(f, (uint16_t)hi)) return (uint16_t)(sign | hi);
  while (hi - lo > 1) { /* ladder(lo) <= a < ladder(hi) */
    const unsigned mid = (lo + hi) / 2;
    if (ladder(f, (uint16_t)mid) <= a)
      lo = mid;
    else
      hi = mid;
  }
  const double m = 0.5 * (ladder(f, (uint16_t)lo) + ladder(f, (uint16_t)hi));
  const unsigned r = a < m ? lo : a > m ? hi : (lo & 1 ? hi : lo);
  return (uint16_t)(sign | r);
}

static void test_widen_exhaustive(const format *f) {
  TEST("%s: all 65536 patterns widen exactly, round trip and are monotonic", f->name);
  int bad_widen = 0, bad_trip32 = 0, bad_trip64 = 0, bad_mono = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    const float v = f->to32((uint16_t)h);
    const double d = decode(f, (uint16_t)h);
    const int is_nan = isnan(d);
    if (is_nan) {
      const uint32_t payload = (kv_f32_bits(v) >> (23 - f->mant)) & ((1u << f->mant) - 1);
      bad_widen += !isnan(v) || !signbit(v) != !(h & 0x8000) || payload != (h & ((1u << f->mant) - 1));
    } else {
      bad_widen += (double)v != d || !signbit(v) != !signbit(d);
    }
    const uint16_t want = is_nan ? (uint16_t)(h | (1u << (f->mant - 1))) : (uint16_t)h; /* NaN: quieted */
    bad_trip32 += f->from32(v) != want;
    bad_trip64 += f->from64((double)v) != want;
    if ((h & 0x7fff) < inf_bits(f)) bad_mono += !(fabs(f->to32((uint16_t)(h + 1))) > fabs(v));
  }
  EXPECT(bad_widen == 0, "%d patterns widen wrongly", bad_widen);
  EXPECT(bad_trip32 == 0, "%d patterns fail the fp32 round trip", bad_trip32);
  EXPECT(bad_trip64 == 0, "%d patterns fail the fp64 round trip", bad_trip64);
  EXPECT(bad_mono == 0, "%d patterns not strictly increasing in magnitude", bad_mono);
}

/* Every midpoint between consecutive values (and the overflow midpoint), both signs, from
 * fp32 and fp64: exact midpoint ties to even, one ulp above / below rounds up / down. */
static void test_midpoints(const format *f) {
  TEST("%s: ties to even at every midpoint, +-1 ulp of fp32 and fp64 round away from it", f->name);
  int bad32 = 0, bad64 = 0, inexact = 0;
  for (uint32_t h = 0; h < inf_bits(f); h++) {
    const double mid = 0.5 * (ladder(f, (uint16_t)h) + ladder(f, (uint16_t)(h + 1)));
    const float midf = (float)mid;
    inexact += (double)midf != mid;
    const uint16_t even = (uint16_t)(h & 1 ? h + 1 : h);
    for (int s = 0; s < 2; s++) {
      const uint16_t sg = s ? 0x8000 : 0;
      const double m = s ? -mid : mid;
      const float mf = s ? -midf : midf;
      const uint16_t lo = (uint16_t)(sg | h), hi = (uint16_t)(sg | (h + 1)), tie = (uint16_t)(sg | even);
      bad64 += f->from64(m) != tie || f->from64(nextafter(m, 0.0)) != lo || f->from64(nextafter(m, 2 * m)) != hi;
      bad32 += f->from32(mf) != tie || f->from32(nextafterf(mf, 0.0f)) != lo || f->from32(nextafterf(mf, 2 * mf)) != hi;
    }
  }
  EXPECT(inexact == 0, "%d midpoints not exact in fp32", inexact);
  EXPECT(bad32 == 0, "%d midpoints round wrongly from fp32", bad32);
  EXPECT(bad64 == 0, "%d midpoints round wrongly from fp64", bad64);
}

/* x = midpoint +- a quarter fp32 ulp: fp32 would round x onto the midpoint and then tie to
 * even (double rounding); the direct fp64 conversion must round away from the midpoint. */
static void test_double_rounding(const format *f) {
  TEST("%s: fp64 values within a quarter fp32 ulp of a midpoint do not double-round", f->name);
  int bad = 0, traps = 0;
  for (uint32_t h = 0; h < inf_bits(f); h++) {
    const double mid = 0.5 * (ladder(f, (uint16_t)h) + ladder(f, (uint16_t)(h + 1)));
    const float midf = (float)mid;
    const double q = 0.25 * ((double)nextafterf(midf, INFINITY) - (double)midf);
    const double up = mid + q, down = mid - q;
    bad += f->from64(up) != h + 1 || f->from64(down) != h || f->from64(-up) != (0x8000 | (h + 1));
    traps += f->from32((float)up) != h + 1 || f->from32((float)down) != h;
  }
  EXPECT(bad == 0, "%d values double-rounded", bad);
  EXPECT(traps > 0, "the trap set is meaningful: fp64->fp32->%s double-rounds on %d of them", f->name, traps);
}

static void test_random_oracle(const format *f) {
  TEST("%s: 10^6 random fp32 and fp64 values agree with the nearest-value oracle", f->name);
  const int lo_exp = 1 - f->bias - f->mant - 3, span = 2 * f->bias + f->mant + 6; /* covers zero..overflow */
  int bad32 = 0, bad64 = 0;
  for (uint64_t i = 0; i < 1000000; i++) {
    const uint64_t r = kv_mix64(i ^ ((uint64_t)f->mant << 56));
    const double mant = 1.0 + (double)(r >> 12) * 0x1p-52; /* [1, 2) */
    const double x = ldexp(mant, lo_exp + (int)((r & 0x3ff) % (unsigned)span)) * ((r >> 10) & 1 ? -1 : 1);
    const float xf = kv_bits_f32((uint32_t)(r >> 32));
    bad64 += f->from64(x) != oracle(f, x);
    if (!isnan(xf)) bad32 += f->from32(xf) != oracle(f, xf);
  }
  EXPECT(bad32 == 0, "%d fp32 values disagree", bad32);
  EXPECT(bad64 == 0, "%d fp64 values disagree", bad64);
}

static void test_boundaries(void) {
  TEST("fp16 subnormal and overflow boundaries, signed zero");
  EXPECT(kv_f32_to_f16(0x1p-24f) == 0x0001, "smallest subnormal");
  EXPECT(kv_f32_to_f16(0x1p-25f) == 0x0000, "half the smallest subnormal ties to zero");
  EXPECT(kv_f32_to_f16(nextafterf(0x1p-25f, 1.0f)) == 0x0001, "just above half rounds up");
  EXPECT(kv_f32_to_f16(0x1.8p-24f) == 0x0002, "1.5 subnormal units tie to 2");
  EXPECT(kv_f32_to_f16(0x1.4p-24f) == 0x0001, "1.25 subnormal units round to 1");
  EXPECT(kv_f32_to_f16(1023.5f * 0x1p-24f) == 0x0400, "between the largest subnormal and 2^-14 ties to 2^-14");
  EXPECT(kv_f32_to_f16(0x1p-14f) == 0x0400, "smallest normal");
  EXPECT(kv_f32_to_f16(FLT_TRUE_MIN) == 0x0000 && kv_f32_to_f16(-FLT_TRUE_MIN) == 0x8000,
         "fp32 subnormals vanish with their sign");
  EXPECT(kv_f64_to_f16(0x1p-25 + 0x1p-70) == 0x0001, "fp64 just above half the smallest subnormal");
  EXPECT(kv_f64_to_f16(DBL_TRUE_MIN) == 0 && kv_f64_to_f16(-0x1p-1000) == 0x8000, "tiny fp64 vanish with their sign");
  EXPECT(kv_f32_to_f16(65504.0f) == 0x7bff, "largest finite");
  EXPECT(kv_f32_to_f16(nextafterf(65520.0f, 0.0f)) == 0x7bff, "just below 65520 stays finite");
  EXPECT(kv_f32_to_f16(65520.0f) == 0x7c00 && kv_f32_to_f16(-65520.0f) == 0xfc00, "65520 overflows");
  EXPECT(kv_f64_to_f16(65520.0 - 0x1p-30) == 0x7bff && kv_f64_to_f16(65520.0) == 0x7c00, "fp64 overflow threshold");
  EXPECT(kv_f32_to_f16(FLT_MAX) == 0x7c00 && kv_f64_to_f16(1e300) == 0x7c00, "huge values overflow");
  EXPECT(kv_f32_to_f16(INFINITY) == 0x7c00 && kv_f64_to_f16(-INFINITY) == 0xfc00, "infinities");
  EXPECT(kv_f32_to_f16(-0.0f) == 0x8000 && kv_f64_to_f16(-0.0) == 0x8000, "negative zero");
  TEST("bf16 subnormal and overflow boundaries");
  EXPECT(kv_f32_to_bf16(0x1p-133f) == 0x0001 && kv_f32_to_bf16(0x1p-134f) == 0x0000, "smallest subnormal, half of it");
  EXPECT(kv_f64_to_bf16(0x1p-134 + 0x1p-180) == 0x0001 && kv_f64_to_bf16(0x1p-134) == 0,
         "fp64 half the smallest subnormal");
  EXPECT(kv_f64_to_bf16(0x1p-126) == 0x0080, "smallest normal from fp64");
  EXPECT(kv_f32_to_bf16(0x1.ffp127f) == 0x7f80 && kv_f32_to_bf16(nextafterf(0x1.ffp127f, 0.0f)) == 0x7f7f,
         "overflow threshold");
  EXPECT(kv_f64_to_bf16(0x1.ffp127) == 0x7f80 && kv_f64_to_bf16(0x1.ffp127 - 0x1p90) == 0x7f7f,
         "fp64 overflow threshold");
  EXPECT(kv_f64_to_bf16(-1e39) == 0xff80 && kv_f32_to_bf16(-0.0f) == 0x8000, "overflow with sign, negative zero");
}

static void test_nan(void) {
  TEST("NaN: quiet, sign kept, top payload bits kept");
  EXPECT(kv_f32_to_f16(kv_bits_f32(0x7f800001u)) == 0x7e00, "signalling NaN quieted");
  EXPECT(kv_f32_to_f16(kv_bits_f32(0xffc00000u)) == 0xfe00, "negative quiet NaN");
  EXPECT(kv_f32_to_f16(kv_bits_f32(0x7fa00000u)) == 0x7f00, "payload top bits");
  EXPECT(kv_f64_to_f16(kv_bits_f64(0x7ff0000000000001ULL)) == 0x7e00, "fp64 signalling NaN");
  EXPECT(kv_f64_to_f16(kv_bits_f64(0xfff8000000000000ULL)) == 0xfe00, "fp64 negative NaN");
  EXPECT(kv_f32_to_bf16(kv_bits_f32(0x7f800001u)) == 0x7fc0, "bf16 signalling NaN quieted");
  EXPECT(kv_f32_to_bf16(kv_bits_f32(0xffa00000u)) == 0xffe0, "bf16 payload and sign");
  EXPECT(kv_f64_to_bf16(kv_bits_f64(0x7ff4000000000000ULL)) == 0x7fe0, "fp64 to bf16 payload");
  EXPECT(isnan(kv_round_f64(NAN, KV_FP32)) && isnan(kv_round_f32(NAN, KV_FP16)), "rounding keeps NaN");
}

/* The integer fp64->fp32 narrowing (kv_round_f64, kv_store) against the FPU's cast. */
static void test_f64_to_f32(void) {
  TEST("fp64 -> fp32 in integer arithmetic agrees with the FPU on 10^6 values and the edges");
  EXPECT(fegetround() == FE_TONEAREST, "the FPU rounds to nearest");
  int bad = 0;
  float buf[1];
  for (uint64_t i = 0; i < 1000000; i++) {
    const uint64_t r = kv_mix64(i + 0x5eed);
    const double x = ldexp(1.0 + (double)(r >> 12) * 0x1p-52, -160 + (int)((r & 0x3ff) % 300)) * (r & 0x400 ? -1 : 1);
    kv_store(buf, 0, KV_FP32, x);
    bad += kv_f32_bits((float)kv_round_f64(x, KV_FP32)) != kv_f32_bits((float)x) || kv_f32_bits(buf[0]) != kv_f32_bits((float)x);
  }
  EXPECT(bad == 0, "%d values disagree", bad);
  const double edges[] = {0x1.ffffffp127, 0x1.fffffefp127, 0x1p-150,        0x1.0000001p-150,
                          0x1p-149,       0x1.8p-149,      0x1.fffffep-127, -0.0};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    EXPECT(kv_f32_bits((float)kv_round_f64(edges[i], KV_FP32)) == kv_f32_bits((float)edges[i]), "edge %a", edges[i]);
}

static void test_helpers(void) {
  TEST("kv_round_f32/f64, kv_load/kv_store");
  EXPECT(kv_round_f64(1.0 / 3.0, KV_FP16) == 0x1.554p-2, "1/3 in fp16");
  EXPECT(kv_round_f64(1.0 / 3.0, KV_BF16) == 0x1.56p-2, "1/3 in bf16");
  EXPECT(kv_round_f64(1.0 / 3.0, KV_FP32) == (double)(1.0f / 3.0f), "1/3 in fp32");
  EXPECT(kv_round_f64(1.0 / 3.0, KV_FP64) == 1.0 / 3.0, "fp64 is the identity");
  EXPECT(kv_round_f32(1.0f / 3.0f, KV_FP16) == 0x1.554p-2f && kv_round_f32(0.1f, KV_FP32) == 0.1f, "kv_round_f32");
  uint16_t h[2];
  float s[2];
  double d[2];
  kv_store(h, 1, KV_FP16, 0.1);
  EXPECT(h[1] == 0x2e66 && kv_load(h, 1, KV_FP16) == 0x1.998p-4, "fp16 store/load of 0.1: %#x", h[1]);
  kv_store(h, 0, KV_BF16, -0.1);
  EXPECT(h[0] == 0xbdcd && kv_load(h, 0, KV_BF16) == -0x1.9ap-4, "bf16 store/load of -0.1: %#x", h[0]);
  kv_store(s, 1, KV_FP32, 0.1);
  EXPECT(s[1] == 0.1f && kv_load(s, 1, KV_FP32) == (double)0.1f, "fp32 store/load");
  kv_store(d, 0, KV_FP64, 0.1);
  EXPECT(d[0] == 0.1 && kv_load(d, 0, KV_FP64) == 0.1, "fp64 store/load");

  TEST("kv_ulp_distance and kv_dtype_max");
  EXPECT(kv_ulp_distance(1.0 + 0x1p-10, 1.0, KV_FP16) == 1.0, "one fp16 ulp at 1");
  EXPECT(kv_ulp_distance(1.0, 1.0 - 0x1p-11, KV_FP16) == 1.0, "ulp taken at b's magnitude (below 1)");
  EXPECT(kv_ulp_distance(-3.0, -2.0, KV_FP16) == 512.0, "ulp of 2 is 2^-9");
  EXPECT(kv_ulp_distance(3 * 0x1p-24, 0x1p-24, KV_FP16) == 2.0, "subnormal spacing");
  EXPECT(kv_ulp_distance(0x1p-24, 0.0, KV_FP16) == 1.0, "at zero: subnormal spacing");
  EXPECT(kv_ulp_distance(1.0 + 0x1p-7, 1.0, KV_BF16) == 1.0, "one bf16 ulp");
  EXPECT(kv_ulp_distance(1.0 + 0x1p-23, 1.0, KV_FP32) == 1.0 && kv_ulp_distance(0x1p-149, 0, KV_FP32) == 1.0,
         "fp32 ulps");
  EXPECT(kv_ulp_distance(1.0 + 0x1p-52, 1.0, KV_FP64) == 1.0, "fp64 ulp");
  EXPECT(isinf(kv_ulp_distance(INFINITY, 1.0, KV_FP16)) && isinf(kv_ulp_distance(NAN, 1.0, KV_FP16)) &&
             isinf(kv_ulp_distance(1.0, NAN, KV_FP32)),
         "non-finite is infinitely far");
  EXPECT(kv_dtype_max(KV_FP16) == kv_f16_to_f32(0x7bff), "fp16 max");
  EXPECT(kv_dtype_max(KV_BF16) == kv_bf16_to_f32(0x7f7f), "bf16 max");
  EXPECT(kv_dtype_max(KV_FP32) == FLT_MAX && kv_dtype_max(KV_FP64) == DBL_MAX, "fp32/fp64 max");
}

#ifdef __FLT16_MAX__
/* gcc's _Float16 conversions (libgcc soft-float or F16C: both round to nearest even). */
static void test_against_gcc(void) {
  TEST("fp16 against gcc _Float16: midpoints +-1 ulp and 10^7 random fp32, 10^6 random fp64");
  const format *f = &formats[0];
  int bad = 0, bad_nan = 0;
  for (uint32_t h = 0; h < inf_bits(f); h++) {
    const float m = (float)(0.5 * (ladder(f, (uint16_t)h) + ladder(f, (uint16_t)(h + 1))));
    const float xs[3] = {m, nextafterf(m, 0.0f), nextafterf(m, INFINITY)};
    for (int j = 0; j < 3; j++) {
      const _Float16 g = (_Float16)xs[j], gd = (_Float16)(double)xs[j];
      uint16_t gb, gdb;
      memcpy(&gb, &g, 2);
      memcpy(&gdb, &gd, 2);
      bad += kv_f32_to_f16(xs[j]) != gb || kv_f64_to_f16(xs[j]) != gdb;
    }
  }
  for (uint64_t i = 0; i < 10000000; i++) {
    const uint64_t r = kv_mix64(i + 0xf16);
    /* even i: any pattern; odd i: exponent in the fp16 range and around it */
    const uint32_t u = i & 1 ? (uint32_t)((r & 0x807fffffu) | ((uint32_t)(96 + (r >> 40) % 52) << 23)) : (uint32_t)r;
    const float x = kv_bits_f32(u);
    const _Float16 g = (_Float16)x;
    uint16_t gb;
    memcpy(&gb, &g, 2);
    const uint16_t k = kv_f32_to_f16(x);
    if (isnan(x))
      bad_nan += (k & 0x7e00) != 0x7e00 || (gb & 0x7c00) != 0x7c00 || (k & 0x8000) != (gb & 0x8000);
    else
      bad += k != gb;
  }
  for (uint64_t i = 0; i < 1000000; i++) {
    const uint64_t r = kv_mix64(i + 0xd16);
    const double x = kv_bits_f64((r & 0x800fffffffffffffULL) | ((uint64_t)(1023 - 28 + (r >> 52) % 46) << 52));
    const _Float16 g = (_Float16)x;
    uint16_t gb;
    memcpy(&gb, &g, 2);
    bad += kv_f64_to_f16(x) != gb;
  }
  EXPECT(bad == 0, "%d values disagree with gcc", bad);
  EXPECT(bad_nan == 0, "%d NaNs not NaN with the same sign", bad_nan);
}
#endif

int main(void) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    test_widen_exhaustive(&formats[i]);
    test_midpoints(&formats[i]);
    test_double_rounding(&formats[i]);
    test_random_oracle(&formats[i]);
  }
  test_boundaries();
  test_nan();
  test_f64_to_f32();
  test_helpers();
#ifdef __FLT16_MAX__
  test_against_gcc();
#else
  printf("-- gcc _Float16 not available: comparison skipped\n");
#endif
  return TEST_RETURN();
}
