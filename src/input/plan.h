/* plan.h - the sweep plan: each deck section expanded into its family's dense grid of cases
 * (the cartesian product of its axes), invalid combinations marked skipped with a reason,
 * [run] settings, and the assignment of cases to ranks (fleet: every rank runs every case;
 * split: each case once, balanced by estimated cost). */
#ifndef KVAL_PLAN_H
#define KVAL_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "input/deck.h"
#include "family.h"
#include "numerics/tolerance.h"

#define KV_MAX_FAMILIES 64 /* family sections of one plan ([fa2], [fa2.tails], ...) */
#define KV_SECTION_NAME_LEN 16 /* a family section's name, its HDF5 group: at most 15 characters */

typedef enum { KV_MODE_FLEET = 0, KV_MODE_SPLIT = 1 } kv_mode;

typedef struct {
  int n;
  long long *ints; /* INT axes */
  double *reals;   /* REAL axes */
  char **strs;     /* STR axes */
} kv_axis_values;

typedef struct kv_family_plan {
  const kv_family *family;
  char name[KV_SECTION_NAME_LEN]; /* its deck section: the family's name, or FAMILY.NAME */
  int family_index;              /* index in kv_families */
  int slot;                      /* index in kv_plan.fam: the family of a kv_result */
  int n_axes;
  kv_axis_values axis[KV_MAX_AXES];
  double param[KV_MAX_PARAMS];   /* values of the family's params, in declaration order */
  size_t n_cells;                /* product of the axis lengths */
  const char **skip_reason;      /* per cell: NULL when valid, else why it is skipped */
  size_t n_valid, n_skipped;
  const struct kv_run_settings_s *run; /* the plan's [run] settings and backend, for estimates */
  int on_gpu;
} kv_family_plan;

/* Settings of the [run] section (keys documented in inputs/README.md). */
typedef struct kv_run_settings_s {
  uint64_t seed;
  int warmup;             /* untimed launches before timing */
  int min_reps, max_reps; /* repetition bounds of the timing loop */
  double rse_target;      /* stop when the relative standard error of the median is below */
  double time_cap;        /* seconds of timing per case */
  int l2_flush;           /* 1: flush L2 between repetitions (default), 0: warm */
  double cpu_ref_budget;  /* fp64 FLOPs a CPU reference may spend before it samples rows */
  int sample_rows;        /* rows in a sampled CPU reference */
  int has_tol_override;
  kv_tolerance tol_override; /* c1, c2, abs_floor, rel_floor from [run] when given */
  double flush_interval;  /* seconds between file flushes */
  double watchdog;        /* seconds: the floor of the deadline of every launch, reference and statistics pass */
  double bias_limit;      /* ulps: the rounding-bias verdict's threshold (0: the bias is recorded, not judged) */
  double stall_timeout;   /* rank 0 names a rank silent this long past its case's estimate; 0: never */
  int stall_abort;        /* on_stall: 1 abort the job, 0 wait (default) */
} kv_run_settings;

typedef struct {
  kv_family_plan fam[KV_MAX_FAMILIES];
  int n_fam;
  kv_run_settings run;
  kv_mode mode;
  kv_case *cases;  /* every valid case, family by family, cell order */
  size_t n_cases;
} kv_plan;

/* The [run] settings of a deck without a [run] section. */
void kv_plan_run_defaults(kv_run_settings *rs);

/* The cost of a case: every field zero (no floor rows, no ref_row_flops) unless its family's
 * cost() sets it. The one way to a case's kv_cost. */
void kv_case_cost(const kv_case *c, kv_cost *out);

/* Build the plan from a parsed deck. `only` is a comma-separated family list or NULL;
 * `seed_override` replaces [run] seed when nonzero-flagged. Errors name file:line:col. */
int kv_plan_build(const kv_deck *d, const char *only, const char *backend, kv_mode mode,
                  int have_seed, uint64_t seed, kv_plan *p, char *err, size_t errlen);

/* Indices into p->cases of the cases one rank runs, in run order (caller frees). */
size_t kv_plan_rank_cases(const kv_plan *p, int rank, int nranks, size_t **out);

/* Fill a case's axis values, precision and key from its family plan and cell. */
void kv_plan_case_at(const kv_family_plan *fp, size_t cell, uint64_t seed, kv_case *c);

/* Print the plan (cases per rank, estimated cost, skipped combinations) for --dry-run.
 * scale (per family section, may be NULL: 1) multiplies the estimates; rates (may be NULL)
 * says how they were made. */
void kv_plan_print(const kv_plan *p, int nranks, const double *scale, const char *rates, FILE *out);
/* The kernel paths the plan's cases reach, per family of the plan, against every path its
 * dispatcher can take (kv_family.path, path_tag); verbose: first each case with its path
 * (plan_paths.c). */
void kv_plan_print_paths(const kv_plan *p, int verbose, FILE *out);

void kv_plan_free(kv_plan *p);

#endif
