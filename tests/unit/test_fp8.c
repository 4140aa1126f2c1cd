/* test_fp8.c - E4M3/E5M2 conversions of src/numerics/fp8.c: exhaustive over all 256 bit
 * patterns of each format (exact widening against an independent formula, round trip in both
 * saturation modes, monotonicity), ties to even at every midpoint between consecutive finite
 * values (from fp64 and fp32, +-1 ulp), the overflow boundary with NOSAT and SATFINITE,
 * subnormal boundaries, NaN, infinities and signed zero, an independent nearest-value oracle
 * on random fp64 values, and the fp32 entry point against the fp64 one on every fp16 value
 * widened and on random fp32 values. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "numerics/fp8.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "tests/unit/test_util.h"


/* A format: stored mantissa bits, exponent bias, largest finite code, the code that NOSAT
 * overflow gives (E4M3: NaN, E5M2: infinity). */
typedef struct {
  kv_fp8_format f;
  const char *name;
  int mant, bias;
  unsigned max, ovf;
} format;

static const format formats[] = {
    {KV_FP8_E4M3, "e4m3", 3, 7, 0x7e, 0x7f},
    {KV_FP8_E5M2, "e5m2", 2, 15, 0x7b, 0x7c},
};
static const kv_fp8_saturation sats[] = {KV_FP8_NOSAT, KV_FP8_SATFINITE};
static const char *const sat_names[] = {"nosat", "satfinite"};

/* Magnitude of code c (0..0x7f) by the plain binary formula, ignoring the special codes, so
 * the code after the largest finite one stands for the next value of the ladder (E4M3 0x7f:
 * 480, E5M2 0x7c: 65536) and the overflow midpoint is one more midpoint. */
static double ladder(const format *f, unsigned c) {
  const int e = (int)(c >> f->mant), m = (int)(c & ((1u << f->mant) - 1));
  return e ? ldexp(m + (1 << f->mant), e - f->bias - f->mant) : ldexp(m, 1 - f->bias - f->mant);
}

/* Independent decoding of a pattern (ldexp on integers, no bit tricks). */
static double decode(const format *f, unsigned b) {
  const unsigned c = b & 0x7f;
  double v;
  if (f->f == KV_FP8_E4M3 && c == 0x7f)
    v = NAN;
  else if (f->f == KV_FP8_E5M2 && c >= 0x7c)
    v = c == 0x7c ? INFINITY : NAN;
  else
    v = ladder(f, c);
  return b & 0x80 ? -v : v;
}

/* Nearest-value oracle with the overflow rules: binary search the ladder, compare with the
 * (exact) midpoint; a result above the largest finite code overflows. Not for NaN. */
static unsigned oracle(const format *f, double x, kv_fp8_saturation s) {
  const unsigned sign = signbit(x) ? 0x80 : 0;
  const double a = fabs(x);
  unsigned r;
  if (a >= ladder(f, f->max + 1)) {
    r = f->max + 1;
  } else {
    unsigned lo = 0, hi = f->max + 1; /* ladder(lo) <= a < ladder(hi) */
    while (hi - lo > 1) {
      const unsigned mid = (lo + hi) / 2;
      if (ladder(f, mid) <= a)
        lo = mid;
      else
        hi = mid;
    }
    const double m = 0.5 * (ladder(f, lo) + ladder(f, hi));
    r = a < m ? lo : a > m ? hi : (lo & 1 ? hi : lo);
  }
  if (r > f->max) r = s == KV_FP8_SATFINITE ? f->max : f->ovf;
  return sign | r;
}

