/* plan_paths.c - which kernel paths a plan reaches: every tag a family's dispatcher can take
 * (kv_family.path_tag) against the tags of the plan's cases (kv_family.path), per family,
 * for --dry-run; with --verbose every case with its tags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "input/plan.h"

#define TAG_LEN 64
#define PATH_LEN 1024

/* Whether the space-separated list holds tag exactly. */
static int has_tag(const char *list, const char *tag) {
  const size_t n = strlen(tag);
  for (const char *p = list; (p = strstr(p, tag)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  return 0;
}

/* The tags of family f's paths that no case of the plan takes, printed; returns their count
 * and puts the number of declared tags in *n_tags_out. Each case's path is computed once. */
static int family_paths(const kv_plan *p, const kv_family *f, FILE *out, int *n_tags_out) {
  size_t n_cases = 0;
  char **paths = KV_MALLOC((p->n_cases ? p->n_cases : 1) * sizeof *paths), buf[PATH_LEN];
  if (!paths) KV_FATAL("out of memory listing the kernel paths of %zu cases", p->n_cases);
  for (size_t k = 0; k < p->n_cases; k++) {
    if (p->cases[k].fp->family != f) continue;
    f->path(&p->cases[k], buf, sizeof buf);
    if (!(paths[n_cases++] = strdup(buf))) KV_FATAL("out of memory listing the kernel paths of %zu cases", p->n_cases);
  }
  int n_tags = 0, n_missing = 0;
  char tag[TAG_LEN], missing[4096] = "";
  for (int i = 0; f->path_tag(i, tag, sizeof tag); i++) {
    n_tags++;
    int reached = 0;
    for (size_t k = 0; k < n_cases && !reached; k++) reached = has_tag(paths[k], tag);
    if (!reached) {
      n_missing++;
      size_t len = strlen(missing);
      if (len + strlen(tag) + 3 < sizeof missing) snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", tag);
    }
  }
  for (size_t k = 0; k < n_cases; k++) free(paths[k]);
  free(paths);
  if (n_missing)
    fprintf(out, "paths of %s: %d of %d reached; not reached: %s\n", f->name, n_tags - n_missing, n_tags, missing);
  else
    fprintf(out, "paths of %s: all %d reached\n", f->name, n_tags);
  *n_tags_out = n_tags;
  return n_missing;
}

void kv_plan_print_paths(const kv_plan *p, int verbose, FILE *out) {
  char path[PATH_LEN], what[512];
  if (verbose)
    for (size_t k = 0; k < p->n_cases; k++) {
      const kv_case *c = &p->cases[k];
      if (!c->fp->family->path) continue;
      c->fp->family->path(c, path, sizeof path);
      kv_case_describe(c, what, sizeof what);
      fprintf(out, "path %s => %s\n", what, path);
    }
  int total = 0, missing = 0;
  for (int i = 0; kv_families[i]; i++) {
    const kv_family *f = kv_families[i];
    int planned = 0;
    for (int s = 0; s < p->n_fam; s++) planned |= p->fam[s].family == f;
    if (!planned || !f->path || !f->path_tag) continue;
    int n = 0;
    missing += family_paths(p, f, out, &n);
    total += n;
  }
  if (missing)
    fprintf(out, "kernel paths: %d of %d reached by the planned cases (%d not reached, listed above)\n", total - missing,
            total, missing);
  else
    fprintf(out, "kernel paths: every one of the %d reached by the planned cases\n", total);
}
