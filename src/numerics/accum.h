/* accum.h - the accumulator model of kval's precision model, shared by the CPU emulations:
 * an fp32 value rounded to the accumulator type (round to nearest even), after every add of a
 * CUDA-core reduction or after every k-step of a tensor-core reduction; and the FP8 tensor
 * cores' truncated accumulation. */
#ifndef KVAL_NUMERICS_ACCUM_H
#define KVAL_NUMERICS_ACCUM_H

#include <stddef.h>

#include "core/dtype.h"
#include "numerics/fp8.h"
#include "numerics/halfprec.h"

/* Reduction step of one tensor-core instruction (mma m16n8k16, wgmma k16): fp16/bf16
 * accumulators are rounded after every KV_KSTEP products. */
#define KV_KSTEP 16

/* FP8 tensor-core accumulation (kval's model, docs/NUMERICS.md): one instruction (wgmma k32)
 * adds KV_FP8_KSTEP exact products into the fp32 accumulator, which then keeps only
 * KV_FP8_ACC_BITS significand bits, truncated toward zero (numerics/fp8.h). */
#define KV_FP8_KSTEP 32
static inline float kv_fp8_acc_truncate(float x) {
  const uint32_t u = kv_f32_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x; /* inf, NaN */
  return kv_bits_f32(u & ~((1u << (24 - KV_FP8_ACC_BITS)) - 1u));
}

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
