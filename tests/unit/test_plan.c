/* test_plan.c - unit tests of the sweep plan (src/input/plan.c, src/input/plan_assign.c) against a
 * registry of three test families defined here (so the counts below do not move when the
 * real families change): expansion counts, row-major cell order, skip reasons and their
 * priority, defaults, --only, [run] settings, errors with file:line:col, split balancing
 * and fleet assignment, and the --dry-run text. Linked without families/registry.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/deck.h"
#include "input/estimate.h"
#include "family.h"
#include "input/plan.h"
#include "tests/unit/test_util.h"

/* ---- the test registry ---- */

static const char *const modes[] = {"a", "b", "c", NULL};

static const kv_axis_desc alpha_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0, "storage:accumulator"},
    {"n", KV_AXIS_INT, "64 128", NULL, 1, 4096, "size"},
    {"mode", KV_AXIS_STR, "a", modes, 0, 0, "a mode"},
    {NULL, 0, NULL, NULL, 0, 0, NULL}};
static const kv_param_desc alpha_params[] = {{"scale", 1.0, 0.0, 10.0, "a scale"}, {NULL, 0, 0, 0, NULL}};

static const char *alpha_invalid(const kv_case *c, const char *backend) {
  if (c->ival[1] == 3) return "n=3 is not supported";
  if (strcmp(c->sval[2], "c") == 0 && strcmp(backend, "cuda") != 0) return "mode c needs the cuda backend";
  return NULL;
}
static void alpha_cost(const kv_case *c, kv_cost *out) {
  double n = (double)c->ival[1];
  out->flops = 2 * n * n * n;
  out->bytes = 6 * n * n;
}

static const kv_axis_desc beta_axes[] = {
    {"precision", KV_AXIS_STR, "fp32:fp32", NULL, 0, 0, "storage:accumulator"},
    {"shape", KV_AXIS_STR, NULL, NULL, 0, 0, "required"},
    {"k", KV_AXIS_INT, "0..3 +1", NULL, 0, 10, "k"},
    {NULL, 0, NULL, NULL, 0, 0, NULL}};
static void beta_cost(const kv_case *c, kv_cost *out) { out->bytes = 1e9 * (double)(c->ival[2] + 1); }

static const kv_axis_desc gamma_axes[] = {
    {"size", KV_AXIS_INT, "1", NULL, 1, 1000000000, "cost"},
    {"precision", KV_AXIS_STR, "fp16:fp32", NULL, 0, 0, "storage:accumulator"},
    {NULL, 0, NULL, NULL, 0, 0, NULL}};
static void gamma_cost(const kv_case *c, kv_cost *out) { out->flops = 50e12 * 1e-3 * (double)c->ival[0]; }

static const kv_family alpha = {.name = "alpha", .summary = "test family", .axes = alpha_axes,
                                .params = alpha_params, .invalid = alpha_invalid, .cost = alpha_cost};
static const kv_family beta = {.name = "beta", .summary = "test family", .axes = beta_axes, .cost = beta_cost};
static const kv_family gamma_ = {.name = "gamma", .summary = "test family", .axes = gamma_axes, .cost = gamma_cost};

const kv_family *const kv_families[] = {&alpha, &beta, &gamma_, NULL};

const kv_family *kv_family_find(const char *name, int *index) {
  for (int i = 0; kv_families[i]; i++)
    if (strcmp(kv_families[i]->name, name) == 0) {
      if (index) *index = i;
      return kv_families[i];
    }
  return NULL;
}

int kv_family_axis_index(const kv_family *f, const char *axis) {
  for (int i = 0; f->axes[i].name; i++)
    if (strcmp(f->axes[i].name, axis) == 0) return i;
  return -1;
}

/* ---- helpers ---- */

static char err[2048];

/* Build a plan from deck text (and --set overrides); returns the kv_plan_build status. */
static int build(const char *text, const char *const *sets, const char *only, const char *backend, kv_mode mode,
                 kv_plan *p) {
  kv_deck d;
  err[0] = '\0';
  int rc = kv_deck_parse_string("d.deck", text, &d, err, sizeof err);
  EXPECT(rc == 0, "deck parses (err: %s)", err);
  if (rc != 0) return -1;
  for (int i = 0; sets && sets[i] && rc == 0; i++) rc = kv_deck_apply_set(&d, sets[i], err, sizeof err);
  EXPECT(rc == 0, "--set applies (err: %s)", err);
  if (rc == 0) rc = kv_plan_build(&d, only, backend, mode, 0, 0, p, err, sizeof err);
  kv_deck_free(&d);
  return rc;
}

