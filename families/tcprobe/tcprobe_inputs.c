/* tcprobe_inputs.c - the probes' sub-tests: the operands of each instruction a probe runs,
 * chosen (after Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA tensor
 * cores", PeerJ CS 2021, and Mikaitis' monotonicity tests) so that the outputs differ between
 * the hypotheses that tcprobe_decode.c tells apart. "x at k" is the product A[0][k] B[k][0] =
 * x, split into two normal inputs; C = 0 unless given. P = 2^15 = 256 * 128 for fp16/bf16 (k
 * 16), P = 2^16 = 256 * 256 for e4m3/e5m2 (k 32; their normal products reach down to 2^-12).
 * fp16/bf16:
 *  products      8: a product with full significands (fp16 11 x 11, bf16 8 x 8 bits) at k 5,
 *                   alone and with C = -(the product rounded to the input precision)
 *  align_bits   28: P at 0, q = 2^(16-w) at 1, -P at 2 (w = 17..44): q survives the alignment
 *                   to P iff the sum keeps w significand bits
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
 *                   products (2 - 2^-t) 2^(-24-s) (t the input's mantissa bits, s = 0, 1, 2).
 * e4m3/e5m2 (the same designs at their scale; -P at k 4, not 2, so that P, q and -P share a
 * fused sum also where the k are split between two sums by k mod 4, {0, 1} and {2, 3}: the
 * H200's mma.sync m16n8k32 is two fp16 mma over those halves, added in fp32):
 *  products      8: as above (e4m3 4 x 4, e5m2 3 x 3 significand bits)
 *  align_bits   35: P at 0, q = 2^(17-w) at 1, -P at 4 (w = 10..29), then P at 0 and q at 1
 *                   without -P (w = 10..24): the first series sees the alignment's width, the
 *                   second also a result (accumulator) narrower than fp32
 *  acc_round   152: P, +-K 2^m, -P for m = -12..6: straddles the cut for every width 9..28
 *  final_round  10: the 8 above, then C = +-(2^16 - 2^-8) alone: does C pass unchanged?
 *  normalisation 40: the first align_bits series with P = 384 * 192 = 1.125 2^16 (raw
 *                   exponent 15), then with P = 2^16
 *  subnormal_in  8: as above with the type's subnormals (e4m3 from 2^-9, e5m2 from 2^-16)
 *  subnormal_out 4: C an fp32 subnormal on the grid of a 14-bit accumulator (multiples of
 *                   2^-139) and no products (no FP8 product is that small)
 *  block        30: P, -P at j, q = 2^-12 at j + 1 (j = 1..30)
 *  monotone     36: pairs C = 2^16 - 2^-8 then C = 2^16, 32 products (2 - 2^-t) 2^(16-s)
 *                   (s = 10..27): the pair s shows a non-monotone sum of width s. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"
#include "numerics/fp8.h"

const char *const kv_tcp_probe_names[] = {"products",     "align_bits",    "acc_round", "final_round", "normalisation",
                                          "subnormal_in", "subnormal_out", "block",     "monotone",    NULL};

int kv_tcp_probe_of(const char *name) {
  for (int i = 0; name && kv_tcp_probe_names[i]; i++)
    if (strcmp(name, kv_tcp_probe_names[i]) == 0) return i;
  return -1;
}

#define ROUND_EXPONENTS 26      /* fp16/bf16 acc_round: m = -28 .. -3 */
#define FP8_ROUND_EXPONENTS 19  /* FP8 acc_round: m = -12 .. 6 */
#define FP8_RESULT_SUBTESTS 15  /* FP8 align_bits, P + q: w = 10 .. 24 */
#define FP8_MONOTONE_PAIRS 18   /* s = 10 .. 27 */

int kv_tcp_subtests(int probe, kv_dtype st) {
  const int fp8 = kv_tcp_is_fp8(st), align = kv_tcp_align_n(st);
  switch (probe) {
    case KV_TCP_PRODUCTS: return 8;
    case KV_TCP_ALIGN_BITS: return align + (fp8 ? FP8_RESULT_SUBTESTS : 0);
    case KV_TCP_ACC_ROUND: return (fp8 ? FP8_ROUND_EXPONENTS : ROUND_EXPONENTS) * 8;
    case KV_TCP_FINAL_ROUND: return fp8 ? 10 : 8;
    case KV_TCP_NORMALISATION: return 2 * align;
    case KV_TCP_SUBNORMAL_IN: return 8;
    case KV_TCP_SUBNORMAL_OUT: return st == KV_BF16 ? 7 : 4;
    case KV_TCP_BLOCK: return kv_tcp_k(st) - 2;
    case KV_TCP_MONOTONE: return fp8 ? 2 * FP8_MONOTONE_PAIRS : 6;
    default: KV_FATAL("tcprobe: unknown probe %d", probe);
  }
}

