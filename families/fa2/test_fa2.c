/* test_family_fa2.c - the fa2 family's CPU emulation (blocked online softmax) and fp64
 * reference: one-hot attention (one key with a huge logit, in the first or in a partial last
 * key block) returns that value row bit for bit; a hand-computed two-key row; causal masks
 * with uniform scores (bottom-right alignment, cross lengths); fully masked rows (output 0,
 * lse -inf); k-step rounding of fp16/bf16 accumulators in both matmuls and the rounding of
 * P to the storage type, on hand-computed sums; and emulation against the reference under the default tolerance for every
 * precision, head dimension (block size), mask and distribution, with key lengths that are
 * not multiples of the block size. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "families/testkit/family_case.h"
#include "tests/unit/test_util.h"

static const char *const precisions[] = {"fp16:fp32", "fp16:fp16", "bf16:fp32", "bf16:bf16"};

/* Flat index of (b, i, h, dd) in a [batch, len, heads, headdim] tensor. */
static size_t idx4(const kv_fa2_dims *d, long long len, long long b, long long i, long long h, long long dd) {
  return (size_t)((((b * len + i) * d->heads + h) * d->headdim) + dd);
}

/* Head 0's hot key sits in the partial last block, head 1's in the first block. */
static void test_one_hot(const char *prec, int causal) {
  char spec[160];
  snprintf(spec, sizeof spec, "precision=%s headdim=64 seqlen=3 seqlen_k=150 heads=2 batch=1 causal=%d scale=1", prec,
           causal);
  fcase f;
  fcase_make(&f, &kv_family_fa2, spec);
  fcase_generate(&f, 21);
  kv_fa2_dims d;
  kv_fa2_dims_of(&f.c, &d);
  kv_dtype st = f.c.prec.storage;
  const long long hot[2] = {140, 5};
  for (long long h = 0; h < 2; h++) {
    for (long long i = 0; i < 3; i++)
      for (long long dd = 0; dd < 64; dd++) kv_store(f.in[0], idx4(&d, 3, 0, i, h, dd), st, dd == 0 ? 8.0 : 0.0);
    for (long long j = 0; j < 150; j++)
      for (long long dd = 0; dd < 64; dd++)
        kv_store(f.in[1], idx4(&d, 150, 0, j, h, dd), st, j == hot[h] && dd == 0 ? 8.0 : 0.0);
  }
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  int bad = 0;
  double worst_ref = 0.0;
  const float *lse = f.out[1];
  for (long long h = 0; h < 2; h++)
    for (long long i = 0; i < 3; i++) {
      for (long long dd = 0; dd < 64; dd++) {
        size_t o = idx4(&d, 3, 0, i, h, dd), v = idx4(&d, 150, 0, hot[h], h, dd);
        bad += ((const uint16_t *)f.out[0])[o] != ((const uint16_t *)f.in[2])[v];
        worst_ref = fmax(worst_ref, fabs(f.ref[o] - kv_load(f.in[2], v, st)));
      }
      size_t r = (size_t)(i * 2 + h);
      EXPECT(lse[r] == 64.0f && fabs(f.aux_ref[r] - 64.0) < 1e-12, "%s lse of row %zu: %g / %.15g", prec, r,
             (double)lse[r], f.aux_ref[r]);
    }
  EXPECT(bad == 0, "%s causal=%d: %d output elements differ from the hot value row", prec, causal, bad);
  EXPECT(worst_ref < 1e-12, "%s: reference off the hot value row by %g", prec, worst_ref);
  fcase_free(&f);
}

