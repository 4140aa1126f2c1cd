/* accum.h - the accumulator model of kval's precision model, shared by the CPU emulations:
 * an fp32 value rounded to the accumulator type (round to nearest even), after every add of a
 * CUDA-core reduction or after every k-step of a tensor-core reduction. */
#ifndef KVAL_NUMERICS_ACCUM_H
#define KVAL_NUMERICS_ACCUM_H

#include <stddef.h>

#include "core/dtype.h"
#include "numerics/halfprec.h"

/* Reduction step of one tensor-core instruction (mma m16n8k16, wgmma k16): fp16/bf16
 * accumulators are rounded after every KV_KSTEP products. */
#define KV_KSTEP 16

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
