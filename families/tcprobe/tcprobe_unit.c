/* tcprobe_unit.c - the tcprobe family's CPU side: a parameterised model of one tensor-core dot
 * product (kv_tcp_unit: block size, alignment width and rounding, final rounding, exponent
 * used for alignment, product rounding, subnormal flushing, an accumulator narrower than
 * fp32), which the unit test runs under every hypothesis the decoders tell apart; the
 * precision model's instances of it (kv_tcp_model, and kv_tcp_model_fp8 for e4m3/e5m2); the
 * cpu backend's kernel (kv_tcp_emulate: the model's arithmetic, exact products added in fp32
 * one by one as the gemm emulation's k loop does; for FP8 the gemm emulation's fused sum of
 * one instruction, aligned and truncated to KV_FP8_ACC_BITS bits); and the fp64 references of the sub-tests' exact values and their double-double twin. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"
#include "numerics/accum.h"
#include "numerics/dd.h"

const kv_tcp_unit kv_tcp_model = {.width = 0, .align_round = KV_TCP_RNE, .final_round = KV_TCP_RNE, .block = 1};
const kv_tcp_unit kv_tcp_model_fp8 = {.width = KV_FP8_ACC_BITS,
                                      .align_round = KV_TCP_RZ,
                                      .final_round = KV_TCP_RNE,
                                      .block = KV_FP8_KSTEP,
                                      .raw_exponent = 1};

const kv_tcp_unit *kv_tcp_model_of(kv_dtype st) { return kv_tcp_is_fp8(st) ? &kv_tcp_model_fp8 : &kv_tcp_model; }

/* x rounded to an integer in direction mode. */
static double round_int(double x, int mode) {
  switch (mode) {
    case KV_TCP_RZ: return trunc(x);
    case KV_TCP_RD: return floor(x);
    case KV_TCP_RU: return ceil(x);
    case KV_TCP_RNA: return round(x);
    default: return nearbyint(x); /* RNE: the default rounding mode */
  }
}

/* x (exact in double) rounded to fp32 in direction mode, with gradual underflow (or flushed). */
static double round_fp32(double x, int mode, int flush) {
  if (x == 0.0) return x;
  const int e = ilogb(x) < -126 ? -126 : ilogb(x);
  const double r = ldexp(round_int(ldexp(x, 23 - e), mode), e - 23);
  return flush && fabs(r) < ldexp(1.0, -126) ? copysign(0.0, r) : r;
}

/* x (an fp32 value) truncated toward zero to `bits` significand bits, fp32's subnormal spacing
 * scaled alike (as masking the low 24 - bits bits of its pattern). */
static double truncate_bits(double x, int bits) {
  if (x == 0.0) return x;
  const int lsb = (ilogb(x) < -126 ? -126 : ilogb(x)) - bits + 1;
  return ldexp(trunc(ldexp(x, -lsb)), lsb);
}

/* Exponent of a term for the alignment: ilogb, or for a product on raw exponents e(a) + e(b). */
static int align_exponent(double p, double a, double b, int raw) { return raw ? ilogb(a) + ilogb(b) : ilogb(p); }

