/* halfprec.h - fp16 and bf16 conversion from/to fp32 and fp64 with round-to-nearest-even,
 * subnormals, infinities and NaN, done in integer arithmetic so the result does not depend
 * on the host FPU; and typed loads/stores of storage buffers. */
#ifndef KVAL_HALFPREC_H
#define KVAL_HALFPREC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "numerics/bits.h"

uint16_t kv_f32_to_f16(float x);  /* round to nearest even */
uint16_t kv_f64_to_f16(double x); /* directly from double: no double rounding */
uint16_t kv_f32_to_bf16(float x);
uint16_t kv_f64_to_bf16(double x);

/* The widenings are exact and inline: the CPU references and emulations convert every
 * input element (out of line they were half of the GEMM reference's time). */
static inline float kv_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t a = h & 0x7fffu;
  if (a >= 0x7c00u) return kv_bits_f32(sign | 0x7f800000u | ((a & 0x3ffu) << 13)); /* inf, NaN */
  if (a >= 0x0400u) return kv_bits_f32(sign | ((a + ((127u - 15u) << 10)) << 13)); /* normal */
  if (a == 0) return kv_bits_f32(sign);
  /* subnormal a * 2^-24: normalise so the leading bit becomes the hidden bit */
  const int lead = 31 - __builtin_clz(a); /* 0..9 */
  const uint32_t mant = (a << (23 - lead)) & 0x7fffffu;
  return kv_bits_f32(sign | ((uint32_t)(lead - 24 + 127) << 23) | mant);
}

static inline float kv_bf16_to_f32(uint16_t h) { return kv_bits_f32((uint32_t)h << 16); }

/* Round x to type t (fp16, bf16, fp32 or fp64; kv_round_f64 also e4m3, e5m2 with saturation)
 * and return it widened again. */
float kv_round_f32(float x, kv_dtype t);
double kv_round_f64(double x, kv_dtype t);

/* Element i of a buffer of type t as double; store v into element i with RNE rounding. */
double kv_load(const void *buf, size_t i, kv_dtype t);
void kv_store(void *buf, size_t i, kv_dtype t, double v);

/* Distance from a to b in units in the last place of type t at b's magnitude
 * (subnormal spacing below the normal range); infinite when either is not finite. */
double kv_ulp_distance(double a, double b, kv_dtype t);

/* The largest finite value of t. */
double kv_dtype_max(kv_dtype t);

#endif
