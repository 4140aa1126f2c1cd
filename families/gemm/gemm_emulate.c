/* gemm_emulate.c - the cpu backend's GEMM: the precision model of kval's tensor-core GEMMs
 * (kval-wgmma and kval-mma emulate alike), deterministic and bit-exact to this model:
 *  - products of fp16/bf16 inputs are exact in fp32;
 *  - each output accumulates k = 0, 1, ..., K-1 in order with fp32 adds; for fp16/bf16
 *    accumulation the accumulator is rounded to that type (round-to-nearest-even) after every
 *    k-step of KV_KSTEP = 16 products and after the last, partial, step (kval-wgmma's split K,
 *    fp32 accumulation only, adds its splits' sums in split order: fp32 accumulation has no
 *    bit-exact model on the GPU, docs/NUMERICS.md, and the emulation keeps the unsplit order);
 *  - FP8 storage (e4m3, e5m2; kval-wgmma's model): every k-step of KV_FP8_KSTEP = 32 products
 *    (and the last, partial, one) is one fused sum of the accumulator and the products aligned
 *    on their largest exponent and truncated to KV_FP8_ACC_BITS bits (numerics/accum.h); with
 *    promote = P > 0, after every P products (and at the end) the accumulator is added into an
 *    fp32 sum (round to nearest even) and restarts from zero;
 *  - epilogue in fp32, multiply and add rounded separately (no fused multiply-add):
 *    d = alpha' * acc with alpha' = kv_gemm_epilogue_alpha(alpha, scale_a, scale_b), then
 *    d = d + (float)beta * c when beta != 0, rounded to the output type (kv_precision_output).
 * Loops run over four output rows at once with the j loop innermost, so the independent
 * accumulators of a row pipeline (and vectorise) without changing any summation order. */
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/accum.h"
#include "families/gemm/gemm.h"
#include "families/gemm/gemm_limits.h"

#define GEMM_ROW_BLOCK 4

/* A matrix stored transposed (rows x cols row-major) widened into dst as cols x rows row-major. */
static void widen_transposed(const void *src, kv_dtype st, size_t rows, size_t cols, float *tmp, float *dst) {
  for (size_t r = 0; r < rows; r++) {
    kv_to_float(src, st, r * cols, cols, tmp);
    for (size_t q = 0; q < cols; q++) dst[q * rows + r] = tmp[q];
  }
}

/* op(A) as a row-major M x K float array, op(B) as a row-major K x N float array (b_nk: N x K,
 * each column of op(B) contiguous, as the FP8 k-steps read it). */
static kv_status widen_operands(const void *a, const void *b, kv_dtype st, const kv_gemm_dims *d, int b_nk,
                                float **af, float **bf) {
  size_t m = (size_t)d->m, n = (size_t)d->n, k = (size_t)d->k;
  *af = KV_MALLOC(m * k * sizeof(float));
  *bf = KV_MALLOC(k * n * sizeof(float));
  const size_t widest = m > k ? (m > n ? m : n) : (k > n ? k : n); /* a transposed row: M, K or N */
  float *tmp = KV_MALLOC(widest * sizeof(float));
  if (CHECK_ALLOC(*af) != KV_OK || CHECK_ALLOC(*bf) != KV_OK || CHECK_ALLOC(tmp) != KV_OK) {
    free(*af);
    free(*bf);
    free(tmp);
    return KV_ERR;
  }
  if (d->a_trans)
    widen_transposed(a, st, k, m, tmp, *af); /* stored K x M */
  else
    kv_to_float(a, st, 0, m * k, *af);
  if (d->b_trans == b_nk)
    kv_to_float(b, st, 0, k * n, *bf); /* stored as wanted */
  else if (d->b_trans)
    widen_transposed(b, st, n, k, tmp, *bf); /* stored N x K, wanted K x N */
  else
    widen_transposed(b, st, k, n, tmp, *bf); /* stored K x N, wanted N x K */
  free(tmp);
  return KV_OK;
}

