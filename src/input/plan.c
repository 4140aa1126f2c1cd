/* plan.c - the sweep plan: deck sections and keys checked against the family registry,
 * axis values and parameters parsed and range-checked, and each selected
 * family's dense grid expanded into cases (row-major cells, skipped ones with a reason).
 * Value parsing, the error format and the [run] keys are in plan_values.c; rank assignment and
 * --dry-run printing in plan_assign.c. */
#include "input/plan.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "input/estimate.h"
#include "input/plan_values.h"
#include "numerics/rng.h"

/* Cells of one family's grid: a million kernel runs is far beyond any job, and expanding the
 * grid (validity, cost) stays well under a second. */
#define PLAN_MAX_CELLS 1000000ULL
#define LIST_LEN 512               /* room for "one of: ..." lists in messages */

static void family_names(char *buf, size_t len, int brackets, int with_run) {
  buf[0] = '\0';
  for (int i = 0; kv_families[i]; i++) {
    char item[80];
    snprintf(item, sizeof item, brackets ? "[%s]" : "%s", kv_families[i]->name);
    kv_plan_list_append(buf, len, item);
  }
  if (with_run) kv_plan_list_append(buf, len, "[run]");
}

static char *copy_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *t = KV_MALLOC(n);
  if (t) memcpy(t, s, n);
  return t;
}

static int n_axes_of(const kv_family *f) {
  int n = 0;
  while (f->axes[n].name) n++;
  return n;
}
static int n_params_of(const kv_family *f) {
  int n = 0;
  while (f->params && f->params[n].name) n++;
  return n;
}

/* The family of a deck section: [FAMILY] or a named section [FAMILY.NAME]; NULL for any
 * other name. *idx (when not NULL) receives its index in kv_families. */
static const kv_family *section_family(const char *section, int *idx) {
  char base[KV_SECTION_NAME_LEN];
  const char *dot = strchr(section, '.');
  size_t n = dot ? (size_t)(dot - section) : strlen(section);
  if (n >= sizeof base) return NULL;
  memcpy(base, section, n);
  base[n] = '\0';
  return kv_family_find(base, idx);
}

/* Every section is a family or [run], and every key is one of its section's keys. */
static int check_names(const kv_deck *d, char *err, size_t errlen) {
  char list[LIST_LEN];
  for (int i = 0; i < d->n_sections; i++) {
    const kv_deck_section *s = &d->sections[i];
    if (strcmp(s->name, "run") != 0 && !section_family(s->name, NULL)) {
      family_names(list, sizeof list, 1, 1);
      char expected[LIST_LEN + 48];
      snprintf(expected, sizeof expected, "one of %s, or [FAMILY.NAME]", list);
      return kv_plan_err(err, errlen, s->file, s->line, s->col, s->name, expected, "unknown section [%s]", s->name);
    }
    if (strlen(s->name) >= KV_SECTION_NAME_LEN)
      return kv_plan_err(err, errlen, s->file, s->line, s->col, s->name, "a section name of at most 15 characters",
                         "section name [%s] too long", s->name);
  }
  for (int i = 0; i < d->n_entries; i++) {
    const kv_deck_entry *en = &d->entries[i];
    list[0] = '\0';
    int known = 0;
    if (strcmp(en->section, "run") == 0) {
      known = kv_plan_run_key(en->key, list, sizeof list);
    } else {
      const kv_family *f = section_family(en->section, NULL);
      for (int k = 0; f->axes[k].name; k++) {
        known |= strcmp(en->key, f->axes[k].name) == 0;
        kv_plan_list_append(list, sizeof list, f->axes[k].name);
      }
      for (int k = 0; f->params && f->params[k].name; k++) {
        known |= strcmp(en->key, f->params[k].name) == 0;
        kv_plan_list_append(list, sizeof list, f->params[k].name);
      }
    }
    if (!known) {
      char expected[LIST_LEN + 16];
      snprintf(expected, sizeof expected, "one of %s", list);
      return kv_plan_err(err, errlen, en->file, en->line, en->col, en->key, expected, "unknown key '%s' in [%s]",
                         en->key, en->section);
    }
  }
  return 0;
}

/* The family sections the plan runs, in registry order and, within a family, deck order:
 * every family section of the deck, or those --only names (FAMILY: all of its sections, or
 * the family with its defaults when the deck has none; FAMILY.NAME: that section). */
typedef struct {
  int n, family[KV_MAX_FAMILIES];
  const char *section[KV_MAX_FAMILIES];
} selection;

