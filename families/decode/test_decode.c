/* test_decode.c - the decode family's descriptor, block table, CPU emulation and fp64
 * reference on the cpu backend: the axis and parameter tables, invalid() and cost(), the
 * block table (a permutation, shuffled unless table_seed = 0, different per case), the
 * reference on hand-checkable inputs (constant V rows, zero queries), the emulation against
 * the reference under the default tolerance over page sizes, tails, GQA ratios, query counts,
 * one split and many, distributions; the block table really used (the same inputs read
 * through another table give a different reference, which the emulation then fails), the
 * cache's scales (k_scale and v_scale as the reference defines them; the emulation of a scaled
 * case fails the unscaled and the swapped reference), and the fp64 reference against its
 * double-double twin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/decode/decode.h"
#include "families/decode/decode_limits.h"
#include "families/testkit/family_checks.h"
#include "tests/unit/test_util.h"

static const axis_want decode_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0},
    {"kv_type", KV_AXIS_STR, "storage", "storage e4m3 e5m2", 0, 0},
    {"headdim", KV_AXIS_INT, "128", NULL, 64, 128},
    {"page_size", KV_AXIS_INT, "16", NULL, 16, 128},
    {"ctx_len", KV_AXIS_INT, "4096", NULL, 1, 1048576},
    {"batch", KV_AXIS_INT, "4", NULL, 1, 65535},
    {"q_heads", KV_AXIS_INT, "32", NULL, 1, 1024},
    {"kv_heads", KV_AXIS_INT, "8", NULL, 1, 1024},
    {"q_len", KV_AXIS_INT, "1", NULL, 1, 16},
    {"dist", KV_AXIS_STR, "normal", "normal uniform large_logits", 0, 0},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0}};
static const param_want decode_params[] = {{"scale", 0, 0, 1e6},     {"table_seed", 1, 0, 4294967295.0},
                                           {"sms", 0, 0, 4096},       {"k_scale", 1, 1e-6, 1e6},
                                           {"v_scale", 1, 1e-6, 1e6}, {NULL, 0, 0, 0}};

static void test_invalid(void) {
  const kv_family *f = &kv_family_decode;
  EXPECT(invalid_of(f, "precision=fp16:fp32 headdim=64 page_size=32 q_heads=8 kv_heads=2 q_len=4", "cuda") == NULL,
         "GQA 4 with 4 query tokens (16 rows) is valid");
  EXPECT_CONTAINS(invalid_of(f, "precision=fp16:fp16", "cuda"), "fp32 accumulation");
  EXPECT_CONTAINS(invalid_of(f, "precision=fp32:fp32", "cuda"), "fp16 or bf16");
  EXPECT_CONTAINS(invalid_of(f, "precision=e4m3:fp32", "cuda"), "fp16 or bf16");
  EXPECT(invalid_of(f, "precision=bf16:fp32 kv_type=e4m3 headdim=64", "cuda") == NULL &&
             invalid_of(f, "precision=fp16:fp32 kv_type=e5m2", "cuda") == NULL,
         "an 8-bit KV cache is valid");
  EXPECT_CONTAINS(invalid_of(f, "headdim=96", "cuda"), "64 or 128");
  EXPECT_CONTAINS(invalid_of(f, "page_size=48", "cuda"), "page_size");
  EXPECT_CONTAINS(invalid_of(f, "q_heads=6 kv_heads=4", "cuda"), "multiple of kv_heads");
  EXPECT_CONTAINS(invalid_of(f, "q_heads=32 kv_heads=4 q_len=3", "cuda"), "at most 16");
}

static void test_cost(void) {
  kv_cost c = cost_of(&kv_family_decode, "precision=bf16:fp32 headdim=128 page_size=16 ctx_len=1000 batch=2 q_heads=8 "
                                         "kv_heads=2 q_len=1");
  const double rows = 2 * 8, pages = 2 * 63;
  EXPECT(c.flops == 4.0 * rows * 1000 * 128, "flops %g", c.flops);
  EXPECT(c.bytes == (2.0 * rows * 128 + 2.0 * 2 * 1000 * 2 * 128) * 2 + 4.0 * rows + 4.0 * pages, "bytes %g", c.bytes);
  EXPECT(c.rows == 16 && c.row_len == 128 && c.red_len == 1000, "rows %zu x %zu, red_len %g", c.rows, c.row_len, c.red_len);
  EXPECT(c.device_bytes > c.bytes, "device bytes %g cover the traffic", c.device_bytes);
  kv_cost c8 = cost_of(&kv_family_decode, "precision=bf16:fp32 kv_type=e4m3 headdim=128 page_size=16 ctx_len=1000 "
                                          "batch=2 q_heads=8 kv_heads=2 q_len=1");
  EXPECT(c8.bytes == 2.0 * rows * 128 * 2 + 2.0 * 2 * 1000 * 2 * 128 + 4.0 * rows + 4.0 * pages,
         "8-bit KV: q and out 2 bytes, the cache 1 (%g)", c8.bytes);
}

static void test_tensors(void) {
  fcase f;
  fcase_init(&f, &kv_family_decode, "precision=fp16:fp32 headdim=64 page_size=32 ctx_len=70 batch=3 q_heads=4 kv_heads=2 "
                                    "q_len=2 dist=large_logits");
  kv_tensors t;
  kv_family_decode.tensors(&f.c, &t);
  const size_t nkv = 3 * 3 * 2 * 32 * 64; /* 3 pages per sequence */
  EXPECT(t.n_in == 3 && t.n_out == 2, "3 inputs, 2 outputs");
  EXPECT(spec_is(&t.in[0], "q", KV_FP16, 3 * 2 * 4 * 64, KV_DIST_NORMAL, 4.0, 0.0), "q spec");
  EXPECT(spec_is(&t.in[1], "k_cache", KV_FP16, nkv, KV_DIST_NORMAL, 4.0, 0.0), "k_cache spec");
  EXPECT(spec_is(&t.in[2], "v_cache", KV_FP16, nkv, KV_DIST_NORMAL, 1.0, 0.0), "v_cache spec");
  EXPECT(strcmp(t.out[1].name, "lse") == 0 && t.out[1].dtype == KV_FP32 && t.out[1].count == 24, "lse spec");
  fcase f8;
  fcase_init(&f8, &kv_family_decode, "precision=bf16:fp32 kv_type=e5m2 headdim=64 page_size=32 ctx_len=70 batch=3 "
                                     "q_heads=4 kv_heads=2 q_len=2");
  kv_family_decode.tensors(&f8.c, &t);
  EXPECT(spec_is(&t.in[0], "q", KV_BF16, 3 * 2 * 4 * 64, KV_DIST_NORMAL, 1.0, 0.0), "8-bit KV: q bf16");
  EXPECT(spec_is(&t.in[1], "k_cache", KV_E5M2, nkv, KV_DIST_NORMAL, 1.0, 0.0) &&
             spec_is(&t.in[2], "v_cache", KV_E5M2, nkv, KV_DIST_NORMAL, 1.0, 0.0),
         "8-bit KV: the caches e5m2");
  EXPECT(t.out[0].dtype == KV_BF16 && t.out[1].dtype == KV_FP32, "8-bit KV: out bf16, lse fp32");
  fcase fs;
  fcase_init(&fs, &kv_family_decode, "precision=fp16:fp32 kv_type=e4m3 headdim=64 page_size=32 ctx_len=70 batch=3 "
                                     "q_heads=4 kv_heads=2 q_len=2 dist=large_logits k_scale=0.125 v_scale=0.0625");
  kv_family_decode.tensors(&fs.c, &t);
  EXPECT(spec_is(&t.in[1], "k_cache", KV_E4M3, nkv, KV_DIST_NORMAL, 32.0, 0.0) &&
             spec_is(&t.in[2], "v_cache", KV_E4M3, nkv, KV_DIST_NORMAL, 16.0, 0.0),
         "scaled cache: K / k_scale and V / v_scale generated");
}

