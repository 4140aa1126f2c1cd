/* family_case.c - the test kit of the family tests (see family_case.h). */
#include "families/testkit/family_case.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/errstats.h"
#include "numerics/tolerance.h"

static void die(const char *what, const char *detail) {
  fprintf(stderr, "family_case: %s: %s\n", what, detail);
  exit(99);
}

static void *zalloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) die("out of memory", "calloc");
  return p;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

/* Apply one "key=value" to the case. */
static void set_key(fcase *f, const kv_family *fam, const char *key, const char *val) {
  int a = kv_family_axis_index(fam, key);
  if (a >= 0) {
    if (fam->axes[a].type == KV_AXIS_INT)
      f->ints[a] = strtoll(val, NULL, 10);
    else if (fam->axes[a].type == KV_AXIS_REAL)
      f->reals[a] = strtod(val, NULL);
    else
      snprintf(f->text[a], sizeof f->text[a], "%s", val);
    return;
  }
  for (int p = 0; fam->params && fam->params[p].name; p++)
    if (strcmp(fam->params[p].name, key) == 0) {
      f->fp.param[p] = strtod(val, NULL);
      return;
    }
  die("unknown key", key);
}

void fcase_init(fcase *f, const kv_family *fam, const char *spec) {
  memset(f, 0, sizeof *f);
  f->fp.family = fam;
  kv_family_find(fam->name, &f->fp.family_index);
  f->fp.n_axes = kv_family_n_axes(fam);
  for (int a = 0; a < f->fp.n_axes; a++) {
    char first[64] = "";
    sscanf(fam->axes[a].defaults, "%63s", first);
    if (fam->axes[a].type == KV_AXIS_INT) f->ints[a] = strtoll(first, NULL, 10);
    else if (fam->axes[a].type == KV_AXIS_REAL) f->reals[a] = strtod(first, NULL);
    else snprintf(f->text[a], sizeof f->text[a], "%s", first);
  }
  for (int p = 0; p < kv_family_n_params(fam); p++) f->fp.param[p] = fam->params[p].defaults;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char *eq = strchr(tok, '=');
    if (!eq) die("expected key=value", tok);
    *eq = '\0';
    set_key(f, fam, tok, eq + 1);
  }
  for (int a = 0; a < f->fp.n_axes; a++) {
    f->fp.axis[a].n = 1;
    if (fam->axes[a].type == KV_AXIS_INT) {
      f->fp.axis[a].ints = &f->ints[a];
      f->c.ival[a] = f->ints[a];
    } else if (fam->axes[a].type == KV_AXIS_REAL) {
      f->fp.axis[a].reals = &f->reals[a];
      f->c.rval[a] = f->reals[a];
    } else {
      f->strs[a] = f->text[a];
      f->fp.axis[a].strs = &f->strs[a];
      f->c.sval[a] = f->text[a];
    }
  }
  f->fp.n_cells = 1;
  f->fp.n_valid = 1;
  f->c.fp = &f->fp;
  f->c.key = hash_str(hash_str(0xcbf29ce484222325ULL, fam->name), spec);
  if (kv_precision_parse(kv_case_str(&f->c, "precision"), &f->c.prec) != 0) die("bad precision", spec);
}

void fcase_make(fcase *f, const kv_family *fam, const char *spec) {
  fcase_init(f, fam, spec);
  fam->tensors(&f->c, &f->t);
  kv_case_cost(&f->c, &f->cost);
  f->n_rows = f->cost.rows;
  f->row_len = f->cost.row_len;
  for (int i = 0; i < f->t.n_in; i++) f->in[i] = zalloc(f->t.in[i].count * kv_dtype_size(f->t.in[i].dtype));
  for (int i = 0; i < f->t.n_out; i++) f->out[i] = zalloc(f->t.out[i].count * kv_dtype_size(f->t.out[i].dtype));
  size_t n = f->n_rows * f->row_len;
  f->ref = zalloc(n * sizeof(double));
  f->mag = zalloc(n * sizeof(double));
  f->aux_ref = zalloc(f->n_rows * sizeof(double));
  f->aux_mag = zalloc(f->n_rows * sizeof(double));
}

