/* plan_values.c - the plan's values: the error format of every deck problem, whole-token
 * numbers, and the [run] section (its keys with their ranges, the defaults, the checks across
 * keys). The family axes and parameters are parsed in plan.c with these helpers. */
#include "input/plan_values.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "FILE:LINE:COL: error: WHAT (got 'TOKEN'; expected VALID)"; line 0 drops LINE:COL. */
int kv_plan_err(char *err, size_t errlen, const char *file, int line, int col, const char *got,
                const char *expected, const char *fmt, ...) {
  char what[512], where[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (line > 0) snprintf(where, sizeof where, "%s:%d:%d", file, line, col);
  else snprintf(where, sizeof where, "%s", file);
  snprintf(err, errlen, "%s: error: %s (got '%.80s'; expected %s)", where, what, got, expected);
  return -1;
}

int kv_plan_tok_err(char *err, size_t errlen, const kv_deck_entry *en, const kv_token *t, const char *expected,
                    const char *what) {
  return kv_plan_err(err, errlen, en->file, t->line, t->col, t->text, expected, "%s of %s.%s", what, en->section,
                     en->key);
}

void kv_plan_list_append(char *buf, size_t len, const char *item) {
  size_t used = strlen(buf);
  snprintf(buf + used, len - used, "%s%s", used ? ", " : "", item);
}

/* Keys of the [run] section. */
typedef enum { RUN_U64, RUN_INT, RUN_DOUBLE, RUN_CHOICE } run_kind;
typedef struct {
  const char *name;
  run_kind kind;
  size_t offset; /* into kv_run_settings */
  double min, max;
  const char *yes, *no; /* RUN_CHOICE: the words for 1 and 0 */
} run_key;

static const run_key run_keys[] = {
    {"seed", RUN_U64, offsetof(kv_run_settings, seed), 0, 0, NULL, NULL},
    {"warmup", RUN_INT, offsetof(kv_run_settings, warmup), 0, 1e6, NULL, NULL},
    {"min_reps", RUN_INT, offsetof(kv_run_settings, min_reps), 1, 1e7, NULL, NULL},
    {"max_reps", RUN_INT, offsetof(kv_run_settings, max_reps), 1, 1e7, NULL, NULL},
    {"rse_target", RUN_DOUBLE, offsetof(kv_run_settings, rse_target), 0, 1, NULL, NULL},
    {"time_cap", RUN_DOUBLE, offsetof(kv_run_settings, time_cap), 0, 3600, NULL, NULL},
    {"l2_flush", RUN_CHOICE, offsetof(kv_run_settings, l2_flush), 0, 0, "flush", "warm"},
    {"cpu_ref_budget", RUN_DOUBLE, offsetof(kv_run_settings, cpu_ref_budget), 0, 1e18, NULL, NULL},
    {"sample_rows", RUN_INT, offsetof(kv_run_settings, sample_rows), 2, 1e9, NULL, NULL},
    {"tol_c1", RUN_DOUBLE, offsetof(kv_run_settings, tol_override.c1), 0, 1e9, NULL, NULL},
    {"tol_c2", RUN_DOUBLE, offsetof(kv_run_settings, tol_override.c2), 0, 1e9, NULL, NULL},
    {"tol_abs_floor", RUN_DOUBLE, offsetof(kv_run_settings, tol_override.abs_floor), 0, 1e30, NULL, NULL},
    {"tol_rel_floor", RUN_DOUBLE, offsetof(kv_run_settings, tol_override.rel_floor), 0, 1e30, NULL, NULL},
    {"flush_interval", RUN_DOUBLE, offsetof(kv_run_settings, flush_interval), 0, 86400, NULL, NULL},
    {"stall_timeout", RUN_DOUBLE, offsetof(kv_run_settings, stall_timeout), 0, 1e6, NULL, NULL},
    {"on_stall", RUN_CHOICE, offsetof(kv_run_settings, stall_abort), 0, 0, "abort", "wait"},
    {"watchdog", RUN_DOUBLE, offsetof(kv_run_settings, watchdog), 0.001, 86400, NULL, NULL},
    {"bias_limit", RUN_DOUBLE, offsetof(kv_run_settings, bias_limit), 0, 1, NULL, NULL},
};
#define N_RUN_KEYS (int)(sizeof run_keys / sizeof run_keys[0])
#define N_TOL_KEYS 4

static const kv_run_settings run_defaults = {
    .seed = 1, .warmup = 2, .min_reps = 5, .max_reps = 200, .rse_target = 0.005, .time_cap = 1.0,
    .l2_flush = 1, .cpu_ref_budget = 2e9, .sample_rows = 64, .flush_interval = 2.0, .stall_timeout = 30.0,
    .watchdog = 60.0, .bias_limit = 0.1};

void kv_plan_run_defaults(kv_run_settings *rs) { *rs = run_defaults; }

int kv_plan_one_value(const kv_deck_entry *en, const char *expected, char *err, size_t errlen) {
  if (en->n_values == 1) return 0;
  return kv_plan_err(err, errlen, en->file, en->values[1].line, en->values[1].col, en->values[1].text, expected,
                     "%s.%s takes a single value, not %d", en->section, en->key, en->n_values);
}

/* A whole token as a finite number: 0 on success, 1 when it is not a number, 2 when it
 * overflows a double (1e999), 3 when it is nonzero but rounds to zero (1e-400). A value below
 * the smallest normal double (1e-320) is kept as strtod rounds it: ERANGE on such an
 * underflow is not an error. */
int kv_plan_to_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (!*s || *end || isnan(*v)) return 1;
  if (isinf(*v)) return errno == ERANGE ? 2 : 1;
  if (errno == ERANGE && *v == 0.0)
    for (const char *p = s; p < end && *p != 'e' && *p != 'E'; p++)
      if (*p >= '1' && *p <= '9') return 3;
  return 0;
}

