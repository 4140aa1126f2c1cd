/* ulp.h - the one definition of a type's unit in the last place, shared by the host
 * conversions and error statistics (halfprec.c, errstats.c) and the device error statistics
 * (backends/cuda/errstats.cu): the format of each storage type (significand bits with the
 * hidden one, minimum normal exponent) and the spacing of its values at a given magnitude.
 * Included from C and CUDA. */
#ifndef KVAL_ULP_H
#define KVAL_ULP_H

#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

#ifdef __CUDACC__
#define KV_ULP_FN __host__ __device__ __forceinline__
#else
#define KV_ULP_FN static inline
#endif

/* Significand bits (the hidden one included) and minimum normal exponent of a type. */
KV_ULP_FN int kv_type_precision(kv_dtype t) {
  return t == KV_FP16 ? 11 : t == KV_BF16 ? 8 : t == KV_FP32 ? 24 : t == KV_E4M3 ? 4 : t == KV_E5M2 ? 3 : 53;
}
KV_ULP_FN int kv_type_emin(kv_dtype t) {
  return t == KV_FP16 || t == KV_E5M2 ? -14 : t == KV_E4M3 ? -6 : t == KV_FP64 ? -1022 : -126;
}

/* The smallest normal value of t, 2^emin. */
KV_ULP_FN double kv_min_normal(kv_dtype t) {
  const uint64_t u = (uint64_t)(kv_type_emin(t) + 1023) << 52;
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* The spacing of t's values at |b| (b finite): 2^(e - p + 1) for |b| in [2^e, 2^(e+1)), the
 * subnormal spacing below the normal range. */
KV_ULP_FN double kv_ulp_at(double b, kv_dtype t) {
  uint64_t bits;
  memcpy(&bits, &b, sizeof bits);
  const int emin = kv_type_emin(t), e = (int)((bits >> 52) & 0x7ff) - 1023; /* -1023 for 0 */
  const int q = (e < emin ? emin : e) - (kv_type_precision(t) - 1);           /* ulp = 2^q, q >= -1074 */
  const uint64_t u = q >= -1022 ? (uint64_t)(q + 1023) << 52 : (uint64_t)1 << (q + 1074);
  double ulp;
  memcpy(&ulp, &u, sizeof ulp);
  return ulp;
}

#endif