static void test_block_table(void) {
  kv_decode_dims d, d0, d2;
  fcase f, f0, f2;
  fcase_init(&f, &kv_family_decode, "page_size=16 ctx_len=1000 batch=3");
  fcase_init(&f0, &kv_family_decode, "page_size=16 ctx_len=1000 batch=3 table_seed=0");
  fcase_init(&f2, &kv_family_decode, "page_size=16 ctx_len=1001 batch=3");
  kv_decode_dims_of(&f.c, 0, &d);
  kv_decode_dims_of(&f0.c, 0, &d0);
  kv_decode_dims_of(&f2.c, 0, &d2);
  EXPECT(d.num_pages == 3 * 63 && d2.num_pages == 3 * 63, "pages %lld", d.num_pages);
  int32_t *t = calloc((size_t)d.num_pages, 4), *t0 = calloc((size_t)d.num_pages, 4), *t2 = calloc((size_t)d.num_pages, 4);
  int *seen = calloc((size_t)d.num_pages, sizeof(int));
  kv_decode_block_table(&d, t);
  kv_decode_block_table(&d0, t0);
  kv_decode_block_table(&d2, t2);
  int perm = 1, fixed = 0, ident = 1, same_other = 0;
  for (long long i = 0; i < d.num_pages; i++) {
    if (t[i] < 0 || t[i] >= d.num_pages || seen[t[i]]++) perm = 0;
    fixed += t[i] == i;
    ident &= t0[i] == i;
    same_other += t[i] == t2[i];
  }
  EXPECT(perm, "the block table is a permutation of the pages");
  EXPECT(fixed < 10, "shuffled: %d of %lld pages in place", fixed, d.num_pages);
  EXPECT(ident, "table_seed = 0 gives contiguous pages");
  EXPECT(same_other < 10, "another case has another table (%d pages equal)", same_other);
  free(t);
  free(t0);
  free(t2);
  free(seen);
}