/* acc[r][0..n) += a[r] * brow[0..n) for the nr rows of a block. */
static void rank1_update(float *restrict acc, const float *restrict brow, const float *a, int nr, size_t n) {
  for (int r = 0; r < nr; r++) {
    float *restrict ar = acc + (size_t)r * n;
    const float ak = a[r];
    for (size_t j = 0; j < n; j++) ar[j] += ak * brow[j];
  }
}

/* The exponents of an FP8 operand widened to float, rows x k row-major (kv_fp8_operand_exponent),
 * and per row and k-step of KV_FP8_KSTEP whether it holds an infinity or NaN. */
typedef struct {
  short *e;
  unsigned char *nonfinite;
  size_t k, ksteps;
} fp8_exponents;

static void fp8_exponents_of(const float *x, size_t rows, fp8_exponents *f) {
  for (size_t r = 0; r < rows; r++)
    for (size_t s = 0; s < f->ksteps; s++) {
      const size_t k0 = s * KV_FP8_KSTEP, k1 = k0 + KV_FP8_KSTEP < f->k ? k0 + KV_FP8_KSTEP : f->k;
      unsigned char bad = 0;
      for (size_t kk = k0; kk < k1; kk++) {
        const float v = x[r * f->k + kk];
        bad |= !isfinite(v);
        f->e[r * f->k + kk] = kv_fp8_operand_exponent(v);
      }
      f->nonfinite[r * f->ksteps + s] = bad;
    }
}

static kv_status fp8_exponents_alloc(size_t rows, size_t k, fp8_exponents *f) {
  f->k = k;
  f->ksteps = (k + KV_FP8_KSTEP - 1) / KV_FP8_KSTEP;
  f->e = KV_MALLOC((rows * k > 0 ? rows * k : 1) * sizeof(short));
  f->nonfinite = KV_MALLOC((rows * f->ksteps > 0 ? rows * f->ksteps : 1));
  if (CHECK_ALLOC(f->e) != KV_OK || CHECK_ALLOC(f->nonfinite) != KV_OK) {
    free(f->e);
    free(f->nonfinite);
    return KV_ERR;
  }
  return KV_OK;
}

/* FP8 (kval-wgmma's model, numerics/accum.h): the accumulators of rows i0 .. i0 + nr, k-step by
 * k-step of KV_FP8_KSTEP products, each k-step one fused sum (kv_fp8_fused_sum; its largest
 * exponent found from the kept exponents ea of op(A)'s rows and eb of op(B)'s columns); with
 * promote = P > 0, after every P products (and at the end) acc is added into sum in fp32 and
 * restarts from zero. bf is op(B) N x K (widen_operands' b_nk). */
static void fp8_rows(const kv_gemm_dims *d, const float *af, const float *bf, const fp8_exponents *ea,
                     const fp8_exponents *eb, size_t i0, int nr, float *acc, float *sum) {
  const size_t n = (size_t)d->n, k = (size_t)d->k;
  for (size_t k0 = 0; k0 < k; k0 += KV_FP8_KSTEP) {
    const int steps = (int)(k - k0 < KV_FP8_KSTEP ? k - k0 : KV_FP8_KSTEP);
    const size_t ks = k0 / KV_FP8_KSTEP;
    for (int r = 0; r < nr; r++) {
      const float *arow = af + (i0 + (size_t)r) * k + k0;
      const short *erow = ea->e + (i0 + (size_t)r) * k + k0;
      const int a_bad = ea->nonfinite[(i0 + (size_t)r) * ea->ksteps + ks];
      float *ar = acc + (size_t)r * n;
      for (size_t j = 0; j < n; j++) {
        const float *bcol = bf + j * k + k0;
        const float v = ar[j];
        if (a_bad || eb->nonfinite[j * eb->ksteps + ks] || !isfinite(v)) {
          ar[j] = kv_fp8_fused_sum(v, arow, bcol, 1, steps);
          continue;
        }
        const short *ecol = eb->e + j * k + k0;
        int terms = 2 * KV_FP8_EXP_ZERO;
        for (int kk = 0; kk < steps; kk++) {
          const int t = erow[kk] + ecol[kk];
          terms = t > terms ? t : terms;
        }
        int emax = v != 0.0f ? kv_fp8_exponent(v) : INT_MIN;
        if (terms > KV_FP8_EXP_NONE && terms > emax) emax = terms;
        ar[j] = emax == INT_MIN ? v : kv_fp8_aligned_sum(v, arow, bcol, 1, steps, emax);
      }
    }
    const size_t done = k0 + (size_t)steps;
    if (d->promote > 0 && (done % (size_t)d->promote == 0 || done == k))
      for (size_t i = 0; i < (size_t)nr * n; i++) {
        sum[i] = sum[i] + acc[i];
        acc[i] = 0.0f;
      }
  }
}