/* Scores 0 and 1 (scale 1): P = (1, e) / (1 + e), v0 = 0, v1 = 1: o = e / (1 + e). */
static void test_two_keys(const char *prec) {
  char spec[160];
  snprintf(spec, sizeof spec, "precision=%s headdim=32 seqlen=1 seqlen_k=2 heads=1 batch=1 causal=0 scale=1", prec);
  fcase f;
  fcase_make(&f, &kv_family_fa2, spec);
  kv_dtype st = f.c.prec.storage;
  kv_store(f.in[0], 0, st, 1.0);
  kv_store(f.in[1], 32, st, 1.0);
  for (size_t dd = 0; dd < 32; dd++) kv_store(f.in[2], 32 + dd, st, 1.0);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  const double want = exp(1.0) / (1.0 + exp(1.0)), want_lse = log(1.0 + exp(1.0));
  double u = kv_dtype_unit_roundoff(st);
  int bad = 0, bad_ref = 0;
  for (size_t dd = 0; dd < 32; dd++) {
    bad += fabs(fcase_out(&f, dd) - want) > u * want;
    bad_ref += fabs(f.ref[dd] - want) > 1e-15;
  }
  EXPECT(bad == 0 && bad_ref == 0, "%s: o = %.6f (ref %.15f), want %.15f", prec, fcase_out(&f, 0), f.ref[0], want);
  EXPECT(fabs(((const float *)f.out[1])[0] - want_lse) < 1e-6 && fabs(f.aux_ref[0] - want_lse) < 1e-15,
         "%s: lse %.8f / %.15f, want %.15f", prec, (double)((const float *)f.out[1])[0], f.aux_ref[0], want_lse);
  fcase_free(&f);
}

/* q = 0 (all scores equal), v_j = j: row i averages the values of keys 0 .. last(i), so
 * o = last / 2 and lse = log(last + 1); rows with last < 0 are fully masked. */
static void test_causal_uniform(const char *prec, long long lq, long long lk) {
  char spec[160];
  snprintf(spec, sizeof spec, "precision=%s headdim=32 seqlen=%lld seqlen_k=%lld heads=1 batch=2 causal=1", prec, lq,
           lk);
  fcase f;
  fcase_make(&f, &kv_family_fa2, spec);
  kv_fa2_dims d;
  kv_fa2_dims_of(&f.c, &d);
  kv_dtype st = f.c.prec.storage;
  for (long long b = 0; b < 2; b++)
    for (long long j = 0; j < lk; j++)
      for (long long dd = 0; dd < 32; dd++) kv_store(f.in[2], idx4(&d, lk, b, j, 0, dd), st, (double)j);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  const float *lse = f.out[1];
  int bad = 0, bad_ref = 0, bad_lse = 0;
  for (long long b = 0; b < 2; b++)
    for (long long i = 0; i < lq; i++) {
      long long last = i + lk - lq;
      size_t r = (size_t)(b * lq + i);
      double want = last < 0 ? 0.0 : (double)last / 2.0, want_lse = last < 0 ? -INFINITY : log((double)last + 1.0);
      for (long long dd = 0; dd < 32; dd++) {
        size_t o = idx4(&d, lq, b, i, 0, dd);
        bad += fcase_out(&f, o) != want || (last < 0 && signbit(fcase_out(&f, o)));
        bad_ref += fabs(f.ref[o] - want) > 1e-14;
      }
      if (last < 0)
        bad_lse += !(lse[r] == -INFINITY && f.aux_ref[r] == -INFINITY);
      else
        bad_lse += fabs(lse[r] - want_lse) > 1e-6 || fabs(f.aux_ref[r] - want_lse) > 1e-14;
    }
  EXPECT(bad == 0 && bad_ref == 0 && bad_lse == 0,
         "%s causal %lldx%lld: %d emulated, %d reference outputs and %d lse wrong", prec, lq, lk, bad, bad_ref, bad_lse);
  fcase_free(&f);
}

/* One query, Lk keys, d = 32 (one key block), scale 1, q = ones. k row 0 = kv[0..32) (the
 * other keys 0), v rows: v_j = vals[j] in every column. Returns the emulated o[0] and lse. */
static void small_attention(const char *prec, int lk, const double *k0, const double *vals, double *o, double *lse) {
  char spec[160];
  snprintf(spec, sizeof spec, "precision=%s headdim=32 seqlen=1 seqlen_k=%d heads=1 batch=1 causal=0 scale=1", prec,
           lk);
  fcase f;
  fcase_make(&f, &kv_family_fa2, spec);
  kv_dtype st = f.c.prec.storage;
  for (size_t dd = 0; dd < 32; dd++) {
    kv_store(f.in[0], dd, st, 1.0);
    kv_store(f.in[1], dd, st, k0 ? k0[dd] : 0.0);
    for (int j = 0; j < lk; j++) kv_store(f.in[2], (size_t)j * 32 + dd, st, vals ? vals[j] : 1.0);
  }
  fcase_emulate(&f);
  *o = fcase_out(&f, 0);
  *lse = ((const float *)f.out[1])[0];
  fcase_free(&f);
}