static void test_decode_exhaustive(const format *f) {
  TEST("%s: all 256 patterns decode exactly, round trip in both saturation modes, are monotonic", f->name);
  int bad_decode = 0, bad_trip64 = 0, bad_trip32 = 0, bad_mono = 0;
  for (unsigned b = 0; b < 256; b++) {
    const double v = kv_fp8_to_f64((uint8_t)b, f->f), d = decode(f, b);
    const unsigned c = b & 0x7f, sign = b & 0x80;
    if (isnan(d))
      bad_decode += !isnan(v) || !signbit(v) != !sign;
    else
      bad_decode += kv_f64_bits(v) != kv_f64_bits(d); /* also the sign of zero */
    for (int k = 0; k < 2; k++) {
      const kv_fp8_saturation s = sats[k];
      unsigned want64 = b, want32 = b;
      if (isnan(d)) { /* NaN: E5M2 quietened (bit 1 set), fp32 entry: CUDA's canonical NaN */
        want64 = f->f == KV_FP8_E5M2 ? b | 0x02 : b;
        want32 = 0x7f;
      } else if (isinf(d) && s == KV_FP8_SATFINITE) {
        want64 = want32 = sign | f->max;
      }
      bad_trip64 += kv_f64_to_fp8(v, f->f, s) != want64;
      bad_trip32 += kv_f32_to_fp8((float)v, f->f, s) != want32;
    }
    if (c < f->max) bad_mono += !(kv_fp8_to_f64((uint8_t)(b + 1), f->f) * (sign ? -1 : 1) > fabs(v));
  }
  EXPECT(bad_decode == 0, "%d patterns decode wrongly", bad_decode);
  EXPECT(bad_trip64 == 0, "%d patterns fail the fp64 round trip", bad_trip64);
  EXPECT(bad_trip32 == 0, "%d patterns fail the fp32 round trip", bad_trip32);
  EXPECT(bad_mono == 0, "%d finite patterns not strictly increasing in magnitude", bad_mono);
}

/* Every midpoint between consecutive finite values, both signs, both saturation modes, from
 * fp64 and fp32: the exact midpoint ties to even, one ulp below / above rounds down / up. */
static void test_midpoints(const format *f) {
  TEST("%s: ties to even at every midpoint, +-1 ulp of fp64 and fp32 round away from it", f->name);
  int bad64 = 0, bad32 = 0, inexact = 0;
  for (unsigned c = 0; c < f->max; c++) {
    const double mid = 0.5 * (ladder(f, c) + ladder(f, c + 1));
    const float midf = (float)mid;
    inexact += (double)midf != mid || mid != 0.5 * (kv_fp8_to_f64((uint8_t)c, f->f) + kv_fp8_to_f64((uint8_t)(c + 1), f->f));
    const unsigned even = c & 1 ? c + 1 : c;
    for (int k = 0; k < 4; k++) {
      const kv_fp8_saturation s = sats[k & 1];
      const unsigned sg = k & 2 ? 0x80 : 0;
      const double m = sg ? -mid : mid;
      const float mf = sg ? -midf : midf;
      bad64 += kv_f64_to_fp8(m, f->f, s) != (sg | even) || kv_f64_to_fp8(nextafter(m, 0.0), f->f, s) != (sg | c) ||
               kv_f64_to_fp8(nextafter(m, 2 * m), f->f, s) != (sg | (c + 1));
      bad32 += kv_f32_to_fp8(mf, f->f, s) != (sg | even) || kv_f32_to_fp8(nextafterf(mf, 0.0f), f->f, s) != (sg | c) ||
               kv_f32_to_fp8(nextafterf(mf, 2 * mf), f->f, s) != (sg | (c + 1));
    }
  }
  EXPECT(inexact == 0, "%d midpoints not exact in fp32 or off the decoded values", inexact);
  EXPECT(bad64 == 0, "%d midpoints round wrongly from fp64", bad64);
  EXPECT(bad32 == 0, "%d midpoints round wrongly from fp32", bad32);
}

/* x = midpoint +- a quarter fp32 ulp: fp32 would round x onto the midpoint and then tie to
 * even; the fp64 conversion must round away from the midpoint directly. */
static void test_double_rounding(const format *f) {
  TEST("%s: fp64 values within a quarter fp32 ulp of a midpoint do not double-round", f->name);
  int bad = 0, traps = 0;
  for (unsigned c = 0; c < f->max; c++) {
    const double mid = 0.5 * (ladder(f, c) + ladder(f, c + 1));
    const double q = 0.25 * ((double)nextafterf((float)mid, INFINITY) - mid);
    for (int k = 0; k < 2; k++) {
      bad += kv_f64_to_fp8(mid + q, f->f, sats[k]) != c + 1 || kv_f64_to_fp8(mid - q, f->f, sats[k]) != c ||
             kv_f64_to_fp8(-(mid + q), f->f, sats[k]) != (0x80 | (c + 1));
      traps += kv_f32_to_fp8((float)(mid + q), f->f, sats[k]) != c + 1 || kv_f32_to_fp8((float)(mid - q), f->f, sats[k]) != c;
    }
  }
  EXPECT(bad == 0, "%d values double-rounded", bad);
  EXPECT(traps > 0, "the trap set is meaningful: fp64->fp32->%s double-rounds on %d of them", f->name, traps);
}

/* max, the overflow midpoint max + half an ulp, one fp64 / fp32 ulp either side, huge values
 * and infinities, both signs, both saturation modes. */
