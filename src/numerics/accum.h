/* accum.h - the accumulator model of kval's precision model, shared by the CPU emulations:
 * an fp32 value rounded to the accumulator type (round to nearest even), after every add of a
 * CUDA-core reduction or after every k-step of a tensor-core reduction; and the FP8 tensor
 * cores' fused, aligned and truncated sum. */
#ifndef KVAL_NUMERICS_ACCUM_H
#define KVAL_NUMERICS_ACCUM_H

#include <limits.h>
#include <math.h>
#include <stddef.h>

#include "core/dtype.h"
#include "numerics/fp8.h"
#include "numerics/halfprec.h"

/* Reduction step of one tensor-core instruction (mma m16n8k16, wgmma k16): fp16/bf16
 * accumulators are rounded after every KV_KSTEP products. */
#define KV_KSTEP 16

/* FP8 tensor-core accumulation, kval's model of Hopper's FP8 wgmma as the tcprobe family
 * measures it on the H200 (docs/NUMERICS.md section 9): one instruction adds KV_FP8_KSTEP
 * products to the accumulator in one fused sum. Its terms - the accumulator and every nonzero
 * product, exact - are aligned on the largest exponent e among them (a product's raw exponent
 * e(a) + e(b)) and truncated toward zero to multiples of 2^(e - KV_FP8_ACC_BITS + 1); the
 * truncated terms add exactly (the sum fits in fp32) and are the new accumulator. b[k * bs] is
 * the k-th product's second factor. */
#define KV_FP8_KSTEP 32
/* The exponent of a nonzero finite float (from its bits when normal, as 8-bit values always are). */
static inline int kv_fp8_exponent(float x) {
  const int e = (int)((kv_f32_bits(x) >> 23) & 0xffu);
  return e ? e - 127 : ilogbf(x);
}
/* The fused sum below once the largest exponent emax of its nonzero terms is known (every term
 * finite): the terms truncated to multiples of 2^(emax - KV_FP8_ACC_BITS + 1) and added exactly. */
static inline float kv_fp8_aligned_sum(float acc, const float *a, const float *b, size_t bs, int n, int emax) {
  const int lsb = emax - KV_FP8_ACC_BITS + 1;
  const double scale = ldexp(1.0, -lsb); /* terms in units of 2^lsb: exact products of powers of two */
  double units = trunc((double)acc * scale);
  for (int k = 0; k < n; k++) units += trunc((double)(a[k] * b[(size_t)k * bs]) * scale); /* a b exact in fp32 */
  return (float)ldexp(units, lsb);
}
static inline float kv_fp8_fused_sum(float acc, const float *a, const float *b, size_t bs, int n) {
  int emax = INT_MIN, finite = isfinite(acc);
  if (acc != 0.0f && finite) emax = kv_fp8_exponent(acc);
  for (int k = 0; k < n; k++) {
    const float x = a[k], y = b[(size_t)k * bs];
    if (!isfinite(x) || !isfinite(y)) finite = 0;
    else if (x != 0.0f && y != 0.0f && kv_fp8_exponent(x) + kv_fp8_exponent(y) > emax)
      emax = kv_fp8_exponent(x) + kv_fp8_exponent(y);
  }
  if (!finite) { /* an infinity or NaN: IEEE arithmetic carries it */
    for (int k = 0; k < n; k++) acc += a[k] * b[(size_t)k * bs];
    return acc;
  }
  if (emax == INT_MIN) return acc; /* every term zero */
  return kv_fp8_aligned_sum(acc, a, b, bs, n, emax);
}
/* kv_fp8_exponent of an operand element for kv_fp8_fused_sum's callers that keep the exponents of
 * a matrix: KV_FP8_EXP_ZERO for zero, so that a product with a zero factor sums to below
 * KV_FP8_EXP_NONE, under any product of nonzero floats (>= 2 x -149). */
#define KV_FP8_EXP_ZERO (-8192)
#define KV_FP8_EXP_NONE (-4096)
static inline short kv_fp8_operand_exponent(float x) { return x == 0.0f ? KV_FP8_EXP_ZERO : (short)kv_fp8_exponent(x); }

/* Round an fp32 value to the accumulator type (identity for fp32 accumulation). */
static inline float kv_acc_round(float x, kv_dtype acc) {
  return acc == KV_FP32 ? x : kv_round_f32(x, acc);
}
/* One add of a CUDA-core reduction in the accumulator type: fp32 add, then rounding. */
static inline float kv_acc_add(float s, float x, kv_dtype acc) {
  return kv_acc_round(s + x, acc);
}
/* End of a k-step: round every accumulator of the array (no-op for fp32 accumulation). */
static inline void kv_acc_round_array(float *x, size_t n, kv_dtype acc) {
  if (acc == KV_FP32) return;
  for (size_t i = 0; i < n; i++) x[i] = kv_round_f32(x[i], acc);
}

#endif