/* Both matmuls round an fp16/bf16 accumulator after every 16 products, not after every add
 * and not only at the end (same hand examples as the GEMM test). */
static void test_accumulator_steps(void) {
  double k[32] = {0}, v[17] = {0}, o, lse;
  /* S = q . k_0 with a single key: lse = S exactly */
  k[0] = 2048, k[1] = 1, k[16] = 1; /* 2049 -> 2048 at the first step end, 2048 + 1 -> 2048 */
  small_attention("fp16:fp16", 1, k, NULL, &o, &lse);
  EXPECT(lse == 2048.0 && o == 1.0, "fp16 S accumulator: lse %g", lse);
  small_attention("fp16:fp32", 1, k, NULL, &o, &lse);
  EXPECT(lse == 2050.0, "fp32 S accumulator: lse %g", lse);
  k[16] = 0, k[2] = 1; /* 2050 within one step */
  small_attention("fp16:fp16", 1, k, NULL, &o, &lse);
  EXPECT(lse == 2050.0, "fp16 S accumulator within a k-step: lse %g", lse);
  k[0] = 256, k[2] = 0, k[16] = 1; /* bf16: 257 -> 256 twice */
  small_attention("bf16:bf16", 1, k, NULL, &o, &lse);
  EXPECT(lse == 256.0, "bf16 S accumulator: lse %g", lse);
  /* P V with equal scores (P = 1): o = acc(sum v) / Lk */
  v[0] = 2048, v[1] = 1, v[16] = 1;
  small_attention("fp16:fp16", 17, NULL, v, &o, &lse);
  EXPECT(o == kv_round_f64((double)(2048.0f * (1.0f / 17.0f)), KV_FP16), "fp16 P V accumulator: o %.6g", o);
  small_attention("fp16:fp32", 17, NULL, v, &o, &lse);
  EXPECT(o == kv_round_f64((double)(2050.0f * (1.0f / 17.0f)), KV_FP16), "fp32 P V accumulator: o %.6g", o);
  v[16] = 0, v[2] = 1;
  small_attention("fp16:fp16", 16, NULL, v, &o, &lse);
  EXPECT(o == 2050.0 / 16.0, "fp16 P V accumulator within a k-step: o %g", o);
}

/* P is rounded to the storage type before P V, while the row sum uses the unrounded p:
 * scale ln 2 makes scale_log2 = 1; one key scores 1 (p = 1, v = -45.25), 64 keys score 0.5
 * (p = 2^-0.5 = 0.7071068, rounded 0.70703125 in fp16 and bf16, v = 1), so the rounded
 * numerator is -45.25 + 64 * 0.70703125 = 0 exactly, while the exact output is
 * (64 * 2^-0.5 - 45.25) / (1 + 64 * 2^-0.5) = 1.04e-4 (the reference). */
static void test_p_rounding(const char *prec) {
  char spec[200];
  snprintf(spec, sizeof spec,
           "precision=%s headdim=64 seqlen=1 seqlen_k=65 heads=1 batch=1 causal=0 scale=0.69314718055994531", prec);
  fcase f;
  fcase_make(&f, &kv_family_fa2, spec);
  kv_dtype st = f.c.prec.storage;
  kv_store(f.in[0], 0, st, 1.0);
  for (size_t j = 0; j < 65; j++) {
    kv_store(f.in[1], j * 64, st, j == 0 ? 1.0 : 0.5);
    for (size_t dd = 0; dd < 64; dd++) kv_store(f.in[2], j * 64 + dd, st, j == 0 ? -45.25 : 1.0);
  }
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  const double want_ref = (64.0 * sqrt(0.5) - 45.25) / (1.0 + 64.0 * sqrt(0.5));
  int bad = 0;
  for (size_t dd = 0; dd < 64; dd++) bad += fcase_out(&f, dd) != 0.0 || fabs(f.ref[dd] - want_ref) > 1e-13;
  EXPECT(bad == 0, "%s: o = %g (want 0), reference %.12g (want %.12g)", prec, fcase_out(&f, 0), f.ref[0], want_ref);
  fcase_free(&f);
}