static void test_overflow(const format *f) {
  TEST("%s: overflow boundary and infinities, NOSAT and SATFINITE", f->name);
  const double max = ladder(f, f->max), thr = 0.5 * (max + ladder(f, f->max + 1));
  EXPECT(kv_fp8_max(f->f) == max && kv_fp8_to_f64((uint8_t)f->max, f->f) == max, "largest finite %g", max);
  EXPECT(thr == (f->f == KV_FP8_E4M3 ? 464.0 : 61440.0), "overflow midpoint %g", thr);
  /* the overflow midpoint ties to the even neighbour: E4M3 max 0x7e, E5M2 the infinity code */
  const unsigned at_thr = f->f == KV_FP8_E4M3 ? f->max : f->max + 1;
  for (int k = 0; k < 4; k++) {
    const kv_fp8_saturation s = sats[k & 1];
    const unsigned sg = k & 2 ? 0x80 : 0, ovf = sg | (s == KV_FP8_SATFINITE ? f->max : f->ovf);
    const double sd = sg ? -1.0 : 1.0;
    const float sf = sg ? -1.0f : 1.0f;
    const char *sn = sat_names[k & 1];
    EXPECT(kv_f64_to_fp8(sd * max, f->f, s) == (sg | f->max), "%s: %g", sn, sd * max);
    EXPECT(kv_f64_to_fp8(sd * nextafter(thr, 0.0), f->f, s) == (sg | f->max), "%s: just below %g stays max", sn, sd * thr);
    EXPECT(kv_f64_to_fp8(sd * thr, f->f, s) == (at_thr > f->max ? ovf : sg | f->max), "%s: %g ties to even", sn, sd * thr);
    EXPECT(kv_f64_to_fp8(sd * nextafter(thr, INFINITY), f->f, s) == ovf, "%s: just above %g overflows", sn, sd * thr);
    EXPECT(kv_f32_to_fp8(sf * nextafterf((float)thr, 0.0f), f->f, s) == (sg | f->max), "%s: fp32 just below", sn);
    EXPECT(kv_f32_to_fp8(sf * (float)thr, f->f, s) == (at_thr > f->max ? ovf : sg | f->max), "%s: fp32 midpoint", sn);
    EXPECT(kv_f32_to_fp8(sf * nextafterf((float)thr, INFINITY), f->f, s) == ovf, "%s: fp32 just above", sn);
    EXPECT(kv_f64_to_fp8(sd * ladder(f, f->max + 1), f->f, s) == ovf, "%s: the next ladder value", sn);
    EXPECT(kv_f64_to_fp8(sd * 1e300, f->f, s) == ovf && kv_f64_to_fp8(sd * DBL_MAX, f->f, s) == ovf &&
               kv_f32_to_fp8(sf * FLT_MAX, f->f, s) == ovf && kv_f64_to_fp8(sd * 0x1p17, f->f, s) == ovf,
           "%s: huge values", sn);
    EXPECT(kv_f64_to_fp8(sd * INFINITY, f->f, s) == ovf && kv_f32_to_fp8(sf * INFINITY, f->f, s) == ovf,
           "%s: %s infinity gives %#x", sn, sg ? "-" : "+", ovf);
  }
}

/* Smallest subnormal, half of it (ties to zero, the even neighbour), 1.5 of it (ties to 2),
 * the largest subnormal and the smallest normal, tiny values, signed zero. */
