/* test_fa2bwd.c - the fa2bwd family's descriptor, CPU emulation and fp64 reference on the cpu
 * backend: the axis and parameter tables, invalid() and cost(), the variants' blocks,
 * kval-wgmma-fused's workspace and path tags, the tensors; the reference
 * against finite differences of an fp64 forward (d/dq, d/dk, d/dv of sum(dout * o)), and the
 * identities every gradient set satisfies (sum_j dK_j = 0, sum_j dV_j = sum_i dout_i); the
 * emulation against the reference under the default tolerance (causal and not, tails, both
 * head dims and storage types, every distribution) without being the reference itself, a
 * swapped gradient failing; the fp64 reference against its double-double twin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "families/fa2bwd/fa2bwd.h"
#include "families/fa2bwd/fa2bwd_limits.h"
#include "families/kit.h"
#include "families/testkit/family_checks.h"
#include "input/plan.h"
#include "numerics/halfprec.h"
#include "tests/unit/test_util.h"

static const axis_want fa2bwd_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-wgmma-fused kval-mma", "kval-wgmma kval-wgmma-fused kval-mma", 0, 0},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"headdim", KV_AXIS_INT, "64 128", NULL, 64, 128},
    {"seqlen", KV_AXIS_INT, "512 1024 2048", NULL, 1, 1048576},
    {"causal", KV_AXIS_INT, "0 1", NULL, 0, 1},
    {"batch", KV_AXIS_INT, "0", NULL, 0, 65536},
    {"heads", KV_AXIS_INT, "16", NULL, 1, 1024},
    {"dist", KV_AXIS_STR, "normal", "normal uniform large_logits", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want fa2bwd_params[] = {{"tokens", 16384, 1, 2147483648.0}, {"scale", 0, 0, 1e6}, {NULL, 0, 0, 0}};

static void test_invalid(void) {
  const kv_family *f = &kv_family_fa2bwd;
  EXPECT(invalid_of(f, "precision=bf16:fp32 headdim=128", "cuda") == NULL, "bf16:fp32 at d=128 is valid");
  EXPECT_CONTAINS(invalid_of(f, "precision=fp16:fp16", "cuda"), "fp32 accumulation");
  EXPECT_CONTAINS(invalid_of(f, "precision=fp32:fp32", "cuda"), "fp16 or bf16");
  EXPECT_CONTAINS(invalid_of(f, "headdim=96", "cuda"), "64 or 128");
}

static void test_cost(void) {
  kv_cost c = cost_of(&kv_family_fa2bwd, "precision=bf16:fp32 headdim=64 seqlen=100 causal=0 batch=2 heads=3");
  const double bh = 6, n = bh * 100 * 64;
  EXPECT(c.flops == 10.0 * bh * 100 * 100 * 64, "flops %g", c.flops);
  EXPECT(c.bytes == 8.0 * n * 2 + 8.0 * bh * 100, "bytes %g", c.bytes);
  EXPECT(c.rows == 3 * 600 && c.row_len == 64 && c.red_len == 100, "rows %zu x %zu, red_len %g", c.rows, c.row_len,
         c.red_len);
  kv_cost k = cost_of(&kv_family_fa2bwd, "precision=bf16:fp32 headdim=128 seqlen=100 causal=1 batch=2 heads=3");
  EXPECT(k.flops == 10.0 * bh * 100 * 100 / 2 * 128 && k.red_len == 128, "causal flops %g, red_len %g", k.flops, k.red_len);
  EXPECT(c.device_bytes > c.bytes, "device bytes %g cover the traffic", c.device_bytes);
  EXPECT(unbiased_of(&kv_family_fa2bwd, "precision=bf16:fp32 dist=normal") &&
             unbiased_of(&kv_family_fa2bwd, "precision=fp16:fp32 dist=uniform") &&
             !unbiased_of(&kv_family_fa2bwd, "precision=bf16:fp32 dist=large_logits"),
         "the bias verdict judges normal and uniform gradients, not large_logits (a model offset)");
}

/* The cross-check's rows: at its floor (a long case) dQ, dK and dV, under a causal mask both
 * ends of the key range, in one head besides dQ's first row; a short case evenly spaced
 * rows, every gradient among them. */