/* Constant V rows (v_td = c_d for every token) give out = c in the reference; zero
 * queries give lse = log(ctx). */
static void test_hand(void) {
  fcase f;
  fcase_make(&f, &kv_family_decode, "precision=bf16:fp32 headdim=64 page_size=16 ctx_len=100 batch=2 q_heads=4 kv_heads=2");
  fcase_generate(&f, 3);
  const size_t nq = f.t.in[0].count, nv = f.t.in[2].count;
  for (size_t i = 0; i < nv; i++) kv_store(f.in[2], i, KV_BF16, (double)((int)(i % 64) - 32) * 0.125);
  fcase_reference(&f, 0);
  int bad = 0;
  for (size_t i = 0; i < f.n_rows * f.row_len; i++) {
    const double want = (double)((int)(i % 64) - 32) * 0.125;
    bad += fabs(f.ref[i] - want) > 1e-14 * fabs(want);
  }
  EXPECT(bad == 0, "constant V rows: %d reference outputs differ from the constant", bad);
  for (size_t i = 0; i < nq; i++) kv_store(f.in[0], i, KV_BF16, 0.0);
  fcase_reference(&f, 0);
  fcase_emulate(&f);
  double worst = 0.0, worst_emu = 0.0;
  for (size_t r = 0; r < f.n_rows; r++) {
    worst = fmax(worst, fabs(f.aux_ref[r] - log(100.0)));
    worst_emu = fmax(worst_emu, fabs(((float *)f.out[1])[r] - log(100.0)));
  }
  EXPECT(worst < 1e-14 && worst_emu < 1e-6, "zero queries: lse = log(ctx) (reference off %g, emulation %g)", worst,
         worst_emu);
  fcase_free(&f);
}

/* Largest |lse - ref| / aux_mag of the emulated LSE. */
static double lse_ratio(const fcase *f) {
  double worst = 0.0;
  for (size_t r = 0; r < f->n_rows; r++)
    worst = fmax(worst, fabs(((const float *)f->out[1])[r] - f->aux_ref[r]) / f->aux_mag[r]);
  return worst;
}

