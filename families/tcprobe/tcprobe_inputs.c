/* tcprobe_inputs.c - the probes' sub-tests: the operands of each instruction a probe runs,
 * chosen (after Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA tensor
 * cores", PeerJ CS 2021, and Mikaitis' monotonicity tests) so that the outputs differ between
 * the hypotheses that tcprobe_decode.c tells apart. P = 2^15 = 256 * 128; "x at k" is the
 * product A[0][k] B[k][0] = x, split into two normal inputs; C = 0 unless given.
 *  products      8: a product with full significands (fp16 11 x 11, bf16 8 x 8 bits) at k 5,
 *                   alone and with C = -(the product rounded to the input precision)
 *  align_bits   28: P at 0, q = 2^(-1-j) at 1, -P at 2 (j = 0..27): q survives the alignment
 *                   to P iff the sum keeps 17 + j significand bits
 *  acc_round   208: P at 0, q = +-K 2^m at 1, -P at 2 for m = -28..-3, K = 1, 3, 5, 7: q's low
 *                   bits straddle the alignment cut for every width 16..44
 *  final_round   8: C = +-(2^16 - 2^-8) and +-(2i + 2) 2^-8 at 0 (i = 0..3): sums 2^16 +
 *                   (0.5, 1.5, 2.5, 3.5) fp32 ulps, aligned without loss for width >= 24
 *  normalisation 56: align_bits with P = 192 * 192 = 1.125 2^15 (raw exponent 14), then the
 *                   align_bits sub-tests (P = 2^15, raw exponent 15)
 *  subnormal_in  8: subnormal x normal and normal x subnormal inputs at k 3, normal products
 *  subnormal_out 4 (fp16) / 7 (bf16): C an fp32 subnormal and no products; for bf16 also a
 *                   subnormal product, a subnormal product with C = 0 and a normal C and
 *                   product whose sum is subnormal
 *  block        14: P at 0, -P at j, q at j + 1 (j = 1..14; q = 2^-28 fp16, 2^-60 bf16): q
 *                   survives iff a block boundary lies just before k = j + 1
 *  monotone      6: pairs C = 1 - 2^-24 then C = 1 (one ulp up, across the binade), 16
 *                   products (2 - 2^-t) 2^(-24-s) (t the input's mantissa bits, s = 0, 1, 2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"

const char *const kv_tcp_probe_names[] = {"products",     "align_bits",    "acc_round", "final_round", "normalisation",
                                          "subnormal_in", "subnormal_out", "block",     "monotone",    NULL};

int kv_tcp_probe_of(const char *name) {
  for (int i = 0; name && kv_tcp_probe_names[i]; i++)
    if (strcmp(name, kv_tcp_probe_names[i]) == 0) return i;
  return -1;
}

#define ALIGN_SUBTESTS 28
#define ROUND_EXPONENTS 26 /* m = -28 .. -3 */

int kv_tcp_subtests(int probe, kv_dtype st) {
  switch (probe) {
    case KV_TCP_PRODUCTS: return 8;
    case KV_TCP_ALIGN_BITS: return ALIGN_SUBTESTS;
    case KV_TCP_ACC_ROUND: return ROUND_EXPONENTS * 8;
    case KV_TCP_FINAL_ROUND: return 8;
    case KV_TCP_NORMALISATION: return 2 * ALIGN_SUBTESTS;
    case KV_TCP_SUBNORMAL_IN: return 8;
    case KV_TCP_SUBNORMAL_OUT: return st == KV_BF16 ? 7 : 4;
    case KV_TCP_BLOCK: return KV_TCP_K - 2;
    case KV_TCP_MONOTONE: return 6;
    default: KV_FATAL("tcprobe: unknown probe %d", probe);
  }
}

/* The bits of v in type st (fp32 for C); v must be representable: that is how the sub-tests are
 * built, so anything else is a programming error. */
static uint32_t bits_of(double v, kv_dtype st) {
  uint32_t b;
  if (st == KV_FP32) {
    const float f = (float)v;
    memcpy(&b, &f, sizeof b);
  } else {
    b = st == KV_FP16 ? kv_f64_to_f16(v) : kv_f64_to_bf16(v);
  }
  if (kv_tcp_value(b, st) != v) KV_FATAL("tcprobe: %.17g is not a %s value", v, kv_dtype_name(st));
  return b;
}

static void set_ab(kv_tcp_operands *o, int k, double a, double b, kv_dtype st) {
  o->a[k] = (uint16_t)bits_of(a, st);
  o->b[k] = (uint16_t)bits_of(b, st);
}

/* x at k: b a power of two near sqrt|x|, a = x / b (both normal for every x the probes use). */
static void set_prod(kv_tcp_operands *o, int k, double x, kv_dtype st) {
  const double b = ldexp(1.0, ilogb(x) / 2);
  set_ab(o, k, x / b, b, st);
}

static void set_c(kv_tcp_operands *o, double c) { o->c = bits_of(c, KV_FP32); }

/* P at 0, q at 1, -P at 2; P = a * a' given as its factors. */
static void cancel_around(kv_tcp_operands *o, double pa, double pb, double q, kv_dtype st) {
  set_ab(o, 0, pa, pb, st);
  set_prod(o, 1, q, st);
  set_ab(o, 2, -pa, pb, st);
}

static void build_products(kv_dtype st, kv_tcp_operands *ops) {
  const int t = st == KV_FP16 ? 10 : 7; /* mantissa bits */
  const double u = ldexp(1.0, -t), one = 1.0;
  const double pairs[4][2] = {{2 - u, 2 - u}, {2 - u, one + u}, {1.25 + 3 * u, 1.75 - u}, {-(2 - 3 * u), one + 3 * u}};
  for (int i = 0; i < 4; i++)
    for (int with_c = 0; with_c < 2; with_c++) {
      kv_tcp_operands *o = &ops[2 * i + with_c];
      set_ab(o, 5, pairs[i][0], pairs[i][1], st);
      if (with_c) set_c(o, -kv_round_f64(pairs[i][0] * pairs[i][1], st));
    }
}

