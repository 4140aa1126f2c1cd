/* plan_assign.c - which rank runs which case (fleet: every rank every case; split: greedy
 * longest-processing-time balancing by estimated cost, deterministic on every rank) and the
 * --dry-run description of a plan. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "input/estimate.h"
#include "input/plan.h"

typedef struct {
  double est;
  size_t index;
} cost_item;

/* Longest first; equal costs in plan order, so every rank computes the same assignment. */
static int cmp_cost(const void *x, const void *y) {
  const cost_item *a = x, *b = y;
  if (a->est != b->est) return a->est > b->est ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Min-heap of ranks ordered by (load, rank). */
typedef struct {
  double *load;
  int *heap, n;
} rank_heap;

static int heap_less(const rank_heap *h, int a, int b) {
  return h->load[a] < h->load[b] || (h->load[a] == h->load[b] && a < b);
}

static void heap_sift_down(rank_heap *h, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && heap_less(h, h->heap[l], h->heap[m])) m = l;
    if (r < h->n && heap_less(h, h->heap[r], h->heap[m])) m = r;
    if (m == i) return;
    int t = h->heap[i];
    h->heap[i] = h->heap[m];
    h->heap[m] = t;
    i = m;
  }
}

/* Split mode: the rank of every case (greedy LPT: each case, longest first, onto the least
 * loaded rank, ties to the lower rank). `load` (nranks) receives each rank's total. */
static int *split_owners(const kv_plan *p, int nranks, double *load) {
  cost_item *items = KV_MALLOC((p->n_cases ? p->n_cases : 1) * sizeof *items);
  int *owner = KV_MALLOC((p->n_cases ? p->n_cases : 1) * sizeof *owner);
  rank_heap h = {load, KV_MALLOC((size_t)nranks * sizeof(int)), nranks};
  if (!items || !owner || !h.heap) KV_FATAL("out of memory assigning %zu cases to %d ranks", p->n_cases, nranks);
  for (size_t i = 0; i < p->n_cases; i++) items[i] = (cost_item){p->cases[i].est_seconds, i};
  qsort(items, p->n_cases, sizeof *items, cmp_cost);
  for (int r = 0; r < nranks; r++) {
    load[r] = 0.0;
    h.heap[r] = r; /* equal loads: rank order is already a valid heap */
  }
  for (size_t i = 0; i < p->n_cases; i++) {
    int r = h.heap[0];
    owner[items[i].index] = r;
    load[r] += items[i].est;
    heap_sift_down(&h, 0);
  }
  free(items);
  free(h.heap);
  return owner;
}

size_t kv_plan_rank_cases(const kv_plan *p, int rank, int nranks, size_t **out) {
  *out = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks || p->n_cases == 0) return 0;
  size_t *list = KV_MALLOC(p->n_cases * sizeof *list), n = 0;
  if (!list) KV_FATAL("out of memory listing %zu cases", p->n_cases);
  if (p->mode == KV_MODE_FLEET) {
    for (size_t i = 0; i < p->n_cases; i++) list[n++] = i;
  } else {
    double *load = KV_MALLOC((size_t)nranks * sizeof *load);
    if (!load) KV_FATAL("out of memory assigning cases to %d ranks", nranks);
    int *owner = split_owners(p, nranks, load);
    for (size_t i = 0; i < p->n_cases; i++)
      if (owner[i] == rank) list[n++] = i;
    free(owner);
    free(load);
  }
  *out = list;
  return n;
}

/* Distinct skip reasons of a family and how many cells each covers. */
#define MAX_REASONS 32
typedef struct {
  const char *why[MAX_REASONS];
  size_t count[MAX_REASONS];
  int n;
  size_t other;
} reason_counts;

static void count_reasons(const kv_family_plan *fp, reason_counts *rc) {
  memset(rc, 0, sizeof *rc);
  for (size_t cell = 0; cell < fp->n_cells; cell++) {
    const char *why = fp->skip_reason[cell];
    if (!why) continue;
    int k = 0;
    while (k < rc->n && rc->why[k] != why && strcmp(rc->why[k], why) != 0) k++;
    if (k == rc->n && rc->n == MAX_REASONS) {
      rc->other++;
      continue;
    }
    if (k == rc->n) rc->why[rc->n++] = why;
    rc->count[k]++;
  }
}

#define PRINT_VALUES 16 /* values listed per axis */