void fcase_free(fcase *f) {
  for (int i = 0; i < KV_MAX_TENSORS; i++) {
    free(f->in[i]);
    free(f->out[i]);
  }
  free(f->ref);
  free(f->mag);
  free(f->aux_ref);
  free(f->aux_mag);
  memset(f, 0, sizeof *f);
}

void fcase_generate(fcase *f, uint64_t seed) {
  for (int i = 0; i < f->t.n_in; i++)
    if (kv_generate_host(&f->t.in[i], kv_stream_key(seed, f->c.key, (uint64_t)i), f->in[i]) != KV_OK)
      die("generate failed", f->t.in[i].name);
}

void fcase_emulate(fcase *f) {
  if (f->fp.family->emulate(&f->c, f->in, f->out) != KV_OK) die("emulate failed", f->fp.family->name);
}

void fcase_reference(fcase *f, int compensated) {
  const kv_family *fam = f->fp.family;
  size_t *rows = zalloc(f->n_rows * sizeof *rows);
  for (size_t r = 0; r < f->n_rows; r++) rows[r] = r;
  kv_reference_fn fn = compensated ? fam->reference_dd : fam->reference;
  if (fn(&f->c, (const void *const *)f->in, rows, f->n_rows, f->ref, f->mag, f->aux_ref, f->aux_mag) != KV_OK)
    die("reference failed", fam->name);
  free(rows);
}

double fcase_out(const fcase *f, size_t i) {
  return kv_load(f->out[0], i, f->t.out[0].dtype);
}

double fcase_bound_ratio(const fcase *f) {
  kv_tolerance tol = kv_tolerance_default(f->c.prec);
  kv_errstats st;
  if (kv_errstats_compute(f->out[0], f->t.out[0].dtype, NULL, f->ref, f->mag, f->n_rows * f->row_len, f->c.prec, &tol,
                          f->cost.red_len, &st) != 0)
    die("errstats failed", f->fp.family->name);
  if (kv_errstats_verdict(&st) == KV_FAIL_NONFINITE) return INFINITY;
  return st.max_bound_ratio;
}

static double rel_err(const fcase *f, size_t i, double floor) {
  double o = fcase_out(f, i), r = fabs(f->ref[i]);
  return isfinite(o) ? fabs(o - f->ref[i]) / (r > floor ? r : floor) : INFINITY;
}

double fcase_max_rel_err(const fcase *f, double floor) {
  double worst = 0.0;
  for (size_t i = 0; i < f->n_rows * f->row_len; i++) {
    double e = rel_err(f, i, floor);
    if (e > worst) worst = e;
  }
  return worst;
}

double fcase_median_rel_err(const fcase *f, double floor) {
  size_t n = f->n_rows * f->row_len;
  double *e = zalloc(n * sizeof *e);
  for (size_t i = 0; i < n; i++) e[i] = rel_err(f, i, floor);
  double m = median_of(e, (int)n);
  free(e);
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median_of(const double *v, int n) {
  double *c = zalloc((size_t)n * sizeof *c);
  memcpy(c, v, (size_t)n * sizeof *c);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  free(c);
  return m;
}

int fcase_family_decks(const char *kind, char (*paths)[1024], int max) {
  const char *top = getenv("top_srcdir");
  char pattern[1024];
  snprintf(pattern, sizeof pattern, "%s/families/*/%s.deck", top && top[0] ? top : ".", kind);
  glob_t g;
  int n = 0;
  if (glob(pattern, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && n < max; i++) snprintf(paths[n++], sizeof paths[0], "%s", g.gl_pathv[i]);
    globfree(&g);
  }
  return n;
}
