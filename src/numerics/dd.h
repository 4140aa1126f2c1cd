/* dd.h - double-double arithmetic (hi + lo, |lo| <= ulp(hi)/2) for the extended-precision
 * twins of the fp64 references, which the tests use to judge the fp64 ones on
 * ill-conditioned inputs. */
#ifndef KVAL_NUMERICS_DD_H
#define KVAL_NUMERICS_DD_H

#include <math.h>

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