static void test_xcheck_rows(void) {
  kv_run_settings rs;
  kv_plan_run_defaults(&rs);
  fcase f;
  fcase_init(&f, &kv_family_fa2bwd, "precision=bf16:fp32 headdim=128 seqlen=16384 causal=1 batch=2 heads=4");
  kv_cost c;
  kv_case_cost(&f.c, &c);
  const size_t T = 2 * 16384 * 4, first = 16384 * 4 + 3; /* token 0 of batch 1, head 3 */
  EXPECT(kv_xcheck_row_count(&c, rs.cpu_ref_budget) == 2, "a long case is at the floor (%zu rows)",
         kv_xcheck_row_count(&c, rs.cpu_ref_budget));
  size_t *rows = NULL;
  const size_t n = kv_xcheck_rows(&f.c, &c, &rs, &rows);
  const size_t want[] = {0, T - 1, T + first, 2 * T - 1, 2 * T + first, 3 * T - 1};
  EXPECT(n == 6 && rows && memcmp(rows, want, sizeof want) == 0, "floor rows: %zu of them, from %zu", n,
         rows ? rows[0] : 0);
  free(rows);
  fcase_init(&f, &kv_family_fa2bwd, "precision=fp16:fp32 headdim=64 seqlen=1 causal=0 batch=1 heads=1");
  kv_case_cost(&f.c, &c);
  EXPECT(c.n_floor_rows == 3 && c.floor_rows[2] == 2, "one token: one row per gradient (%d)", c.n_floor_rows);
  fcase_init(&f, &kv_family_fa2bwd, "precision=fp16:fp32 headdim=64 seqlen=300 causal=1 batch=1 heads=2");
  kv_case_cost(&f.c, &c);
  rows = NULL;
  const size_t m = kv_xcheck_rows(&f.c, &c, &rs, &rows);
  int part[3] = {0, 0, 0};
  for (size_t i = 0; i < m && rows; i++) part[rows[i] / 600]++;
  EXPECT(m == KV_XCHECK_ROWS && part[0] && part[1] && part[2], "a short case: %zu rows, %d/%d/%d per gradient", m,
         part[0], part[1], part[2]);
  free(rows);
}

/* The variants' blocks as the path tags read them, kval-wgmma-fused's workspace (fp32 dQ sums
 * of whole 64-row query blocks and a counter per query block; none for the two-pass variants),
 * and its tags on a case with partial query and key blocks after full ones. */
/* The path tags of the case `spec` are `want`. */
static void expect_path(const char *spec, const char *want) {
  fcase f;
  char path[512];
  fcase_init(&f, &kv_family_fa2bwd, spec);
  kv_family_fa2bwd.path(&f.c, path, sizeof path);
  EXPECT_STREQ(path, want);
}

