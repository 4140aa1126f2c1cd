/* estimate.c - the wall time a case takes, from its FLOP and byte counts and the [run]
 * settings: the timed repetitions (warm-up, then repetitions until the stop rule), the fp64
 * reference (sampled rows above cpu_ref_budget) and the per-element work around them
 * (input generation, error statistics, fingerprint). It balances split mode, drives the
 * ETA, and sums up in --dry-run to a wall time a Slurm --time can be picked from. The
 * rates are constants, the same on every rank and in every run (split mode's assignment
 * must not change between a run and its --resume):
 * - cpu backend: measured with kval on a 2-core AMD EPYC VM (one rank per core), emulated
 *   kernels per family and accumulator, the CPU fp64 references, about 6 ns per checked
 *   element. --dry-run scales them by what one probe case per family measures on the CPU
 *   at hand (src/run/calibrate.c); tests/system/estimate_test.py checks the scaled sum
 *   against measured runs (+-30 %).
 * - cuda backend: fitted to the per-case phase times of an H200 run (below); the tests check
 *   the sums for default.deck, fleet.deck and health.deck against their measured H200 wall
 *   times. */
#include "input/estimate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"

typedef struct {
  const char *family;
  double cpu_emu[3];  /* FLOP/s of the emulation: fp32 storage, 16-bit storage, reduced accumulator */
  double cpu_ref;     /* FLOP/s (ref_flops) of the fp64 CPU reference */
  double gpu_flops;   /* FLOP/s of the kernel (fp32 accumulation; half with a reduced one) */
  double gpu_ref;     /* FLOP/s of the fp64 GPU reference on the H200 */
  double host_ref;    /* FLOP/s of the cross-check's CPU reference on the H200 node, one thread */
} rates;

/* The GPU columns and constants are fitted to the per-case phase times (t_timing,
 * ref_seconds, t_xcheck, ...) of fleet.deck's 592 cases on one H200 (2026-12-01, the tree of
 * e71a301); the cross-check then ran on one thread. Refitted 2026-12-03 to the decks with
 * fa2bwd (jobs/h200_run.sh, rank unbound: 16 host threads): default.deck's 874 cases took
 * 64 s, its main sections 10 - 20 timed repetitions per case (GPU_TYPICAL_REPS), fa2bwd's
 * cross-check, whose key rows need a head's statistics computed on every thread
 * (fa2bwd_cpu_ref.c), 1.0 s (its host_ref is that of 16 threads). Refitted again the same
 * day once every case's cost was zeroed before its family filled it in (kv_case_cost: an
 * uninitialised ref_row_flops had sized the cross-checks of gemm and decode at random):
 * default.deck 53 s, its cross-checks of gemm 4.5 s and of decode 1.3 s on the 16 threads of
 * the node (host_ref of gemm and decode fitted to them). The cross-checks of fa2 and the
 * norms count one thread, so the estimate errs long, the side a Slurm --time can take. */
static const rates table[] = {
    {"fa2", {6.4e9, 6.4e9, 4.1e9}, 2.1e9, 3.5e14, 2.7e13, 2.5e9},
    {"gemm", {7.6e9, 7.6e9, 5.1e9}, 7.7e9, 5.0e14, 5.4e13, 1.4e10}, /* host_ref: 16 threads */
    {"layernorm", {2.7e9, 1.3e9, 0.4e9}, 1.35e9, 1.0e14, 1e13, 1.6e9},
    {"rmsnorm", {1.5e9, 0.83e9, 0.25e9}, 0.8e9, 1.0e14, 1e13, 0.95e9},
    {"decode", {2e9, 2e9, 1e9}, 1e9, 1e14, 7.8e11, 6.6e9}, /* host_ref: 16 threads */
    {"fa2bwd", {1.5e9, 1.5e9, 1e9}, 1e9, 2e14, 1.55e13, 5.3e10}, /* host_ref: 16 threads (see above) */
    {NULL, {2e9, 2e9, 1e9}, 1e9, 1e14, 1e13, 1e9}, /* any other family */
};

#define GPU_BYTES_PER_S 3.5e12  /* H200 HBM3e as kval's kernels reach it */
#define GPU_REP_OVERHEAD 4.5e-5 /* L2 flush and event timing per repetition */
#define GPU_CASE_OVERHEAD 4e-3  /* allocation, launches, synchronisation, the cross-check's set-up */
#define GPU_S_PER_ELEMENT 5.4e-10 /* per output element: generation, device statistics, fingerprint */
#define GPU_HOST_BYTES_PER_S 1.55e10 /* the cross-check's downloads of inputs and output rows (page-locked) */
#define CPU_CASE_OVERHEAD 2e-3
#define CPU_NS_PER_CHECKED 6e-9 /* generation, error statistics and fingerprint per element */
#define CPU_TYPICAL_REPS 20     /* a quiet CPU meets rse_target 0.5 % after 5 - 25 repetitions */
#define GPU_TYPICAL_REPS 30     /* default.deck on an H200: 10 - 20 per large case, ~50 per small one */
#define VERIFY_LAUNCHES 1       /* after the timed ones: the launch whose poisoned outputs are judged */

