/* bits.h - the bit patterns of fp32 and fp64 values and back (memcpy: no aliasing, no FPU
 * involved), for the conversions of halfprec.c and fp8.c and their tests. C and C++. */
#ifndef KVAL_BITS_H
#define KVAL_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kv_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline uint64_t kv_f64_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline float kv_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static inline double kv_bits_f64(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

#endif