static void test_variants(void) {
  long long qb[2], kb[2], accum, sems;
  kv_fa2bwd_blocks(KV_FA2BWD_WGMMA_FUSED, 128, qb, kb);
  EXPECT(qb[0] == 64 && qb[1] == 64 && kb[0] == 128 && kb[1] == 128, "fused: one pass of 64-row query blocks, 128 keys");
  kv_fa2bwd_blocks(KV_FA2BWD_WGMMA, 128, qb, kb);
  EXPECT(qb[0] == 64 && qb[1] == 128 && kb[0] == 128 && kb[1] == 64, "kval-wgmma d128: its two passes' blocks");
  kv_fa2bwd_workspace(KV_FA2BWD_WGMMA_FUSED, 2, 3, 300, 128, &accum, &sems);
  EXPECT(accum == 2LL * 3 * 5 * 64 * 128 * 4 && sems == 2LL * 3 * 5 * 4, "fused workspace of 300 tokens: %lld, %lld",
         accum, sems);
  kv_fa2bwd_workspace(KV_FA2BWD_WGMMA, 2, 3, 300, 128, &accum, &sems);
  EXPECT(accum == 0 && sems == 0, "kval-wgmma needs no workspace");
  kv_fa2bwd_workspace(KV_FA2BWD_MMA, 2, 3, 300, 64, &accum, &sems);
  EXPECT(accum == 0 && sems == 0, "kval-mma needs no workspace");
  EXPECT(kv_fa2bwd_variant_of("kval-wgmma-fused") == KV_FA2BWD_WGMMA_FUSED && kv_fa2bwd_variant_of("fused") == -1,
         "variant names");
  EXPECT(kv_fa2bwd_unsupported(KV_FA2BWD_WGMMA_FUSED, 64, (kv_precision){KV_BF16, KV_FP32}) == NULL,
         "fused runs bf16:fp32 at d64");
  expect_path("variant=kval-wgmma-fused precision=fp16:fp32 headdim=64 seqlen=300 causal=1 batch=1 heads=2",
              "fa2bwd:kval-wgmma-fused:d64:fp16:fp32:causal fa2bwd:kval-wgmma-fused:q-tail "
              "fa2bwd:kval-wgmma-fused:k-tail fa2bwd:kval-wgmma-fused:blocks fa2bwd:kval-wgmma-fused:dist=normal");
  expect_path("variant=kval-wgmma-fused precision=fp16:fp32 headdim=64 seqlen=128 causal=0 batch=1 heads=2",
              "fa2bwd:kval-wgmma-fused:d64:fp16:fp32:full fa2bwd:kval-wgmma-fused:dist=normal");
  /* the rotated walks: fused, d 128, without the mask, 2 .. KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS key
   * blocks; the plain walks of that instantiation past them */
  EXPECT(!kv_fa2bwd_rotated(KV_FA2BWD_WGMMA_FUSED, 64, 0, 300) && !kv_fa2bwd_rotated(KV_FA2BWD_WGMMA_FUSED, 128, 1, 300) &&
             !kv_fa2bwd_rotated(KV_FA2BWD_WGMMA, 128, 0, 300) && kv_fa2bwd_rotated(KV_FA2BWD_WGMMA_FUSED, 128, 0, 300) &&
             kv_fa2bwd_rotated(KV_FA2BWD_WGMMA_FUSED, 128, 0, 128 * KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS) &&
             !kv_fa2bwd_rotated(KV_FA2BWD_WGMMA_FUSED, 128, 0, 128 * KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS + 1),
         "rotated walks: fused d128 without the mask up to %d key blocks", KV_FA2BWD_ROTATE_MAX_KEY_BLOCKS);
  expect_path("variant=kval-wgmma-fused precision=bf16:fp32 headdim=128 seqlen=256 causal=0 batch=1 heads=2",
              "fa2bwd:kval-wgmma-fused:d128:bf16:fp32:full fa2bwd:kval-wgmma-fused:blocks "
              "fa2bwd:kval-wgmma-fused:walk=rotated fa2bwd:kval-wgmma-fused:dist=normal");
  expect_path("variant=kval-wgmma-fused precision=bf16:fp32 headdim=128 seqlen=4200 causal=0 batch=1 heads=1",
              "fa2bwd:kval-wgmma-fused:d128:bf16:fp32:full fa2bwd:kval-wgmma-fused:q-tail "
              "fa2bwd:kval-wgmma-fused:k-tail fa2bwd:kval-wgmma-fused:blocks "
              "fa2bwd:kval-wgmma-fused:walk=unrotated fa2bwd:kval-wgmma-fused:dist=normal");
  expect_path("variant=kval-wgmma-fused precision=bf16:fp32 headdim=128 seqlen=100 causal=0 batch=1 heads=2",
              "fa2bwd:kval-wgmma-fused:d128:bf16:fp32:full fa2bwd:kval-wgmma-fused:q-tail "
              "fa2bwd:kval-wgmma-fused:k-tail fa2bwd:kval-wgmma-fused:dist=normal");
  expect_path("variant=kval-wgmma-fused precision=bf16:fp32 headdim=128 seqlen=128 causal=0 batch=1 heads=2",
              "fa2bwd:kval-wgmma-fused:d128:bf16:fp32:full fa2bwd:kval-wgmma-fused:dist=normal");
  int tags = 0, walks = 0;
  char tag[128];
  while (kv_family_fa2bwd.path_tag(tags, tag, sizeof tag)) walks += strstr(tag, ":walk=") != NULL, tags++;
  EXPECT(tags == 3 * 16 + 2 && walks == 2, "%d path tags (16 a variant, kval-wgmma-fused's two walks: %d)", tags, walks);
}