static void test_emulation_vs_reference(void) {
  static const char *const specs[] = {
      "precision=fp16:fp32 headdim=64 page_size=16 ctx_len=1 batch=1 q_heads=2 kv_heads=2",
      "precision=fp16:fp32 headdim=64 page_size=16 ctx_len=203 batch=2 q_heads=8 kv_heads=1",
      "precision=bf16:fp32 headdim=128 page_size=32 ctx_len=777 batch=1 q_heads=8 kv_heads=2 q_len=3",
      "precision=fp16:fp32 headdim=128 page_size=128 ctx_len=3000 batch=1 q_heads=4 kv_heads=4 q_len=2",
      "precision=bf16:fp32 headdim=64 page_size=64 ctx_len=5000 batch=2 q_heads=16 kv_heads=2 q_len=2 sms=40",
      "precision=fp16:fp32 headdim=128 page_size=16 ctx_len=2100 batch=1 q_heads=8 kv_heads=1 dist=large_logits",
      "precision=bf16:fp32 headdim=64 page_size=32 ctx_len=1500 batch=2 q_heads=4 kv_heads=4 dist=uniform table_seed=0",
      "precision=bf16:fp32 kv_type=e4m3 headdim=64 page_size=16 ctx_len=1100 batch=1 q_heads=8 kv_heads=2 q_len=2",
      "precision=fp16:fp32 kv_type=e5m2 headdim=128 page_size=32 ctx_len=700 batch=2 q_heads=4 kv_heads=1 q_len=4",
      "precision=fp16:fp32 kv_type=e4m3 headdim=128 page_size=16 ctx_len=2100 batch=1 q_heads=8 kv_heads=8 dist=large_logits",
      "precision=bf16:fp32 kv_type=e5m2 headdim=64 page_size=64 ctx_len=5000 batch=2 q_heads=16 kv_heads=2 q_len=2 sms=40",
      "precision=fp16:fp32 kv_type=e4m3 headdim=64 page_size=16 ctx_len=300 batch=2 q_heads=8 kv_heads=2 k_scale=0.0117 v_scale=0.0089",
      "precision=bf16:fp32 kv_type=e4m3 headdim=128 page_size=32 ctx_len=1500 batch=1 q_heads=8 kv_heads=2 q_len=2 k_scale=0.0117 v_scale=0.0089",
      "precision=fp16:fp32 kv_type=e5m2 headdim=128 page_size=16 ctx_len=2100 batch=1 q_heads=4 kv_heads=4 dist=large_logits k_scale=0.0031 v_scale=0.02",
      "precision=bf16:fp32 headdim=64 page_size=64 ctx_len=1000 batch=1 q_heads=4 kv_heads=1 k_scale=3.5 v_scale=0.7",
  };
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    fcase f;
    fcase_make(&f, &kv_family_decode, specs[i]);
    EXPECT(kv_family_decode.invalid(&f.c, "cpu") == NULL, "valid: %s", specs[i]);
    kv_decode_dims d;
    kv_decode_dims_of(&f.c, 0, &d);
    fcase_generate(&f, 11 + i);
    fcase_emulate(&f);
    fcase_reference(&f, 0);
    const double ratio = fcase_bound_ratio(&f), lr = lse_ratio(&f);
    printf("  %-100s splits %3d  bound ratio %.3g  lse %.3g\n", specs[i], d.splits, ratio, lr);
    EXPECT(ratio <= 1.0, "emulation within the tolerance: %s (%g)", specs[i], ratio);
    EXPECT(lr <= 2.0, "emulated LSE within 2 aux_mag: %s (%g)", specs[i], lr);
    if (d.ctx > KV_DECODE_SLAB)
      EXPECT(fcase_median_rel_err(&f, 1e-3) > 0.0, "the emulation is not the reference itself: %s", specs[i]);
    fcase_free(&f);
  }
}

