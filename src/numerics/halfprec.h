/* halfprec.h - fp16 and bf16 conversion from/to fp32 and fp64 with round-to-nearest-even,
 * subnormals, infinities and NaN, done in integer arithmetic so the result does not depend
 * on the host FPU; and typed loads/stores of storage buffers. */
#ifndef KVAL_HALFPREC_H
#define KVAL_HALFPREC_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

uint16_t kv_f32_to_f16(float x);  /* round to nearest even */
uint16_t kv_f64_to_f16(double x); /* directly from double: no double rounding */
float kv_f16_to_f32(uint16_t h);  /* exact */
uint16_t kv_f32_to_bf16(float x);
uint16_t kv_f64_to_bf16(double x);
float kv_bf16_to_f32(uint16_t h);

/* Round x to type t (fp16, bf16, fp32 or fp64) and return it widened again. */
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