double kv_tcp_round_input(double x, kv_dtype st) {
  if (!kv_tcp_is_fp8(st)) return kv_round_f64(x, st);
  const kv_fp8_format f = st == KV_E4M3 ? KV_FP8_E4M3 : KV_FP8_E5M2;
  return kv_fp8_to_f64(kv_f64_to_fp8(x, f, KV_FP8_SATFINITE), f);
}

/* The bits of v in type st (fp32 for C); v must be representable: that is how the sub-tests are
 * built, so anything else is a programming error. */
static uint32_t bits_of(double v, kv_dtype st) {
  uint32_t b;
  if (st == KV_FP32) {
    const float f = (float)v;
    memcpy(&b, &f, sizeof b);
  } else if (kv_tcp_is_fp8(st)) {
    b = kv_f64_to_fp8(v, st == KV_E4M3 ? KV_FP8_E4M3 : KV_FP8_E5M2, KV_FP8_NOSAT);
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

/* P at 0, q at 1, -P at 2 (FP8: at 4); P = a * a' given as its factors. */
static void cancel_around(kv_tcp_operands *o, double pa, double pb, double q, kv_dtype st) {
  set_ab(o, 0, pa, pb, st);
  set_prod(o, 1, q, st);
  set_ab(o, kv_tcp_is_fp8(st) ? 4 : 2, -pa, pb, st);
}

/* P = P_A * pb(st): 2^15 for fp16/bf16, 2^16 for FP8, its raw exponent its normalised one. */
#define P_A 256.0
static double p_b(kv_dtype st) { return kv_tcp_is_fp8(st) ? 256.0 : 128.0; }

static int mantissa_bits(kv_dtype st) {
  int e, m;
  kv_tcp_format(st, &e, &m);
  return m;
}

static void build_products(kv_dtype st, kv_tcp_operands *ops) {
  const double u = ldexp(1.0, -mantissa_bits(st)), one = 1.0;
  const double pairs[4][2] = {{2 - u, 2 - u}, {2 - u, one + u}, {1.25 + 3 * u, 1.75 - u}, {-(2 - 3 * u), one + 3 * u}};
  for (int i = 0; i < 4; i++)
    for (int with_c = 0; with_c < 2; with_c++) {
      kv_tcp_operands *o = &ops[2 * i + with_c];
      set_ab(o, 5, pairs[i][0], pairs[i][1], st);
      if (with_c) set_c(o, -kv_tcp_round_input(pairs[i][0] * pairs[i][1], st));
    }
}

/* The width series: sub-test j tests width w = 17 + j (fp16/bf16) or 10 + j (FP8) with q =
 * 2^(e(P) + 1 - w), P = pa * pb of exponent 15 or 16 whatever its raw exponent. */
static void build_align(kv_tcp_operands *ops, double pa, double pb, kv_dtype st) {
  for (int j = 0; j < kv_tcp_align_n(st); j++)
    cancel_around(&ops[j], pa, pb, ldexp(1.0, (kv_tcp_is_fp8(st) ? 7 : -1) - j), st);
}

/* FP8's second series: P at 0 and q = 2^(17-w) at 1, w = 10..24. */
static void build_result_width(kv_dtype st, kv_tcp_operands *ops) {
  for (int j = 0; j < FP8_RESULT_SUBTESTS; j++) {
    set_ab(&ops[j], 0, P_A, p_b(st), st);
    set_prod(&ops[j], 1, ldexp(1.0, 7 - j), st);
  }
}

static void build_acc_round(kv_dtype st, kv_tcp_operands *ops) {
  static const int ks[4] = {1, 3, 5, 7};
  const int fp8 = kv_tcp_is_fp8(st), n = fp8 ? FP8_ROUND_EXPONENTS : ROUND_EXPONENTS, m0 = fp8 ? -12 : -28;
  for (int mi = 0; mi < n; mi++)
    for (int ki = 0; ki < 4; ki++)
      for (int s = 0; s < 2; s++)
        cancel_around(&ops[(mi * 4 + ki) * 2 + s], P_A, p_b(st), (s ? -1 : 1) * ldexp(ks[ki], m0 + mi), st);
}

static void build_final_round(kv_dtype st, kv_tcp_operands *ops) {
  for (int s = 0; s < 2; s++) {
    const double sign = s ? -1.0 : 1.0, c = sign * (65536.0 - ldexp(1.0, -8));
    for (int i = 0; i < 4; i++) {
      set_c(&ops[s * 4 + i], c);
      set_prod(&ops[s * 4 + i], 0, sign * ldexp(2 * i + 2, -8), st);
    }
    if (kv_tcp_is_fp8(st)) set_c(&ops[8 + s], c);
  }
}

static void build_subnormal_in(kv_dtype st, kv_tcp_operands *ops) {
  /* the smallest subnormal 2^lo, the largest mant 2^lo, a power of two 2^top; normals from 2^big */
  static const int lo[] = {[KV_FP16] = -24, [KV_BF16] = -133, [KV_E4M3] = -9, [KV_E5M2] = -16};
  static const int big[] = {[KV_FP16] = 10, [KV_BF16] = 100, [KV_E4M3] = 8, [KV_E5M2] = 15};
  static const int mant[] = {[KV_FP16] = 1023, [KV_BF16] = 127, [KV_E4M3] = 7, [KV_E5M2] = 3};
  static const int top[] = {[KV_FP16] = -20, [KV_BF16] = -128, [KV_E4M3] = -7, [KV_E5M2] = -15};
  const double sub[4] = {ldexp(1, lo[st]), ldexp(3, lo[st]), ldexp(mant[st], lo[st]), ldexp(1, top[st])};
  const double nrm[4] = {ldexp(1, big[st]), ldexp(1, big[st] - 2), ldexp(1.5, big[st] - 6), ldexp(-1, big[st] - 10)};
  for (int i = 0; i < 4; i++) {
    set_ab(&ops[i], 3, sub[i], nrm[i], st);
    set_ab(&ops[4 + i], 3, nrm[i], -sub[i], st);
  }
}

static void build_subnormal_out(kv_dtype st, kv_tcp_operands *ops) {
  const double cs[4] = {ldexp(1, -149), ldexp(3, -140), ldexp(1, -127), ldexp(-0.75, -126)};
  const int g = -125 - KV_FP8_ACC_BITS; /* the subnormal spacing of a 14-bit accumulator, 2^-139 */
  const double cs8[4] = {ldexp(1, g), ldexp(3, g + 4), ldexp(1, -127), ldexp(-0.75, -126)};
  for (int i = 0; i < 4; i++) set_c(&ops[i], kv_tcp_is_fp8(st) ? cs8[i] : cs[i]);
  if (st != KV_BF16) return;
  set_ab(&ops[4], 7, ldexp(1, -70), ldexp(1, -70), st);
  set_ab(&ops[5], 7, ldexp(3, -75), ldexp(-1, -70), st);
  set_c(&ops[6], ldexp(1, -125));
  set_ab(&ops[6], 7, ldexp(-1.5, -63), ldexp(1, -63), st);
}

static void build_block(kv_dtype st, kv_tcp_operands *ops) {
  const double q = ldexp(1.0, st == KV_FP16 ? -28 : st == KV_BF16 ? -60 : -12);
  for (int j = 1; j < kv_tcp_k(st) - 1; j++) {
    kv_tcp_operands *o = &ops[j - 1];
    set_ab(o, 0, P_A, p_b(st), st);
    set_ab(o, j, -P_A, p_b(st), st);
    set_prod(o, j + 1, q, st);
  }
}

static void build_monotone(kv_dtype st, kv_tcp_operands *ops) {
  const int t = mantissa_bits(st), fp8 = kv_tcp_is_fp8(st), pairs = fp8 ? FP8_MONOTONE_PAIRS : 3;
  const double c = fp8 ? 65536.0 : 1.0;
  for (int s = 0; s < pairs; s++)
    for (int up = 0; up < 2; up++) {
      kv_tcp_operands *o = &ops[2 * s + up];
      set_c(o, up ? c : c - ldexp(c, -24));
      for (int k = 0; k < kv_tcp_k(st); k++) {
        if (fp8)
          set_prod(o, k, ldexp(2.0 - ldexp(1.0, -t), 6 - s), st);
        else
          set_ab(o, k, ldexp(1.0, -12), ldexp(2.0 - ldexp(1.0, -t), -12 - s), st);
      }
    }
}

void kv_tcp_build(int probe, kv_dtype st, kv_tcp_operands *ops) {
  const int n = kv_tcp_subtests(probe, st), align = kv_tcp_align_n(st);
  memset(ops, 0, (size_t)n * sizeof *ops);
  switch (probe) {
    case KV_TCP_PRODUCTS: build_products(st, ops); break;
    case KV_TCP_ALIGN_BITS:
      build_align(ops, P_A, p_b(st), st);
      if (kv_tcp_is_fp8(st)) build_result_width(st, ops + align);
      break;
    case KV_TCP_ACC_ROUND: build_acc_round(st, ops); break;
    case KV_TCP_FINAL_ROUND: build_final_round(st, ops); break;
    case KV_TCP_NORMALISATION:
      if (kv_tcp_is_fp8(st))
        build_align(ops, 384, 192, st);
      else
        build_align(ops, 192, 192, st);
      build_align(ops + align, P_A, p_b(st), st);
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