/* Adds a family section to the selection; `where` is its deck section (NULL: a family --only
 * names that has none in the deck). */
static int select_add(selection *sel, int family, const char *section, const kv_deck_section *where, char *err,
                      size_t errlen) {
  for (int i = 0; i < sel->n; i++)
    if (strcmp(sel->section[i], section) == 0) {
      snprintf(err, errlen, "kval: --only: '%s' selected twice (each family or section once)", section);
      return -1;
    }
  if (sel->n == KV_MAX_FAMILIES) {
    if (where)
      snprintf(err, errlen,
               "%s:%d:%d: error: [%s] is family section %d of the plan (expected at most %d: split the deck, or "
               "select fewer with --only)",
               where->file, where->line, where->col, section, sel->n + 1, KV_MAX_FAMILIES);
    else
      snprintf(err, errlen, "kval: --only: '%s' is family section %d of the plan (expected at most %d)", section,
               sel->n + 1, KV_MAX_FAMILIES);
    return -1;
  }
  sel->family[sel->n] = family;
  sel->section[sel->n++] = section;
  return 0;
}

/* Whether --only's comma-separated list names `name` exactly. */
static int only_names(const char *only, const char *name) {
  size_t n = strlen(name);
  for (const char *s = only; s;) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len == n && memcmp(s, name, n) == 0) return 1;
    s = comma ? comma + 1 : NULL;
  }
  return 0;
}

static int select_families(const kv_deck *d, const char *only, selection *sel, char *err, size_t errlen) {
  char list[LIST_LEN];
  memset(sel, 0, sizeof *sel);
  if (only) { /* every item names a family or one of the deck's family sections */
    family_names(list, sizeof list, 0, 0);
    char expected[LIST_LEN + 96];
    snprintf(expected, sizeof expected, "a comma-separated list of: %s, or FAMILY.NAME of a [FAMILY.NAME] section",
             list);
    for (const char *s = only; s;) {
      const char *comma = strchr(s, ',');
      size_t len = comma ? (size_t)(comma - s) : strlen(s);
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), s);
      int known = len > 0 && len < 63 && (kv_family_find(name, NULL) ||
                                          (strchr(name, '.') && kv_deck_find_section(d, name) &&
                                           section_family(name, NULL)));
      if (!known) {
        snprintf(err, errlen, "kval: --only: unknown family '%s' (expected %s)", name, expected);
        return -1;
      }
      for (const char *t = only; t != s;) { /* an item listed twice */
        const char *c2 = strchr(t, ',');
        if ((size_t)(c2 - t) == len && memcmp(t, s, len) == 0) {
          snprintf(err, errlen, "kval: --only: family '%s' listed twice (expected %s, each once)", name, expected);
          return -1;
        }
        t = c2 + 1;
      }
      s = comma ? comma + 1 : NULL;
    }
  }
  for (int i = 0; kv_families[i]; i++) {
    int any = 0;
    for (int k = 0; k < d->n_sections; k++) {
      int idx = -1;
      const char *name = d->sections[k].name;
      if (!section_family(name, &idx) || idx != i) continue;
      any = 1;
      if (only && !only_names(only, kv_families[i]->name) && !only_names(only, name)) continue;
      if (select_add(sel, i, name, &d->sections[k], err, errlen) != 0) return -1;
    }
    if (only && !any && only_names(only, kv_families[i]->name) &&
        select_add(sel, i, kv_families[i]->name, NULL, err, errlen) != 0)
      return -1;
  }
  if (sel->n == 0) {
    family_names(list, sizeof list, 1, 0);
    snprintf(err, errlen, "%s: error: the deck has no family section (expected at least one of %s, or --only FAMILY)",
             d->path, list);
    return -1;
  }
  return 0;
}

/* The values of an axis: its deck entry, else the descriptor's default text read by the deck
 * tokenizer into `tmp` (file "<default>"). *en is NULL when a required key is missing. */