/* The same inputs through the contiguous table: another reference, which the emulation of the
 * shuffled case fails. */
static void test_indirection(void) {
  const char *spec = "precision=fp16:fp32 headdim=64 page_size=16 ctx_len=900 batch=2 q_heads=4 kv_heads=2 q_len=2";
  char spec0[160];
  snprintf(spec0, sizeof spec0, "%s table_seed=0", spec);
  fcase f, f0;
  fcase_make(&f, &kv_family_decode, spec);
  fcase_make(&f0, &kv_family_decode, spec0);
  f0.c.key = f.c.key;
  fcase_generate(&f, 5);
  copy_inputs(&f0, &f);
  fcase_emulate(&f);
  fcase_reference(&f, 0);
  fcase_reference(&f0, 0);
  size_t differ = 0;
  for (size_t i = 0; i < f.n_rows * f.row_len; i++) differ += fabs(f.ref[i] - f0.ref[i]) > 1e-3;
  EXPECT(differ > f.n_rows * f.row_len / 2, "another table gives another reference (%zu of %zu differ)", differ,
         f.n_rows * f.row_len);
  for (int i = 0; i < f.t.n_out; i++) memcpy(f0.out[i], f.out[i], f.t.out[i].count * kv_dtype_size(f.t.out[i].dtype));
  EXPECT(fcase_bound_ratio(&f) <= 1.0, "the emulation passes with its own table");
  EXPECT(fcase_bound_ratio(&f0) > 10.0, "the emulation fails against the contiguous-table reference (%g)",
         fcase_bound_ratio(&f0));
  fcase_free(&f);
  fcase_free(&f0);
}

/* Split count changes the emulated bits only within the tolerance; one split and several. */
static void test_splits(void) {
  fcase a, b;
  fcase_make(&a, &kv_family_decode, "precision=bf16:fp32 headdim=128 page_size=16 ctx_len=4000 batch=1 q_heads=8 kv_heads=8 sms=1");
  fcase_make(&b, &kv_family_decode, "precision=bf16:fp32 headdim=128 page_size=16 ctx_len=4000 batch=1 q_heads=8 kv_heads=8 sms=200");
  kv_decode_dims da, db;
  kv_decode_dims_of(&a.c, 0, &da);
  kv_decode_dims_of(&b.c, 0, &db);
  EXPECT(da.splits == 1 && db.splits == 7, "splits %d and %d", da.splits, db.splits);
  EXPECT((db.splits - 1) * db.split_pages < db.pages_per_seq && db.splits * db.split_pages >= db.pages_per_seq,
         "the splits cover the pages");
  EXPECT(db.splits * 8 <= 200 * kv_decode_blocks_per_sm(128, KV_BF16), "the splits fit one wave of resident blocks");
  EXPECT(kv_decode_blocks_per_sm(128, KV_BF16) == 2 && kv_decode_blocks_per_sm(64, KV_FP16) == 4 &&
             kv_decode_blocks_per_sm(128, KV_E4M3) == 3 && kv_decode_blocks_per_sm(64, KV_E5M2) == 5,
         "blocks per SM: shared memory (16-bit KV) or registers (8-bit KV) bound");
  b.c.key = a.c.key;
  fcase_generate(&a, 9);
  copy_inputs(&b, &a);
  fcase_emulate(&a);
  fcase_emulate(&b);
  fcase_reference(&a, 0);
  fcase_reference(&b, 0);
  EXPECT(fcase_bound_ratio(&a) <= 1.0 && fcase_bound_ratio(&b) <= 1.0, "one split %g, seven %g", fcase_bound_ratio(&a),
         fcase_bound_ratio(&b));
  fcase_free(&a);
  fcase_free(&b);
}

/* The cache's scales as the reference defines them, on one cache's bytes: k_scale c is the
 * softmax scale times c, v_scale c the output times c with the same LSE; the emulation of a
 * scaled case passes its reference and fails the unscaled one (a kernel that ignored k_scale
 * or v_scale, or swapped them). */
