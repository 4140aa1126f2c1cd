/* tcprobe_limits.h - what the tcprobe family's descriptor, its CPU side and its CUDA side share,
 * in plain C that gcc and nvcc both compile: the probes and instructions by deck name, the
 * operands of one sub-test (one tensor-core instruction computing D[0][0] = C + sum_k A[0][k]
 * B[k][0] over its k = 0..K-1, K = 16 for fp16/bf16 and 32 for e4m3/e5m2, every other element
 * of A, B and C zero) as the bit patterns the instruction reads, and their exact value (the fp64
 * references of both sides use it). */
#ifndef KVAL_TCPROBE_LIMITS_H
#define KVAL_TCPROBE_LIMITS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

#ifdef __CUDACC__
#define KV_TCP_HD __host__ __device__
#else
#define KV_TCP_HD
#endif

/* The probes (deck axis `probe`), in the order of kv_tcp_probe_names. */
enum kv_tcp_probe {
  KV_TCP_PRODUCTS = 0,  /* are products of two inputs exact in the sum? */
  KV_TCP_ALIGN_BITS,    /* significand bits the aligned sum keeps (24 + the extra alignment bits) */
  KV_TCP_ACC_ROUND,     /* how the bits shifted out in the alignment are rounded */
  KV_TCP_FINAL_ROUND,   /* how the normalised sum is rounded to fp32 */
  KV_TCP_NORMALISATION, /* products aligned on their normalised or on their raw exponent */
  KV_TCP_SUBNORMAL_IN,  /* fp16/bf16 subnormal inputs kept or flushed */
  KV_TCP_SUBNORMAL_OUT, /* fp32 subnormals through the accumulator (C in, D out) kept or flushed */
  KV_TCP_BLOCK,         /* how many products one fused sum adds before it rounds */
  KV_TCP_MONOTONE,      /* is D non-decreasing when C increases by one ulp? */
  KV_TCP_NPROBES
};

/* The instructions (deck axis `instruction`). */
enum kv_tcp_instruction { KV_TCP_MMA = 0, KV_TCP_WGMMA = 1 };

#define KV_TCP_KMAX 32     /* products per sub-test at most (the FP8 instructions' k) */
#define KV_TCP_MAX_SUB 256 /* sub-tests of one probe at most */

KV_TCP_HD static inline int kv_tcp_is_fp8(kv_dtype st) { return st == KV_E4M3 || st == KV_E5M2; }

/* Products per sub-test for input type st: the k of the instruction (mma.sync m16n8k16 and
 * wgmma m64n8k16 for fp16/bf16; m16n8k32 and m64n8k32 for e4m3/e5m2). */
KV_TCP_HD static inline int kv_tcp_k(kv_dtype st) { return kv_tcp_is_fp8(st) ? 32 : 16; }

/* One sub-test: A[0][k] and B[k][0] (k < kv_tcp_k) as fp16/bf16 bits or 8-bit e4m3/e5m2 codes,
 * C[0][0] as fp32 bits. */
typedef struct {
  uint16_t a[KV_TCP_KMAX], b[KV_TCP_KMAX];
  uint32_t c;
} kv_tcp_operands;

/* Exponent and mantissa bits of an input type (or fp32). */
KV_TCP_HD static inline void kv_tcp_format(kv_dtype st, int *ebits, int *mbits) {
  *mbits = st == KV_FP16 ? 10 : st == KV_BF16 ? 7 : st == KV_E4M3 ? 3 : st == KV_E5M2 ? 2 : 23;
  *ebits = st == KV_FP16 || st == KV_E5M2 ? 5 : st == KV_E4M3 ? 4 : 8;
}

/* The value of an fp16/bf16 pattern, an e4m3/e5m2 code (no infinities in e4m3, whose only NaN
 * is S.1111.111) or (st = KV_FP32) an fp32 pattern, exact, in integer arithmetic and ldexp (no
 * float operation that could flush a subnormal). */
KV_TCP_HD static inline double kv_tcp_value(uint32_t bits, kv_dtype st) {
  int ebits, mbits;
  kv_tcp_format(st, &ebits, &mbits);
  const int total = 1 + ebits + mbits, bias = (1 << (ebits - 1)) - 1;
  const uint32_t emax = (1u << ebits) - 1, mmax = (1u << mbits) - 1;
  const uint32_t e = (bits >> mbits) & emax, m = bits & mmax;
  const double sign = (bits >> (total - 1)) & 1u ? -1.0 : 1.0;
  if (st == KV_E4M3 ? e == emax && m == mmax : e == emax) return m ? NAN : sign * INFINITY;
  const double sig = e ? (double)(m | (1u << mbits)) : (double)m;
  return sign * ldexp(sig, (e ? (int)e : 1) - bias - mbits);
}

/* The exact D[0][0] of a sub-test, C first and then k ascending (exact in fp64 for every
 * sub-test kval builds: test_tcprobe checks it against double-double), and its magnitude
 * term |C| + sum |A B|. */
KV_TCP_HD static inline double kv_tcp_exact(const kv_tcp_operands *o, kv_dtype st, double *mag) {
  double s = kv_tcp_value(o->c, KV_FP32), m = fabs(s);
  for (int k = 0; k < kv_tcp_k(st); k++) {
    const double p = kv_tcp_value(o->a[k], st) * kv_tcp_value(o->b[k], st);
    s += p;
    m += fabs(p);
  }
  if (mag) *mag = m;
  return s;
}

/* The probe / instruction of a deck name, -1 for an unknown one. */
static inline int kv_tcp_instruction_of(const char *name) {
  if (name && strcmp(name, "mma") == 0) return KV_TCP_MMA;
  if (name && strcmp(name, "wgmma") == 0) return KV_TCP_WGMMA;
  return -1;
}

/* NULL when the probes run on this precision, else why not: fp16, bf16, e4m3 or e5m2 inputs,
 * fp32 accumulation (the tensor cores' fp32 sum is what the probes measure). */
static inline const char *kv_tcp_unsupported(kv_precision p) {
  if (p.storage != KV_FP16 && p.storage != KV_BF16 && !kv_tcp_is_fp8(p.storage))
    return "tcprobe: inputs must be fp16, bf16, e4m3 or e5m2";
  if (p.accum != KV_FP32)
    return "tcprobe: the probes measure fp32 accumulation (precision fp16:fp32, bf16:fp32, e4m3:fp32 or e5m2:fp32)";
  return NULL;
}

#endif