static int axis_entry(const kv_deck *d, const char *sec, const kv_axis_desc *a, kv_deck *tmp,
                      const kv_deck_entry **en, char *err, size_t errlen) {
  *en = kv_deck_find(d, sec, a->name);
  if (*en) return 0;
  if (!a->defaults) {
    const kv_deck_section *s = kv_deck_find_section(d, sec);
    char expected[160];
    snprintf(expected, sizeof expected, "'%s = VALUES' in [%s] or --set %s.%s=VALUES", a->name, sec, sec, a->name);
    return kv_plan_err(err, errlen, s ? s->file : d->path, s ? s->line : 0, s ? s->col : 0, "", expected,
                       "[%s] needs the key '%s'", sec, a->name);
  }
  size_t len = strlen(sec) + strlen(a->name) + strlen(a->defaults) + 16;
  char *text = KV_MALLOC(len);
  if (!text) return kv_plan_err(err, errlen, "kval", 0, 0, "", "enough memory", "out of memory");
  snprintf(text, len, "[%s]\n%s = %s\n", sec, a->name, a->defaults);
  int rc = kv_deck_parse_string("<default>", text, tmp, err, errlen);
  free(text);
  if (rc != 0) return -1;
  *en = kv_deck_find(tmp, sec, a->name);
  return 0;
}

typedef struct {
  const char *s;
  double v; /* INT values are at most 2^30 here (axis ranges), exact in a double */
  int i;
} sort_item;

static int cmp_num_item(const void *x, const void *y) {
  const sort_item *a = x, *b = y;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->i - b->i;
}
static int cmp_str_item(const void *x, const void *y) {
  const sort_item *a = x, *b = y;
  int c = strcmp(a->s, b->s);
  return c ? c : a->i - b->i;
}

/* Index of the earliest value that repeats an earlier one, -1 when all are distinct. */
static int first_duplicate(const kv_axis_values *av, kv_axis_type type) {
  sort_item *it = KV_MALLOC((size_t)av->n * sizeof *it);
  if (!it) KV_FATAL("out of memory checking %d axis values", av->n);
  for (int i = 0; i < av->n; i++) {
    it[i].i = i;
    it[i].v = type == KV_AXIS_INT ? (double)av->ints[i] : type == KV_AXIS_REAL ? av->reals[i] : 0.0;
    it[i].s = type == KV_AXIS_STR ? av->strs[i] : NULL;
  }
  qsort(it, (size_t)av->n, sizeof *it, type == KV_AXIS_STR ? cmp_str_item : cmp_num_item);
  int dup = -1;
  for (int i = 1; i < av->n; i++) {
    int same = type == KV_AXIS_STR ? strcmp(it[i - 1].s, it[i].s) == 0 : it[i - 1].v == it[i].v;
    if (same && (dup < 0 || it[i].i < dup)) dup = it[i].i; /* sorted by (value, index): it[i] repeats */
  }
  free(it);
  return dup;
}

static int axis_values(const kv_deck_entry *en, const kv_axis_desc *a, kv_axis_values *av, char *err,
                       size_t errlen) {
  char expected[LIST_LEN + 16], list[LIST_LEN] = "";
  int is_precision = strcmp(a->name, "precision") == 0;
  expected[0] = '\0';
  if (a->type == KV_AXIS_INT) snprintf(expected, sizeof expected, "an integer in %.0f..%.0f", a->min, a->max);
  else if (a->type == KV_AXIS_REAL) snprintf(expected, sizeof expected, "a number in %g..%g", a->min, a->max);
  else if (a->choices) {
    for (int k = 0; a->choices[k]; k++) kv_plan_list_append(list, sizeof list, a->choices[k]);
    snprintf(expected, sizeof expected, "one of: %s", list);
  } else if (is_precision)
    snprintf(expected, sizeof expected, "STORAGE:ACCUM with types fp16, bf16 or fp32 (e.g. fp16:fp32)");
  av->n = en->n_values;
  if (a->type == KV_AXIS_INT) av->ints = KV_CALLOC((size_t)av->n, sizeof *av->ints);
  else if (a->type == KV_AXIS_REAL) av->reals = KV_CALLOC((size_t)av->n, sizeof *av->reals);
  else av->strs = KV_CALLOC((size_t)av->n, sizeof *av->strs);
  if (!av->ints && !av->reals && !av->strs)
    return kv_plan_err(err, errlen, en->file, 0, 0, "", "enough memory", "out of memory");
  for (int i = 0; i < av->n; i++) {
    const kv_token *t = &en->values[i];
    if (a->type == KV_AXIS_INT) {
      if (kv_plan_to_ll(t->text, &av->ints[i]) != 0)
        return kv_plan_tok_err(err, errlen, en, t, expected, "not an integer value");
      if (av->ints[i] < a->min || av->ints[i] > a->max)
        return kv_plan_tok_err(err, errlen, en, t, expected, "value out of range");
      continue;
    }
    if (a->type == KV_AXIS_REAL) {
      int bad = kv_plan_to_double(t->text, &av->reals[i]);
      if (bad == 1) return kv_plan_tok_err(err, errlen, en, t, expected, "not a number");
      if (bad) return kv_plan_tok_err(err, errlen, en, t, expected, kv_plan_number_problem[bad]);
      if (av->reals[i] < a->min || av->reals[i] > a->max)
        return kv_plan_tok_err(err, errlen, en, t, expected, "value out of range");
      continue;
    }
    if (a->choices) {
      int k = 0;
      while (a->choices[k] && strcmp(a->choices[k], t->text) != 0) k++;
      if (!a->choices[k]) return kv_plan_tok_err(err, errlen, en, t, expected, "unknown value");
    }
    kv_precision prec;
    if (is_precision && kv_precision_parse(t->text, &prec) != 0)
      return kv_plan_tok_err(err, errlen, en, t, expected, "malformed precision");
    if (!(av->strs[i] = copy_str(t->text)))
      return kv_plan_err(err, errlen, en->file, 0, 0, "", "enough memory", "out of memory");
  }
  int dup = first_duplicate(av, a->type);
  if (dup >= 0)
    return kv_plan_tok_err(err, errlen, en, &en->values[dup], "each value once per axis", "duplicate value");
  return 0;
}

