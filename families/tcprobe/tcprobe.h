/* tcprobe.h - the tcprobe family (tensor-core arithmetic probes) as the rest of the family sees
 * it: the descriptor, the probes' sub-tests (tcprobe_inputs.c), the arithmetic hypotheses as a
 * parameterised model of one tensor-core dot product (tcprobe_unit.c), the decoders that name
 * the hypothesis a probe's outputs show, the precision model's allowed outcomes
 * (tcprobe_decode.c), and the CPU kernels (emulation and fp64 references). */
#ifndef KVAL_FAMILIES_TCPROBE_H
#define KVAL_FAMILIES_TCPROBE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

#include "family.h"
#include "families/tcprobe/tcprobe_limits.h"

extern const kv_family kv_family_tcprobe;

/* The probes by deck name (NULL-terminated, in enum kv_tcp_probe order) and the lookup. */
extern const char *const kv_tcp_probe_names[];
int kv_tcp_probe_of(const char *name);

/* Number of sub-tests of a probe for input type st: fp16, bf16, e4m3, e5m2 (1..KV_TCP_MAX_SUB). */
int kv_tcp_subtests(int probe, kv_dtype st);
/* Sub-tests of the alignment-width series of align_bits and normalisation, the j-th testing a
 * width of 17 + j significand bits (fp16/bf16, 28) or 10 + j (FP8, 20: the products of FP8
 * normals span 2^-12 .. 2^16 only). */
static inline int kv_tcp_align_n(kv_dtype st) { return kv_tcp_is_fp8(st) ? 20 : 28; }
/* x rounded to the input type st (nearest even; FP8 saturating). */
double kv_tcp_round_input(double x, kv_dtype st);
/* The probe's sub-tests: ops[0 .. kv_tcp_subtests) (docs in tcprobe_inputs.c). */
void kv_tcp_build(int probe, kv_dtype st, kv_tcp_operands *ops);
/* The sub-tests of a case, built in a new array (free() it) of *n; its probe into *probe. NULL
 * (reported) when out of memory. */
kv_tcp_operands *kv_tcp_case_subtests(const kv_case *c, int *probe, int *n);

/* Rounding directions the probes tell apart. UNSEEN: no rounding was visible. RN: to nearest,
 * ties not resolved by the probe; RNE / RNA: to nearest, ties to even / away from zero. */
enum kv_tcp_rounding {
  KV_TCP_UNSEEN = 0, KV_TCP_RZ, KV_TCP_RN, KV_TCP_RNE, KV_TCP_RNA, KV_TCP_RD, KV_TCP_RU, KV_TCP_OTHER_ROUNDING
};

/* One hypothesis about the dot product D = C + sum_k a_k b_k of one instruction: the products
 * in blocks of `block` consecutive k (C joins the first), each block one fused sum: the terms
 * (the running sum and the block's products) aligned to the largest exponent, keeping `width`
 * significand bits from the largest term's leading bit (0: exact alignment), the bits shifted
 * out rounded by `align_round`; the sum rounded to fp32 by `final_round`; at the end of the
 * instruction the accumulator truncated to `acc_bits` significand bits (0: fp32 kept). */
typedef struct {
  int width;          /* significand bits of the aligned sum (24 + extra bits); 0: exact */
  int align_round;    /* kv_tcp_rounding: RZ, RNE, RD or RU */
  int final_round;    /* kv_tcp_rounding: RZ, RNE, RNA, RD or RU */
  int block;          /* 1..kv_tcp_k */
  int raw_exponent;   /* 1: products aligned on e(a) + e(b), before their normalisation */
  int round_products; /* 1: products rounded to the input type's precision first */
  int flush_in;       /* 1: subnormal inputs read as zero */
  int flush_out;      /* 1: fp32 subnormals (C, the rounded sums) flushed to zero */
  int acc_bits;       /* 1..23: D truncated toward zero to that many significand bits; 0: fp32 */
} kv_tcp_unit;

/* The precision model's dot product (docs/NUMERICS.md): exact products added one at a time
 * in fp32 with round-to-nearest-even and gradual underflow, C first - the arithmetic of the
 * gemm emulation's k loop. FP8 (kv_tcp_model_fp8): one fused sum of the 32 products and C,
 * aligned on the largest (raw) exponent and truncated to KV_FP8_ACC_BITS = 14 bits - the gemm
 * emulation's k-step (numerics/accum.h's kv_fp8_fused_sum), as the probes measure Hopper's FP8
 * wgmma. The cpu backend's tcprobe emulation computes them (kv_tcp_model_of the case's input type). */
extern const kv_tcp_unit kv_tcp_model, kv_tcp_model_fp8;
const kv_tcp_unit *kv_tcp_model_of(kv_dtype st);
/* D[0][0] of one sub-test under a hypothesis. */
float kv_tcp_unit_eval(const kv_tcp_unit *u, const kv_tcp_operands *o, kv_dtype st);

/* The outcome a probe's outputs d[0 .. n) of its sub-tests ops show (small integer per probe:
 * products 0 exact / 1 rounded; align_bits the significand width, fp16/bf16 16..44 (16: at most
 * 16, 44: at least 44), FP8 9..29 (9: at most 9, 29: at least 29; the fewer of the alignment's
 * and a narrower-than-fp32 result's; 0: inconsistent); acc_round, final_round a
 * kv_tcp_rounding (FP8 final_round: UNSEEN when C does not pass the accumulator unchanged);
 * normalisation 0 normalised first / 1 raw exponent / 2 undetermined / 3 other; subnormal_in,
 * subnormal_out 0 kept / 1 flushed / 2 other; block 1..kv_tcp_k (0: inconsistent); monotone 0
 * monotone / 1 not). */
int kv_tcp_decode(int probe, kv_dtype st, const kv_tcp_operands *ops, const float *d, int n);
/* The outcome in words, into buf. */
const char *kv_tcp_outcome_name(int probe, kv_dtype st, int outcome, char *buf, size_t n);
/* 1 when the precision model of input type st (the tolerance and the emulations kval checks
 * with) holds under this outcome; 0 when the hardware contradicts it (the case fails). */
int kv_tcp_model_allows(int probe, kv_dtype st, int outcome);
/* What the model requires of a probe, in words (the message of a failing case). */
const char *kv_tcp_model_requires(int probe, kv_dtype st);

kv_status kv_tcp_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_tcp_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                               double *mag, double *aux_ref, double *aux_mag);
kv_status kv_tcp_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
