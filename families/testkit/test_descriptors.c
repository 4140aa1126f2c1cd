/* test_families.c - the four family descriptors: axes and parameters exactly as agreed
 * (names, order, types, defaults, choices, ranges; every default valid), the family rules
 * of invalid(), the GEMM shape parser, FLOP/byte/row counts on worked examples, the input
 * tensors each distribution asks for, host input generation (bit-equal to the generator,
 * keyed, never all zeros), and determinism: the same seed gives the same output
 * bits twice, a different seed different ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/testkit/family_case.h"
#include "tests/unit/test_util.h"

typedef struct {
  const char *name;
  kv_axis_type type;
  const char *defaults, *choices; /* choices space-separated, NULL for any token */
  long long min, max;
} axis_want;

typedef struct {
  const char *name;
  double defaults, min, max;
} param_want;

static const axis_want fa2_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-mma", "kval-wgmma kval-mma", 0, 0},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"headdim", KV_AXIS_INT, "64 128", NULL, 32, 256},
    {"seqlen", KV_AXIS_INT, "512 1024 2048", NULL, 1, 1048576},
    {"causal", KV_AXIS_INT, "0 1", NULL, 0, 1},
    {"batch", KV_AXIS_INT, "0", NULL, 0, 65536},
    {"heads", KV_AXIS_INT, "16", NULL, 1, 1024},
    {"dist", KV_AXIS_STR, "normal", "normal uniform large_logits", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want fa2_params[] = {
    {"tokens", 16384, 1, 2147483648.0}, {"seqlen_k", 0, 0, 1048576}, {"scale", 0, 0, 1e6}, {NULL, 0, 0, 0}};

static const axis_want gemm_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-mma cublas", "kval-wgmma kval-mma cublas", 0, 0},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"layout", KV_AXIS_STR, "nn", "nn tn nt", 0, 0},
    {"shape", KV_AXIS_STR, "256x256x256 1024x1024x1024", NULL, 0, 0},
    {"dist", KV_AXIS_STR, "normal", "normal uniform near_max", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want gemm_params[] = {{"alpha", 1, -1e6, 1e6}, {"beta", 0, -1e6, 1e6}, {NULL, 0, 0, 0}};

static const axis_want norm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32 fp32:fp32", NULL, 0, 0},
    {"rows", KV_AXIS_INT, "1024", NULL, 1, 1LL << 26},
    {"hidden", KV_AXIS_INT, "1024 4096", NULL, 1, 65536},
    {"dist", KV_AXIS_STR, "normal", "normal uniform offset", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want norm_params[] = {{"eps", 1e-5, 0, 1}, {NULL, 0, 0, 0}};

/* Is every token of the default list valid for the axis? */
static int defaults_valid(const kv_axis_desc *a) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", a->defaults);
  for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
    if (a->type == KV_AXIS_INT) {
      long long v = strtoll(t, NULL, 10);
      if (v < a->min || v > a->max) return 0;
    } else if (a->choices) {
      int found = 0;
      for (int i = 0; a->choices[i]; i++) found |= strcmp(a->choices[i], t) == 0;
      if (!found) return 0;
    } else if (strcmp(a->name, "precision") == 0) {
      kv_precision p;
      if (kv_precision_parse(t, &p) != 0 || kv_precision_invalid_reason(p)) return 0;
    }
  }
  return 1;
}

static void check_descriptor(const kv_family *f, const axis_want *aw, const param_want *pw) {
  int n = 0;
  for (; aw[n].name; n++) {
    const kv_axis_desc *a = &f->axes[n];
    EXPECT(a->name != NULL, "%s: axis %d (%s) missing", f->name, n, aw[n].name);
    if (!a->name) return;
    EXPECT_STREQ(a->name, aw[n].name);
    EXPECT(a->type == aw[n].type, "%s.%s type", f->name, a->name);
    EXPECT_STREQ(a->defaults, aw[n].defaults);
    EXPECT(a->help && a->help[0], "%s.%s has help", f->name, a->name);
    if (a->type == KV_AXIS_INT)
      EXPECT(a->min == aw[n].min && a->max == aw[n].max, "%s.%s range %lld..%lld", f->name, a->name, a->min, a->max);
    char joined[256] = "";
    for (int i = 0; a->choices && a->choices[i]; i++) {
      if (i) strcat(joined, " ");
      strcat(joined, a->choices[i]);
    }
    EXPECT_STREQ(a->choices ? joined : NULL, aw[n].choices);
    EXPECT(defaults_valid(a), "%s.%s defaults \"%s\" are valid values", f->name, a->name, a->defaults);
  }
  EXPECT(f->axes[n].name == NULL, "%s has %d axes", f->name, n);
  int np = 0;
  for (; pw[np].name; np++) {
    const kv_param_desc *p = &f->params[np];
    EXPECT(p->name && strcmp(p->name, pw[np].name) == 0, "%s param %d is %s", f->name, np, pw[np].name);
    EXPECT(p->defaults == pw[np].defaults && p->min == pw[np].min && p->max == pw[np].max,
           "%s.%s default %g range %g..%g", f->name, pw[np].name, p->defaults, p->min, p->max);
    EXPECT(p->defaults >= p->min && p->defaults <= p->max, "%s.%s default within range", f->name, pw[np].name);
  }
  EXPECT(f->params[np].name == NULL, "%s has %d params", f->name, np);
  EXPECT(f->invalid && f->cost && f->tensors && f->emulate && f->reference, "%s has every hook", f->name);
}

static const char *invalid_of(const kv_family *fam, const char *spec, const char *backend) {
  fcase f;
  fcase_init(&f, fam, spec);
  return fam->invalid(&f.c, backend);
}

static void test_invalid(void) {
  const char *fp32 = "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "precision=fp16:fp32 headdim=64", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "variant=kval-mma precision=bf16:bf16 headdim=256", "cuda"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "variant=kval-wgmma headdim=256", "cuda"), "kval-wgmma: headdim");
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "variant=kval-wgmma precision=fp16:fp16", "cpu"), "fp32 accumulation");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "variant=kval-wgmma precision=bf16:fp32 headdim=128", "cpu"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "headdim=48", "cpu"), "headdim");
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "headdim=160", "cuda"), "headdim");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "precision=fp32:fp32", "cuda"), fp32);
  EXPECT(invalid_of(&kv_family_fa2, "precision=fp16:bf16", "cpu") != NULL, "fp16 storage, bf16 accumulation");
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "causal=1 seqlen=512 seqlen_k=300", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_fa2, "seqlen=1048576 headdim=128", "cpu"), NULL);
  EXPECT_CONTAINS(invalid_of(&kv_family_fa2, "seqlen_k=10.5", "cpu"), "seqlen_k");

  EXPECT_STREQ(invalid_of(&kv_family_gemm, "variant=kval-mma precision=bf16:bf16", "cpu"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_gemm, "variant=kval-wgmma layout=nt", "cuda"), NULL);
  EXPECT_STREQ(invalid_of(&kv_family_gemm, "variant=cublas", "cpu"), "cublas needs the cuda backend");
  EXPECT_STREQ(invalid_of(&kv_family_gemm, "variant=cublas precision=fp16:fp16", "cuda"), NULL);
  EXPECT(invalid_of(&kv_family_gemm, "variant=cublas precision=bf16:bf16", "cuda") != NULL, "cublas bf16 acc");
  EXPECT_STREQ(invalid_of(&kv_family_gemm, "precision=fp32:fp32", "cuda"), fp32);
  EXPECT_CONTAINS(invalid_of(&kv_family_gemm, "shape=12x0x3", "cpu"), "MxNxK");
  EXPECT(invalid_of(&kv_family_gemm, "precision=bf16:fp16", "cpu") != NULL, "bf16 storage, fp16 accumulation");

  for (int ln = 0; ln < 2; ln++) {
    const kv_family *fam = ln ? &kv_family_layernorm : &kv_family_rmsnorm;
    EXPECT_STREQ(invalid_of(fam, "precision=fp32:fp32", "cuda"), NULL);
    EXPECT_STREQ(invalid_of(fam, "precision=fp16:fp16 hidden=65536", "cpu"), NULL);
    EXPECT(invalid_of(fam, "precision=fp16:bf16", "cpu") != NULL, "%s fp16:bf16", fam->name);
    EXPECT(invalid_of(fam, "precision=fp32:fp16", "cpu") != NULL, "%s fp32:fp16", fam->name);
  }
}

