/* fp8.h - the two OCP 8-bit floating-point formats as NVIDIA Hopper implements them
 * (cuda_fp8.h): E4M3 ("e4m3fn": bias 7, no infinities, NaN S.1111.111, max 448, subnormals
 * down to 2^-9) and E5M2 (bias 15, IEEE-like infinities and NaNs, max 57344, subnormals down
 * to 2^-16). Narrowing from fp64/fp32 with round-to-nearest-even and optional saturation, bit
 * for bit as cuda_fp8.h's host conversions; exact widening. Integer arithmetic on the bit
 * patterns, so the result does not depend on the host FPU. */
#ifndef KVAL_FP8_H
#define KVAL_FP8_H

#include <stdint.h>

#include "numerics/bits.h"

typedef enum { KV_FP8_E4M3 = 0, KV_FP8_E5M2 = 1 } kv_fp8_format;

/* Significand bits (hidden one included) that the model of Hopper's FP8 tensor-core
 * accumulation keeps: its fp32 accumulator holds about 14 (DeepSeek-V3 technical report,
 * sec. 3.3.2: "around 14 bits") until kval's tensor-core probes measure it on the GPU at hand
 * (docs/NUMERICS.md). The tolerance charges u = 2^-14 for the accumulation of FP8 GEMMs
 * (kv_precision_accum_roundoff, core/dtype.c). */
#define KV_FP8_ACC_BITS 14
typedef enum { KV_FP8_NOSAT = 0, KV_FP8_SATFINITE = 1 } kv_fp8_saturation;

/* Round to nearest even, directly from double (no double rounding), as
 * __nv_cvt_double_to_fp8(x, sat, fmt). A magnitude that rounds above the largest finite value
 * (E4M3: above 464 = 448 + half an ulp; E5M2: from 61440 = 57344 + half an ulp up) and +-inf
 * give, with the sign kept: NOSAT: E4M3 NaN 0x7f, E5M2 inf 0x7c; SATFINITE: the largest finite
 * value (0x7e, 0x7b). A NaN stays a NaN whatever the saturation, with its sign: E4M3 0x7f,
 * E5M2 0x7e | the second payload bit of the double (bit 50). */
uint8_t kv_f64_to_fp8(double x, kv_fp8_format f, kv_fp8_saturation s);

/* As __nv_cvt_float_to_fp8(x, sat, fmt) on the host: the value of kv_f64_to_fp8((double)x),
 * except that every NaN (either sign, any payload) gives the positive NaN 0x7f in both formats
 * (CUDA replaces it by the canonical fp32 NaN 0x7fffffff first). */
uint8_t kv_f32_to_fp8(float x, kv_fp8_format f, kv_fp8_saturation s);

/* Exact widening. E5M2 infinities and NaNs keep their sign and payload (as fp16 widening does:
 * the two mantissa bits become the top of the double's); the E4M3 NaN 0x7f / 0xff becomes a
 * quiet NaN with its sign. Inline and lookup-free: the emulations widen every element. */
static inline double kv_fp8_to_f64(uint8_t b, kv_fp8_format f) {
  const int dm = f == KV_FP8_E4M3 ? 3 : 2, db = f == KV_FP8_E4M3 ? 7 : 15;
  const uint64_t sign = (uint64_t)(b & 0x80u) << 56;
  const uint32_t a = b & 0x7fu, e = a >> dm, m = a & ((1u << dm) - 1);
  uint64_t u;
  if (f == KV_FP8_E4M3 ? a == 0x7fu : e == 0x1fu) /* NaN, or E5M2 infinity when m == 0 */
    u = sign | 0x7ff0000000000000ULL | ((uint64_t)m << (52 - dm));
  else if (e) /* normal */
    u = sign | ((uint64_t)((int)e + 1023 - db) << 52) | ((uint64_t)m << (52 - dm));
  else if (m == 0)
    u = sign;
  else { /* subnormal m * 2^(1-db-dm): the leading bit becomes the hidden bit */
    const int lead = 31 - __builtin_clz(m); /* 0..dm-1 */
    u = sign | ((uint64_t)(lead + 1 - db - dm + 1023) << 52) | (((uint64_t)m << (52 - lead)) & 0xfffffffffffffULL);
  }
  return kv_bits_f64(u);
}

/* The largest finite value: 448 (E4M3), 57344 (E5M2). */
double kv_fp8_max(kv_fp8_format f);

/* "e4m3", "e5m2" ("?" for anything else). */
const char *kv_fp8_format_name(kv_fp8_format f);

#endif
