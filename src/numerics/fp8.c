/* fp8.c - fp64/fp32 -> E4M3 / E5M2 narrowing with round-to-nearest-even and NOSAT/SATFINITE
 * overflow, bit for bit as cuda_fp8.h's host conversions (__nv_cvt_double_to_fp8,
 * __nv_cvt_float_to_fp8), in integer arithmetic on the bit patterns; the largest finite
 * values and the format names.
 *
 * One routine, kv_round_bits() (narrow.h, shared with halfprec.c), rounds the magnitude bits
 * of a binary source format (sm stored mantissa bits, bias sb) to the 7 magnitude bits of an
 * 8-bit format (dm mantissa bits, bias db) as if the exponent had no upper bound; the caller then decides overflow by comparing
 * the code with the largest finite one. That one comparison covers both formats: E4M3's
 * largest finite 0x7e = 448 sits below the NaN code 0x7f that would be 480, so 464 ties to
 * 448 (even) and anything above rounds to 0x7f, an overflow; E5M2 overflows from 61440 up,
 * which ties to the infinity code 0x7c (even), as in IEEE. */
#include "numerics/fp8.h"

#include "numerics/narrow.h"

/* Sign and rounded code -> the byte, with the overflow rule of format f and saturation s. */
static inline uint8_t finish(uint32_t sign, uint64_t code, kv_fp8_format f, kv_fp8_saturation s) {
  const uint32_t max = f == KV_FP8_E4M3 ? 0x7eu : 0x7bu;
  if (code > max) code = s == KV_FP8_SATFINITE ? max : f == KV_FP8_E4M3 ? 0x7fu : 0x7cu;
  return (uint8_t)(sign | code);
}

uint8_t kv_f64_to_fp8(double x, kv_fp8_format f, kv_fp8_saturation s) {
  const uint64_t u = kv_f64_bits(x);
  const uint32_t sign = (uint32_t)(u >> 56) & 0x80u;
  const uint64_t a = u & 0x7fffffffffffffffULL;
  if (a > 0x7ff0000000000000ULL) /* NaN, even with SATFINITE; E5M2 keeps payload bit 50 */
    return (uint8_t)(sign | (f == KV_FP8_E4M3 ? 0x7fu : 0x7eu | (uint32_t)((a >> 50) & 1)));
  if (f == KV_FP8_E4M3) return finish(sign, kv_round_bits(a, 52, 1023, 3, 7), f, s);
  return finish(sign, kv_round_bits(a, 52, 1023, 2, 15), f, s);
}

uint8_t kv_f32_to_fp8(float x, kv_fp8_format f, kv_fp8_saturation s) {
  const uint32_t u = kv_f32_bits(x);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fu; /* CUDA's canonical NaN: positive, in both formats */
  const uint32_t sign = (u >> 24) & 0x80u;
  if (f == KV_FP8_E4M3) return finish(sign, kv_round_bits(a, 23, 127, 3, 7), f, s);
  return finish(sign, kv_round_bits(a, 23, 127, 2, 15), f, s);
}

double kv_fp8_max(kv_fp8_format f) { return f == KV_FP8_E4M3 ? 448.0 : 57344.0; }

const char *kv_fp8_format_name(kv_fp8_format f) {
  switch (f) {
    case KV_FP8_E4M3: return "e4m3";
    case KV_FP8_E5M2: return "e5m2";
    default: return "?";
  }
}