static void test_parse_shape(void) {
  long long m = 0, n = 0, k = 0;
  EXPECT(kv_gemm_parse_shape("256x128x64", &m, &n, &k) == 0 && m == 256 && n == 128 && k == 64, "256x128x64");
  EXPECT(kv_gemm_parse_shape("1X2X3", &m, &n, &k) == 0 && m == 1 && n == 2 && k == 3, "1X2X3");
  EXPECT(kv_gemm_parse_shape("1073741824x1x1", &m, &n, &k) == 0 && m == 1073741824LL, "2^30 allowed");
  static const char *const bad[] = {"",         "256x256",   "0x1x1",  "-1x2x3", "1x2x3x4", "1x2x3 ", " 1x2x3",
                                    "axbxc",    "1.5x2x3",   "+1x2x3", "1xx2x3", "1x2x",    "1073741825x1x1",
                                    "1x2x99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    EXPECT(kv_gemm_parse_shape(bad[i], &m, &n, &k) != 0, "\"%s\" rejected", bad[i]);
  EXPECT(kv_gemm_parse_shape(NULL, &m, &n, &k) != 0, "NULL rejected");
}

static kv_cost cost_of(const kv_family *fam, const char *spec) {
  fcase f;
  kv_cost c;
  fcase_init(&f, fam, spec);
  fam->cost(&f.c, &c);
  return c;
}