static void test_kv_scales(void) {
  const char *base = "precision=bf16:fp32 kv_type=e4m3 headdim=64 page_size=16 ctx_len=1100 batch=1 q_heads=8 kv_heads=2 q_len=2";
  char spec[4][256];
  snprintf(spec[0], sizeof spec[0], "%s k_scale=0.25 v_scale=0.75 scale=0.1", base);
  snprintf(spec[1], sizeof spec[1], "%s scale=0.025", base);
  snprintf(spec[2], sizeof spec[2], "%s scale=0.1", base);
  snprintf(spec[3], sizeof spec[3], "%s k_scale=0.75 v_scale=0.25 scale=0.1", base);
  fcase f[4];
  for (int i = 0; i < 4; i++) fcase_make(&f[i], &kv_family_decode, spec[i]);
  fcase_generate(&f[0], 31);
  for (int i = 1; i < 4; i++) {
    f[i].c.key = f[0].c.key;
    copy_inputs(&f[i], &f[0]);
    fcase_reference(&f[i], 0);
  }
  fcase_emulate(&f[0]);
  fcase_reference(&f[0], 0);
  const size_t n = f[0].n_rows * f[0].row_len;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) off += fabs(f[0].ref[i] - 0.75 * f[1].ref[i]) > 1e-12 * fabs(f[1].ref[i]) + 1e-300;
  double lse_off = 0.0;
  for (size_t r = 0; r < f[0].n_rows; r++) lse_off = fmax(lse_off, fabs(f[0].aux_ref[r] - f[1].aux_ref[r]));
  EXPECT(off == 0 && lse_off < 1e-12,
         "k_scale 0.25, v_scale 0.75 = scale x 0.25 and 0.75 x the output (%zu outputs differ, lse %g)", off, lse_off);
  EXPECT(fcase_bound_ratio(&f[0]) <= 1.0, "the scaled emulation passes its reference (%g)", fcase_bound_ratio(&f[0]));
  for (int i = 2; i < 4; i++) {
    for (int o = 0; o < f[0].t.n_out; o++)
      memcpy(f[i].out[o], f[0].out[o], f[0].t.out[o].count * kv_dtype_size(f[0].t.out[o].dtype));
    EXPECT(fcase_bound_ratio(&f[i]) > 10.0, "the scaled emulation fails the reference of %s (%g)",
           i == 2 ? "no scales" : "the scales swapped", fcase_bound_ratio(&f[i]));
  }
  for (int i = 0; i < 4; i++) fcase_free(&f[i]);
}

static void test_reference_dd(void) {
  fcase a, b;
  const char *spec = "precision=fp16:fp32 headdim=64 page_size=32 ctx_len=500 batch=1 q_heads=4 kv_heads=1 dist=large_logits";
  fcase_make(&a, &kv_family_decode, spec);
  fcase_make(&b, &kv_family_decode, spec);
  fcase_generate(&a, 21);
  copy_inputs(&b, &a);
  run_both(&a, &b);
  expect_agreement("decode large_logits", compare(&a, &b), 1.0);
  fcase_free(&a);
  fcase_free(&b);
}

int main(void) {
  TEST("descriptor: axes and params as agreed");
  check_descriptor(&kv_family_decode, decode_axes, decode_params);
  TEST("rules of invalid()");
  test_invalid();
  TEST("FLOP, byte and row counts");
  test_cost();
  TEST("input tensors");
  test_tensors();
  TEST("block table: a shuffled permutation per case, contiguous at table_seed 0");
  test_block_table();
  TEST("reference on constant V rows and zero queries");
  test_hand();
  TEST("emulation vs fp64 reference within the default tolerance");
  test_emulation_vs_reference();
  TEST("the block table is read: another table, another reference");
  test_indirection();
  TEST("one split and several");
  test_splits();
  TEST("the cache's scales: k_scale in the scores, v_scale in the output");
  test_kv_scales();
  TEST("fp64 reference vs double-double");
  test_reference_dd();
  return TEST_RETURN();
}
