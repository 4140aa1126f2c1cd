/* common.h - helpers shared by the kernel families: tensor specs, host input generation from
 * the counter-based generator, bulk conversion of storage buffers, the accumulator model of
 * the precision model (round to the accumulator type after an add or after a k-step), and
 * double-double arithmetic for the extended-precision references. */
#ifndef KVAL_FAMILIES_COMMON_H
#define KVAL_FAMILIES_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "core/dtype.h"
#include "family.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"

/* Reduction step of one tensor-core instruction (mma m16n8k16, wgmma k16): fp16/bf16
 * accumulators are rounded after every KV_KSTEP products. */
#define KV_KSTEP 16

/* An input tensor: values offset + scale * base(dist), rounded to dtype. */
void kv_spec_in(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count, int dist, double scale,
                double offset);
/* An output tensor (no generator fields). */
void kv_spec_out(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count);

/* Element i of buf = kv_store(round(kv_gen_value(key, i, dist, scale, offset))); the CUDA
 * generator (kv_cuda_generate) produces the same bits. key = kv_stream_key(seed, case key,
 * index of the tensor in kv_tensors.in). */
kv_status kv_generate_host(const kv_tensor_spec *t, uint64_t key, void *buf);

/* Elements [off, off + n) of a storage buffer widened (exactly) to float / double. */
void kv_to_float(const void *buf, kv_dtype t, size_t off, size_t n, float *dst);
void kv_to_double(const void *buf, kv_dtype t, size_t off, size_t n, double *dst);

/* Round an fp32 value to the accumulator type (identity for fp32 accumulation). */
static inline float kv_acc_round(float x, kv_dtype acc) {
  return acc == KV_FP32 ? x : kv_round_f32(x, acc);
}
/* One add of a CUDA-core reduction in the accumulator type: fp32 add, then rounding. */
static inline float kv_acc_add(float s, float x, kv_dtype acc) {
  return kv_acc_round(s + x, acc);
}
/* End of a k-step: round every accumulator of the array (no-op for fp32 accumulation). */
void kv_acc_round_array(float *x, size_t n, kv_dtype acc);

/* A reference's row list: present when n_rows > 0 and every row below total_rows; else
 * reported (naming the family) and KV_ERR. */
kv_status kv_check_rows(const size_t *rows, size_t n_rows, size_t total_rows, const char *family);

/* ---- double-double (hi + lo, |lo| <= ulp(hi)/2) for the compensated references ---- */
typedef struct {
  double hi, lo;
} kv_dd;

static inline kv_dd kv_dd_two_sum(double a, double b) {
  double s = a + b, bb = s - a;
  kv_dd r = {s, (a - (s - bb)) + (b - bb)};
  return r;
}
static inline kv_dd kv_dd_renorm(double hi, double lo) {
  double s = hi + lo;
  kv_dd r = {s, lo - (s - hi)};
  return r;
}
/* hi + lo rounded to double */
static inline double kv_dd_value(kv_dd s) {
  return s.hi + s.lo;
}
/* s + x */
static inline kv_dd kv_dd_add(kv_dd s, double x) {
  kv_dd t = kv_dd_two_sum(s.hi, x);
  return kv_dd_renorm(t.hi, t.lo + s.lo);
}
/* s + a * b with the product exact (fma) */
static inline kv_dd kv_dd_add_prod(kv_dd s, double a, double b) {
  double p = a * b, e = fma(a, b, -p);
  kv_dd t = kv_dd_two_sum(s.hi, p);
  return kv_dd_renorm(t.hi, t.lo + (s.lo + e));
}
/* s + x for a double-double x */
static inline kv_dd kv_dd_add_dd(kv_dd s, kv_dd x) {
  kv_dd t = kv_dd_two_sum(s.hi, x.hi);
  return kv_dd_renorm(t.hi, t.lo + (s.lo + x.lo));
}
/* s / d for a double d */
static inline kv_dd kv_dd_div(kv_dd s, double d) {
  double q = s.hi / d, r = fma(-q, d, s.hi);
  return kv_dd_renorm(q, (r + s.lo) / d);
}
/* a / b rounded to double */
static inline double kv_dd_quotient(kv_dd a, kv_dd b) {
  double q = a.hi / b.hi;
  kv_dd r = kv_dd_add(kv_dd_add_prod(a, -q, b.hi), -q * b.lo);
  return q + kv_dd_value(r) / b.hi;
}
/* s * s */
static inline kv_dd kv_dd_sqr(kv_dd s) {
  double p = s.hi * s.hi, e = fma(s.hi, s.hi, -p);
  return kv_dd_renorm(p, e + 2.0 * s.hi * s.lo);
}
static const kv_dd kv_dd_zero = {0.0, 0.0};

#endif
