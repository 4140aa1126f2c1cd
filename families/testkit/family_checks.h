/* family_checks.h - checks every family test makes of its own descriptor and references, on
 * top of family_case.h: the axis and parameter tables as agreed (names, order, types,
 * defaults, choices, ranges; every default valid), invalid(), cost() and the bias declaration
 * of a case given as a spec string, tensor specs, and the fp64 reference against its double-double twin on inputs
 * a test made ill-conditioned. Header-only (static inline), because the counters of
 * test_util.h are per test program. */
#ifndef KVAL_TEST_FAMILY_CHECKS_H
#define KVAL_TEST_FAMILY_CHECKS_H

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
  double min, max;
} axis_want;

typedef struct {
  const char *name;
  double defaults, min, max;
} param_want;

/* Is every token of the default list valid for the axis? */
static inline int defaults_valid(const kv_axis_desc *a) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", a->defaults ? a->defaults : "");
  int n = 0;
  for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "), n++) {
    if (a->type == KV_AXIS_INT) {
      char *end;
      long long v = strtoll(t, &end, 10);
      if (*end || v < a->min || v > a->max) return 0;
    } else if (a->type == KV_AXIS_REAL) {
      char *end;
      double v = strtod(t, &end);
      if (*end || !(v >= a->min && v <= a->max)) return 0;
    } else if (a->choices) {
      int found = 0;
      for (int i = 0; a->choices[i]; i++) found |= strcmp(a->choices[i], t) == 0;
      if (!found) return 0;
    } else if (strcmp(a->name, "precision") == 0) {
      kv_precision p;
      if (kv_precision_parse(t, &p) != 0 || kv_precision_invalid_reason(p)) return 0;
    }
  }
  return n > 0;
}

static inline void check_descriptor(const kv_family *f, const axis_want *aw, const param_want *pw) {
  int n = 0;
  for (; aw[n].name; n++) {
    const kv_axis_desc *a = &f->axes[n];
    EXPECT(a->name != NULL, "%s: axis %d (%s) missing", f->name, n, aw[n].name);
    if (!a->name) return;
    EXPECT_STREQ(a->name, aw[n].name);
    EXPECT(a->type == aw[n].type, "%s.%s type", f->name, a->name);
    EXPECT_STREQ(a->defaults, aw[n].defaults);
    EXPECT(a->help && a->help[0], "%s.%s has help", f->name, a->name);
    if (a->type != KV_AXIS_STR)
      EXPECT(a->min == aw[n].min && a->max == aw[n].max, "%s.%s range %g..%g", f->name, a->name, a->min, a->max);
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
    EXPECT(f->params != NULL, "%s has params", f->name);
    if (!f->params) return;
    const kv_param_desc *p = &f->params[np];
    EXPECT(p->name && strcmp(p->name, pw[np].name) == 0, "%s param %d is %s", f->name, np, pw[np].name);
    EXPECT(p->defaults == pw[np].defaults && p->min == pw[np].min && p->max == pw[np].max,
           "%s.%s default %g range %g..%g", f->name, pw[np].name, p->defaults, p->min, p->max);
    EXPECT(p->defaults >= p->min && p->defaults <= p->max, "%s.%s default within range", f->name, pw[np].name);
  }
  EXPECT(!f->params || f->params[np].name == NULL, "%s has %d params", f->name, np);
  EXPECT(f->invalid && f->cost && f->tensors && f->emulate && f->reference, "%s has every hook", f->name);
}

static inline const char *invalid_of(const kv_family *fam, const char *spec, const char *backend) {
  fcase f;
  fcase_init(&f, fam, spec);
  return fam->invalid(&f.c, backend);
}

/* 1 when the family declares the case's output unbiased (the rounding-bias verdict judges it). */
static inline int unbiased_of(const kv_family *fam, const char *spec) {
  fcase f;
  fcase_init(&f, fam, spec);
  return fam->unbiased ? fam->unbiased(&f.c) : 0;
}

static inline kv_cost cost_of(const kv_family *fam, const char *spec) {
  fcase f;
  kv_cost c;
  fcase_init(&f, fam, spec);
  kv_case_cost(&f.c, &c);
  return c;
}

static inline int spec_is(const kv_tensor_spec *t, const char *name, kv_dtype dt, size_t count, int dist, double scale,
                   double offset) {
  return strcmp(t->name, name) == 0 && t->dtype == dt && t->count == count && t->dist == dist &&
         fabs(t->scale - scale) < 1e-12 * fabs(scale) + 1e-300 && t->offset == offset;
}

typedef struct {
  double med_rel;  /* median |ref - comp| / |comp| */
  double max_mag;  /* max |ref - comp| / mag: against the tolerance's scale u_acc * mag */
  double med_cond; /* median mag / |comp| */
} agreement;

static inline agreement compare(const fcase *plain, const fcase *comp) {
  size_t n = plain->n_rows * plain->row_len;
  double *rel = malloc(n * sizeof *rel), *cond = malloc(n * sizeof *cond);
  agreement a = {0.0, 0.0, 0.0};
  for (size_t i = 0; i < n; i++) {
    double diff = fabs(plain->ref[i] - comp->ref[i]), r = fmax(fabs(comp->ref[i]), 1e-300);
    rel[i] = diff / r;
    cond[i] = comp->mag[i] / r;
    a.max_mag = fmax(a.max_mag, diff / comp->mag[i]);
  }
  a.med_rel = median_of(rel, (int)n);
  a.med_cond = median_of(cond, (int)n);
  free(rel);
  free(cond);
  return a;
}

/* The claims: ~1e-12 relative at these condition numbers, and everywhere far below the
 * finest tolerance term (u_acc >= 2^-24 times mag). */
static inline void expect_agreement(const char *what, agreement a, double min_cond) {
  printf("%-22s median cond %.3g, median rel diff %.3g, max diff / mag %.3g\n", what, a.med_cond, a.med_rel,
         a.max_mag);
  EXPECT(a.med_cond > min_cond, "%s inputs are ill-conditioned (median cond %g)", what, a.med_cond);
  EXPECT(a.med_rel < 1e-12, "%s: fp64 and double-double references differ by %g relative", what, a.med_rel);
  EXPECT(a.max_mag < 1e-14, "%s: fp64 reference off by %g mag", what, a.max_mag);
}

static inline void run_both(fcase *a, fcase *b) {
  fcase_reference(a, 0);
  fcase_reference(b, 1);
}

static inline void copy_inputs(fcase *dst, const fcase *src) {
  for (int i = 0; i < src->t.n_in; i++)
    memcpy(dst->in[i], src->in[i], src->t.in[i].count * kv_dtype_size(src->t.in[i].dtype));
}

#endif
