/* test_fa2.c - the fa2 family's CPU emulation (blocked online softmax) and fp64
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

#include "families/fa2/fa2.h"
#include "families/testkit/family_checks.h"
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
static const axis_want fa2_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-mma", "kval-wgmma kval-mma", 0, 0},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"headdim", KV_AXIS_INT, "64 128", NULL, 32, 256},
    {"seqlen", KV_AXIS_INT, "512 1024 2048", NULL, 1, 1048576},
    {"causal", KV_AXIS_INT, "0 1", NULL, 0, 1},
    {"batch", KV_AXIS_INT, "0", NULL, 0, 65536},
    {"heads", KV_AXIS_INT, "16", NULL, 1, 1024},
    {"seqlen_k", KV_AXIS_INT, "0", NULL, 0, 1048576},
    {"dist", KV_AXIS_STR, "normal", "normal uniform large_logits", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want fa2_params[] = {
    {"tokens", 16384, 1, 2147483648.0}, {"scale", 0, 0, 1e6}, {NULL, 0, 0, 0}};

static void test_invalid_fa2(void) {
  const char *fp32 = "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "precision=fp16:fp32 headdim=64", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "variant=kval-mma precision=bf16:bf16 headdim=256", "cuda"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "variant=kval-wgmma headdim=256", "cuda"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "variant=kval-wgmma headdim=96", "cuda"), "kval-wgmma: headdim");
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "variant=kval-wgmma precision=fp16:fp16", "cpu"), "fp32 accumulation");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "variant=kval-wgmma precision=bf16:fp32 headdim=128", "cpu"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "headdim=48", "cpu"), "headdim");
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "headdim=160", "cuda"), "headdim");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "precision=fp32:fp32", "cuda"), fp32);
  EXPECT(invalid_of(&kv_family_fa2, "precision=fp16:bf16", "cpu") != NULL, "fp16 storage, bf16 accumulation");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "causal=1 seqlen=512 seqlen_k=300", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "seqlen=1048576 headdim=128", "cpu"), NULL);
}

static void test_cost_fa2(void) {

  /* fa2: tokens 16384 / seqlen 512 = batch 32; q has 32*512*16*64 = 2^24 elements */
  kv_cost c = cost_of(&kv_family_fa2, "precision=fp16:fp32 headdim=64 seqlen=512 causal=0 heads=16");
  EXPECT(c.flops == 4.0 * 32 * 16 * 512 * 512 * 64, "fa2 flops %g", c.flops);
  EXPECT(c.bytes == 4.0 * 16777216 * 2 + 4.0 * 262144, "fa2 bytes %g", c.bytes);
  EXPECT(c.rows == 262144 && c.row_len == 64 && c.red_len == 512, "fa2 rows %zu x %zu, K %g", c.rows, c.row_len,
         c.red_len);
  /* + the GPU reference workspace: fp64 K, |K|, V, |V| (4*512*64) and a chunk of 512 query rows
   * (outputs 2*512*64, scores and probabilities 2*512*512, row sums 512) */
  EXPECT(c.device_bytes == c.bytes + 16.0 * 16777216 + 8.0 * 262144 + 8.0 * (4 * 512 * 64 + 2 * 512 * 64 + 2 * 512 * 512 + 512),
         "fa2 device bytes %g", c.device_bytes);
  kv_cost cc = cost_of(&kv_family_fa2, "precision=fp16:fp32 headdim=64 seqlen=512 causal=1 heads=16");
  EXPECT(cc.flops == c.flops / 2, "causal self-attention: half the flops (%g)", cc.flops);
  /* cross-attention, 2 batches x 4 heads, d = 32: visible pairs 15 / 12 (3x5 causal) / 6 (5x3 causal) */
  kv_cost x = cost_of(&kv_family_fa2, "headdim=32 seqlen=3 seqlen_k=5 batch=2 heads=4 causal=0");
  kv_cost xc = cost_of(&kv_family_fa2, "headdim=32 seqlen=3 seqlen_k=5 batch=2 heads=4 causal=1");
  kv_cost xm = cost_of(&kv_family_fa2, "headdim=32 seqlen=5 seqlen_k=3 batch=2 heads=4 causal=1");
  EXPECT(x.flops == 4.0 * 8 * 15 * 32 && xc.flops == 4.0 * 8 * 12 * 32 && xm.flops == 4.0 * 8 * 6 * 32,
         "cross flops %g %g %g", x.flops, xc.flops, xm.flops);
  EXPECT(xc.ref_flops == 8.0 * 12 * (8 * 32 + 20) && x.red_len == 32 && xm.red_len == 32, "cross ref flops %g",
         xc.ref_flops);
  /* each output row sums over its keys: K = max(headdim, seqlen_k), whatever the query count */
  kv_cost lk = cost_of(&kv_family_fa2, "headdim=32 seqlen=3 seqlen_k=50 batch=2 heads=4 causal=0");
  kv_cost lq = cost_of(&kv_family_fa2, "headdim=32 seqlen=50 seqlen_k=3 batch=2 heads=4 causal=0");
  EXPECT(lk.red_len == 50 && lq.red_len == 32, "cross red_len: 50 keys %g, 3 keys %g", lk.red_len, lq.red_len);
  EXPECT(cost_of(&kv_family_fa2, "seqlen=100000").rows == 100000 * 16, "batch = max(1, tokens / seqlen)");
}