/* kval-wgmma-fused's schedule (fa2bwd_limits.h) for one head of `seqlen` tokens: the walks
 * (walk[kb][i]: key block kb's i-th query block, -1 past its end), then the CTAs started in the
 * kernel's order (descending key blocks) on `slots` SMs, each adding its shares in walk order
 * when the query block's counter equals its rank (kv_fa2bwd_add_rank), as write_dq does. 0 when
 * every walk visits each query block that sees its key block once, every query block's ranks
 * are 0 .. (key blocks that see it) - 1 and all CTAs finish; else 1 (ranks) or 2 (a CTA waits
 * forever). */
#define SCHED_MAX_KB 40
static int schedule(long long seqlen, int causal, int rotated, int slots) {
  const int bq = KV_FA2BWD_WGMMA_QUERIES(128), bn = KV_FA2BWD_WGMMA_KEYS;
  const int nkb = (int)((seqlen + bn - 1) / bn), nmb = (int)((seqlen + bq - 1) / bq);
  int walk[SCHED_MAX_KB][2 * SCHED_MAX_KB], len[SCHED_MAX_KB], pos[SCHED_MAX_KB] = {0}, sem[2 * SCHED_MAX_KB] = {0};
  int seen[2 * SCHED_MAX_KB][SCHED_MAX_KB] = {{0}};
  for (int kb = 0; kb < nkb; kb++) {
    const int begin = causal ? kv_fa2bwd_diagonal_block(kb, bq, bn) : 0;
    len[kb] = rotated ? nmb : nmb - begin;
    for (int i = 0; i < len[kb]; i++)
      walk[kb][i] = rotated ? kv_fa2bwd_rotated_block(i, kv_fa2bwd_diagonal_block(kb, bq, bn), nmb) : begin + i;
  }
  for (int kb = 0; kb < nkb; kb++)
    for (int i = 0; i < len[kb]; i++) {
      const int r = kv_fa2bwd_add_rank(rotated, causal, walk[kb][i], kb, nkb, bq, bn);
      if (r < 0 || r >= nkb || seen[walk[kb][i]][r]++) return 1;
    }
  for (int m = 0; m < nmb; m++)
    for (int r = 1; r < nkb; r++)
      if (seen[m][r] && !seen[m][r - 1]) return 1;
  int started = 0, resident[SCHED_MAX_KB], n_res = 0, done = 0;
  while (done < nkb) {
    while (started < nkb && n_res < slots) resident[n_res++] = nkb - 1 - started++;
    int progress = 0;
    for (int j = 0; j < n_res; j++) {
      const int kb = resident[j];
      while (pos[kb] < len[kb] && sem[walk[kb][pos[kb]]] == kv_fa2bwd_add_rank(rotated, causal, walk[kb][pos[kb]], kb, nkb, bq, bn)) {
        sem[walk[kb][pos[kb]]]++;
        pos[kb]++;
        progress = 1;
      }
      if (pos[kb] == len[kb]) {
        resident[j--] = resident[--n_res];
        done++;
        progress = 1;
      }
    }
    if (!progress) return 2;
  }
  return 0;
}

/* Every length up to SCHED_MAX_KB key blocks: the plain walks finish with one CTA resident at a
 * time (the start order alone suffices), the rotated ones with every key block resident (what
 * prepare requires) and not with one SM fewer (why it requires it). */