static void test_cost(void) {
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
  EXPECT(cost_of(&kv_family_fa2, "seqlen=100000").rows == 100000 * 16, "batch = max(1, tokens / seqlen)");

  kv_cost g = cost_of(&kv_family_gemm, "precision=fp16:fp32 shape=256x128x64");
  EXPECT(g.flops == 2.0 * 256 * 128 * 64 && g.bytes == (256.0 * 64 + 64 * 128 + 256 * 128) * 2, "gemm %g %g", g.flops,
         g.bytes);
  /* device bytes: D's value and magnitude in fp64, plus the fp64 copies of A and B */
  EXPECT(g.rows == 256 && g.row_len == 128 && g.red_len == 64 &&
             g.device_bytes == g.bytes + 16.0 * 256 * 128 + 8.0 * (256 * 64 + 64 * 128),
         "gemm rows %zu x %zu, K %g", g.rows, g.row_len, g.red_len);
  EXPECT(cost_of(&kv_family_gemm, "shape=256x128x64 beta=1").bytes == g.bytes + 2.0 * 256 * 128, "C counted");

  kv_cost l = cost_of(&kv_family_layernorm, "precision=fp16:fp32 rows=1024 hidden=4096");
  kv_cost r = cost_of(&kv_family_rmsnorm, "precision=fp32:fp32 rows=1024 hidden=4096");
  EXPECT(l.flops == 8.0 * 4194304 && l.bytes == (2.0 * 4194304 + 2 * 4096) * 2, "layernorm %g %g", l.flops, l.bytes);
  EXPECT(r.flops == 5.0 * 4194304 && r.bytes == (2.0 * 4194304 + 4096) * 4, "rmsnorm %g %g", r.flops, r.bytes);
  EXPECT(l.rows == 1024 && l.row_len == 4096 && l.red_len == 4096, "norm rows %zu x %zu", l.rows, l.row_len);
}

static int spec_is(const kv_tensor_spec *t, const char *name, kv_dtype dt, size_t count, int dist, double scale,
                   double offset) {
  return strcmp(t->name, name) == 0 && t->dtype == dt && t->count == count && t->dist == dist &&
         fabs(t->scale - scale) < 1e-12 * fabs(scale) + 1e-300 && t->offset == offset;
}

