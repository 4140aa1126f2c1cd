/* test_tolerance.c - the default tolerances and kv_tolerance_bound(), and the two properties
 * the defaults are chosen for (docs/NUMERICS.md): correct kernels pass and real faults fail.
 * "Correct kernels" are GEMM dot products computed by models of the hardware: the correctly
 * rounded result, round-to-nearest fp32 accumulation (the CPU emulation), a truncating
 * tensor-core fp32 accumulator (products aligned to the largest term of each k-step of 16
 * with 24 bits and no guard bits, result truncated; Fasi et al. 2021), and fp16/bf16
 * accumulation rounded after every k-step of 16. Faults: single high-bit flips and a
 * (1 + s) scaling of the output as --inject scale applies it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/errstats.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "numerics/tolerance.h"
#include "tests/unit/test_util.h"

enum { OUT_ROWS = 32, OUT_COLS = 32, NOUT = OUT_ROWS * OUT_COLS, KSTEP = 16 };
enum { MODEL_ROUNDED, MODEL_FP32_RN, MODEL_TENSOR_CORE, MODEL_NARROW_ACC };
static const char *const model_names[] = {"correctly rounded", "fp32 round-to-nearest", "truncating tensor core",
                                          "k-step-rounded narrow accumulator"};

/* One GEMM-like case: NOUT dot products of length k over generated, rounded inputs. */
typedef struct {
  kv_precision p;
  int k;
  double *a, *b; /* a: OUT_ROWS x k, b: OUT_COLS x k */
  double ref[NOUT], mag[NOUT];
} gemm_case;

static void case_init(gemm_case *c, kv_precision p, int k, int dist, int same_sign) {
  c->p = p;
  c->k = k;
  c->a = malloc(sizeof *c->a * OUT_ROWS * (size_t)k);
  c->b = malloc(sizeof *c->b * OUT_COLS * (size_t)k);
  const uint64_t ka = kv_stream_key(1, (uint64_t)k, 0), kb = kv_stream_key(1, (uint64_t)k, 1);
  for (size_t i = 0; i < (size_t)OUT_ROWS * (size_t)k; i++) {
    const double x = kv_gen_value(ka, i, dist, 1.0, 0.0), y = kv_gen_value(kb, i, dist, 1.0, 0.0);
    c->a[i] = kv_round_f64(same_sign ? fabs(x) : x, p.storage);
    c->b[i] = kv_round_f64(same_sign ? fabs(y) : y, p.storage);
  }
  for (int i = 0; i < OUT_ROWS; i++)
    for (int j = 0; j < OUT_COLS; j++) {
      double s = 0.0, m = 0.0;
      for (int t = 0; t < k; t++) {
        const double prod = c->a[(size_t)i * k + t] * c->b[(size_t)j * k + t]; /* exact */
        s += prod;
        m += fabs(prod);
      }
      c->ref[i * OUT_COLS + j] = s;
      c->mag[i * OUT_COLS + j] = m;
    }
}

static void case_free(gemm_case *c) {
  free(c->a);
  free(c->b);
}

/* x truncated toward zero to a multiple of 2^q (bit operations, exact). */
static double trunc_to(double x, int q) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  const int e = (int)((u >> 52) & 0x7ff) - 1075; /* x = m * 2^e, m < 2^53 (normal x) */
  if (x == 0.0 || q <= e) return x;
  if (q - e > 52) return 0.0 * x;
  u &= ~(((uint64_t)1 << (q - e)) - 1);
  memcpy(&x, &u, sizeof x);
  return x;
}

static int exponent(double x) { /* floor(log2|x|) */
  int e;
  (void)frexp(x, &e);
  return e - 1;
}

/* One tensor-core k-step: the accumulator and the products aligned to the largest exponent,
 * each truncated to 24 significant bits at that alignment, summed exactly, the result
 * truncated to fp32. */
static double tensor_core_step(double acc, const double *prod, int n) {
  int emax = acc != 0.0 ? exponent(acc) : -2000;
  for (int j = 0; j < n; j++)
    if (prod[j] != 0.0 && exponent(prod[j]) > emax) emax = exponent(prod[j]);
  if (emax == -2000) return 0.0;
  double s = trunc_to(acc, emax - 23);
  for (int j = 0; j < n; j++) s += trunc_to(prod[j], emax - 23);
  return s == 0.0 ? 0.0 : trunc_to(s, exponent(s) - 23);
}

/* The output of a correct kernel under `model`, stored as out_t (the storage type, or fp64
 * for the accumulator before the output rounding). */