static void test_schedule(void) {
  int plain = 0, rotated = 0, short_of_sms = 0, lengths = 0;
  for (long long l = 1; l <= SCHED_MAX_KB * KV_FA2BWD_WGMMA_KEYS; l += 7, lengths++) {
    const int nkb = (int)((l + KV_FA2BWD_WGMMA_KEYS - 1) / KV_FA2BWD_WGMMA_KEYS);
    plain += schedule(l, 0, 0, 1) == 0 && schedule(l, 1, 0, 1) == 0;
    rotated += schedule(l, 0, 1, nkb) == 0;
    short_of_sms += nkb < 3 || schedule(l, 0, 1, nkb - 1) == 2;
  }
  EXPECT(plain == lengths, "plain walks, causal and not, on one SM: %d of %d lengths finish", plain, lengths);
  EXPECT(rotated == lengths, "rotated walks with every key block resident: %d of %d lengths finish", rotated, lengths);
  EXPECT(short_of_sms == lengths, "rotated walks one SM short wait forever: %d of %d lengths", short_of_sms, lengths);
}

static void test_tensors(void) {
  fcase f;
  fcase_init(&f, &kv_family_fa2bwd, "precision=fp16:fp32 headdim=64 seqlen=70 batch=3 heads=2 dist=large_logits");
  kv_tensors t;
  kv_family_fa2bwd.tensors(&f.c, &t);
  const size_t n = 3 * 70 * 2 * 64;
  EXPECT(t.n_in == 4 && t.n_out == 1, "4 inputs, 1 output");
  EXPECT(spec_is(&t.in[0], "q", KV_FP16, n, KV_DIST_NORMAL, 4.0, 0.0) && spec_is(&t.in[1], "k", KV_FP16, n, KV_DIST_NORMAL, 4.0, 0.0),
         "q, k specs");
  EXPECT(spec_is(&t.in[2], "v", KV_FP16, n, KV_DIST_NORMAL, 1.0, 0.0) && spec_is(&t.in[3], "dout", KV_FP16, n, KV_DIST_NORMAL, 1.0, 0.0),
         "v, dout specs");
  EXPECT(strcmp(t.out[0].name, "dqkv") == 0 && t.out[0].dtype == KV_FP16 && t.out[0].count == 3 * n, "dqkv spec");
}

/* f = sum(dout * o) of an fp64 forward over the widened inputs x[4] (q, k, v, dout) of head
 * (b, h) of the case. */
static double objective(const kv_fa2bwd_dims *d, double *const *x, long long b, long long h) {
  const long long hd = d->headdim, l = d->seqlen;
  double f = 0.0;
  for (long long i = 0; i < l; i++) {
    const size_t qi = (size_t)(((b * l + i) * d->heads + h) * hd);
    const long long n = kv_fa2bwd_keys(d, i);
    double m = -INFINITY, *s = malloc((size_t)n * sizeof *s), sum = 0.0;
    for (long long j = 0; j < n; j++) {
      const size_t kj = (size_t)(((b * l + j) * d->heads + h) * hd);
      s[j] = 0.0;
      for (long long k = 0; k < hd; k++) s[j] += x[0][qi + k] * x[1][kj + k];
      s[j] *= d->scale;
      m = fmax(m, s[j]);
    }
    for (long long j = 0; j < n; j++) sum += exp(s[j] - m);
    for (long long j = 0; j < n; j++) {
      const size_t vj = (size_t)(((b * l + j) * d->heads + h) * hd);
      double dv = 0.0;
      for (long long k = 0; k < hd; k++) dv += x[3][qi + k] * x[2][vj + k];
      f += exp(s[j] - m) / sum * dv;
    }
    free(s);
  }
  return f;
}

/* Central differences of the objective against the reference's dQ, dK and dV at sampled
 * elements of every gradient, each read from the part of the output named after its input
 * (dq, dk, dv: the names the file's part_stats and failure messages use). */