static const rates *rates_of(const char *family) {
  int i = 0;
  while (table[i].family && strcmp(table[i].family, family) != 0) i++;
  return &table[i];
}

/* Repetitions of the timing loop for kernel time t: the stop rule's typical count, never
 * below min_reps nor above max_reps, and no more than fit in time_cap (at least one). */
static double timed_reps(const kv_run_settings *rs, double t, int typical) {
  double reps = rs->rse_target > 0 ? (typical > rs->min_reps ? typical : rs->min_reps) : rs->max_reps;
  if (reps > rs->max_reps) reps = rs->max_reps;
  double fit = t > 0 ? ceil(rs->time_cap / t) : reps;
  if (fit < 1) fit = 1;
  return reps < fit ? reps : fit;
}

double kv_estimate_case(const kv_case *c, const kv_run_settings *rs, int gpu) {
  kv_cost cost;
  kv_case_cost(c, &cost);
  const rates *r = rates_of(c->fp->family->name);
  int reduced = c->prec.accum != KV_FP32;
  double rows = cost.rows ? (double)cost.rows : 1.0, ref_share = 1.0;
  double ref_cpu = cost.ref_flops; /* operations of the CPU reference of the cpu backend */
  if (cost.ref_flops > rs->cpu_ref_budget && rs->sample_rows < rows) {
    ref_share = rs->sample_rows / rows;
    ref_cpu = fmin(cost.ref_flops, rs->sample_rows * kv_cost_row_flops(&cost));
  }
  double checked = ref_share * rows * (double)cost.row_len;
  if (!gpu) {
    double t = cost.flops / r->cpu_emu[reduced ? 2 : c->prec.storage == KV_FP32 ? 0 : 1];
    double launches = rs->warmup + timed_reps(rs, t, CPU_TYPICAL_REPS) + VERIFY_LAUNCHES;
    return CPU_CASE_OVERHEAD + launches * t +
           ref_cpu / r->cpu_ref + CPU_NS_PER_CHECKED * checked;
  }
  double t = fmax(cost.flops / (r->gpu_flops / (reduced ? 2.0 : 1.0)), cost.bytes / GPU_BYTES_PER_S) + 1e-5;
  /* The CPU reference of the cross-check (at its floor, the floor rows cost about two rows)
   * runs on a host thread beside the timing loop and the GPU reference (xcheck.c): the case
   * waits for the longer of the two. */
  const double cpu_xcheck = (double)kv_xcheck_row_count(&cost, rs->cpu_ref_budget) * kv_cost_row_flops(&cost) /
                            r->host_ref;
  double launches = rs->warmup + timed_reps(rs, t, GPU_TYPICAL_REPS) + VERIFY_LAUNCHES;
  const double device = launches * (t + GPU_REP_OVERHEAD) + cost.ref_flops / r->gpu_ref;
  return GPU_CASE_OVERHEAD + cost.bytes / GPU_HOST_BYTES_PER_S + fmax(device, cpu_xcheck) +
         GPU_S_PER_ELEMENT * (double)cost.rows * (double)cost.row_len;
}

/* GPU: MPI and CUDA start-up and the ceilings (jobs/healthcheck.sh ran health.deck in 5.6 - 7.7 s in all). */
double kv_estimate_startup(int gpu) { return gpu ? 2.5 : 0.4; }

const char *kv_format_seconds(double s, char *buf, size_t n) {
  if (!(s >= 0) || s > 1e9) {
    snprintf(buf, n, "unknown");
  } else if (s < 10) {
    snprintf(buf, n, "%.1f s", s);
  } else if (s < 90) {
    snprintf(buf, n, "%.0f s", s);
  } else if (s < 5400) {
    long t = lround(s);
    snprintf(buf, n, "%ld min %02ld s", t / 60, t % 60);
  } else {
    long t = lround(s / 60);
    snprintf(buf, n, "%ld h %02ld min", t / 60, t % 60);
  }
  return buf;
}

const char *kv_slurm_time(double s, char *buf, size_t n) {
  long t = (long)ceil(s / 60.0) * 60; /* whole minutes, rounded up */
  if (t < 60) t = 60;
  long d = t / 86400, h = t % 86400 / 3600, m = t % 3600 / 60;
  if (d) snprintf(buf, n, "%ld-%02ld:%02ld:00", d, h, m);
  else snprintf(buf, n, "%02ld:%02ld:00", h, m);
  return buf;
}
