/* test_fp8_cuda.cu - kval's integer E4M3/E5M2 conversions (fp8.c) against CUDA's own host-side
 * conversions of cuda_fp8.h (__nv_cvt_double_to_fp8, __nv_cvt_float_to_fp8 with __NV_NOSAT
 * and __NV_SATFINITE, __nv_cvt_fp8_to_halfraw), so the CPU emulation and the GPU kernels
 * round identically. Host code only: needs nvcc, not a GPU. Sets, both formats, both
 * saturation modes, fp64 and fp32 entries: every fp32 value widened from the 65536 fp16
 * patterns, every midpoint (the overflow midpoint included) +-1 fp64 ulp and +-1 fp32 ulp,
 * both signs; infinities, NaNs, zeros, values around the largest finite value and the
 * subnormal boundaries; 10^7 random fp64 values of magnitude 2^-20..2^20, both signs. The
 * encodings are compared bit for bit (NaN results included: kval reproduces CUDA's NaN
 * patterns); the decodings of all 256 patterns as values, NaN as "both NaN" (CUDA returns the
 * canonical fp16 NaN). The first mismatch of each set is reported with its input bits. */
#include <cuda_fp8.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" {
#include "numerics/fp8.h"
}
#include "numerics/rng.h"
#include "tests/unit/test_util.h"


/* One format: kval's and CUDA's names, largest finite code and the bias and mantissa width
 * of the plain binary ladder. */
struct format {
  const char *name;
  kv_fp8_format kv;
  __nv_fp8_interpretation_t cu;
  unsigned max;
  int mant, bias;
};

static const format formats[] = {
    {"e4m3", KV_FP8_E4M3, __NV_E4M3, 0x7e, 3, 7},
    {"e5m2", KV_FP8_E5M2, __NV_E5M2, 0x7b, 2, 15},
};

struct saturation {
  const char *name;
  kv_fp8_saturation kv;
  __nv_saturation_t cu;
};

static const saturation sats[] = {{"nosat", KV_FP8_NOSAT, __NV_NOSAT}, {"satfinite", KV_FP8_SATFINITE, __NV_SATFINITE}};

/* Mismatches of the current set and a description of the first one. */
static int bad;
static char first[256];

static void mismatch(const char *what) {
  if (bad++ == 0) snprintf(first, sizeof first, "%s", what);
}

/* Both entries on x (fp64 as is, fp32 on the float that x is when it is one), both modes. */
static void check64(const format &f, double x) {
  for (const saturation &s : sats) {
    const unsigned k = kv_f64_to_fp8(x, f.kv, s.kv), c = __nv_cvt_double_to_fp8(x, s.cu, f.cu);
    if (k != c) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s %s fp64 %#018llx (%a): kval %#04x, cuda %#04x", f.name, s.name,
               (unsigned long long)kv_f64_bits(x), x, k, c);
      mismatch(msg);
    }
  }
}

static void check32(const format &f, float x) {
  for (const saturation &s : sats) {
    const unsigned k = kv_f32_to_fp8(x, f.kv, s.kv), c = __nv_cvt_float_to_fp8(x, s.cu, f.cu);
    if (k != c) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s %s fp32 %#010x (%a): kval %#04x, cuda %#04x", f.name, s.name, kv_f32_bits(x),
               (double)x, k, c);
      mismatch(msg);
    }
  }
}

/* x in both entries (fp32 with its own rounding of x) and both signs. */
static void check_both(const format &f, double x) {
  check64(f, x);
  check64(f, -x);
  check32(f, (float)x);
  check32(f, -(float)x);
}

static void report(const char *set) { EXPECT(bad == 0, "%s: %d values differ; first: %s", set, bad, first); }

static void begin() {
  bad = 0;
  first[0] = 0;
}

/* Positive value of code c by the plain binary formula: the code after the largest finite one
 * stands for the next value (E4M3 480, E5M2 65536), so the overflow midpoint is one more. */
static double ladder(const format &f, unsigned c) {
  const int e = (int)(c >> f.mant), m = (int)(c & ((1u << f.mant) - 1));
  return e ? ldexp(m + (1 << f.mant), e - f.bias - f.mant) : ldexp(m, 1 - f.bias - f.mant);
}

