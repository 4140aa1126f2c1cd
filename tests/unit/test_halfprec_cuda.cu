/* test_halfprec_cuda.cu - kval's integer fp16/bf16 conversions (halfprec.c) against CUDA's own
 * host-side conversions of cuda_fp16.h / cuda_bf16.h (__float2half_rn, __double2half,
 * __half2float, __float2bfloat16_rn, __double2bfloat16, __bfloat162float), so the CPU
 * emulation and the GPU kernels round identically. Host code only: needs nvcc, not a GPU.
 * Sets: all 65536 patterns, every midpoint +-1 ulp of fp32 and fp64, fp64 values a quarter
 * fp32 ulp off each midpoint, 10^7 random fp32 and 10^6 random fp64 values. CUDA returns a
 * canonical NaN, so NaN results are compared as "both NaN". */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

extern "C" {
#include "numerics/halfprec.h"
}
#include "numerics/rng.h"
#include "tests/unit/test_util.h"

static uint16_t raw(__half h) { return __half_raw(h).x; }
static uint16_t raw(__nv_bfloat16 h) { return __nv_bfloat16_raw(h).x; }
static __half as_half(uint16_t u) {
  __half_raw r;
  r.x = u;
  return __half(r);
}
static __nv_bfloat16 as_bf16(uint16_t u) {
  __nv_bfloat16_raw r;
  r.x = u;
  return __nv_bfloat16(r);
}

/* One format: kval's functions and CUDA's, infinity pattern and exponent range. */
struct format {
  const char *name;
  uint16_t inf;
  int emin, emax; /* binary exponents of interest for random values (subnormals .. overflow) */
  uint16_t (*kv32)(float);
  uint16_t (*kv64)(double);
  float (*kvw)(uint16_t);
  uint16_t (*cu32)(float);
  uint16_t (*cu64)(double);
  float (*cuw)(uint16_t);
};

static uint16_t cu_f2h(float x) { return raw(__float2half_rn(x)); }
static uint16_t cu_d2h(double x) { return raw(__double2half(x)); }
static float cu_h2f(uint16_t h) { return __half2float(as_half(h)); }
static uint16_t cu_f2b(float x) { return raw(__float2bfloat16_rn(x)); }
static uint16_t cu_d2b(double x) { return raw(__double2bfloat16(x)); }
static float cu_b2f(uint16_t h) { return __bfloat162float(as_bf16(h)); }

static const format formats[] = {
    {"fp16", 0x7c00, -27, 17, kv_f32_to_f16, kv_f64_to_f16, kv_f16_to_f32, cu_f2h, cu_d2h, cu_h2f},
    {"bf16", 0x7f80, -136, 129, kv_f32_to_bf16, kv_f64_to_bf16, kv_bf16_to_f32, cu_f2b, cu_d2b, cu_b2f},
};

static bool same(uint16_t a, uint16_t b, uint16_t inf) {
  const bool na = (a & 0x7fff) > inf, nb = (b & 0x7fff) > inf;
  return na || nb ? na && nb : a == b;
}

static bool same_float(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? std::isnan(a) && std::isnan(b) : memcmp(&a, &b, 4) == 0;
}

/* Positive value of pattern h; the infinity pattern stands for the next value after the
 * largest finite one, so the overflow midpoint is one of the midpoints. */
static double ladder(const format &f, uint32_t h) {
  if (h == f.inf) return 2.0 * (double)f.kvw((uint16_t)(h - 1)) - (double)f.kvw((uint16_t)(h - 2));
  return (double)f.kvw((uint16_t)h);
}

static void test_format(const format &f) {
  TEST("%s: all 65536 patterns widen and round trip as in CUDA", f.name);
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    const float w = f.cuw((uint16_t)h);
    bad += !same_float(f.kvw((uint16_t)h), w) || !same(f.kv32(w), f.cu32(w), f.inf) ||
           !same(f.kv64((double)w), f.cu64((double)w), f.inf);
  }
  EXPECT(bad == 0, "%d patterns differ", bad);

  TEST("%s: every midpoint +-1 ulp (fp32, fp64) and fp64 a quarter fp32 ulp off it, both signs", f.name);
  bad = 0;
  for (uint32_t h = 0; h < f.inf; h++) {
    const double mid = 0.5 * (ladder(f, h) + ladder(f, h + 1));
    const float mf = (float)mid;
    const double q = 0.25 * ((double)nextafterf(mf, INFINITY) - (double)mf);
    const float xf[3] = {mf, nextafterf(mf, 0.0f), nextafterf(mf, INFINITY)};
    const double xd[5] = {mid, nextafter(mid, 0.0), nextafter(mid, INFINITY), mid - q, mid + q};
    for (int s = 1; s >= -1; s -= 2) {
      for (int j = 0; j < 3; j++) bad += !same(f.kv32(s * xf[j]), f.cu32(s * xf[j]), f.inf);
      for (int j = 0; j < 5; j++) bad += !same(f.kv64(s * xd[j]), f.cu64(s * xd[j]), f.inf);
    }
  }
  EXPECT(bad == 0, "%d values differ", bad);

  TEST("%s: 10^7 random fp32 and 10^6 random fp64 values", f.name);
  bad = 0;
  const uint64_t span = (uint64_t)(f.emax - f.emin);
  const int lo = f.emin + 127 > 0 ? f.emin + 127 : 0, hi = f.emax + 127 < 255 ? f.emax + 127 : 255;
  for (uint64_t i = 0; i < 10000000; i++) {
    const uint64_t r = kv_mix64(i + ((uint64_t)f.inf << 32));
    /* even i: any bit pattern; odd i: exponent field within the format's range and around it */
    const uint32_t field = (uint32_t)(lo + (int)((r >> 40) % (uint64_t)(hi - lo + 1)));
    const float x = kv_bits_f32(i & 1 ? (uint32_t)((r & 0x807fffffu) | (field << 23)) : (uint32_t)r);
    bad += !same(f.kv32(x), f.cu32(x), f.inf);
  }
  for (uint64_t i = 0; i < 1000000; i++) {
    const uint64_t r = kv_mix64(i + ((uint64_t)f.inf << 40));
    const double x = kv_bits_f64((r & 0x800fffffffffffffULL) | ((uint64_t)(1023 + f.emin + (int)((r >> 52) % span)) << 52));
    bad += !same(f.kv64(x), f.cu64(x), f.inf);
  }
  EXPECT(bad == 0, "%d values differ", bad);
}

int main() {
  for (const format &f : formats) test_format(f);
  return TEST_RETURN();
}