static void test_finite_differences(const char *spec) {
  fcase f;
  fcase_make(&f, &kv_family_fa2bwd, spec);
  fcase_generate(&f, 17);
  fcase_reference(&f, 0);
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(&f.c, &d);
  const size_t n = f.t.in[0].count;
  double *x[4];
  for (int t = 0; t < 4; t++) {
    x[t] = malloc(n * sizeof(double));
    kv_to_double(f.in[t], f.t.in[t].dtype, 0, n, x[t]);
  }
  double worst = 0.0;
  int checked = 0;
  const char *const *names = kv_family_fa2bwd.out_parts;
  for (int part = 0; part < 3; part++) {
    EXPECT(names[part][0] == 'd' && strcmp(names[part] + 1, f.t.in[part].name) == 0,
           "part %d, the gradient of input %s, is named %s", part, f.t.in[part].name, names[part]);
    const size_t first = kv_part_first_row(f.n_rows, kv_family_parts(&kv_family_fa2bwd), part) * f.row_len;
    for (size_t e = 7; e < n; e += n / 5 + 3) {
      const long long h = (long long)((e / (size_t)d.headdim) % (size_t)d.heads);
      const long long b = (long long)(e / ((size_t)d.headdim * (size_t)d.heads * (size_t)d.seqlen));
      const double keep = x[part][e], step = 1e-5;
      x[part][e] = keep + step;
      const double up = objective(&d, x, b, h);
      x[part][e] = keep - step;
      const double down = objective(&d, x, b, h);
      x[part][e] = keep;
      const double fd = (up - down) / (2 * step), ref = f.ref[first + e];
      worst = fmax(worst, fabs(fd - ref) / fmax(fabs(ref), 1e-3));
      checked++;
    }
  }
  printf("  %-70s %d elements, worst relative difference %.3g\n", spec, checked, worst);
  EXPECT(worst < 1e-6, "%s: reference gradients match finite differences (%g)", spec, worst);
  for (int t = 0; t < 4; t++) free(x[t]);
  fcase_free(&f);
}

/* sum_j dK_jd = 0 (the rows of dS sum to zero) and sum_j dV_jd = sum_i dout_id (the rows of P
 * sum to one), per (batch, head, feature). */
static void test_identities(void) {
  fcase f;
  fcase_make(&f, &kv_family_fa2bwd, "precision=bf16:fp32 headdim=64 seqlen=37 causal=1 batch=2 heads=2");
  fcase_generate(&f, 5);
  fcase_reference(&f, 0);
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(&f.c, &d);
  const size_t n = f.t.in[0].count, hd = (size_t)d.headdim;
  double worst_k = 0.0, worst_v = 0.0;
  for (long long b = 0; b < d.batch; b++)
    for (long long h = 0; h < d.heads; h++)
      for (size_t k = 0; k < hd; k++) {
        double sk = 0.0, sv = 0.0, sdo = 0.0, scale = 0.0;
        for (long long j = 0; j < d.seqlen; j++) {
          const size_t e = (size_t)((b * d.seqlen + j) * d.heads + h) * hd + k;
          sk += f.ref[n + e];
          scale += fabs(f.ref[n + e]);
          sv += f.ref[2 * n + e];
          sdo += kv_load(f.in[3], e, KV_BF16);
        }
        worst_k = fmax(worst_k, fabs(sk) / scale);
        worst_v = fmax(worst_v, fabs(sv - sdo) / fmax(fabs(sdo), 1.0));
      }
  EXPECT(worst_k < 1e-12, "sum over keys of dK is 0 (%g relative)", worst_k);
  EXPECT(worst_v < 1e-12, "sum over keys of dV is sum of dout (%g)", worst_v);
  fcase_free(&f);
}