static void compute_as(const gemm_case *c, int model, void *out, kv_dtype out_t) {
  const kv_precision p = c->p;
  for (int i = 0; i < OUT_ROWS; i++)
    for (int j = 0; j < OUT_COLS; j++) {
      const double *a = c->a + (size_t)i * c->k, *b = c->b + (size_t)j * c->k;
      double acc = 0.0;
      if (model == MODEL_ROUNDED) acc = c->ref[i * OUT_COLS + j];
      for (int t0 = 0; model != MODEL_ROUNDED && t0 < c->k; t0 += KSTEP) {
        double prod[KSTEP];
        for (int t = 0; t < KSTEP; t++) prod[t] = a[t0 + t] * b[t0 + t];
        if (model == MODEL_TENSOR_CORE) {
          acc = tensor_core_step(acc, prod, KSTEP);
        } else {
          float f = (float)acc; /* fp32 adds within the k-step (the FPU rounds to nearest) */
          for (int t = 0; t < KSTEP; t++) f += (float)prod[t];
          acc = model == MODEL_NARROW_ACC ? kv_round_f64(f, p.accum) : f;
        }
      }
      kv_store(out, (size_t)(i * OUT_COLS + j), out_t, acc);
    }
}

static void compute(const gemm_case *c, int model, void *out) { compute_as(c, model, out, c->p.storage); }

static kv_case_status verdict(const gemm_case *c, const void *out, kv_errstats *st) {
  const kv_tolerance tol = kv_tolerance_default(c->p);
  if (kv_errstats_compute(out, c->p.storage, NULL, c->ref, c->mag, NOUT, c->p, &tol, c->k, st) != 0) return KV_ERROR;
  return kv_errstats_verdict(st);
}

static const char *pname(kv_precision p) {
  static char buf[4][16];
  static int next;
  char *b = buf[next++ % 4];
  kv_precision_format(p, b, 16);
  return b;
}

static void test_defaults(void) {
  TEST("default tolerances and the bound formula");
  const kv_precision f16 = {KV_FP16, KV_FP32}, b16 = {KV_BF16, KV_BF16}, f32 = {KV_FP32, KV_FP32};
  const kv_tolerance t16 = kv_tolerance_default(f16), tb = kv_tolerance_default(b16), t32 = kv_tolerance_default(f32);
  EXPECT(t16.c1 == 2.0 && t16.c2 == 2.0 && tb.c1 == 2.0 && t32.c2 == 2.0, "c1 = c2 = 2");
  EXPECT(t16.abs_floor == 0x1p-24 && tb.abs_floor == 0x1p-133 && t32.abs_floor == 0x1p-149,
         "abs_floor = smallest subnormal");
  EXPECT(t16.rel_floor == 0x1p-14 && tb.rel_floor == 0x1p-126 && t32.rel_floor == 0x1p-126,
         "rel_floor = smallest normal");
  EXPECT(kv_tolerance_bound(&t16, f16, -3.0, 10.0, 64.0) == 2 * 0x1p-11 * 3.0 + 2 * 8 * 0x1p-24 * 10.0 + 0x1p-24,
         "fp16:fp32 bound");
  EXPECT(kv_tolerance_bound(&tb, b16, 0.5, 4.0, 256.0) == 2 * 0x1p-8 * 0.5 + 2 * 16 * 0x1p-8 * 4.0 + 0x1p-133,
         "bf16:bf16 bound");
  EXPECT(kv_tolerance_bound(&t32, f32, 1.0, 1.0, 0.0) == kv_tolerance_bound(&t32, f32, 1.0, 1.0, 1.0),
         "a reduction length below 1 counts as 1");
  const kv_precision e4 = {KV_E4M3, KV_FP32};
  const kv_tolerance t8 = kv_tolerance_default(e4);
  EXPECT(kv_tolerance_bound(&t8, e4, 3.0, 0.0, 64.0) - kv_tolerance_bound(&t8, e4, 0.0, 0.0, 64.0) == 2 * 0x1p-8 * 3.0 &&
             t8.abs_floor == 0x1p-133,
         "e4m3:fp32: c1 term and floor of the bf16 output, not of the 8-bit storage");
}

