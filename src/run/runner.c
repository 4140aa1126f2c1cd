/* runner.c - the common driver of a rank: for each of its cases, ask the backend for the
 * output, the reference (or the error statistics it computed on the device), timings and its
 * own findings, apply --inject faults, have the case judged (judge.c), fingerprint the
 * output, stream the row to the output, print progress and failures, and where rank 0's time
 * went (its cases' phases and the writes); at the end compare fingerprints across ranks (fleet mode). */
#include "run/runner.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input/estimate.h"
#include "run/fleet.h"
#include "run/inject.h"
#include "run/judge.h"
#include "run/progress.h"
#include "numerics/errstats.h"
#include "numerics/fingerprint.h"
#include "numerics/rng.h"
#include "core/timing.h"

static volatile sig_atomic_t stop_signal;
static int announce_signal; /* rank 0 says once that it is stopping */

/* The first SIGINT/SIGTERM asks for a clean stop; SA_RESETHAND restores the default action,
 * so a second one ends the process at once (the file keeps every result written so far). */
static void on_signal(int sig) {
  static const char msg[] = "kval: signal received: finishing the current case, then flushing and closing the file "
                            "(send it again to stop at once)\n";
  if (!stop_signal && announce_signal) {
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
  }
  stop_signal = sig;
}