static int family_plan(const kv_deck *d, const kv_family *f, int index, const char *sec, kv_family_plan *fp,
                       char *err, size_t errlen) {
  fp->family = f;
  snprintf(fp->name, sizeof fp->name, "%s", sec);
  fp->family_index = index;
  fp->n_axes = n_axes_of(f);
  if (fp->n_axes > KV_MAX_AXES || n_params_of(f) > KV_MAX_PARAMS || kv_family_axis_index(f, "precision") < 0) {
    snprintf(err, errlen, "kval: error: family %s: descriptor needs a precision axis, at most %d axes and %d params",
             f->name, KV_MAX_AXES, KV_MAX_PARAMS);
    return -1;
  }
  fp->n_cells = 1;
  for (int i = 0; i < fp->n_axes; i++) {
    const kv_axis_desc *a = &f->axes[i];
    kv_deck tmp = {0};
    const kv_deck_entry *en;
    int rc = axis_entry(d, sec, a, &tmp, &en, err, errlen);
    if (rc == 0) rc = axis_values(en, a, &fp->axis[i], err, errlen);
    kv_deck_free(&tmp);
    if (rc != 0) return -1;
    fp->n_cells *= (size_t)fp->axis[i].n;
    if (fp->n_cells > PLAN_MAX_CELLS) {
      const kv_deck_section *s = kv_deck_find_section(d, sec);
      char got[32], want[64];
      snprintf(got, sizeof got, "%zu cells so far", fp->n_cells);
      snprintf(want, sizeof want, "at most %llu cells per family (fewer values per axis)", PLAN_MAX_CELLS);
      return kv_plan_err(err, errlen, s ? s->file : d->path, s ? s->line : 0, s ? s->col : 0, got, want,
                         "the grid of [%s] is too large", sec);
    }
  }
  for (int k = 0; f->params && f->params[k].name; k++) {
    const kv_param_desc *pd = &f->params[k];
    const kv_deck_entry *en = kv_deck_find(d, sec, pd->name);
    fp->param[k] = pd->defaults;
    if (!en) continue;
    char expected[128];
    snprintf(expected, sizeof expected, "a number in %g..%g", pd->min, pd->max);
    if (kv_plan_one_value(en, expected, err, errlen) != 0) return -1;
    int bad = kv_plan_to_double(en->values[0].text, &fp->param[k]);
    if (bad == 1) return kv_plan_tok_err(err, errlen, en, &en->values[0], expected, "not a number");
    if (bad) return kv_plan_tok_err(err, errlen, en, &en->values[0], expected, kv_plan_number_problem[bad]);
    if (fp->param[k] < pd->min || fp->param[k] > pd->max)
      return kv_plan_tok_err(err, errlen, en, &en->values[0], expected, "value out of range");
  }
  return 0;
}

/* Key of a case for the input generator: FNV-1a of the family name mixed with the cell. */
static uint64_t case_key(const char *family, size_t cell) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char *p = (const unsigned char *)family; *p; p++) h = (h ^ *p) * 0x100000001b3ULL;
  return kv_mix64(h ^ kv_mix64((uint64_t)cell));
}