/* Correct kernels pass on every precision, K and input distribution. */
static void test_correct_pass(void) {
  TEST("correct kernels pass: every precision, K = 16, 256, 4096, normal and uniform inputs");
  const kv_precision precs[] = {
      {KV_FP16, KV_FP32}, {KV_BF16, KV_FP32}, {KV_FP32, KV_FP32}, {KV_FP16, KV_FP16}, {KV_BF16, KV_BF16}};
  static double out[NOUT];
  for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++)
    for (int k = 16; k <= 4096; k *= 16)
      for (int dist = 0; dist < 2; dist++) {
        gemm_case c;
        case_init(&c, precs[pi], k, dist, 0);
        const int narrow = precs[pi].accum != KV_FP32;
        const int models[3] = {MODEL_ROUNDED, narrow ? MODEL_NARROW_ACC : MODEL_FP32_RN, MODEL_TENSOR_CORE};
        for (int m = 0; m < (narrow ? 2 : 3); m++) {
          compute(&c, models[m], out);
          kv_errstats st;
          const kv_case_status v = verdict(&c, out, &st);
          EXPECT(v == KV_PASS, "%s K=%d %s, %s: %s, max ratio %.3f", pname(precs[pi]), k, dist ? "uniform" : "normal",
                 model_names[models[m]], kv_status_name(v), st.max_bound_ratio);
          if (k == 4096 && dist == 0)
            printf("   %s K=4096 normal, %-34s max bound ratio %.3f\n", pname(precs[pi]), model_names[models[m]],
                   st.max_bound_ratio);
        }
        case_free(&c);
      }
}

/* Same-sign inputs: the truncation bias of the tensor core and the rounding of a narrow
 * accumulator (whose increments approach its ulp) grow like K, not sqrt(K). */
static void test_same_sign(void) {
  TEST("same-sign inputs at K = 4096 pass: truncating fp32 tensor core, k-step-rounded fp16/bf16 accumulator");
  static double out[NOUT];
  const kv_precision precs[4] = {{KV_FP16, KV_FP32}, {KV_BF16, KV_FP32}, {KV_FP16, KV_FP16}, {KV_BF16, KV_BF16}};
  for (int pi = 0; pi < 4; pi++) {
    gemm_case c;
    case_init(&c, precs[pi], 4096, KV_DIST_UNIFORM, 1);
    const int model = precs[pi].accum == KV_FP32 ? MODEL_TENSOR_CORE : MODEL_NARROW_ACC;
    compute(&c, model, out);
    kv_errstats st;
    const kv_case_status v = verdict(&c, out, &st);
    EXPECT(v == KV_PASS, "%s: %s, ratio %.3f", pname(precs[pi]), kv_status_name(v), st.max_bound_ratio);
    printf("   %s same-sign K=4096, %-34s max bound ratio %.3f\n", pname(precs[pi]), model_names[model],
           st.max_bound_ratio);
    case_free(&c);
  }
}

/* Flip one bit of the element with the largest |ref|. */
static void test_bit_flips(void) {
  TEST("one flipped sign, exponent or top mantissa bit of the largest element fails (K = 4096)");
  const kv_precision precs[3] = {{KV_FP16, KV_FP32}, {KV_BF16, KV_FP32}, {KV_FP32, KV_FP32}};
  static double out[NOUT];
  for (int pi = 0; pi < 3; pi++) {
    gemm_case c;
    case_init(&c, precs[pi], 4096, KV_DIST_NORMAL, 0);
    compute(&c, precs[pi].storage == KV_FP32 ? MODEL_FP32_RN : MODEL_TENSOR_CORE, out);
    int big = 0;
    for (int i = 1; i < NOUT; i++) big = fabs(c.ref[i]) > fabs(c.ref[big]) ? i : big;
    const int bits = precs[pi].storage == KV_FP32 ? 32 : 16, mant = precs[pi].storage == KV_FP32   ? 23
                                                                    : precs[pi].storage == KV_FP16 ? 10
                                                                                                   : 7;
    for (int bit = mant - 1; bit < bits; bit++) {
      if (bits == 16)
        ((uint16_t *)out)[big] ^= (uint16_t)(1u << bit);
      else
        ((uint32_t *)out)[big] ^= 1u << bit;
      kv_errstats st;
      const kv_case_status v = verdict(&c, out, &st);
      EXPECT(v != KV_PASS && st.worst_index == big, "%s bit %d: %s", pname(precs[pi]), bit, kv_status_name(v));
      if (bits == 16)
        ((uint16_t *)out)[big] ^= (uint16_t)(1u << bit);
      else
        ((uint32_t *)out)[big] ^= 1u << bit;
    }
    case_free(&c);
  }
}

/* out <- round(out * (1 + s)), as --inject scale does. */
static void scale_output(const gemm_case *c, const void *in, void *out, double s) {
  for (size_t i = 0; i < NOUT; i++) kv_store(out, i, c->p.storage, kv_load(in, i, c->p.storage) * (1.0 + s));
}

static kv_case_status scaled_verdict(const gemm_case *c, const void *clean, double s) {
  static double scaled[NOUT];
  kv_errstats st;
  scale_output(c, clean, scaled, s);
  return verdict(c, scaled, &st);
}