static void test_tensors_fa2(void) {
  fcase f;

  fcase_make(&f, &kv_family_fa2, "precision=bf16:fp32 headdim=32 seqlen=10 seqlen_k=7 batch=2 heads=3 dist=large_logits");
  EXPECT(f.t.n_in == 3 && f.t.n_out == 2, "fa2 tensors %d in %d out", f.t.n_in, f.t.n_out);
  EXPECT(spec_is(&f.t.in[0], "q", KV_BF16, 2 * 10 * 3 * 32, KV_DIST_NORMAL, 4.0, 0.0) &&
             spec_is(&f.t.in[1], "k", KV_BF16, 2 * 7 * 3 * 32, KV_DIST_NORMAL, 4.0, 0.0) &&
             spec_is(&f.t.in[2], "v", KV_BF16, 2 * 7 * 3 * 32, KV_DIST_NORMAL, 1.0, 0.0),
         "fa2 large_logits inputs");
  EXPECT(f.t.out[0].dtype == KV_BF16 && f.t.out[0].count == 1920 && f.t.out[1].dtype == KV_FP32 &&
             f.t.out[1].count == 60,
         "fa2 outputs o and lse");
  fcase_free(&f);
  fcase_make(&f, &kv_family_fa2, "headdim=32 seqlen=10 batch=1 heads=1 dist=uniform");
  EXPECT(f.t.in[0].dist == KV_DIST_UNIFORM && f.t.in[2].dist == KV_DIST_UNIFORM && f.t.in[1].scale == 1.0,
         "fa2 uniform inputs");
  fcase_free(&f);
}

/* Keys come in equal pairs (equal weights), values in pairs v and -v + N(0,1) with
 * v = 100 + N(0,1): o = sum over pairs of P (v + v') is small against sum P |v|. */
static void test_reference_dd(const char *prec) {
  char spec[160];
  snprintf(spec, sizeof spec, "precision=%s headdim=64 seqlen=40 seqlen_k=300 heads=2 batch=1 causal=1", prec);
  fcase p, c;
  fcase_make(&p, &kv_family_fa2, spec);
  fcase_make(&c, &kv_family_fa2, spec);
  fcase_generate(&p, 9);
  kv_dtype st = p.c.prec.storage;
  kv_tensor_spec v = p.t.in[2];
  v.offset = 100.0;
  kv_generate_host(&v, 78, p.in[2]);
  const size_t row = 2 * 64; /* one key position: 2 heads x 64 */
  for (size_t j = 1; j < 300; j += 2)
    for (size_t e = 0; e < row; e++) {
      kv_store(p.in[1], j * row + e, st, kv_load(p.in[1], (j - 1) * row + e, st));
      double noise = kv_load(p.in[2], j * row + e, st) - 100.0;
      kv_store(p.in[2], j * row + e, st, -kv_load(p.in[2], (j - 1) * row + e, st) + noise);
    }
  copy_inputs(&c, &p);
  run_both(&p, &c);
  char what[64];
  snprintf(what, sizeof what, "fa2 %s", prec);
  expect_agreement(what, compare(&p, &c), 1e3);
  double lse = 0.0;
  for (size_t r = 0; r < p.n_rows; r++) lse = fmax(lse, fabs(p.aux_ref[r] - c.aux_ref[r]) / fabs(c.aux_ref[r]));
  EXPECT(lse < 1e-14, "fa2 %s: lse differs by %g relative", prec, lse);
  fcase_free(&p);
  fcase_free(&c);
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
  TEST("descriptor: axes and params as agreed");
  check_descriptor(&kv_family_fa2, fa2_axes, fa2_params);
  TEST("rules of invalid()");
  test_invalid_fa2();
  TEST("FLOP, byte and row counts");
  test_cost_fa2();
  TEST("input tensors per distribution");
  test_tensors_fa2();
  TEST("fp64 reference vs double-double on cancelling value rows");
  test_reference_dd("fp16:fp16"); /* accumulators equal to storage: mag ~ sum P |v| (1 + scale sum |q k|) */
  test_reference_dd("bf16:bf16");
  return TEST_RETURN();
}