static void test_tensors(void) {
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

  fcase_make(&f, &kv_family_gemm, "precision=bf16:fp32 shape=8x4x64 dist=near_max");
  double s = sqrt(65504.0 / (1.6 * 64));
  EXPECT(f.t.n_in == 2 && spec_is(&f.t.in[0], "a", KV_BF16, 8 * 64, KV_DIST_UNIFORM, 0.25 * s, s) &&
             spec_is(&f.t.in[1], "b", KV_BF16, 64 * 4, KV_DIST_UNIFORM, 0.25 * s, s) && f.t.out[0].count == 32,
         "gemm near_max inputs");
  fcase_free(&f);
  fcase_make(&f, &kv_family_gemm, "shape=8x4x64 dist=uniform beta=2");
  EXPECT(f.t.n_in == 3 && spec_is(&f.t.in[2], "c", KV_FP16, 32, KV_DIST_UNIFORM, 1.0, 0.0), "gemm C input");
  fcase_free(&f);

  fcase_make(&f, &kv_family_layernorm, "precision=fp32:fp32 rows=3 hidden=5 dist=offset");
  EXPECT(f.t.n_in == 3 && spec_is(&f.t.in[0], "x", KV_FP32, 15, KV_DIST_NORMAL, 1.0, 100.0) &&
             spec_is(&f.t.in[1], "weight", KV_FP32, 5, KV_DIST_NORMAL, 0.1, 1.0) &&
             spec_is(&f.t.in[2], "bias", KV_FP32, 5, KV_DIST_NORMAL, 0.1, 0.0),
         "layernorm inputs");
  fcase_free(&f);
  fcase_make(&f, &kv_family_rmsnorm, "rows=3 hidden=5");
  EXPECT(f.t.n_in == 2 && f.t.n_out == 1 && spec_is(&f.t.in[0], "x", KV_FP16, 15, KV_DIST_NORMAL, 1.0, 0.0),
         "rmsnorm inputs");
  fcase_free(&f);
}

static void test_generation(void) {
  static const kv_dtype types[] = {KV_FP16, KV_BF16, KV_FP32};
  for (int t = 0; t < 3; t++) {
    kv_tensor_spec s;
    kv_spec_in(&s, "x", types[t], 1000, KV_DIST_NORMAL, 3.0, 0.5);
    unsigned char a[4000], b[4000], c[4000];
    EXPECT(kv_generate_host(&s, 42, a) == KV_OK && kv_generate_host(&s, 43, c) == KV_OK, "generate");
    for (size_t i = 0; i < 1000; i++) kv_store(b, i, types[t], kv_gen_value(42, i, KV_DIST_NORMAL, 3.0, 0.5));
    EXPECT(memcmp(a, b, 1000 * kv_dtype_size(types[t])) == 0, "%s: generated elements are kv_store(kv_gen_value(...))",
           kv_dtype_name(types[t]));
    EXPECT(memcmp(a, c, 1000 * kv_dtype_size(types[t])) != 0, "%s: another key, other values", kv_dtype_name(types[t]));
  }
  /* every family's inputs: not all zero, distinct tensors, weights around 1 */
  const kv_family *fams[] = {&kv_family_fa2, &kv_family_gemm, &kv_family_layernorm, &kv_family_rmsnorm};
  const char *specs[] = {"headdim=32 seqlen=20 batch=1 heads=2", "shape=16x8x32 beta=1", "rows=4 hidden=64",
                         "rows=4 hidden=64"};
  for (int i = 0; i < 4; i++) {
    fcase f;
    fcase_make(&f, fams[i], specs[i]);
    fcase_generate(&f, 5);
    for (int k = 0; k < f.t.n_in; k++) {
      size_t bytes = f.t.in[k].count * kv_dtype_size(f.t.in[k].dtype);
      double sum_abs = 0.0;
      for (size_t e = 0; e < f.t.in[k].count; e++) sum_abs += fabs(kv_load(f.in[k], e, f.t.in[k].dtype));
      EXPECT(sum_abs > 0.05 * (double)f.t.in[k].count, "%s %s not all zero", fams[i]->name, f.t.in[k].name);
      if (k > 0)
        EXPECT(memcmp(f.in[k], f.in[0], bytes < 64 ? bytes : 64) != 0, "%s: %s differs from %s", fams[i]->name,
               f.t.in[k].name, f.t.in[0].name);
    }
    if (i >= 2) {
      double mean = 0.0;
      for (size_t e = 0; e < 64; e++) mean += kv_load(f.in[1], e, KV_FP16) / 64.0;
      EXPECT(fabs(mean - 1.0) < 0.05, "%s weight = 1 + 0.1 N: mean %g", fams[i]->name, mean);
    }
    fcase_free(&f);
  }
}