static void test_format(const format &f) {
  TEST("%s: all 256 patterns decode as __nv_cvt_fp8_to_halfraw", f.name);
  begin();
  for (unsigned b = 0; b < 256; b++) {
    const double k = kv_fp8_to_f64((uint8_t)b, f.kv);
    const double c = (double)__half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, f.cu)));
    const bool same = std::isnan(k) || std::isnan(c) ? std::isnan(k) && std::isnan(c) : kv_f64_bits(k) == kv_f64_bits(c);
    if (!same) {
      char msg[256];
      snprintf(msg, sizeof msg, "pattern %#04x: kval %a, cuda %a", b, k, c);
      mismatch(msg);
    }
  }
  report("decoding");

  TEST("%s: every fp32 value widened from the 65536 fp16 patterns, both entries, both modes", f.name);
  begin();
  for (uint32_t h = 0; h < 65536; h++) {
    __half_raw r;
    r.x = (unsigned short)h;
    const float x = __half2float(__half(r));
    check32(f, x);
    check64(f, (double)x);
  }
  report("fp16 values");

  TEST("%s: every midpoint, the overflow midpoint too, +-1 fp64 ulp and +-1 fp32 ulp, both signs", f.name);
  begin();
  for (unsigned c = 0; c <= f.max; c++) {
    const double mid = 0.5 * (ladder(f, c) + ladder(f, c + 1));
    const float mf = (float)mid;
    for (const double x : {mid, nextafter(mid, 0.0), nextafter(mid, INFINITY), (double)nextafterf(mf, 0.0f),
                           (double)nextafterf(mf, INFINITY)}) {
      check64(f, x);
      check64(f, -x);
    }
    for (const float x : {mf, nextafterf(mf, 0.0f), nextafterf(mf, INFINITY)}) {
      check32(f, x);
      check32(f, -x);
    }
  }
  report("midpoints");

  TEST("%s: infinities, NaNs, zeros, around the largest finite value and the subnormal boundaries", f.name);
  begin();
  const double max = ladder(f, f.max), sub = ldexp(1.0, 1 - f.bias - f.mant), norm = ldexp(1.0, 1 - f.bias);
  const double edges[] = {0.0,       INFINITY,  max,          max + 0.25 * (ladder(f, f.max + 1) - max),
                          2 * max,   1e300,     DBL_MAX,      FLT_MAX,
                          sub,       sub / 2,   sub * 1.5,    sub * 2.5,
                          sub / 4,   norm,      norm - sub / 2, norm - sub,
                          DBL_MIN,   DBL_TRUE_MIN, FLT_MIN,   FLT_TRUE_MIN,
                          0x1p-1000, 1.0,       0x1p16,       0x1p17};
  for (const double e : edges)
    for (const double x : {e, nextafter(e, 0.0), nextafter(e, INFINITY), (double)nextafterf((float)e, 0.0f),
                           (double)nextafterf((float)e, INFINITY)})
      check_both(f, x);
  const uint64_t nan64[] = {0x7ff8000000000000ULL, 0x7ffc000000000000ULL, 0x7ff4000000000000ULL,
                            0x7ff0000000000001ULL, 0x7fffffffffffffffULL, 0x7ff7ffffffffffffULL};
  for (const uint64_t n : nan64) {
    check64(f, kv_bits_f64(n));
    check64(f, kv_bits_f64(n | 0x8000000000000000ULL));
  }
  const uint32_t nan32[] = {0x7fc00000u, 0x7fe00000u, 0x7fa00000u, 0x7f800001u, 0x7fffffffu, 0x7fbfffffu};
  for (const uint32_t n : nan32) {
    check32(f, kv_bits_f32(n));
    check32(f, kv_bits_f32(n | 0x80000000u));
  }
  report("special values");

  TEST("%s: 10^7 random fp64 values of magnitude 2^-20..2^20, both signs, and the fp32 they round to", f.name);
  begin();
  for (uint64_t i = 0; i < 10000000; i++) {
    const uint64_t r = kv_mix64(i + ((uint64_t)f.bias << 40) + 0xf8);
    /* sign and mantissa from r, biased exponent 1023-20 .. 1023+20 */
    const double x = kv_bits_f64((r & 0x800fffffffffffffULL) | ((uint64_t)(1023 - 20 + (int)(kv_mix64(r) % 41)) << 52));
    check64(f, x);
    check32(f, (float)x);
  }
  report("random values");
}

int main() {
  for (const format &f : formats) test_format(f);
  return TEST_RETURN();
}