static void print_family(const kv_family_plan *fp, FILE *out) {
  const kv_family *f = fp->family;
  fprintf(out, "[%s] %zu cells = ", fp->name, fp->n_cells);
  for (int i = 0; i < fp->n_axes; i++) fprintf(out, "%s%d %s", i ? " x " : "", fp->axis[i].n, f->axes[i].name);
  fprintf(out, ": %zu valid, %zu skipped\n", fp->n_valid, fp->n_skipped);
  for (int i = 0; i < fp->n_axes; i++) {
    const kv_axis_values *av = &fp->axis[i];
    fprintf(out, "  %-12s", f->axes[i].name);
    for (int k = 0; k < av->n && k < PRINT_VALUES; k++) {
      if (f->axes[i].type == KV_AXIS_INT) fprintf(out, " %lld", av->ints[k]);
      else if (f->axes[i].type == KV_AXIS_REAL) fprintf(out, " %.17g", av->reals[k]);
      else fprintf(out, " %s", av->strs[k]);
    }
    if (av->n > PRINT_VALUES) fprintf(out, " ... (%d values)", av->n);
    fprintf(out, "\n");
  }
  for (int k = 0; f->params && f->params[k].name; k++)
    fprintf(out, "  %-12s %g (param)\n", f->params[k].name, fp->param[k]);
  reason_counts rc;
  count_reasons(fp, &rc);
  for (int k = 0; k < rc.n; k++) fprintf(out, "  skipped %zu: %s\n", rc.count[k], rc.why[k]);
  if (rc.other) fprintf(out, "  skipped %zu: other reasons\n", rc.other);
}

/* A case's estimate as printed: the model's, times its family section's measured scale. */
static double case_seconds(const kv_case *c, const double *scale) {
  return c->est_seconds * (scale ? scale[c->fp->slot] : 1.0);
}

void kv_plan_print(const kv_plan *p, int nranks, const double *scale, const char *rates, FILE *out) {
  const kv_run_settings *rs = &p->run;
  fprintf(out, "plan: mode %s, %d rank%s, seed %llu, %zu valid cases\n",
          p->mode == KV_MODE_FLEET ? "fleet" : "split", nranks, nranks == 1 ? "" : "s",
          (unsigned long long)rs->seed, p->n_cases);
  fprintf(out,
          "run: warmup %d, reps %d..%d, rse_target %g, time_cap %g s, l2_flush %s, cpu_ref_budget %g, "
          "sample_rows %d, flush_interval %g s",
          rs->warmup, rs->min_reps, rs->max_reps, rs->rse_target, rs->time_cap, rs->l2_flush ? "flush" : "warm",
          rs->cpu_ref_budget, rs->sample_rows, rs->flush_interval);
  if (rs->has_tol_override)
    fprintf(out, ", tolerance c1 %g c2 %g abs_floor %g rel_floor %g", rs->tol_override.c1, rs->tol_override.c2,
            rs->tol_override.abs_floor, rs->tol_override.rel_floor);
  fprintf(out, "\n");
  for (int f = 0; f < p->n_fam; f++) print_family(&p->fam[f], out);
  if (nranks < 1) return;
  double *load = KV_CALLOC((size_t)nranks, sizeof *load);
  size_t *count = KV_CALLOC((size_t)nranks, sizeof *count);
  if (!load || !count) KV_FATAL("out of memory printing the plan for %d ranks", nranks);
  if (p->mode == KV_MODE_FLEET) {
    double total = 0.0;
    for (size_t i = 0; i < p->n_cases; i++) total += case_seconds(&p->cases[i], scale);
    for (int r = 0; r < nranks; r++) load[r] = total, count[r] = p->n_cases;
  } else if (p->n_cases) {
    int *owner = split_owners(p, nranks, load);
    for (int r = 0; r < nranks; r++) load[r] = 0.0;
    for (size_t i = 0; i < p->n_cases; i++) count[owner[i]]++, load[owner[i]] += case_seconds(&p->cases[i], scale);
    free(owner);
  }
  double longest = 0.0, sum = 0.0;
  size_t runs = 0;
  char t1[32], t2[32], t3[32];
  for (int r = 0; r < nranks; r++) {
    fprintf(out, "rank %d: %zu cases, estimated %s\n", r, count[r], kv_format_seconds(load[r], t1, sizeof t1));
    if (load[r] > longest) longest = load[r];
    sum += load[r];
    runs += count[r];
  }
  int gpu = p->n_fam > 0 && p->fam[0].on_gpu;
  double wall = kv_estimate_startup(gpu) + longest;
  fprintf(out, "total: %zu case runs on %d rank%s, %s of case time, longest rank %s\n", runs, nranks,
          nranks == 1 ? "" : "s", kv_format_seconds(sum, t1, sizeof t1), kv_format_seconds(longest, t2, sizeof t2));
  fprintf(out, "estimated wall time: %s (%.2f s at %s, one core or GPU per rank, nothing else running); Slurm: "
          "--time=%s (+30 %%)\n", kv_format_seconds(wall, t1, sizeof t1), wall,
          rates ? rates : gpu ? "H200 rates" : "cpu backend rates", kv_slurm_time(1.3 * wall, t3, sizeof t3));
  free(load);
  free(count);
}
