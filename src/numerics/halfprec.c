/* halfprec.c - fp16/bf16/fp32 narrowing with round-to-nearest-even and exact widening, all in
 * integer arithmetic on the bit patterns (no host FPU rounding mode, no F16C); typed loads and
 * stores of storage buffers (the 8-bit types through numerics/fp8.h), ULP distances and the largest finite value of each type.
 *
 * One generic narrowing routine, kv_narrow_bits() (numerics/narrow.h, shared with the device
 * error statistics), rounds the magnitude bits of a binary format with SM stored mantissa bits
 * and exponent bias SB to a format with DM mantissa bits and bias DB. It is inline and always
 * called with constant formats, so the compiler specialises it into a short, almost
 * branch-free sequence per conversion. */
#include "numerics/halfprec.h"
#include "numerics/ulp.h"

#include <math.h>
#include <string.h>

#include "numerics/fp8.h"
#include "numerics/narrow.h"

/* 8-bit storage is written with saturation to the largest finite value (SATFINITE), as FP8
 * quantisation does; the device generator (backends/cuda/generate.cu) rounds alike. */
static inline kv_fp8_format fp8_format(kv_dtype t) { return t == KV_E4M3 ? KV_FP8_E4M3 : KV_FP8_E5M2; }


uint16_t kv_f32_to_f16(float x) {
  const uint32_t u = kv_f32_bits(x);
  return (uint16_t)(((u >> 16) & 0x8000u) | kv_narrow_bits(u & 0x7fffffffu, 23, 127, 10, 15));
}

uint16_t kv_f64_to_f16(double x) {
  const uint64_t u = kv_f64_bits(x);
  return (uint16_t)(((u >> 48) & 0x8000u) | kv_narrow_bits(u & 0x7fffffffffffffffULL, 52, 1023, 10, 15));
}

uint16_t kv_f32_to_bf16(float x) {
  const uint32_t u = kv_f32_bits(x);
  return (uint16_t)(((u >> 16) & 0x8000u) | kv_narrow_bits(u & 0x7fffffffu, 23, 127, 7, 127));
}

uint16_t kv_f64_to_bf16(double x) {
  const uint64_t u = kv_f64_bits(x);
  return (uint16_t)(((u >> 48) & 0x8000u) | kv_narrow_bits(u & 0x7fffffffffffffffULL, 52, 1023, 7, 127));
}

/* fp64 -> fp32 with round to nearest even, independent of the FPU rounding mode. */
static inline float f64_to_f32(double x) {
  const uint64_t u = kv_f64_bits(x);
  return kv_bits_f32((uint32_t)((u >> 32) & 0x80000000u) |
                  (uint32_t)kv_narrow_bits(u & 0x7fffffffffffffffULL, 52, 1023, 23, 127));
}

float kv_round_f32(float x, kv_dtype t) {
  switch (t) {
    case KV_FP16: return kv_f16_to_f32(kv_f32_to_f16(x));
    case KV_BF16: return kv_bf16_to_f32(kv_f32_to_bf16(x));
    default: return x;
  }
}

double kv_round_f64(double x, kv_dtype t) {
  switch (t) {
    case KV_FP16: return kv_f16_to_f32(kv_f64_to_f16(x));
    case KV_BF16: return kv_bf16_to_f32(kv_f64_to_bf16(x));
    case KV_FP32: return f64_to_f32(x);
    case KV_E4M3:
    case KV_E5M2: return kv_fp8_to_f64(kv_f64_to_fp8(x, fp8_format(t), KV_FP8_SATFINITE), fp8_format(t));
    default: return x;
  }
}

double kv_load(const void *buf, size_t i, kv_dtype t) {
  switch (t) {
    case KV_FP16: return kv_f16_to_f32(((const uint16_t *)buf)[i]);
    case KV_BF16: return kv_bf16_to_f32(((const uint16_t *)buf)[i]);
    case KV_FP32: return ((const float *)buf)[i];
    case KV_E4M3:
    case KV_E5M2: return kv_fp8_to_f64(((const uint8_t *)buf)[i], fp8_format(t));
    default: return ((const double *)buf)[i];
  }
}

void kv_store(void *buf, size_t i, kv_dtype t, double v) {
  switch (t) {
    case KV_FP16: ((uint16_t *)buf)[i] = kv_f64_to_f16(v); break;
    case KV_BF16: ((uint16_t *)buf)[i] = kv_f64_to_bf16(v); break;
    case KV_FP32: ((float *)buf)[i] = f64_to_f32(v); break;
    case KV_E4M3:
    case KV_E5M2: ((uint8_t *)buf)[i] = kv_f64_to_fp8(v, fp8_format(t), KV_FP8_SATFINITE); break;
    default: ((double *)buf)[i] = v; break;
  }
}

double kv_ulp_distance(double a, double b, kv_dtype t) {
  if (!isfinite(a) || !isfinite(b)) return INFINITY;
  return fabs(a - b) / kv_ulp_at(b, t);
}

double kv_dtype_max(kv_dtype t) {
  switch (t) {
    case KV_FP16: return 65504.0;
    case KV_BF16: return kv_bits_f64(0x47efe00000000000ULL); /* (2 - 2^-7) * 2^127 */
    case KV_FP32: return kv_bits_f64(0x47efffffe0000000ULL); /* (2 - 2^-23) * 2^127 */
    case KV_E4M3: return kv_fp8_max(KV_FP8_E4M3);
    case KV_E5M2: return kv_fp8_max(KV_FP8_E5M2);
    default: return kv_bits_f64(0x7fefffffffffffffULL);
  }
}