const char *const kv_plan_number_problem[] = {"", "invalid value", "value out of range",
                                             "value too small for a double (it would round to 0)"};
int kv_plan_to_ll(const char *s, long long *v) {
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return *s && !*end && errno != ERANGE ? 0 : -1;
}
static int to_u64(const char *s, uint64_t *v) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  *v = x;
  return !*end && errno != ERANGE ? 0 : -1;
}

int kv_plan_run_key(const char *key, char *list, size_t len) {
  int known = 0;
  for (int k = 0; k < N_RUN_KEYS; k++) {
    known |= strcmp(key, run_keys[k].name) == 0;
    kv_plan_list_append(list, len, run_keys[k].name);
  }
  return known;
}

int kv_plan_run_settings(const kv_deck *d, int have_seed, uint64_t seed, kv_run_settings *rs, char *err,
                         size_t errlen) {
  *rs = run_defaults;
  const kv_deck_entry *tol[N_TOL_KEYS] = {0};
  int n_tol = 0;
  for (int k = 0; k < N_RUN_KEYS; k++) {
    const run_key *rk = &run_keys[k];
    const kv_deck_entry *en = kv_deck_find(d, "run", rk->name);
    if (!en) continue;
    if (strncmp(rk->name, "tol_", 4) == 0) tol[n_tol++] = en;
    char expected[128];
    void *field = (char *)rs + rk->offset;
    const kv_token *t = &en->values[0];
    if (rk->kind == RUN_U64) {
      snprintf(expected, sizeof expected, "a decimal integer in 0..18446744073709551615");
      if (kv_plan_one_value(en, expected, err, errlen)) return -1;
      if (to_u64(t->text, (uint64_t *)field)) return kv_plan_tok_err(err, errlen, en, t, expected, "invalid value");
    } else if (rk->kind == RUN_INT) {
      long long v = 0;
      snprintf(expected, sizeof expected, "an integer in %.0f..%.0f", rk->min, rk->max);
      if (kv_plan_one_value(en, expected, err, errlen)) return -1;
      if (kv_plan_to_ll(t->text, &v) || v < rk->min || v > rk->max)
        return kv_plan_tok_err(err, errlen, en, t, expected, "invalid value");
      *(int *)field = (int)v;
    } else if (rk->kind == RUN_DOUBLE) {
      double v = 0;
      snprintf(expected, sizeof expected, "a number in %g..%g", rk->min, rk->max);
      if (kv_plan_one_value(en, expected, err, errlen)) return -1;
      int bad = kv_plan_to_double(t->text, &v);
      if (bad || v < rk->min || v > rk->max)
        return kv_plan_tok_err(err, errlen, en, t, expected, bad ? kv_plan_number_problem[bad] : "invalid value");
      *(double *)field = v;
    } else {
      snprintf(expected, sizeof expected, "%s or %s", rk->yes, rk->no);
      if (kv_plan_one_value(en, expected, err, errlen)) return -1;
      if (strcmp(t->text, rk->yes) != 0 && strcmp(t->text, rk->no) != 0)
        return kv_plan_tok_err(err, errlen, en, t, expected, "invalid value");
      *(int *)field = strcmp(t->text, rk->yes) == 0;
    }
  }
  if (rs->max_reps < rs->min_reps) {
    const kv_deck_entry *en = kv_deck_find(d, "run", "max_reps");
    if (!en) en = kv_deck_find(d, "run", "min_reps");
    char expected[64];
    snprintf(expected, sizeof expected, "max_reps >= min_reps (%d)", rs->min_reps);
    return kv_plan_tok_err(err, errlen, en, &en->values[0], expected, "max_reps below min_reps");
  }
  if (n_tol > 0 && n_tol < N_TOL_KEYS)
    return kv_plan_err(err, errlen, tol[0]->file, tol[0]->line, tol[0]->col, tol[0]->key,
                       "all four of tol_c1, tol_c2, tol_abs_floor, tol_rel_floor",
                    "[run] tolerance override is incomplete: %d of the 4 tol_* keys given", n_tol);
  rs->has_tol_override = n_tol == N_TOL_KEYS;
  if (have_seed) rs->seed = seed;
  return 0;
}