/* Everything of kv_plan_case_at but the cost estimate (invalid cells never reach the cost). */
static void fill_case(const kv_family_plan *fp, size_t cell, kv_case *c) {
  memset(c, 0, sizeof *c);
  c->fp = fp;
  c->cell = cell;
  size_t rest = cell;
  for (int i = fp->n_axes - 1; i >= 0; i--) {
    size_t n = (size_t)fp->axis[i].n;
    c->idx[i] = (int)(rest % n);
    rest /= n;
    if (fp->family->axes[i].type == KV_AXIS_INT) c->ival[i] = fp->axis[i].ints[c->idx[i]];
    else if (fp->family->axes[i].type == KV_AXIS_REAL) c->rval[i] = fp->axis[i].reals[c->idx[i]];
    else c->sval[i] = fp->axis[i].strs[c->idx[i]];
  }
  kv_precision_parse(c->sval[kv_family_axis_index(fp->family, "precision")], &c->prec);
  c->key = case_key(fp->name, cell);
}

static double estimate_seconds(const kv_case *c) {
  static const kv_run_settings none = {0};
  return kv_estimate_case(c, c->fp->run ? c->fp->run : &none, c->fp->on_gpu);
}

void kv_case_cost(const kv_case *c, kv_cost *out) {
  memset(out, 0, sizeof *out);
  c->fp->family->cost(c, out);
}

void kv_plan_case_at(const kv_family_plan *fp, size_t cell, uint64_t seed, kv_case *c) {
  (void)seed; /* the seed enters at input generation (kv_stream_key), not into the case key */
  fill_case(fp, cell, c);
  c->est_seconds = estimate_seconds(c);
}

/* Mark skipped cells and append the valid ones to p->cases. */
static int expand(kv_plan *p, kv_family_plan *fp, const char *backend, size_t *cap, char *err, size_t errlen) {
  fp->skip_reason = KV_CALLOC(fp->n_cells, sizeof *fp->skip_reason);
  if (!fp->skip_reason) return kv_plan_err(err, errlen, "kval", 0, 0, "", "enough memory", "out of memory");
  for (size_t cell = 0; cell < fp->n_cells; cell++) {
    kv_case c;
    fill_case(fp, cell, &c);
    const char *why = kv_precision_invalid_reason(c.prec);
    if (!why && fp->family->invalid) why = fp->family->invalid(&c, backend);
    if (why) {
      fp->skip_reason[cell] = why;
      fp->n_skipped++;
      continue;
    }
    if (p->n_cases == *cap) {
      size_t ncap = *cap ? 2 * *cap : 64;
      kv_case *nc = realloc(p->cases, ncap * sizeof *nc);
      if (CHECK_ALLOC(nc) != KV_OK) return kv_plan_err(err, errlen, "kval", 0, 0, "", "enough memory", "out of memory");
      p->cases = nc;
      *cap = ncap;
    }
    c.est_seconds = estimate_seconds(&c);
    p->cases[p->n_cases++] = c;
    fp->n_valid++;
  }
  return 0;
}

int kv_plan_build(const kv_deck *d, const char *only, const char *backend, kv_mode mode, int have_seed,
                  uint64_t seed, kv_plan *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->mode = mode;
  selection sel;
  if (check_names(d, err, errlen) != 0 || kv_plan_run_settings(d, have_seed, seed, &p->run, err, errlen) != 0 ||
                                                               select_families(d, only, &sel, err, errlen) != 0)
    return -1;
  for (int k = 0; k < sel.n; k++) {
    const int i = sel.family[k];
    p->fam[p->n_fam].run = &p->run;
    p->fam[p->n_fam].slot = p->n_fam;
    p->fam[p->n_fam].on_gpu = strcmp(backend, "cpu") != 0;
    if (family_plan(d, kv_families[i], i, sel.section[k], &p->fam[p->n_fam++], err, errlen) != 0) {
      kv_plan_free(p);
      return -1;
    }
  }
  size_t cap = 0;
  for (int f = 0; f < p->n_fam; f++)
    if (expand(p, &p->fam[f], backend, &cap, err, errlen) != 0) {
      kv_plan_free(p);
      return -1;
    }
  return 0;
}

void kv_plan_free(kv_plan *p) {
  for (int f = 0; f < p->n_fam; f++) {
    kv_family_plan *fp = &p->fam[f];
    for (int i = 0; i < fp->n_axes; i++) {
      free(fp->axis[i].ints);
      free(fp->axis[i].reals);
      for (int k = 0; fp->axis[i].strs && k < fp->axis[i].n; k++) free(fp->axis[i].strs[k]);
      free(fp->axis[i].strs);
    }
    free(fp->skip_reason);
  }
  free(p->cases);
  memset(p, 0, sizeof *p);
}