static void test_subnormals(const format *f) {
  TEST("%s: subnormal boundaries and signed zero", f->name);
  const int lo = 1 - f->bias - f->mant; /* the smallest subnormal is 2^lo */
  for (int k = 0; k < 2; k++) {
    const kv_fp8_saturation s = sats[k];
    const kv_fp8_format ff = f->f;
    EXPECT(kv_f64_to_fp8(ldexp(1, lo), ff, s) == 0x01 && kv_f32_to_fp8(ldexpf(1, lo), ff, s) == 0x01, "2^%d", lo);
    EXPECT(kv_f64_to_fp8(ldexp(1, lo - 1), ff, s) == 0x00 && kv_f32_to_fp8(ldexpf(1, lo - 1), ff, s) == 0x00,
           "2^%d (half the smallest subnormal) ties to zero", lo - 1);
    EXPECT(kv_f64_to_fp8(-ldexp(1, lo - 1), ff, s) == 0x80 && kv_f32_to_fp8(-ldexpf(1, lo - 1), ff, s) == 0x80,
           "-2^%d ties to -0", lo - 1);
    EXPECT(kv_f64_to_fp8(nextafter(ldexp(1, lo - 1), 1.0), ff, s) == 0x01 &&
               kv_f32_to_fp8(nextafterf(ldexpf(1, lo - 1), 1.0f), ff, s) == 0x01,
           "just above half the smallest subnormal rounds up");
    EXPECT(kv_f64_to_fp8(nextafter(ldexp(1, lo - 1), 0.0), ff, s) == 0x00, "just below half rounds to zero");
    EXPECT(kv_f64_to_fp8(ldexp(1.5, lo), ff, s) == 0x02 && kv_f64_to_fp8(ldexp(2.5, lo), ff, s) == 0x02 &&
               kv_f64_to_fp8(ldexp(1.25, lo), ff, s) == 0x01,
           "1.5 and 2.5 subnormal units tie to 2, 1.25 rounds to 1");
    const unsigned top = (1u << f->mant) - 1; /* the largest subnormal */
    EXPECT(kv_fp8_to_f64((uint8_t)top, ff) == ldexp(top, lo) && kv_f64_to_fp8(ldexp(top, lo), ff, s) == top,
           "largest subnormal %#x", top);
    EXPECT(kv_f64_to_fp8(ldexp(top + 0.5, lo), ff, s) == top + 1, "between the largest subnormal and the smallest normal");
    EXPECT(kv_f64_to_fp8(ldexp(1, 1 - f->bias), ff, s) == top + 1, "smallest normal 2^%d", 1 - f->bias);
    EXPECT(kv_f64_to_fp8(DBL_TRUE_MIN, ff, s) == 0x00 && kv_f64_to_fp8(-0x1p-1000, ff, s) == 0x80 &&
               kv_f32_to_fp8(FLT_TRUE_MIN, ff, s) == 0x00 && kv_f32_to_fp8(-FLT_TRUE_MIN, ff, s) == 0x80,
           "tiny fp64/fp32 (subnormals too) vanish with their sign");
    EXPECT(kv_f64_to_fp8(0.0, ff, s) == 0x00 && kv_f64_to_fp8(-0.0, ff, s) == 0x80 && kv_f32_to_fp8(0.0f, ff, s) == 0x00 &&
               kv_f32_to_fp8(-0.0f, ff, s) == 0x80,
           "signed zero");
  }
  EXPECT(signbit(kv_fp8_to_f64(0x80, f->f)) && kv_fp8_to_f64(0x80, f->f) == 0.0, "0x80 is -0");
}

/* NaN: never saturated; fp64 keeps the sign (E5M2 also payload bit 50); fp32 gives 0x7f. */
static void test_nan(const format *f) {
  TEST("%s: NaN inputs in both saturation modes", f->name);
  const int e4 = f->f == KV_FP8_E4M3;
  for (int k = 0; k < 2; k++) {
    const kv_fp8_saturation s = sats[k];
    const char *sn = sat_names[k];
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0x7ff8000000000000ULL), f->f, s) == (e4 ? 0x7f : 0x7e), "%s: +qNaN", sn);
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0xfff8000000000000ULL), f->f, s) == (e4 ? 0xff : 0xfe), "%s: -qNaN keeps the sign", sn);
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0x7ffc000000000000ULL), f->f, s) == 0x7f, "%s: qNaN with payload bit 50", sn);
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0x7ff4000000000000ULL), f->f, s) == 0x7f, "%s: sNaN with payload bit 50", sn);
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0x7ff0000000000001ULL), f->f, s) == (e4 ? 0x7f : 0x7e), "%s: sNaN, low payload", sn);
    EXPECT(kv_f64_to_fp8(kv_bits_f64(0xfff7ffffffffffffULL), f->f, s) == 0xff, "%s: -sNaN, all payload bits", sn);
    EXPECT(kv_f32_to_fp8(kv_bits_f32(0x7fc00000u), f->f, s) == 0x7f && kv_f32_to_fp8(kv_bits_f32(0xffc00000u), f->f, s) == 0x7f &&
               kv_f32_to_fp8(kv_bits_f32(0x7f800001u), f->f, s) == 0x7f && kv_f32_to_fp8(kv_bits_f32(0xffbfffffu), f->f, s) == 0x7f,
           "%s: every fp32 NaN gives the positive NaN 0x7f", sn);
  }
  for (unsigned b = 0; b < 256; b++)
    if (isnan(decode(f, b))) {
      const double v = kv_fp8_to_f64((uint8_t)b, f->f);
      EXPECT(isnan(v) && !signbit(v) == !(b & 0x80), "%#x decodes to a NaN with its sign", b);
    }
}

