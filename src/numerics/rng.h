/* rng.h - counter-based input generator shared bit for bit by the CPU and the GPU: element
 * i of tensor `stream` of a case is a pure function of (seed, stream, i), computed in
 * integer arithmetic and one correctly rounded double multiply-add, so every rank and every
 * backend sees the same inputs. Included from C and CUDA (KV_HD functions). */
#ifndef KVAL_RNG_H
#define KVAL_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define KV_HD __host__ __device__ __forceinline__
#else
#define KV_HD static inline
#endif

/* Base distributions; a tensor's values are offset + scale * base. */
typedef enum {
  KV_DIST_NORMAL = 0,  /* Irwin-Hall sum of four 16-bit uniforms, standardised: mean 0, sd 1, |x| <= 3.47 */
  KV_DIST_UNIFORM = 1, /* uniform on [-1, 1) with 24-bit resolution */
} kv_base_dist;

/* splitmix64 finaliser: a bijective 64-bit mix. */
KV_HD uint64_t kv_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Key of one tensor of one case: distinct for every (seed, case key, tensor id). */
KV_HD uint64_t kv_stream_key(uint64_t seed, uint64_t case_key, uint64_t tensor_id) {
  return kv_mix64(kv_mix64(seed ^ 0x6b76616c6b76616cULL) ^ kv_mix64(case_key * 0x100000001b3ULL + tensor_id));
}

/* Base value of element i: exact in double (a small integer times a power of two or a
 * fixed constant, rounded once). */
KV_HD double kv_base_value(uint64_t key, uint64_t i, int dist) {
  uint64_t r = kv_mix64(key ^ kv_mix64(i));
  if (dist == KV_DIST_UNIFORM) {
    int64_t u = (int64_t)(r >> 40) - (1LL << 23); /* [-2^23, 2^23) */
    return (double)u * (1.0 / 8388608.0);
  }
  int64_t s = (int64_t)(r & 0xffff) + (int64_t)((r >> 16) & 0xffff) + (int64_t)((r >> 32) & 0xffff) +
              (int64_t)(r >> 48) - 131070; /* sum of 4 U{0..65535} minus its mean: [-131070, 131070] */
  /* sd of the sum = 65536 * sqrt(4/12) (continuous approximation) = 37837.23; divide once. */
  return (double)s / 37837.2270;
}

/* offset + scale * base, with the multiply and add each rounded (no contraction), so host
 * and device agree to the bit. The caller rounds the result to the storage type. */
KV_HD double kv_gen_value(uint64_t key, uint64_t i, int dist, double scale, double offset) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(__dmul_rn(scale, kv_base_value(key, i, dist)), offset);
#else
  volatile double prod = scale * kv_base_value(key, i, dist);
  return prod + offset;
#endif
}

#endif