/* Random inputs: both variants' block sizes, every precision, head dimension, mask and
 * distribution they have within tolerance; the emulated lse within the accumulation error
 * of the scores. */
static void test_emulation_vs_reference(void) {
  static const int hds[] = {32, 64, 96, 128, 256};
  static const char *const dists[] = {"normal", "uniform", "large_logits"};
  static const char *const lens[] = {"seqlen=70 seqlen_k=130", "seqlen=100 seqlen_k=0", "seqlen=150 seqlen_k=33"};
  static const char *const variants[] = {"kval-mma", "kval-wgmma"};
  for (int v = 0; v < 2; v++)
    for (int p = 0; p < 4; p++)
      for (int h = 0; h < 5; h++)
        for (int causal = 0; causal < 2; causal++)
          for (int ds = 0; ds < 3; ds++) {
            if (v == 1 && ((hds[h] != 64 && hds[h] != 128) || strstr(precisions[p], ":fp32") == NULL)) continue;
            char spec[220];
            snprintf(spec, sizeof spec, "variant=%s precision=%s headdim=%d causal=%d dist=%s heads=2 batch=1 %s",
                     variants[v], precisions[p], hds[h], causal, dists[ds], lens[(h + ds) % 3]);
            fcase f;
            fcase_make(&f, &kv_family_fa2, spec);
            fcase_generate(&f, 31 + (uint64_t)h);
            fcase_emulate(&f);
            fcase_reference(&f, 0);
            double ratio = fcase_bound_ratio(&f);
            EXPECT(ratio <= 1.0, "%s: max err / bound = %g", spec, ratio);
            kv_fa2_dims d;
            kv_fa2_dims_of(&f.c, &d);
            const float *lse = f.out[1];
            double u = kv_dtype_unit_roundoff(f.c.prec.accum), worst = 0.0;
            for (size_t r = 0; r < f.n_rows; r++) {
              if (f.aux_ref[r] == -INFINITY) {
                worst = fmax(worst, lse[r] == -INFINITY ? 0.0 : INFINITY);
                continue;
              }
              /* score error ~ sqrt(d) u_acc |q||k| scale, |q||k| <= 3.5^2 d (x16 for large logits) */
              double qk = 12.25 * (double)d.headdim * (ds == 2 ? 16.0 : 1.0);
              double bound = 2.0 * sqrt((double)d.headdim) * u * qk * d.scale + 4e-7 * (1.0 + fabs(f.aux_ref[r]));
              worst = fmax(worst, fabs(lse[r] - f.aux_ref[r]) / bound);
            }
            EXPECT(worst <= 1.0, "%s: lse err / bound = %g", spec, worst);
            fcase_free(&f);
          }
}
int main(void) {
  TEST("one-hot attention returns the hot value row, in the first and in a partial last block");
  for (int p = 0; p < 4; p++) {
    test_one_hot(precisions[p], 0);
    test_one_hot(precisions[p], 1);
  }
  TEST("two keys by hand");
  for (int p = 0; p < 4; p++) test_two_keys(precisions[p]);
  TEST("causal masks, bottom-right aligned, and fully masked rows");
  for (int p = 0; p < 4; p++) {
    test_causal_uniform(precisions[p], 5, 5);
    test_causal_uniform(precisions[p], 3, 5);
    test_causal_uniform(precisions[p], 5, 3);
    if (p % 2 == 0) test_causal_uniform(precisions[p], 70, 200); /* sums up to 19900: exact in fp32 only */
  }
  TEST("fp16/bf16 accumulators of both matmuls rounded after every k-step of 16");
  test_accumulator_steps();
  TEST("P rounded to the storage type before P V");
  test_p_rounding("fp16:fp32");
  test_p_rounding("bf16:fp32");
  TEST("emulation vs fp64 reference within the default tolerance");
  test_emulation_vs_reference();
  return TEST_RETURN();
}
