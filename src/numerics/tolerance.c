/* tolerance.c - the default tolerance of each precision and the per-element bound
 *   bound = c1 * u_out * |ref| + c2 * sqrt(K) * u_acc * mag + abs_floor.
 * u_out is the output type's (kv_precision_output: the storage type, bf16 for 8-bit storage),
 * u_acc the accumulation's (kv_precision_accum_roundoff). The defaults (c1 = c2 = 2,
 * abs_floor = the output type's smallest subnormal, rel_floor = its smallest normal) are derived in docs/NUMERICS.md from the error model: round-to-
 * nearest output (<= u_out * |ref|), accumulation error ~ sqrt(K) * u_acc * mag for
 * round-to-nearest and for truncating tensor-core fp32 accumulation on kval's inputs, and
 * the subnormal spacing of the output type. */
#include "numerics/tolerance.h"

#include <math.h>

#include "numerics/ulp.h"

kv_tolerance kv_tolerance_default(kv_precision p) {
  kv_tolerance t;
  t.c1 = 2.0;
  t.c2 = 2.0;
  /* smallest subnormal = 2^emin * 2^(1-p) = 2 * u * 2^emin: twice the largest absolute
   * error of rounding to nearest in the subnormal range */
  const kv_dtype out = kv_precision_output(p);
  t.abs_floor = 2.0 * kv_dtype_unit_roundoff(out) * kv_min_normal(out);
  t.rel_floor = kv_min_normal(out);
  return t;
}

void kv_tolerance_coefs(const kv_tolerance *t, kv_precision p, double red_len, double *coef_ref, double *coef_mag) {
  *coef_ref = t->c1 * kv_dtype_unit_roundoff(kv_precision_output(p));
  *coef_mag = t->c2 * sqrt(red_len > 1.0 ? red_len : 1.0) * kv_precision_accum_roundoff(p);
}

/* errstats.c and errstats.cu evaluate the same expression with the same two coefficients, in
 * the same order. */
double kv_tolerance_bound(const kv_tolerance *t, kv_precision p, double ref, double mag, double red_len) {
  double a, b;
  kv_tolerance_coefs(t, p, red_len, &a, &b);
  return a * fabs(ref) + b * mag + t->abs_floor;
}

double kv_tolerance_p_rho(kv_precision p, double red_len) {
  return kv_dtype_unit_roundoff(p.storage) / (kv_dtype_unit_roundoff(p.accum) * sqrt(red_len));
}