static void test_emulation_vs_reference(void) {
  static const char *const specs[] = {
      "precision=fp16:fp32 headdim=64 seqlen=1 batch=1 heads=2",
      "precision=fp16:fp32 headdim=64 seqlen=130 causal=1 batch=2 heads=2",
      "precision=bf16:fp32 headdim=128 seqlen=97 causal=0 batch=1 heads=3",
      "precision=bf16:fp32 headdim=64 seqlen=256 causal=1 batch=1 heads=2 dist=uniform",
      "precision=fp16:fp32 headdim=128 seqlen=200 causal=1 batch=1 heads=2 dist=large_logits",
      "precision=fp16:fp32 headdim=64 seqlen=300 causal=0 batch=1 heads=1 scale=0.5",
  };
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    fcase f;
    fcase_make(&f, &kv_family_fa2bwd, specs[i]);
    EXPECT(kv_family_fa2bwd.invalid(&f.c, "cpu") == NULL, "valid: %s", specs[i]);
    fcase_generate(&f, 11 + i);
    fcase_emulate(&f);
    fcase_reference(&f, 0);
    const double ratio = fcase_bound_ratio(&f);
    printf("  %-90s bound ratio %.3g\n", specs[i], ratio);
    EXPECT(ratio <= 1.0, "emulation within the tolerance: %s (%g)", specs[i], ratio);
    if (f.n_rows > 6) EXPECT(fcase_median_rel_err(&f, 1e-3) > 0.0, "the emulation is not the reference itself: %s", specs[i]);
    fcase_free(&f);
  }
}

/* dK and dV exchanged in the output: the verdict fails it. */
static void test_swapped_gradients(void) {
  fcase f;
  fcase_make(&f, &kv_family_fa2bwd, "precision=fp16:fp32 headdim=64 seqlen=70 causal=1 batch=1 heads=2");
  fcase_generate(&f, 3);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  EXPECT(fcase_bound_ratio(&f) <= 1.0, "the emulation passes");
  const size_t bytes = f.t.in[0].count * kv_dtype_size(KV_FP16);
  char *tmp = malloc(bytes), *o = f.out[0];
  memcpy(tmp, o + bytes, bytes);
  memcpy(o + bytes, o + 2 * bytes, bytes);
  memcpy(o + 2 * bytes, tmp, bytes);
  EXPECT(fcase_bound_ratio(&f) > 10.0, "dK and dV swapped fail (%g)", fcase_bound_ratio(&f));
  free(tmp);
  fcase_free(&f);
}

static void test_reference_dd(void) {
  fcase a, b;
  const char *spec = "precision=fp16:fp32 headdim=64 seqlen=90 causal=1 batch=1 heads=2 dist=large_logits";
  fcase_make(&a, &kv_family_fa2bwd, spec);
  fcase_make(&b, &kv_family_fa2bwd, spec);
  fcase_generate(&a, 21);
  copy_inputs(&b, &a);
  run_both(&a, &b);
  expect_agreement("fa2bwd large_logits", compare(&a, &b), 1.0);
  fcase_free(&a);
  fcase_free(&b);
}

int main(void) {
  TEST("descriptor: axes and params as agreed");
  check_descriptor(&kv_family_fa2bwd, fa2bwd_axes, fa2bwd_params);
  TEST("rules of invalid()");
  test_invalid();
  TEST("FLOP, byte and row counts");
  test_cost();
  TEST("the cross-check's rows reach every gradient");
  test_xcheck_rows();
  TEST("the variants' blocks, workspace and path tags");
  test_variants();
  TEST("kval-wgmma-fused's schedule: walks, add order, no CTA waiting forever");
  test_schedule();
  TEST("input and output tensors");
  test_tensors();
  TEST("reference gradients vs finite differences of an fp64 forward");
  test_finite_differences("precision=fp16:fp32 headdim=64 seqlen=9 causal=0 batch=1 heads=2");
  test_finite_differences("precision=bf16:fp32 headdim=64 seqlen=12 causal=1 batch=2 heads=1 scale=0.3");
  TEST("gradient identities of the reference");
  test_identities();
  TEST("emulation vs fp64 reference within the default tolerance");
  test_emulation_vs_reference();
  TEST("swapped gradients fail");
  test_swapped_gradients();
  TEST("fp64 reference vs double-double");
  test_reference_dd();
  return TEST_RETURN();
}