static void build_align(kv_tcp_operands *ops, double pa, double pb, kv_dtype st) {
  for (int j = 0; j < ALIGN_SUBTESTS; j++) cancel_around(&ops[j], pa, pb, ldexp(1.0, -1 - j), st);
}

static void build_acc_round(kv_dtype st, kv_tcp_operands *ops) {
  static const int ks[4] = {1, 3, 5, 7};
  for (int mi = 0; mi < ROUND_EXPONENTS; mi++)
    for (int ki = 0; ki < 4; ki++)
      for (int s = 0; s < 2; s++)
        cancel_around(&ops[(mi * 4 + ki) * 2 + s], 256, 128, (s ? -1 : 1) * ldexp(ks[ki], -28 + mi), st);
}

static void build_final_round(kv_dtype st, kv_tcp_operands *ops) {
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 4; i++) {
      const double sign = s ? -1.0 : 1.0;
      set_c(&ops[s * 4 + i], sign * (65536.0 - ldexp(1.0, -8)));
      set_prod(&ops[s * 4 + i], 0, sign * ldexp(2 * i + 2, -8), st);
    }
}

static void build_subnormal_in(kv_dtype st, kv_tcp_operands *ops) {
  const int lo = st == KV_FP16 ? -24 : -133, big = st == KV_FP16 ? 10 : 100;
  const int mant = st == KV_FP16 ? 1023 : 127, top = st == KV_FP16 ? -20 : -128;
  const double sub[4] = {ldexp(1, lo), ldexp(3, lo), ldexp(mant, lo), ldexp(1, top)};
  const double nrm[4] = {ldexp(1, big), ldexp(1, big - 2), ldexp(1.5, big - 6), ldexp(-1, big - 10)};
  for (int i = 0; i < 4; i++) {
    set_ab(&ops[i], 3, sub[i], nrm[i], st);
    set_ab(&ops[4 + i], 3, nrm[i], -sub[i], st);
  }
}

static void build_subnormal_out(kv_dtype st, kv_tcp_operands *ops) {
  const double cs[4] = {ldexp(1, -149), ldexp(3, -140), ldexp(1, -127), ldexp(-0.75, -126)};
  for (int i = 0; i < 4; i++) set_c(&ops[i], cs[i]);
  if (st != KV_BF16) return;
  set_ab(&ops[4], 7, ldexp(1, -70), ldexp(1, -70), st);
  set_ab(&ops[5], 7, ldexp(3, -75), ldexp(-1, -70), st);
  set_c(&ops[6], ldexp(1, -125));
  set_ab(&ops[6], 7, ldexp(-1.5, -63), ldexp(1, -63), st);
}

static void build_block(kv_dtype st, kv_tcp_operands *ops) {
  const double q = ldexp(1.0, st == KV_FP16 ? -28 : -60);
  for (int j = 1; j < KV_TCP_K - 1; j++) {
    kv_tcp_operands *o = &ops[j - 1];
    set_ab(o, 0, 256, 128, st);
    set_ab(o, j, -256, 128, st);
    set_prod(o, j + 1, q, st);
  }
}

static void build_monotone(kv_dtype st, kv_tcp_operands *ops) {
  const int t = st == KV_FP16 ? 10 : 7;
  for (int s = 0; s < 3; s++)
    for (int up = 0; up < 2; up++) {
      kv_tcp_operands *o = &ops[2 * s + up];
      set_c(o, up ? 1.0 : 1.0 - ldexp(1.0, -24));
      for (int k = 0; k < KV_TCP_K; k++) set_ab(o, k, ldexp(1.0, -12), ldexp(2.0 - ldexp(1.0, -t), -12 - s), st);
    }
}

void kv_tcp_build(int probe, kv_dtype st, kv_tcp_operands *ops) {
  const int n = kv_tcp_subtests(probe, st);
  memset(ops, 0, (size_t)n * sizeof *ops);
  switch (probe) {
    case KV_TCP_PRODUCTS: build_products(st, ops); break;
    case KV_TCP_ALIGN_BITS: build_align(ops, 256, 128, st); break;
    case KV_TCP_ACC_ROUND: build_acc_round(st, ops); break;
    case KV_TCP_FINAL_ROUND: build_final_round(st, ops); break;
    case KV_TCP_NORMALISATION:
      build_align(ops, 192, 192, st);
      build_align(ops + ALIGN_SUBTESTS, 256, 128, st);
      break;
    case KV_TCP_SUBNORMAL_IN: build_subnormal_in(st, ops); break;
    case KV_TCP_SUBNORMAL_OUT: build_subnormal_out(st, ops); break;
    case KV_TCP_BLOCK: build_block(st, ops); break;
    case KV_TCP_MONOTONE: build_monotone(st, ops); break;
    default: KV_FATAL("tcprobe: unknown probe %d", probe);
  }
}

kv_tcp_operands *kv_tcp_case_subtests(const kv_case *c, int *probe, int *n) {
  *probe = kv_tcp_probe_of(kv_case_str(c, "probe"));
  *n = kv_tcp_subtests(*probe, c->prec.storage);
  kv_tcp_operands *ops = KV_MALLOC((size_t)*n * sizeof *ops);
  if (CHECK_ALLOC(ops) != KV_OK) return NULL;
  kv_tcp_build(*probe, c->prec.storage, ops);
  return ops;
}