static void test_scaling(void) {
  TEST("a (1 + 1e-3) scaling fails for fp16 and fp32 storage (fp32 accumulation, K = 4096)");
  const kv_precision precs[3] = {{KV_FP16, KV_FP32}, {KV_FP32, KV_FP32}, {KV_BF16, KV_FP32}};
  static double clean[NOUT], scaled[NOUT];
  double smallest[3];
  for (int pi = 0; pi < 3; pi++) {
    gemm_case c;
    case_init(&c, precs[pi], 4096, KV_DIST_NORMAL, 0);
    compute(&c, precs[pi].storage == KV_FP32 ? MODEL_FP32_RN : MODEL_TENSOR_CORE, clean);
    if (precs[pi].storage != KV_BF16) {
      const kv_case_status v = scaled_verdict(&c, clean, 1e-3);
      EXPECT(v == KV_FAIL_TOLERANCE, "%s: %s", pname(precs[pi]), kv_status_name(v));
    } else {
      /* bf16: half an ulp is at least 2^-9 = 1.95e-3 relative, so the scaling rounds back */
      scale_output(&c, clean, scaled, 1e-3);
      EXPECT(memcmp(scaled, clean, NOUT * 2) == 0, "bf16: a 1e-3 scaling leaves every output bit unchanged");
      int moved = 0;
      for (uint16_t h = 0; h < 0x7f80; h++) moved += kv_f64_to_bf16(kv_bf16_to_f32(h) * (1.0 + 1e-3)) != h;
      EXPECT(moved == 0, "bf16: x -> round(x (1 + 1e-3)) is the identity on all finite values (%d moved)", moved);
      EXPECT(scaled_verdict(&c, clean, 1e-2) == KV_FAIL_TOLERANCE, "bf16: a 1e-2 scaling fails");
    }
    /* smallest detectable scaling, by bisection on log(s) (informational, for NUMERICS.md) */
    double lo = 1e-7, hi = 1.0;
    for (int it = 0; it < 40; it++) {
      const double mid = sqrt(lo * hi);
      if (scaled_verdict(&c, clean, mid) == KV_PASS)
        lo = mid;
      else
        hi = mid;
    }
    smallest[pi] = hi;
    printf("   %s K=4096: smallest failing scaling 1 + %.2e\n", pname(precs[pi]), hi);
    case_free(&c);
  }
  EXPECT(smallest[1] < smallest[0] && smallest[0] < smallest[2], "detectability follows u_out: fp32 < fp16 < bf16");
}

/* The table of docs/NUMERICS.md section 4 (run with --sweep; not part of the checks): the
 * truncating tensor core's accumulation error on fp16 inputs relative to sqrt(K) u32 mag and
 * to K u32 mag, and the largest bound ratios of its fp16:fp32 output and of that output
 * scaled by (1 + 1e-3). */
static void sweep(void) {
  static const char *const dists[3] = {"normal", "uniform", "same-sign"};
  static double acc[NOUT], out[NOUT], scaled[NOUT];
  const kv_precision p = {KV_FP16, KV_FP32};
  printf("%-9s %6s %18s %14s %12s %13s\n", "inputs", "K", "err/(sqrtK u mag)", "err/(K u mag)", "bound ratio",
         "scaled ratio");
  for (int d = 0; d < 3; d++)
    for (int k = 16; k <= 16384; k *= 4) {
      gemm_case c;
      case_init(&c, p, k, d == 0 ? KV_DIST_NORMAL : KV_DIST_UNIFORM, d == 2);
      compute_as(&c, MODEL_TENSOR_CORE, acc, KV_FP64);
      compute(&c, MODEL_TENSOR_CORE, out);
      scale_output(&c, out, scaled, 1e-3);
      double r_sqrt = 0.0, r_lin = 0.0;
      for (int i = 0; i < NOUT; i++) {
        const double e = fabs(acc[i] - c.ref[i]) / (0x1p-24 * c.mag[i]);
        r_sqrt = fmax(r_sqrt, e / sqrt(k));
        r_lin = fmax(r_lin, e / k);
      }
      kv_errstats st, st_scaled;
      verdict(&c, out, &st);
      verdict(&c, scaled, &st_scaled);
      printf("%-9s %6d %18.3f %14.4f %12.3f %13.3f\n", dists[d], k, r_sqrt, r_lin, st.max_bound_ratio,
             st_scaled.max_bound_ratio);
      case_free(&c);
    }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--sweep") == 0) {
    sweep();
    return 0;
  }
  test_defaults();
  test_correct_pass();
  test_same_sign();
  test_bit_flips();
  test_scaling();
  return TEST_RETURN();
}
