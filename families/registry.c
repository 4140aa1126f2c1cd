/* registry.c - the kernel-family registry, expanded from families/families.def (one line per
 * family), and lookups of axes, parameters and case values by name. */
#include "family.h"

#include <stdio.h>
#include <string.h>

#include "input/plan.h"

#define KV_FAMILY(name) extern const kv_family kv_family_##name;
#include "families/families.def"
#undef KV_FAMILY

const kv_family *const kv_families[] = {
#define KV_FAMILY(name) &kv_family_##name,
#include "families/families.def"
#undef KV_FAMILY
    NULL,
};
const kv_family *kv_family_find(const char *name, int *index) {
  for (int i = 0; kv_families[i]; i++)
    if (strcmp(kv_families[i]->name, name) == 0) {
      if (index) *index = i;
      return kv_families[i];
    }
  return NULL;
}

int kv_family_count(void) {
  int n = 0;
  while (kv_families[n]) n++;
  return n;
}

int kv_family_parts(const kv_family *f) {
  int n = 0;
  if (f->out_parts)
    while (f->out_parts[n]) n++;
  return n;
}

int kv_family_axis_index(const kv_family *f, const char *axis) {
  for (int i = 0; f->axes[i].name; i++)
    if (strcmp(f->axes[i].name, axis) == 0) return i;
  return -1;
}

int kv_family_n_axes(const kv_family *f) {
  int n = 0;
  while (f->axes[n].name) n++;
  return n;
}

int kv_family_n_params(const kv_family *f) {
  int n = 0;
  if (f->params)
    while (f->params[n].name) n++;
  return n;
}

double kv_case_param(const kv_case *c, const char *name) {
  const kv_family *f = c->fp->family;
  for (int i = 0; f->params && f->params[i].name; i++)
    if (strcmp(f->params[i].name, name) == 0) return c->fp->param[i];
  KV_FATAL("family %s has no parameter '%s'", f->name, name);
}

static int axis_or_die(const kv_case *c, const char *axis, kv_axis_type type) {
  const kv_family *f = c->fp->family;
  int i = kv_family_axis_index(f, axis);
  if (i < 0 || f->axes[i].type != type)
    KV_FATAL("family %s has no %s axis '%s'", f->name,
             type == KV_AXIS_INT ? "integer" : type == KV_AXIS_REAL ? "real" : "string", axis);
  return i;
}

long long kv_case_int(const kv_case *c, const char *axis) { return c->ival[axis_or_die(c, axis, KV_AXIS_INT)]; }

double kv_case_real(const kv_case *c, const char *axis) { return c->rval[axis_or_die(c, axis, KV_AXIS_REAL)]; }

const char *kv_case_str(const kv_case *c, const char *axis) { return c->sval[axis_or_die(c, axis, KV_AXIS_STR)]; }

void kv_case_describe(const kv_case *c, char *buf, size_t n) {
  const kv_family *f = c->fp->family;
  size_t used = (size_t)snprintf(buf, n, "%s[cell %zu]", c->fp->name[0] ? c->fp->name : f->name, c->cell);
  for (int a = 0; f->axes[a].name && used < n; a++) {
    if (f->axes[a].type == KV_AXIS_STR)
      used += (size_t)snprintf(buf + used, n - used, " %s=%s", f->axes[a].name, c->sval[a]);
    else if (f->axes[a].type == KV_AXIS_REAL)
      used += (size_t)snprintf(buf + used, n - used, " %s=%.17g", f->axes[a].name, c->rval[a]);
    else
      used += (size_t)snprintf(buf + used, n - used, " %s=%lld", f->axes[a].name, c->ival[a]);
  }
}
