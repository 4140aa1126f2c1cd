/* narrow.h - the one rounding routine of the binary-format conversions (halfprec.c, fp8.c)
 * and of the device error statistics (cuda/errstats_gpu.cu): kv_round_bits rounds the
 * magnitude bits of a wider binary format to a narrower one, to nearest even, in integer
 * arithmetic; kv_narrow_bits adds the IEEE overflow and NaN rule (fp8.c has E4M3's own).
 * Included from C and CUDA. */
#ifndef KVAL_NARROW_H
#define KVAL_NARROW_H

#include <stdint.h>

#ifdef __CUDACC__
#define KV_NARROW_FN __host__ __device__ __forceinline__
#else
#define KV_NARROW_FN static inline
#endif

/* Round the magnitude `a` (sign cleared, finite or infinite, not NaN) of a value of the source
 * format (sm stored mantissa bits, exponent bias sb) to the destination format (dm < sm
 * mantissa bits, bias db) to nearest, ties to even, as if the destination's exponent had no
 * upper bound: the destination magnitude bits, which the caller compares with its format's
 * largest finite value. */
KV_NARROW_FN uint64_t kv_round_bits(uint64_t a, int sm, int sb, int dm, int db) {
  const int shift = sm - dm;
  if (a >= (uint64_t)(sb - db + 1) << sm) { /* destination normal */
    uint64_t r = a - ((uint64_t)(sb - db) << sm);
    r += ((uint64_t)1 << (shift - 1)) - 1 + ((r >> shift) & 1);
    return r >> shift; /* a carry out of the mantissa correctly bumps the exponent */
  }
  /* destination subnormal (or zero): value in units of the destination's subnormal spacing
   * is m * 2^-s; a source subnormal has exponent field 0 and no hidden bit */
  const uint64_t e = a >> sm;
  const uint64_t m = e ? (a & (((uint64_t)1 << sm) - 1)) | ((uint64_t)1 << sm) : a;
  long long s = (long long)(sb - db) + shift + 1 - (long long)(e ? e : 1);
  if (s > sm + 2) s = sm + 2; /* m < 2^(sm+1): any larger shift rounds to zero just the same */
  const uint64_t q = m >> s;
  const uint64_t rem = m & (((uint64_t)1 << s) - 1);
  const uint64_t half = (uint64_t)1 << (s - 1);
  return q + ((rem > half) | ((rem == half) & (q & 1)));
}

/* kv_round_bits with the destination's all-ones exponent field 2*db+1 for infinity and NaN:
 * infinity from the overflow threshold (max finite + half an ulp) up, and for a NaN a quiet
 * NaN (quiet bit set) that keeps the top dm bits of the payload. */
KV_NARROW_FN uint64_t kv_narrow_bits(uint64_t a, int sm, int sb, int dm, int db) {
  const int shift = sm - dm;
  const uint64_t src_inf = (uint64_t)(2 * sb + 1) << sm;
  const uint64_t dst_inf = (uint64_t)(2 * db + 1) << dm;
  /* max finite of the destination plus half its ulp, in source bits: the destination's top
   * biased exponent 2*db rebiased to sb - db + 2*db, all dm mantissa bits, then half an ulp */
  const uint64_t overflow =
      ((uint64_t)(sb + db) << sm) | ((((uint64_t)1 << dm) - 1) << shift) | ((uint64_t)1 << (shift - 1));
  if (a >= overflow) {
    if (a > src_inf) return dst_inf | ((uint64_t)1 << (dm - 1)) | ((a >> shift) & (((uint64_t)1 << dm) - 1));
    return dst_inf;
  }
  return kv_round_bits(a, sm, sb, dm, db);
}

#endif
