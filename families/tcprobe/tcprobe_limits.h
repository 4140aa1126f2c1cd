/* tcprobe_limits.h - what the tcprobe family's descriptor, its CPU side and its CUDA side share,
 * in plain C that gcc and nvcc both compile: the probes and instructions by deck name, the
 * operands of one sub-test (one tensor-core instruction computing D[0][0] = C + sum_k A[0][k]
 * B[k][0] over k = 0..15, every other element of A, B and C zero) as the bit patterns the
 * instruction reads, and their exact value (the fp64 references of both sides use it). */
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

#define KV_TCP_K 16        /* products per sub-test: the k of m16n8k16 and m64n8k16 */
#define KV_TCP_MAX_SUB 256 /* sub-tests of one probe at most */

/* One sub-test: A[0][k] and B[k][0] as fp16/bf16 bits, C[0][0] as fp32 bits. */
typedef struct {
  uint16_t a[KV_TCP_K], b[KV_TCP_K];
  uint32_t c;
} kv_tcp_operands;

/* The value of a 16-bit fp16/bf16 pattern or (st = KV_FP32) of a 32-bit fp32 pattern, exact, in
 * integer arithmetic and ldexp (no float operation that could flush a subnormal). */
KV_TCP_HD static inline double kv_tcp_value(uint32_t bits, kv_dtype st) {
  const int mbits = st == KV_FP16 ? 10 : st == KV_BF16 ? 7 : 23;
  const int ebits = st == KV_FP16 ? 5 : 8, total = 1 + ebits + mbits;
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
  const double sign = (bits >> (total - 1)) & 1u ? -1.0 : 1.0;
  if (e == (1u << ebits) - 1) return m ? NAN : sign * INFINITY;
  const double sig = e ? (double)(m | (1u << mbits)) : (double)m;
  return sign * ldexp(sig, (e ? (int)e : 1) - bias - mbits);
}

/* The exact D[0][0] of a sub-test, C first and then k ascending (exact in fp64 for every
 * sub-test kval builds: test_tcprobe checks it against double-double), and its magnitude
 * term |C| + sum |A B|. */
KV_TCP_HD static inline double kv_tcp_exact(const kv_tcp_operands *o, kv_dtype st, double *mag) {
  double s = kv_tcp_value(o->c, KV_FP32), m = fabs(s);
  for (int k = 0; k < KV_TCP_K; k++) {
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

/* NULL when the probes run on this precision, else why not: fp16 or bf16 inputs, fp32
 * accumulation (the tensor cores' fp32 sum is what the probes measure). */
static inline const char *kv_tcp_unsupported(kv_precision p) {
  if (p.storage != KV_FP16 && p.storage != KV_BF16) return "tcprobe: inputs must be fp16 or bf16";
  if (p.accum != KV_FP32) return "tcprobe: the probes measure fp32 accumulation (precision fp16:fp32 or bf16:fp32)";
  return NULL;
}

#endif