static void expect_error(const char *text, const char *const *sets, const char *only, const char *prefix,
                         const char *phrase) {
  kv_plan p;
  int rc = build(text, sets, only, "cuda", KV_MODE_FLEET, &p);
  EXPECT(rc == -1, "plan of [%s] fails", text);
  if (rc == 0) {
    kv_plan_free(&p);
    return;
  }
  EXPECT(strncmp(err, prefix, strlen(prefix)) == 0, "message starts with '%s', got '%s'", prefix, err);
  EXPECT_CONTAINS(err, phrase);
}

/* ---- tests ---- */

static void test_expansion(void) {
  TEST("expansion: counts, row-major cells, skip reasons in priority order");
  kv_plan p;
  int rc = build("[alpha]\nprecision = fp16:fp32 bf16:fp16 fp32:fp32\nn = 16 32 3\nmode = a b\nscale = 2.5\n", NULL,
                 NULL, "cuda", KV_MODE_FLEET, &p);
  EXPECT(rc == 0, "plan builds (err: %s)", err);
  if (rc != 0) return;
  EXPECT(p.n_fam == 1 && p.fam[0].family == &alpha && p.fam[0].family_index == 0, "one family: alpha");
  const kv_family_plan *fp = &p.fam[0];
  EXPECT(fp->n_axes == 3, "3 axes");
  EXPECT(fp->n_cells == 18, "3 x 3 x 2 = 18 cells, got %zu", fp->n_cells);
  EXPECT(fp->n_skipped == 10 && fp->n_valid == 8, "10 skipped (6 precision, 4 n=3), 8 valid: got %zu, %zu",
         fp->n_skipped, fp->n_valid);
  EXPECT(p.n_cases == 8, "8 cases");
  EXPECT(fp->param[0] == 2.5, "scale = 2.5");
  EXPECT(fp->axis[1].n == 3 && fp->axis[1].ints[2] == 3, "n values parsed");
  kv_plan z;
  if (build("[alpha]\nn = 0100 064\n", NULL, NULL, "cuda", KV_MODE_FLEET, &z) == 0) {
    EXPECT(z.fam[0].axis[1].ints[0] == 100 && z.fam[0].axis[1].ints[1] == 64, "leading zeros are decimal: 0100 is 100");
    kv_plan_free(&z);
  }
  /* cell = ((precision * 3) + n) * 2 + mode */
  EXPECT(fp->skip_reason[0] == NULL, "cell 0 (fp16:fp32, 16, a) valid");
  EXPECT(fp->skip_reason[6] && strstr(fp->skip_reason[6], "accumulator"), "cell 6 (bf16:fp16, 16, a): precision reason");
  EXPECT(fp->skip_reason[10] && strstr(fp->skip_reason[10], "accumulator"),
         "cell 10 (bf16:fp16, n=3): the precision reason comes first");
  EXPECT_STREQ(fp->skip_reason[4], "n=3 is not supported");
  EXPECT_STREQ(fp->skip_reason[17], "n=3 is not supported");
  size_t prev = 0;
  for (size_t i = 0; i < p.n_cases; i++) {
    const kv_case *c = &p.cases[i];
    EXPECT(c->fp == fp, "case %zu points at its family plan", i);
    EXPECT(i == 0 || c->cell > prev, "cases in cell order");
    prev = c->cell;
    EXPECT(c->cell == (size_t)((c->idx[0] * 3 + c->idx[1]) * 2 + c->idx[2]), "case %zu: cell is row-major", i);
    EXPECT(fp->skip_reason[c->cell] == NULL, "case %zu is a valid cell", i);
    EXPECT(c->ival[1] == fp->axis[1].ints[c->idx[1]] && c->ival[0] == 0 && c->ival[2] == 0, "case %zu: ival", i);
    EXPECT(c->sval[0] == fp->axis[0].strs[c->idx[0]] && c->sval[1] == NULL && c->sval[2] == fp->axis[2].strs[c->idx[2]],
           "case %zu: sval", i);
    EXPECT(c->est_seconds == kv_estimate_case(c, &p.run, fp->on_gpu) && c->est_seconds > 0, "case %zu: est_seconds", i);
    EXPECT(i == 0 || c->ival[1] <= p.cases[i - 1].ival[1] || c->est_seconds > p.cases[i - 1].est_seconds,
           "case %zu: a larger n takes longer", i);
  }
  EXPECT(p.cases[0].prec.storage == KV_FP16 && p.cases[0].prec.accum == KV_FP32, "case 0 fp16:fp32");
  EXPECT(p.cases[7].prec.storage == KV_FP32 && p.cases[7].cell == 15, "last case fp32:fp32, cell 15");

  TEST("kv_plan_case_at: axis values, precision, key independent of the seed");
  kv_case a, b;
  kv_plan_case_at(fp, 13, 1, &a);
  kv_plan_case_at(fp, 13, 99, &b);
  EXPECT(a.idx[0] == 2 && a.idx[1] == 0 && a.idx[2] == 1, "cell 13 = (2, 0, 1)");
  EXPECT(a.ival[1] == 16 && strcmp(a.sval[2], "b") == 0 && strcmp(a.sval[0], "fp32:fp32") == 0, "cell 13 values");
  EXPECT(a.prec.storage == KV_FP32 && a.prec.accum == KV_FP32, "cell 13 precision");
  EXPECT(a.key == b.key, "key does not depend on the seed");
  EXPECT(a.est_seconds == kv_estimate_case(&a, &p.run, fp->on_gpu), "est_seconds filled");
  char buf[32];
  EXPECT_STREQ(kv_format_seconds(4.25, buf, sizeof buf), "4.2 s");
  EXPECT_STREQ(kv_format_seconds(726, buf, sizeof buf), "12 min 06 s");
  EXPECT_STREQ(kv_format_seconds(526689301, buf, sizeof buf), "146302 h 35 min");
  EXPECT_STREQ(kv_format_seconds(NAN, buf, sizeof buf), "unknown");
  EXPECT_STREQ(kv_slurm_time(30, buf, sizeof buf), "00:01:00");
  EXPECT_STREQ(kv_slurm_time(3601, buf, sizeof buf), "01:01:00");
  EXPECT_STREQ(kv_slurm_time(90000, buf, sizeof buf), "1-01:00:00");
  kv_plan_case_at(fp, 12, 1, &b);
  EXPECT(a.key != b.key, "neighbouring cells have different keys");
  kv_plan q;
  EXPECT(build("[alpha]\nprecision = fp16:fp32 bf16:fp16 fp32:fp32\nn = 16 32 3\nmode = a b\n[gamma]\n", NULL, NULL,
               "cuda", KV_MODE_FLEET, &q) == 0,
         "second plan builds");
  kv_plan_case_at(&q.fam[0], 13, 7, &b);
  EXPECT(a.key == b.key, "same family and cell: same key in another plan");
  kv_plan_case_at(&q.fam[1], 13 % q.fam[1].n_cells, 1, &b);
  kv_plan_case_at(&q.fam[0], 13 % q.fam[1].n_cells, 1, &a);
  EXPECT(a.key != b.key, "same cell of another family: another key");
  kv_plan_free(&q);
  kv_plan_free(&p);
  EXPECT(p.n_cases == 0 && p.cases == NULL && p.n_fam == 0, "kv_plan_free clears the plan");

  TEST("backend-dependent skips");
  EXPECT(build("[alpha]\nmode = a c\n", NULL, NULL, "cpu", KV_MODE_FLEET, &p) == 0, "builds (err: %s)", err);
  EXPECT(p.fam[0].n_cells == 8 && p.fam[0].n_valid == 4, "cpu: mode c skipped (4 of 8 valid)");
  EXPECT_STREQ(p.fam[0].skip_reason[1], "mode c needs the cuda backend");
  kv_plan_free(&p);
  EXPECT(build("[alpha]\nmode = a c\n", NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "builds");
  EXPECT(p.fam[0].n_valid == 8, "cuda: all 8 valid");
  kv_plan_free(&p);
}

static void test_defaults_and_only(void) {
  TEST("defaults of axes and params");
  kv_plan p;
  EXPECT(build("[alpha]\n", NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "builds (err: %s)", err);
  EXPECT(p.fam[0].n_cells == 4 && p.fam[0].axis[1].ints[1] == 128, "defaults: 2 precisions x n 64 128 x mode a");
  EXPECT_STREQ(p.fam[0].axis[0].strs[1], "bf16:fp32");
  EXPECT(p.fam[0].param[0] == 1.0, "scale default 1");
  kv_plan_free(&p);
  EXPECT(build("[beta]\nshape = s1 s2\n", NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "builds (err: %s)", err);
  EXPECT(p.fam[0].n_cells == 8 && p.fam[0].axis[2].n == 4 && p.fam[0].axis[2].ints[3] == 3,
         "default with a range: k = 0..3 +1");
  kv_plan_free(&p);

  TEST("families in registry order; --only");
  EXPECT(build("[gamma]\n[alpha]\n[beta]\nshape = s\n", NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "builds");
  EXPECT(p.n_fam == 3 && p.fam[0].family == &alpha && p.fam[1].family == &beta && p.fam[2].family == &gamma_,
         "registry order, not deck order");
  EXPECT(p.n_cases == 4 + 4 + 1 && p.cases[4].fp == &p.fam[1] && p.cases[8].fp == &p.fam[2], "cases family by family");
  kv_plan_free(&p);
  EXPECT(build("[alpha]\n[beta]\nshape = s\n", NULL, "beta", "cuda", KV_MODE_FLEET, &p) == 0, "--only beta");
  EXPECT(p.n_fam == 1 && p.fam[0].family == &beta && p.fam[0].family_index == 1, "only beta");
  kv_plan_free(&p);
  TEST("named sections [FAMILY.NAME]: each its own plan, --only and --set by name");
  {
    const char *sets[] = {"alpha.wide.n=64", NULL};
    EXPECT(build("[alpha.wide]\nn = 32\n[beta]\nshape = s\n[alpha]\nn = 16 32\n", sets, NULL, "cuda", KV_MODE_FLEET,
                 &p) == 0, "builds (err: %s)", err);
    EXPECT(p.n_fam == 3 && strcmp(p.fam[0].name, "alpha.wide") == 0 && strcmp(p.fam[1].name, "alpha") == 0 &&
               strcmp(p.fam[2].name, "beta") == 0 && p.fam[0].family == &alpha && p.fam[1].family == &alpha,
           "registry order, deck order within a family: alpha.wide, alpha, beta");
    EXPECT(p.fam[0].axis[1].n == 1 && p.fam[0].axis[1].ints[0] == 64, "--set alpha.wide.n=64 set the named section");
    EXPECT(p.fam[1].axis[1].n == 2 && p.fam[0].slot == 0 && p.fam[1].slot == 1 && p.fam[2].slot == 2, "slots");
    size_t a = 0, b = 0;
    for (size_t i = 0; i < p.n_cases; i++) {
      if (p.cases[i].fp == &p.fam[0] && p.cases[i].cell == 0) a = i + 1;
      if (p.cases[i].fp == &p.fam[1] && p.cases[i].cell == 0) b = i + 1;
    }
    EXPECT(a && b && p.cases[a - 1].key != p.cases[b - 1].key, "cell 0 of two sections draws different inputs");
    kv_plan_free(&p);
    EXPECT(build("[alpha.wide]\nn = 32\n[alpha]\n", NULL, "alpha.wide", "cuda", KV_MODE_FLEET, &p) == 0,
           "--only alpha.wide");
    EXPECT(p.n_fam == 1 && strcmp(p.fam[0].name, "alpha.wide") == 0, "only that section");
    kv_plan_free(&p);
    EXPECT(build("[alpha.wide]\nn = 32\n[alpha]\n", NULL, "alpha", "cuda", KV_MODE_FLEET, &p) == 0, "--only alpha");
    EXPECT(p.n_fam == 2, "--only FAMILY selects every section of the family");
    kv_plan_free(&p);
    expect_error("[delta.x]\n", NULL, NULL, "d.deck:1:2: error: unknown section [delta.x]", "or [FAMILY.NAME]");
    expect_error("[alpha.abcdefghijk]\n", NULL, NULL, "d.deck:1:2: error: section name [alpha.abcdefghijk] too long",
                 "at most 15 characters");
    expect_error("[alpha.x]\n", NULL, "alpha.y", "kval: --only: unknown family 'alpha.y'", "FAMILY.NAME");
    expect_error("[alpha.x]\nfoo = 1\n", NULL, NULL, "d.deck:2:1: error: unknown key 'foo'", "in [alpha.x]");
  }
  EXPECT(build("[alpha]\n", NULL, "gamma,alpha", "cuda", KV_MODE_FLEET, &p) == 0, "--only gamma,alpha");
  EXPECT(p.n_fam == 2 && p.fam[0].family == &alpha && p.fam[1].family == &gamma_ && p.fam[1].n_cells == 1,
         "gamma (not in the deck) runs with its defaults");
  kv_plan_free(&p);
  EXPECT(build("[run]\nseed = 5\n", NULL, "gamma", "cuda", KV_MODE_FLEET, &p) == 0, "a [run]-only deck with --only");
  EXPECT(p.n_fam == 1 && p.run.seed == 5, "gamma with seed 5");
  kv_plan_free(&p);
  const char *sets[] = {"gamma.size=1..8 x2", "alpha.n=5", NULL};
  EXPECT(build("[alpha]\nn = 7\n", sets, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "--set adds a family");
  EXPECT(p.n_fam == 2 && p.fam[1].n_cells == 4 && p.fam[0].axis[1].ints[0] == 5, "--set values used");
  kv_plan_free(&p);
}

static void test_run_settings(void) {
  TEST("[run] defaults");
  kv_plan p;
  EXPECT(build("[gamma]\n", NULL, NULL, "cuda", KV_MODE_SPLIT, &p) == 0, "builds");
  const kv_run_settings *r = &p.run;
  EXPECT(r->seed == 1 && r->warmup == 2 && r->min_reps == 5 && r->max_reps == 200, "seed, warmup, reps");
  EXPECT(r->rse_target == 0.005 && r->time_cap == 1.0 && r->l2_flush == 1 && r->cpu_ref_budget == 2e9, "doubles");
  EXPECT(r->sample_rows == 64 && r->flush_interval == 2.0 && r->has_tol_override == 0, "rows, flush, no tol");
  EXPECT(p.mode == KV_MODE_SPLIT, "mode kept");
  kv_plan_free(&p);

  TEST("[run] every key");
  EXPECT(build("[gamma]\n[run]\nseed = 18446744073709551615\nwarmup = 0\nmin_reps = 3\nmax_reps = 3\n"
               "rse_target = 0.02\ntime_cap = 0.25\nl2_flush = warm\ncpu_ref_budget = 1e12\nsample_rows = 7\n"
               "tol_c1 = 1.5\ntol_c2 = 3\ntol_abs_floor = 1e-7\ntol_rel_floor = 0.001\nflush_interval = 10\n",
               NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0,
         "builds (err: %s)", err);
  EXPECT(r->seed == UINT64_MAX && r->warmup == 0 && r->min_reps == 3 && r->max_reps == 3, "integers");
  EXPECT(r->rse_target == 0.02 && r->time_cap == 0.25 && r->l2_flush == 0 && r->cpu_ref_budget == 1e12, "doubles");
  EXPECT(r->sample_rows == 7 && r->flush_interval == 10, "rows, flush");
  EXPECT(r->has_tol_override && r->tol_override.c1 == 1.5 && r->tol_override.c2 == 3 &&
             r->tol_override.abs_floor == 1e-7 && r->tol_override.rel_floor == 0.001,
         "tolerance override");
  kv_plan_free(&p);

  TEST("--seed replaces [run] seed");
  kv_deck d;
  EXPECT(kv_deck_parse_string("d.deck", "[gamma]\n[run]\nseed = 3\n", &d, err, sizeof err) == 0, "parses");
  EXPECT(kv_plan_build(&d, NULL, "cuda", KV_MODE_FLEET, 1, 77, &p, err, sizeof err) == 0 && p.run.seed == 77,
         "seed 77");
  kv_plan_free(&p);
  EXPECT(kv_plan_build(&d, NULL, "cuda", KV_MODE_FLEET, 0, 77, &p, err, sizeof err) == 0 && p.run.seed == 3,
         "seed 3 without the override");
  kv_plan_free(&p);
  kv_deck_free(&d);
}

static void test_errors(void) {
  TEST("unknown sections and keys list the valid ones");
  expect_error("[alfa]\n", NULL, NULL, "d.deck:1:2: error: unknown section [alfa] (got 'alfa'; ",
               "expected one of [alpha], [beta], [gamma], [run], or [FAMILY.NAME])");
  expect_error("[alpha]\n[runn]\n", NULL, NULL, "d.deck:2:2: error: unknown section [runn]", "[run]");
  expect_error("[alpha]\n  size = 1\n", NULL, NULL, "d.deck:2:3: error: unknown key 'size' in [alpha] (got 'size'; ",
               "expected one of precision, n, mode, scale)");
  expect_error("[alpha]\n[run]\nseeds = 1\n", NULL, NULL, "d.deck:3:1: error: unknown key 'seeds' in [run]",
               "seed, warmup, min_reps, max_reps, rse_target, time_cap, l2_flush, cpu_ref_budget, sample_rows, "
               "tol_c1, tol_c2, tol_abs_floor, tol_rel_floor, flush_interval, stall_timeout, on_stall, watchdog, bias_limit)");
  expect_error("[beta]\nshape = s\n[alpha]\nfoo = 1\n", NULL, "beta", "d.deck:4:1: error: unknown key 'foo'",
               "in [alpha]");
  const char *set_bad_key[] = {"alpha.size=4", NULL};
  expect_error("[alpha]\n", set_bad_key, NULL, "--set:1:7: error: unknown key 'size' in [alpha]", "precision, n");

  TEST("axis values: integers, ranges, choices, precisions, duplicates");
  expect_error("[alpha]\nn = 16 abc\n", NULL, NULL, "d.deck:2:8: error: not an integer value of alpha.n (got 'abc'; ",
               "expected an integer in 1..4096)");
  expect_error("[alpha]\nn = 1.5\n", NULL, NULL, "d.deck:2:5: error: not an integer value of alpha.n", "1.5");
  /* decimal only, as the expected text says: no C base prefixes */
  expect_error("[alpha]\nn = 16 0x40\n", NULL, NULL, "d.deck:2:8: error: not an integer value of alpha.n", "0x40");
  expect_error("[alpha]\nn = 16 8192\n", NULL, NULL, "d.deck:2:8: error: value out of range of alpha.n (got '8192'",
               "1..4096");
  expect_error("[alpha]\nn = 0\n", NULL, NULL, "d.deck:2:5: error: value out of range", "got '0'");
  expect_error("[alpha]\nn = 16 1024..16384 x2\n", NULL, NULL, "d.deck:2:8: error: value out of range of alpha.n",
               "got '8192'");
  expect_error("[alpha]\nmode = a d\n", NULL, NULL, "d.deck:2:10: error: unknown value of alpha.mode (got 'd'; ",
               "expected one of: a, b, c)");
  expect_error("[alpha]\nprecision = fp16:fp32 fp16\n", NULL, NULL,
               "d.deck:2:23: error: malformed precision of alpha.precision (got 'fp16'", "STORAGE:ACCUM");
  expect_error("[alpha]\nprecision = fp16:fp32 fp8:fp32\n", NULL, NULL, "d.deck:2:23: error: malformed precision",
               "fp8:fp32");
  expect_error("[alpha]\nn = 16 32 16\n", NULL, NULL, "d.deck:2:11: error: duplicate value of alpha.n (got '16'; ",
               "expected each value once per axis)");
  expect_error("[alpha]\nn = 32 16..64 x2\n", NULL, NULL, "d.deck:2:8: error: duplicate value of alpha.n (got '32'",
               "each value once");
  expect_error("[alpha]\nn = 16 +16\n", NULL, NULL, "d.deck:2:8: error: duplicate value", "'+16'");
  expect_error("[alpha]\nmode = b a b a\n", NULL, NULL, "d.deck:2:12: error: duplicate value of alpha.mode (got 'b'",
               "once");
  const char *set_bad_value[] = {"alpha.n=5 abc", NULL};
  expect_error("[alpha]\n", set_bad_value, NULL, "--set:1:11: error: not an integer value of alpha.n (got 'abc'",
               "1..4096");

  TEST("params, required keys, grid size");
  expect_error("[alpha]\nscale = 11\n", NULL, NULL, "d.deck:2:9: error: value out of range of alpha.scale (got '11'; ",
               "expected a number in 0..10)");
  expect_error("[alpha]\nscale = 1 2\n", NULL, NULL, "d.deck:2:11: error: alpha.scale takes a single value, not 2",
               "got '2'");
  expect_error("[alpha]\nscale = abc\n", NULL, NULL, "d.deck:2:9: error: not a number of alpha.scale", "got 'abc'");
  expect_error("[alpha]\nscale = nan\n", NULL, NULL, "d.deck:2:9: error: not a number", "got 'nan'");
  expect_error("[alpha]\n\n[beta]\nk = 1\n", NULL, NULL, "d.deck:3:2: error: [beta] needs the key 'shape' (got ''; ",
               "expected 'shape = VALUES' in [beta] or --set beta.shape=VALUES)");
  expect_error("[alpha]\n", NULL, "beta", "d.deck: error: [beta] needs the key 'shape'", "--set beta.shape");
  expect_error("[beta]\nprecision = fp16:fp32 bf16:fp32 fp32:fp32 fp16:fp16 bf16:bf16 fp32:fp16 fp32:bf16 "
               "fp16:bf16 bf16:fp16 fp64:fp64\nk = 0..10 +1\nshape = 1..100000 +1\n",
               NULL, NULL, "d.deck:1:2: error: the grid of [beta] is too large (got '11000000 cells so far'",
               "at most 1000000 cells");

  TEST("family selection");
  expect_error("[run]\nseed = 1\n", NULL, NULL, "d.deck: error: the deck has no family section",
               "expected at least one of [alpha], [beta], [gamma], or --only FAMILY");
  expect_error("[alpha]\n", NULL, "alpha,delta", "kval: --only: unknown family 'delta' (expected ",
               "a comma-separated list of: alpha, beta, gamma, or FAMILY.NAME of a [FAMILY.NAME] section)");
  expect_error("[alpha]\n", NULL, "run", "kval: --only: unknown family 'run'", "alpha, beta, gamma");
  expect_error("[alpha]\n", NULL, "alpha,", "kval: --only: unknown family ''", "alpha, beta, gamma");
  expect_error("[alpha]\n", NULL, "gamma,gamma", "kval: --only: family 'gamma' listed twice", "each once");

  TEST("[run] values");
  expect_error("[alpha]\n[run]\nseed = -1\n", NULL, NULL, "d.deck:3:8: error: invalid value of run.seed (got '-1'; ",
               "expected a decimal integer in 0..18446744073709551615)");
  expect_error("[alpha]\n[run]\nseed = 18446744073709551616\n", NULL, NULL, "d.deck:3:8: error: invalid value of run.seed",
               "18446744073709551616");
  expect_error("[alpha]\n[run]\nseed = 1 2\n", NULL, NULL, "d.deck:3:10: error: run.seed takes a single value", "got '2'");
  expect_error("[alpha]\n[run]\nwarmup = two\n", NULL, NULL, "d.deck:3:10: error: invalid value of run.warmup",
               "an integer in 0..1000000");
  expect_error("[alpha]\n[run]\nmin_reps = 0\n", NULL, NULL, "d.deck:3:12: error: invalid value of run.min_reps",
               "an integer in 1..10000000");
  expect_error("[alpha]\n[run]\nmin_reps = 10\nmax_reps = 5\n", NULL, NULL,
               "d.deck:4:12: error: max_reps below min_reps of run.max_reps (got '5'", "max_reps >= min_reps (10)");
  expect_error("[alpha]\n[run]\nmin_reps = 300\n", NULL, NULL, "d.deck:3:12: error: max_reps below min_reps of run.min_reps",
               "max_reps >= min_reps (300)");
  expect_error("[alpha]\n[run]\nl2_flush = cold\n", NULL, NULL, "d.deck:3:12: error: invalid value of run.l2_flush (got 'cold'",
               "expected flush or warm");
  expect_error("[alpha]\n[run]\nrse_target = 2\n", NULL, NULL, "d.deck:3:14: error: invalid value of run.rse_target",
               "a number in 0..1");
  expect_error("[alpha]\n[run]\ntime_cap = -1\n", NULL, NULL, "d.deck:3:12: error: invalid value of run.time_cap", "0..3600");
  expect_error("[alpha]\n[run]\ntol_c2 = 3\ntol_c1 = 1\n", NULL, NULL,
               "d.deck:4:1: error: [run] tolerance override is incomplete: 2 of the 4 tol_* keys given (got 'tol_c1'",
               "all four of tol_c1, tol_c2, tol_abs_floor, tol_rel_floor");
  expect_error("[alpha]\n[run]\nsample_rows = 1\n", NULL, NULL, "d.deck:3:15: error: invalid value of run.sample_rows",
               "an integer in 2..1000000000");
}

/* Every case exactly once over the ranks, each rank's list in plan order, loads balanced. */
static void check_split(const kv_plan *p, int nranks) {
  int *seen = calloc(p->n_cases + 1, sizeof *seen);
  double max_cost = 0, lo = 1e300, hi = 0;
  for (size_t i = 0; i < p->n_cases; i++)
    if (p->cases[i].est_seconds > max_cost) max_cost = p->cases[i].est_seconds;
  int ordered = 1, same = 1;
  for (int r = 0; r < nranks; r++) {
    size_t *list, *again;
    size_t n = kv_plan_rank_cases(p, r, nranks, &list);
    size_t n2 = kv_plan_rank_cases(p, r, nranks, &again);
    same &= n == n2 && (n == 0 || memcmp(list, again, n * sizeof *list) == 0);
    double load = 0;
    for (size_t k = 0; k < n; k++) {
      seen[list[k]]++;
      load += p->cases[list[k]].est_seconds;
      ordered &= k == 0 || list[k] > list[k - 1];
    }
    if (load < lo) lo = load;
    if (load > hi) hi = load;
    free(list);
    free(again);
  }
  int once = 1;
  for (size_t i = 0; i < p->n_cases; i++) once &= seen[i] == 1;
  EXPECT(once, "%d ranks: every case exactly once", nranks);
  EXPECT(ordered, "%d ranks: each rank's cases in plan order", nranks);
  EXPECT(same, "%d ranks: deterministic", nranks);
  EXPECT(hi - lo <= max_cost * (1 + 1e-12), "%d ranks: loads %g..%g within the largest cost %g", nranks, lo, hi,
         max_cost);
  free(seen);
}

static void test_assignment(void) {
  TEST("split: greedy LPT balancing");
  kv_plan p;
  EXPECT(build("[gamma]\nsize = 1..40 +1 100 250 999\nprecision = fp16:fp32 bf16:fp32\n", NULL, NULL, "cuda",
               KV_MODE_SPLIT, &p) == 0,
         "builds (err: %s)", err);
  EXPECT(p.n_cases == 86, "86 cases, got %zu", p.n_cases);
  for (int nranks = 1; nranks <= 9; nranks++) check_split(&p, nranks);
  check_split(&p, 100);
  size_t *list;
  /* Costs 999 > sum of the rest / 2: with 2 ranks the two 999-cases go to ranks 0 and 1. */
  size_t n0 = kv_plan_rank_cases(&p, 0, 2, &list);
  EXPECT(n0 > 0 && p.cases[list[0]].ival[0] != 999, "rank 0's first case in plan order is not the biggest");
  int big = 0;
  for (size_t k = 0; k < n0; k++) big += p.cases[list[k]].ival[0] == 999;
  EXPECT(big == 1, "one of the two largest cases per rank");
  free(list);
  EXPECT(kv_plan_rank_cases(&p, 2, 2, &list) == 0 && list == NULL, "rank outside 0..nranks-1: nothing");
  EXPECT(kv_plan_rank_cases(&p, 0, 0, &list) == 0 && list == NULL, "zero ranks: nothing");
  kv_plan_free(&p);

  TEST("split: equal costs go round-robin in plan order");
  EXPECT(build("[gamma]\nsize = 5\nprecision = fp16:fp32 bf16:fp32 fp32:fp32\n", NULL, NULL, "cuda", KV_MODE_SPLIT, &p) == 0,
         "builds"); /* fp32 accumulation throughout: the same estimate */
  size_t n = kv_plan_rank_cases(&p, 1, 2, &list);
  EXPECT(n == 1 && list[0] == 1, "rank 1 of 2 runs case 1");
  free(list);
  n = kv_plan_rank_cases(&p, 0, 2, &list);
  EXPECT(n == 2 && list[0] == 0 && list[1] == 2, "rank 0 of 2 runs cases 0 and 2");
  free(list);
  kv_plan_free(&p);

  TEST("fleet: every rank runs every case in plan order");
  EXPECT(build("[gamma]\nsize = 1 2 3\n", NULL, NULL, "cuda", KV_MODE_FLEET, &p) == 0, "builds");
  for (int r = 0; r < 4; r++) {
    n = kv_plan_rank_cases(&p, r, 4, &list);
    EXPECT(n == 3 && list[0] == 0 && list[1] == 1 && list[2] == 2, "rank %d: cases 0 1 2", r);
    free(list);
  }
  kv_plan_free(&p);
}

static void test_print(void) {
  TEST("--dry-run text");
  kv_plan p;
  EXPECT(build("[alpha]\nprecision = fp16:fp32 bf16:fp16\nn = 3 100..4095 +1 1\n[gamma]\nsize = 1000 1\n[run]\nseed = 9\n",
               NULL, NULL, "cuda", KV_MODE_SPLIT, &p) == 0,
         "builds (err: %s)", err);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  EXPECT(f != NULL, "open_memstream");
  if (!f) return;
  kv_plan_print(&p, 2, NULL, NULL, f);
  fclose(f);
  printf("%s", text);
  EXPECT_CONTAINS(text, "plan: mode split, 2 ranks, seed 9, 3999 valid cases");
  EXPECT_CONTAINS(text, "[alpha] 7996 cells = 2 precision x 3998 n x 1 mode: 3997 valid, 3999 skipped");
  EXPECT_CONTAINS(text, "  n            3 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 ... (3998 values)");
  EXPECT_CONTAINS(text, "  scale        1 (param)");
  EXPECT_CONTAINS(text, "  skipped 3998: accumulator must be fp32");
  EXPECT_CONTAINS(text, "  skipped 1: n=3 is not supported");
  EXPECT_CONTAINS(text, "[gamma] 2 cells = 2 size x 1 precision: 2 valid, 0 skipped");
  EXPECT_CONTAINS(text, "run: warmup 2, reps 5..200");
  EXPECT_CONTAINS(text, "rank 0: ");
  EXPECT_CONTAINS(text, "rank 1: ");
  EXPECT_CONTAINS(text, "total: 3999 case runs on 2 ranks");
  free(text);
  kv_plan_free(&p);
}

int main(void) {
  test_expansion();
  test_defaults_and_only();
  test_run_settings();
  test_errors();
  test_assignment();
  test_print();
  return TEST_RETURN();
}