/* Output bytes of the case under one seed (both outputs concatenated); caller frees. */
static unsigned char *run_bits(const kv_family *fam, const char *spec, uint64_t seed, size_t *nbytes) {
  fcase f;
  fcase_make(&f, fam, spec);
  fcase_generate(&f, seed);
  for (int k = 0; k < f.t.n_out; k++) memset(f.out[k], 0xff, f.t.out[k].count * kv_dtype_size(f.t.out[k].dtype));
  fcase_emulate(&f);
  size_t n = 0;
  for (int k = 0; k < f.t.n_out; k++) n += f.t.out[k].count * kv_dtype_size(f.t.out[k].dtype);
  unsigned char *bits = malloc(n), *p = bits;
  for (int k = 0; k < f.t.n_out; k++) {
    size_t b = f.t.out[k].count * kv_dtype_size(f.t.out[k].dtype);
    memcpy(p, f.out[k], b);
    p += b;
  }
  *nbytes = n;
  fcase_free(&f);
  return bits;
}

static void test_determinism(void) {
  const kv_family *fams[] = {&kv_family_fa2, &kv_family_fa2, &kv_family_gemm, &kv_family_gemm,
                             &kv_family_layernorm, &kv_family_rmsnorm};
  const char *specs[] = {"precision=fp16:fp16 headdim=64 seqlen=70 seqlen_k=90 batch=2 heads=2 causal=1",
                         "precision=bf16:fp32 headdim=96 seqlen=33 batch=1 heads=3",
                         "precision=bf16:bf16 layout=tn shape=24x40x72 beta=0.5",
                         "precision=fp16:fp32 layout=nt shape=17x9x40",
                         "precision=bf16:bf16 rows=5 hidden=300",
                         "precision=fp32:fp32 rows=5 hidden=300"};
  for (int i = 0; i < 6; i++) {
    size_t n1, n2, n3;
    unsigned char *a = run_bits(fams[i], specs[i], 77, &n1), *b = run_bits(fams[i], specs[i], 77, &n2);
    unsigned char *c = run_bits(fams[i], specs[i], 78, &n3);
    EXPECT(n1 == n2 && memcmp(a, b, n1) == 0, "%s %s: same seed, same bits", fams[i]->name, specs[i]);
    EXPECT(memcmp(a, c, n1) != 0, "%s %s: another seed, other bits", fams[i]->name, specs[i]);
    free(a);
    free(b);
    free(c);
  }
}

int main(void) {
  TEST("descriptors: axes and params as agreed in FAMILIES.md");
  check_descriptor(&kv_family_fa2, fa2_axes, fa2_params);
  check_descriptor(&kv_family_gemm, gemm_axes, gemm_params);
  check_descriptor(&kv_family_layernorm, norm_axes, norm_params);
  check_descriptor(&kv_family_rmsnorm, norm_axes, norm_params);
  TEST("family rules of invalid()");
  test_invalid();
  TEST("gemm shape parser");
  test_parse_shape();
  TEST("FLOP, byte and row counts");
  test_cost();
  TEST("input tensors per distribution");
  test_tensors();
  TEST("host input generation");
  test_generation();
  TEST("determinism");
  test_determinism();
  return TEST_RETURN();
}
