/* calibrate.c - the cpu backend's estimates for this machine. The cost model's rates
 * (estimate.c) were measured on one 2-core VM; a slower CPU, or one whose cores are shared
 * (SMT siblings, a loaded node), takes longer for the same work, and a Slurm --time picked
 * from the model would then be too short. So --dry-run runs, per family of the plan, the
 * largest of its cases that the model puts under PROBE_TARGET (or its smallest, if that is
 * under PROBE_MAX), through the backend's own run_case with fixed repetitions, measures its
 * CPU time and scales that family's estimates by measured / estimated (the median of up to
 * PROBE_RUNS probes after one that warms up). A family without a probe gets the geometric
 * mean of the others' scales. Split mode's assignment keeps the model's constant rates (every rank and every
 * --resume must compute the same one); only the printed estimates are scaled. */
#include "run/calibrate.h"

#include <math.h>
#include <stdio.h>

#include "core/timing.h"
#include "input/estimate.h"

#define PROBE_TARGET 0.02 /* seconds: the model's estimate of a preferred probe case */
#define PROBE_MAX 0.5     /* seconds: no probe of a family whose smallest case is estimated longer */
#define PROBE_RUNS 3
#define PROBE_BUDGET 0.15 /* seconds of probing per family: more probes while within it */

/* The plan case of family f to probe under settings rs, or -1. */
static long probe_case(const kv_plan *p, const kv_family *f, const kv_run_settings *rs) {
  long best = -1, smallest = -1;
  double best_e = 0.0, smallest_e = INFINITY;
  for (size_t i = 0; i < p->n_cases; i++) {
    if (p->cases[i].fp->family != f) continue;
    double e = kv_estimate_case(&p->cases[i], rs, 0);
    if (e <= PROBE_TARGET && e > best_e) best = (long)i, best_e = e;
    if (e < smallest_e) smallest = (long)i, smallest_e = e;
  }
  return best >= 0 ? best : smallest_e <= PROBE_MAX ? smallest : -1;
}

/* measured / estimated CPU time of case c under rs (NAN when the backend failed it). */
static double probe_scale(const kv_backend *be, const kv_case *c, const kv_run_settings *rs) {
  double ratio[PROBE_RUNS], spent = 0.0;
  int n = -1; /* the first run warms up (page faults of fresh buffers, cold caches) and is not counted */
  const double est = kv_estimate_case(c, rs, 0);
  while (n < PROBE_RUNS && (n <= 0 || spent < PROBE_BUDGET)) {
    kv_case_data d;
    kv_case_data_init(&d);
    char msg[KV_MESSAGE_LEN] = "";
    const double t0 = kv_cputime();
    kv_status st = be->run_case(c, rs, &d, msg, sizeof msg);
    const double t = kv_cputime() - t0;
    kv_case_data_free(&d);
    if (st != KV_OK || !(t > 0)) return NAN;
    if (n >= 0) spent += t, ratio[n] = t / est;
    n++;
  }
  kv_timing summary;
  kv_timing_summarize(ratio, n, &summary);
  return summary.median;
}

/* The first section of the plan with the family of section f (f itself, or an earlier one). */
static int first_section(const kv_plan *p, int f) {
  int g = 0;
  while (p->fam[g].family != p->fam[f].family) g++;
  return g;
}

void kv_calibrate(const kv_backend *be, const kv_plan *p, kv_estimate_scale *s) {
  for (int i = 0; i < KV_MAX_FAMILIES; i++) s->scale[i] = 1.0;
  int gpu = p->n_fam > 0 && p->fam[0].on_gpu;
  if (gpu || !be) {
    snprintf(s->rates, sizeof s->rates, "H200 rates");
    return;
  }
  kv_run_settings rs = p->run;
  rs.warmup = 0;
  rs.min_reps = rs.max_reps = 3;
  rs.rse_target = 0.0;
  double fam_scale[KV_MAX_FAMILIES], log_sum = 0.0;
  int probed = 0;
  for (int f = 0; f < p->n_fam; f++) {
    fam_scale[f] = NAN;
    if (first_section(p, f) < f) { /* the family was probed through an earlier section */
      fam_scale[f] = fam_scale[first_section(p, f)];
      continue;
    }
    long ci = probe_case(p, p->fam[f].family, &rs);
    if (ci < 0) continue;
    fam_scale[f] = probe_scale(be, &p->cases[ci], &rs);
    if (isfinite(fam_scale[f]) && fam_scale[f] > 0) log_sum += log(fam_scale[f]), probed++;
    else fam_scale[f] = NAN;
  }
  double mean = probed ? exp(log_sum / probed) : 1.0;
  for (int f = 0; f < p->n_fam; f++) s->scale[f] = isfinite(fam_scale[f]) ? fam_scale[f] : mean;
  if (probed) {
    int n = snprintf(s->rates, sizeof s->rates, "cpu backend rates measured on this CPU:");
    for (int f = 0; f < p->n_fam && n > 0 && (size_t)n < sizeof s->rates; f++)
      if (first_section(p, f) == f)
        n += snprintf(s->rates + n, sizeof s->rates - (size_t)n, " %s x %.2f%s", p->fam[f].family->name,
                      s->scale[f], isfinite(fam_scale[f]) ? "" : " (not probed)");
  } else
    snprintf(s->rates, sizeof s->rates, "cpu backend rates, not measured on this CPU (no case small enough to probe)");
}