void kv_runner_install_signals(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  announce_signal = rank == 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static uint64_t output_fingerprint(const kv_case_data *d) {
  uint64_t fp = kv_fingerprint(d->out, d->out_count * kv_dtype_size(d->out_type));
  if (d->aux) fp = kv_mix64(fp ^ kv_fingerprint(d->aux, d->aux_count * sizeof *d->aux));
  return fp;
}

/* Run plan case ci on this rank and fill r. */
static void run_case(const kv_plan *p, size_t ci, const kv_backend *be, const kv_rank_info *info,
                     const kv_inject *inj, int n_inj, int rank, kv_result *r) {
  const kv_case *c = &p->cases[ci];
  kv_result_init(r, rank, c->fp->slot, c->cell);
  kv_cost cost;
  kv_case_cost(c, &cost);
  double free_bytes = be->free_bytes();
  if (cost.device_bytes > free_bytes) {
    r->status = KV_SKIPPED;
    snprintf(r->message, sizeof r->message, "needs %.2f GiB of memory, %.2f GiB free", cost.device_bytes / 1073741824.0,
             free_bytes / 1073741824.0);
    return;
  }
  kv_case_data d;
  kv_case_data_init(&d);
  kv_inject_requests(inj, n_inj, rank, ci, &d);
  char msg[KV_MESSAGE_LEN] = "";
  const double start = kv_wtime();
  int ok = be->run_case(c, &p->run, &d, msg, sizeof msg) == KV_OK;
  double mark = kv_wtime();
  r->phases = d.phases;
  if (ok) kv_inject_apply(inj, n_inj, rank, ci, &d);
  if (!ok || kv_fatal_pending()) {
    r->status = KV_ERROR;
    snprintf(r->message, sizeof r->message, "%s",
             kv_fatal_pending() ? kv_fatal_pending() : msg[0] ? msg : "backend error (see the log)");
    r->phases.total = mark - start;
    kv_case_data_free(&d);
    return;
  }
  if (kv_judge_case(c, &cost, &p->run, info, &d, r) != KV_OK) {
    r->status = KV_ERROR;
    snprintf(r->message, sizeof r->message, "error statistics failed (out of memory?)");
  }
  r->fingerprint = output_fingerprint(&d);
  r->phases.judge = kv_lap(&mark);
  r->phases.total = mark - start;
  kv_case_data_free(&d);
}

static void report_failure(const kv_case *c, const kv_result *r, const kv_rank_info *info) {
  char what[512];
  kv_case_describe(c, what, sizeof what);
  fprintf(stderr, "kval: %s rank %d host %s (%s): %s: max_bound_ratio %.3g, max_ulp %.3g, nan %lld, inf %lld%s%s\n",
          kv_status_name((kv_case_status)r->status), r->rank, info->host, info->uuid, what, r->stats.max_bound_ratio,
          r->stats.max_ulp, (long long)r->stats.n_nan, (long long)r->stats.n_inf, r->message[0] ? ": " : "", r->message);
}

static void count_status(kv_run_summary *sum, int status) {
  switch (status) {
    case KV_PASS: sum->n_pass++; break;
    case KV_INACCURATE: sum->n_inaccurate++; break;
    case KV_SKIPPED: sum->n_skipped++; break;
    case KV_ERROR: sum->n_error++; break;
    default: sum->n_fail++; break;
  }
}

typedef struct {
  double start, last_print, est_total, est_done;
  size_t done, total;
} progress;

/* Where a rank's time went: the sums of its cases' phases, the references, and the rounds'
 * writes (with their waits for the other ranks). */
typedef struct {
  kv_phases sum;
  double reference, writes;
} time_spent;

static void add_phase(double *sum, double t) {
  if (isfinite(t)) *sum += t;
}

static void spend(time_spent *ts, const kv_result *r) {
#define ADD(X, member, dataset, description) add_phase(&ts->sum.member, r->phases.member);
  KV_PHASES(ADD, )
#undef ADD
  add_phase(&ts->reference, r->ref_seconds);
}

static void print_time_spent(const time_spent *ts, double wall) {
  const kv_phases *p = &ts->sum;
  fprintf(stderr,
          "kval: rank 0 time: %.1f s: cases %.1f s (setup %.1f, timing %.1f, checks %.1f, reference %.1f, "
          "statistics %.1f, cross-checks %.1f, judge %.1f), writes and waits %.1f s\n",
          wall, p->total, p->setup, p->timing, p->checks, ts->reference, p->stats, p->xcheck, p->judge, ts->writes);
}

static void print_progress(progress *pg, int force) {
  double now = kv_wtime();
  if (!force && now - pg->last_print < 5.0) return;
  pg->last_print = now;
  double elapsed = now - pg->start;
  /* The estimate of what is left, scaled by how the estimate of what is done compared with
   * the time it took (within 0.1x - 10x: early cases say little about the later ones). */
  double pace = pg->est_done > 0 ? elapsed / pg->est_done : 1.0;
  pace = pace < 0.1 ? 0.1 : pace > 10.0 ? 10.0 : pace;
  char t_elapsed[32], t_eta[32];
  fprintf(stderr, "kval: rank 0: %zu/%zu cases done, %s elapsed, ETA %s\n", pg->done, pg->total,
          kv_format_seconds(elapsed, t_elapsed, sizeof t_elapsed),
          kv_format_seconds((pg->est_total - pg->est_done) * pace, t_eta, sizeof t_eta));
}

kv_status kv_runner_run(const kv_plan *p, const kv_options *opt, const kv_backend *be, const kv_rank_info *info,
                        kv_output *o, const unsigned char *done, MPI_Comm comm, kv_run_summary *sum) {
  int rank, nranks;
  KV_TRY(CHECK_MPI(MPI_Comm_rank(comm, &rank)));
  KV_TRY(CHECK_MPI(MPI_Comm_size(comm, &nranks)));
  memset(sum, 0, sizeof *sum);
  kv_inject inj[KV_MAX_INJECTS];
  int n_inj = 0;
  for (int i = 0; i < opt->n_injects; i++) {
    char err[256];
    if (kv_inject_parse(opt->injects[i], &inj[n_inj], err, sizeof err) != 0) KV_FATAL("%s", err);
    n_inj++;
  }
  /* Every rank knows every rank's pending cases, so all agree on the number of rounds. */
  size_t *mine = NULL, n_mine = 0, rounds = 0;
  for (int r = 0; r < nranks; r++) {
    size_t *idx = NULL;
    size_t n = kv_plan_rank_cases(p, r, nranks, &idx), pending = 0;
    for (size_t i = 0; i < n; i++) {
      if (done && done[(size_t)r * p->n_cases + idx[i]]) continue;
      idx[pending++] = idx[i];
    }
    if (pending > rounds) rounds = pending;
    if (r == rank) {
      mine = idx;
      n_mine = pending;
    } else {
      free(idx);
    }
  }
  signed char *status = KV_MALLOC(p->n_cases + 1);
  uint64_t *fps = KV_CALLOC(p->n_cases + 1, sizeof *fps);
  KV_TRY(CHECK_ALLOC(status) || CHECK_ALLOC(fps));
  memset(status, KV_NOT_RUN, p->n_cases + 1);
  if (done) {
    /* --resume: the kept results count in the summary, the exit code and the comparison. */
    if (kv_output_kept(o, done, status, fps) != KV_OK) {
      free(mine);
      free(status);
      free(fps);
      return KV_ERR;
    }
    size_t kept_all = 0;
    for (size_t i = 0; i < (size_t)nranks * p->n_cases; i++) kept_all += done[i] != 0;
    for (size_t i = 0; i < p->n_cases; i++)
      if (done[(size_t)rank * p->n_cases + i]) count_status(sum, status[i]);
    if (rank == 0 && !opt->quiet)
      fprintf(stderr, "kval: --resume: %zu results kept from the file; %zu cases to run on rank 0\n", kept_all, n_mine);
  }
  progress pg = {.start = kv_wtime(), .last_print = kv_wtime(), .total = n_mine};
  time_spent ts;
  memset(&ts, 0, sizeof ts);
  for (size_t i = 0; i < n_mine; i++) pg.est_total += p->cases[mine[i]].est_seconds;
  kv_status st;
  for (size_t round = 0; round < rounds; round++) {
    kv_result r;
    /* After a fatal device error this rank runs no more cases but keeps taking part in the
     * rounds and the final collectives, so nothing is lost and no rank hangs; it ends
     * through the fatal path once the file is closed (app.c). */
    int have = round < n_mine && !stop_signal && !kv_fatal_pending();
    kv_progress_case(have ? (long long)mine[round] : KV_PROGRESS_IDLE); /* rank 0 watches for stalled ranks */
    if (have) {
      size_t ci = mine[round];
      run_case(p, ci, be, info, inj, n_inj, rank, &r);
      kv_output_journal(o, &r); /* durable before it is reported or handed to the writer */
      status[ci] = (signed char)r.status;
      fps[ci] = r.fingerprint;
      count_status(sum, r.status);
      spend(&ts, &r);
      sum->n_run++;
      if (r.status != KV_PASS && r.status != KV_SKIPPED) report_failure(&p->cases[ci], &r, info);
      if (kv_fatal_pending())
        fprintf(stderr, "kval: rank %d (host %s, %s) runs no more cases after a fatal device error: %s\n", rank,
                info->host, info->uuid, kv_fatal_pending());
      pg.done++;
      pg.est_done += p->cases[ci].est_seconds;
    }
    int stop = stop_signal != 0;
    const double w0 = kv_wtime();
    if (kv_output_write(o, have ? &r : NULL, &stop) != KV_OK)
      KV_FATAL("writing results to the output file failed; finished cases up to the last flush are kept");
    ts.writes += kv_wtime() - w0;
    if (rank == 0 && !opt->quiet) print_progress(&pg, 0);
    if (stop) {
      sum->interrupted_by = stop_signal ? stop_signal : SIGTERM;
      break;
    }
  }
  kv_progress_case(KV_PROGRESS_IDLE); /* serial HDF5: rank 0 waits here for the others, watching them */
  if (rank == 0 && !opt->quiet) {
    print_progress(&pg, 1);
    print_time_spent(&ts, kv_wtime() - pg.start);
  }
  free(mine);
  /* A signal may reach some ranks only: agree before the collective comparison. */
  int interrupted = sum->interrupted_by, any_interrupted = 0;
  st = CHECK_MPI(MPI_Allreduce(&interrupted, &any_interrupted, 1, MPI_INT, MPI_MAX, comm));
  if (st == KV_OK && p->mode == KV_MODE_FLEET && !any_interrupted) {
    kv_rank_info *infos = rank == 0 ? KV_MALLOC((size_t)nranks * sizeof *infos) : NULL;
    st = CHECK_MPI(MPI_Gather(info, (int)sizeof *info, MPI_BYTE, infos, (int)sizeof *info, MPI_BYTE, 0, comm));
    kv_fp_case *cmp = NULL;
    long mismatches = st == KV_OK ? kv_fleet_compare(p, status, fps, infos, comm, &cmp) : -1;
    if (mismatches < 0) st = KV_ERR;
    if (st == KV_OK) st = kv_output_fingerprints(o, cmp, rank == 0 ? p->n_cases : 0);
    sum->fingerprint_disagreements = (int)(mismatches > 0 ? mismatches : 0);
    kv_fleet_free(cmp, p->n_cases);
    free(infos);
  }
  free(status);
  free(fps);
  return st;
}