kv_status kv_gemm_emulate(const kv_case *c, void *const *in, void *const *out) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  const kv_dtype acc_t = c->prec.accum;
  const size_t m = (size_t)d.m, n = (size_t)d.n, k = (size_t)d.k;
  const int promoted = kv_dtype_is_fp8(d.st) && d.promote > 0;
  const float alpha = kv_gemm_epilogue_alpha(d.alpha, d.scale_a, d.scale_b), beta = (float)d.beta;
  float *af, *bf;
  KV_TRY(widen_operands(in[0], in[1], d.st, &d, kv_dtype_is_fp8(d.st), &af, &bf));
  float *acc = KV_MALLOC(GEMM_ROW_BLOCK * n * sizeof(float));
  float *sum = KV_MALLOC(GEMM_ROW_BLOCK * n * sizeof(float));
  float *crow = KV_MALLOC(n * sizeof(float));
  fp8_exponents ea = {NULL, NULL, 0, 0}, eb = {NULL, NULL, 0, 0};
  kv_status st = CHECK_ALLOC(acc) == KV_OK && CHECK_ALLOC(sum) == KV_OK && CHECK_ALLOC(crow) == KV_OK ? KV_OK : KV_ERR;
  if (st == KV_OK && kv_dtype_is_fp8(d.st)) { /* op(A) M x K, op(B) N x K */
    st = fp8_exponents_alloc(m, k, &ea);
    if (st == KV_OK) st = fp8_exponents_alloc(n, k, &eb);
    if (st == KV_OK) {
      fp8_exponents_of(af, m, &ea);
      fp8_exponents_of(bf, n, &eb);
    }
  }
  for (size_t i0 = 0; st == KV_OK && i0 < m; i0 += GEMM_ROW_BLOCK) {
    int nr = m - i0 < GEMM_ROW_BLOCK ? (int)(m - i0) : GEMM_ROW_BLOCK;
    float a[GEMM_ROW_BLOCK];
    memset(acc, 0, (size_t)nr * n * sizeof(float));
    memset(sum, 0, (size_t)nr * n * sizeof(float));
    if (kv_dtype_is_fp8(d.st))
      fp8_rows(&d, af, bf, &ea, &eb, i0, nr, acc, sum);
    else
      for (size_t kk = 0; kk < k; kk++) {
        for (int r = 0; r < nr; r++) a[r] = af[(i0 + (size_t)r) * k + kk];
        rank1_update(acc, bf + kk * n, a, nr, n);
        if ((kk + 1) % KV_KSTEP == 0 || kk + 1 == k) kv_acc_round_array(acc, (size_t)nr * n, acc_t);
      }
    const float *res = promoted ? sum : acc;
    for (int r = 0; r < nr; r++) {
      size_t i = i0 + (size_t)r;
      const float *ar = res + (size_t)r * n;
      if (d.has_c) kv_to_float(in[2], d.out, i * n, n, crow);
      for (size_t j = 0; j < n; j++) {
        float v = alpha * ar[j];
        if (d.has_c) v = v + beta * crow[j];
        kv_store(out[0], i * n + j, d.out, v);
      }
    }
  }
  free(af);
  free(bf);
  free(acc);
  free(sum);
  free(crow);
  free(ea.e);
  free(ea.nonfinite);
  free(eb.e);
  free(eb.nonfinite);
  return st;
}