float kv_tcp_unit_eval(const kv_tcp_unit *u, const kv_tcp_operands *o, kv_dtype st) {
  int ebits, mbits;
  kv_tcp_format(st, &ebits, &mbits);
  const double min_normal = ldexp(1.0, 2 - (1 << (ebits - 1)));
  const int kn = kv_tcp_k(st);
  double acc = kv_tcp_value(o->c, KV_FP32);
  if (u->flush_out && fabs(acc) < ldexp(1.0, -126)) acc = copysign(0.0, acc);
  for (int k0 = 0; k0 < kn; k0 += u->block) {
    double t[KV_TCP_KMAX + 1];
    int n = 0, emax = INT32_MIN;
    t[n] = acc;
    if (acc != 0.0) emax = ilogb(acc);
    n++;
    for (int k = k0; k < k0 + u->block && k < kn; k++) {
      double a = kv_tcp_value(o->a[k], st), b = kv_tcp_value(o->b[k], st);
      if (u->flush_in && (fabs(a) < min_normal || fabs(b) < min_normal)) a = b = 0.0;
      double p = a * b;
      if (u->round_products) p = kv_tcp_round_input(p, st);
      if (p == 0.0) continue;
      t[n] = p;
      const int e = align_exponent(p, a, b, u->raw_exponent);
      if (e > emax) emax = e;
      n++;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
      if (u->width && t[i] != 0.0) {
        const int lsb = emax - u->width + 1;
        sum += ldexp(round_int(ldexp(t[i], -lsb), u->align_round), lsb);
      } else {
        sum += t[i];
      }
    }
    acc = round_fp32(sum, u->final_round, u->flush_out);
  }
  return (float)(u->acc_bits ? truncate_bits(acc, u->acc_bits) : acc);
}

/* The cpu backend's kernel: every sub-test through the model's arithmetic in fp32, C first and
 * then acc = acc + a_k b_k (the product is exact in fp32; one rounding per add); FP8: the gemm
 * emulation's fused sum of one instruction (kv_fp8_fused_sum). */
kv_status kv_tcp_emulate(const kv_case *c, void *const *in, void *const *out) {
  (void)in;
  const kv_dtype st = c->prec.storage;
  int probe, n;
  kv_tcp_operands *ops = kv_tcp_case_subtests(c, &probe, &n);
  if (!ops) return KV_ERR;
  float *d = out[0];
  for (int i = 0; i < n; i++) {
    float acc = (float)kv_tcp_value(ops[i].c, KV_FP32), a[KV_TCP_KMAX], b[KV_TCP_KMAX];
    for (int k = 0; k < kv_tcp_k(st); k++) {
      a[k] = (float)kv_tcp_value(ops[i].a[k], st);
      b[k] = (float)kv_tcp_value(ops[i].b[k], st);
      if (!kv_tcp_is_fp8(st)) acc = acc + a[k] * b[k];
    }
    d[i] = kv_tcp_is_fp8(st) ? kv_fp8_fused_sum(acc, a, b, 1, kv_tcp_k(st)) : acc;
  }
  free(ops);
  return KV_OK;
}

/* The sub-tests' exact values: fp64 (kv_tcp_exact, the GPU reference's arithmetic) or
 * double-double. One output row of n elements. */
static kv_status reference(const kv_case *c, const size_t *rows, size_t n_rows, double *ref, double *mag, int dd) {
  KV_TRY(kv_check_rows(rows, n_rows, 1, "tcprobe"));
  const kv_dtype st = c->prec.storage;
  int probe, n;
  kv_tcp_operands *ops = kv_tcp_case_subtests(c, &probe, &n);
  if (!ops) return KV_ERR;
  for (int i = 0; i < n; i++) {
    if (!dd) {
      ref[i] = kv_tcp_exact(&ops[i], st, &mag[i]);
      continue;
    }
    const double cv = kv_tcp_value(ops[i].c, KV_FP32);
    kv_dd s = {cv, 0.0};
    double m = fabs(cv);
    for (int k = 0; k < kv_tcp_k(st); k++) {
      const double a = kv_tcp_value(ops[i].a[k], st), b = kv_tcp_value(ops[i].b[k], st);
      s = kv_dd_add_prod(s, a, b);
      m += fabs(a * b);
    }
    ref[i] = kv_dd_value(s);
    mag[i] = m;
  }
  free(ops);
  return KV_OK;
}

kv_status kv_tcp_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                               double *mag, double *aux_ref, double *aux_mag) {
  (void)in, (void)aux_ref, (void)aux_mag;
  return reference(c, rows, n_rows, ref, mag, 0);
}

kv_status kv_tcp_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)in, (void)aux_ref, (void)aux_mag;
  return reference(c, rows, n_rows, ref, mag, 1);
}