static void test_random_oracle(const format *f) {
  TEST("%s: 10^6 random fp64 values agree with the nearest-value oracle in both modes", f->name);
  const int lo_exp = 1 - f->bias - f->mant - 3, span = 2 * f->bias + f->mant + 8; /* zero..overflow */
  int bad = 0;
  for (uint64_t i = 0; i < 1000000; i++) {
    const uint64_t r = kv_mix64(i ^ ((uint64_t)f->mant << 56) ^ 0xf8);
    const double mant = 1.0 + (double)(r >> 12) * 0x1p-52; /* [1, 2) */
    const double x = ldexp(mant, lo_exp + (int)((r & 0x3ff) % (unsigned)span)) * ((r >> 10) & 1 ? -1 : 1);
    bad += kv_f64_to_fp8(x, f->f, KV_FP8_NOSAT) != oracle(f, x, KV_FP8_NOSAT) ||
           kv_f64_to_fp8(x, f->f, KV_FP8_SATFINITE) != oracle(f, x, KV_FP8_SATFINITE);
  }
  EXPECT(bad == 0, "%d values disagree", bad);
}

/* The fp32 entry point is the fp64 one on (double)x, except that a NaN gives 0x7f. */
static int f32_disagrees(float x, kv_fp8_format ff) {
  int bad = 0;
  for (int k = 0; k < 2; k++) {
    const uint8_t want = isnan(x) ? 0x7f : kv_f64_to_fp8((double)x, ff, sats[k]);
    bad += kv_f32_to_fp8(x, ff, sats[k]) != want;
  }
  return bad;
}

static void test_f32_vs_f64(const format *f) {
  TEST("%s: fp32 entry agrees with fp64 on all 65536 fp16 values widened and 4*10^6 random fp32", f->name);
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) bad += f32_disagrees(kv_f16_to_f32((uint16_t)h), f->f);
  EXPECT(bad == 0, "%d fp16 values disagree", bad);
  bad = 0;
  for (uint64_t i = 0; i < 4000000; i++) {
    const uint64_t r = kv_mix64(i + ((uint64_t)f->bias << 48) + 0xf32);
    /* even i: any pattern; odd i: exponent field around the format's range (2^-24 .. 2^20) */
    const uint32_t u = i & 1 ? (uint32_t)((r & 0x807fffffu) | ((uint32_t)(103 + (r >> 40) % 45) << 23)) : (uint32_t)r;
    bad += f32_disagrees(kv_bits_f32(u), f->f);
  }
  EXPECT(bad == 0, "%d random fp32 values disagree", bad);
}

static void test_helpers(void) {
  TEST("kv_fp8_max, kv_fp8_format_name");
  EXPECT(kv_fp8_max(KV_FP8_E4M3) == 448.0 && kv_fp8_max(KV_FP8_E5M2) == 57344.0, "largest finite values");
  EXPECT_STREQ(kv_fp8_format_name(KV_FP8_E4M3), "e4m3");
  EXPECT_STREQ(kv_fp8_format_name(KV_FP8_E5M2), "e5m2");
  EXPECT_STREQ(kv_fp8_format_name((kv_fp8_format)7), "?");
  EXPECT(kv_f64_to_fp8(1.0, KV_FP8_E4M3, KV_FP8_NOSAT) == 0x38 && kv_f64_to_fp8(1.0, KV_FP8_E5M2, KV_FP8_NOSAT) == 0x3c,
         "1.0 is 0x38 (E4M3) and 0x3c (E5M2)");
  EXPECT(kv_f64_to_fp8(-0.1, KV_FP8_E4M3, KV_FP8_NOSAT) == 0x9d && kv_fp8_to_f64(0x9d, KV_FP8_E4M3) == -0x1.ap-4,
         "-0.1 in E4M3");
  EXPECT(kv_f64_to_fp8(0.1, KV_FP8_E5M2, KV_FP8_NOSAT) == 0x2e && kv_fp8_to_f64(0x2e, KV_FP8_E5M2) == 0x1.8p-4,
         "0.1 in E5M2");
}

int main(void) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    const format *f = &formats[i];
    test_decode_exhaustive(f);
    test_midpoints(f);
    test_double_rounding(f);
    test_overflow(f);
    test_subnormals(f);
    test_nan(f);
    test_random_oracle(f);
    test_f32_vs_f64(f);
  }
  test_helpers();
  return TEST_RETURN();
}
