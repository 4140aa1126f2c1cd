/* app.c - the steps of a kval run, in order: parse options, read the deck on rank 0 and
 * broadcast it, build the plan, pick and initialise the backend (binding the rank to its
 * GPU), create or resume the HDF5 file, run the cases, compare fingerprints, close, and
 * turn the summary into the exit code. Every rank reaches the same decision at each step,
 * so input errors exit 2 everywhere without MPI_Abort. */
#include "app.h"

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "core/escape.h"
#include "input/cli.h"
#include "input/deck.h"
#include "run/inject.h"
#include "run/progress.h"
#include "output/meta.h"
#include "output/metrics.h"
#include "output/output.h"
#include "input/plan.h"
#include "run/calibrate.h"
#include "run/fleet.h"
#include "run/runner.h"
#include "run/selftest.h"

#define ERRLEN 2048

/* A message to stderr with what the user typed in it escaped (core/escape.h). */
static void print_error(const char *msg) {
  static char shown[4096];
  fprintf(stderr, "%s\n", kv_escape(msg, shown, sizeof shown));
}

/* All ranks agree on success: returns 1 when every rank's ok is nonzero. */
static int all_ok(int ok) {
  int all = 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) KV_FATAL("MPI_Allreduce failed");
  return all;
}

static void print_list(void) {
  printf("Kernel families (deck sections):\n");
  for (int i = 0; kv_families[i]; i++) {
    const kv_family *f = kv_families[i];
    printf("  %-10s %s\n", f->name, f->summary);
    for (int a = 0; f->axes[a].name; a++)
      printf("      axis %-10s default: %s\n", f->axes[a].name, f->axes[a].defaults ? f->axes[a].defaults : "(required)");
    for (int k = 0; f->params && f->params[k].name; k++)
      printf("      param %-9s default: %g\n", f->params[k].name, f->params[k].defaults);
  }
  printf("Precisions (storage:accumulator): fp16:fp32 bf16:fp32 fp32:fp32 fp16:fp16 bf16:bf16\n");
  printf("Backends:\n");
  for (int i = 0; kv_backends[i]; i++)
    printf("  %-6s %s%s\n", kv_backends[i]->name, kv_backends[i]->summary,
           kv_backends[i]->available() ? "" : " (not available here)");
}

/* Rank 0 parses the deck file (which names the path and system error of an unreadable
 * file, and rejects NUL bytes) and broadcasts its text, so a deck that only rank 0's node
 * can see still works and every rank parses the same bytes. */
static int read_and_parse_deck(const kv_options *opt, int rank, kv_deck *deck, char *err) {
  long len = -1;
  if (rank == 0 && kv_deck_parse_file(opt->deck_path, deck, err, ERRLEN) == 0) len = (long)strlen(deck->text);
  if (MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS) KV_FATAL("MPI_Bcast failed");
  if (len < 0) return -1;
  int rc = 0;
  if (rank == 0) {
    if (MPI_Bcast(deck->text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) KV_FATAL("MPI_Bcast failed");
  } else {
    char *text = KV_MALLOC((size_t)len + 1);
    if (!text) KV_FATAL("out of memory reading the deck");
    if (MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) KV_FATAL("MPI_Bcast failed");
    text[len] = '\0';
    rc = kv_deck_parse_string(opt->deck_path, text, deck, err, ERRLEN);
    free(text);
  }
  for (int i = 0; rc == 0 && i < opt->n_sets; i++) rc = kv_deck_apply_set(deck, opt->sets[i], err, ERRLEN);
  return rc;
}

/* The backend of --backend, the same on every rank, or NULL with err set and *code the exit
 * code: 2 when this kval was built without it, 3 when it cannot start on this machine. */
/* --dry-run plans for the backend named, or with auto for the one a run would pick here
 * (cuda when a GPU is visible), without starting it. */
static const kv_backend *dry_run_backend(const kv_options *opt) {
  if (strcmp(opt->backend, "auto") != 0) return kv_backend_find(opt->backend);
  const kv_backend *be = kv_backend_select("auto");
  return be && be->available() ? be : kv_backend_find("cpu");
}

static const kv_backend *choose_backend(const kv_options *opt, char *err, int *code) {
  const kv_backend *be = kv_backend_select(opt->backend);
  *code = KV_EXIT_RUNTIME;
  if (!be) {
    int built = kv_backend_find(opt->backend) != NULL;
    snprintf(err, ERRLEN, "kval: --backend %s: %s", opt->backend,
             built ? "not available on this machine" : "this kval was built without it (see --list)");
    if (!built) *code = KV_EXIT_USAGE;
  } else if (!be->available()) {
    snprintf(err, ERRLEN, "kval: --backend %s: not available on this machine (%s)", be->name,
             strcmp(be->name, "cuda") == 0 ? "no GPU visible" : "unavailable");
    be = NULL;
  }
  /* "auto" must resolve to the same backend everywhere: one file, one backend. */
  int mine = 0, lo = 0, hi = 0;
  for (int i = 0; be && kv_backends[i]; i++)
    if (kv_backends[i] == be) mine = i + 1;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (be && lo != hi) {
    snprintf(err, ERRLEN, "kval: --backend %s resolved to different backends on different ranks (some nodes have no GPU); "
             "choose --backend explicitly", opt->backend);
    *code = KV_EXIT_USAGE;
    return NULL;
  }
  if (lo == 0 && be) snprintf(err, ERRLEN, "kval: --backend %s: not available on every rank", be->name);
  return lo == 0 ? NULL : be;
}

/* Every --inject must name a rank of this job and a case that rank runs, or it would
 * silently test nothing. Same answer on every rank (the plan and options are the same). */
static int check_injects(const kv_options *opt, const kv_plan *plan, int nranks, char *err) {
  for (int i = 0; i < opt->n_injects; i++) {
    kv_inject inj;
    if (kv_inject_parse(opt->injects[i], &inj, err, ERRLEN) != 0) return -1;
    if (inj.rank >= nranks) {
      snprintf(err, ERRLEN, "kval: --inject %s: rank %d does not exist (this job has ranks 0..%d)", opt->injects[i],
               inj.rank, nranks - 1);
      return -1;
    }
    if (inj.case_index < 0) continue;
    if ((size_t)inj.case_index >= plan->n_cases) {
      snprintf(err, ERRLEN, "kval: --inject %s: case %lld does not exist (the plan has cases 0..%zu; see --dry-run)",
               opt->injects[i], inj.case_index, plan->n_cases - 1);
      return -1;
    }
    size_t *idx = NULL, n = kv_plan_rank_cases(plan, inj.rank, nranks, &idx), found = 0;
    for (size_t k = 0; k < n; k++) found |= idx[k] == (size_t)inj.case_index;
    free(idx);
    if (!found) {
      snprintf(err, ERRLEN, "kval: --inject %s: rank %d does not run case %lld in %s mode (see --dry-run)",
               opt->injects[i], inj.rank, inj.case_index, plan->mode == KV_MODE_SPLIT ? "split" : "fleet");
      return -1;
    }
  }
  return 0;
}

/* The summary line counts results (one per case and rank that ran it), says how they relate
 * to the plan's cases, and counts the cells the plan skipped apart from those skipped at run
 * time; then the exit code. */
static int exit_code(const kv_run_summary *s, const kv_plan *plan, int rank, int nranks, const char *path) {
  int local[6] = {s->n_pass, s->n_fail, s->n_error, s->n_skipped, s->interrupted_by, s->n_inaccurate}, total[6];
  MPI_Allreduce(local, total, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local[4], &total[4], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&local[5], &total[5], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  size_t plan_skipped = 0;
  for (int f = 0; f < plan->n_fam; f++) plan_skipped += plan->fam[f].n_skipped;
  int fleet = plan->mode == KV_MODE_FLEET;
  char shown[1024];
  kv_escape(path, shown, sizeof shown);
  if (rank == 0)
    fprintf(stderr, "kval: %zu cases %s %d rank%s, %d results: %d passed, %d inaccurate (findings, not failures), "
            "%d failed, %d errors, %d skipped at run time; %zu grid cells skipped by the plan (see --dry-run); "
            "%d fingerprint disagreements%s\n", plan->n_cases, fleet ? "on each of" : "split over", nranks,
            nranks == 1 ? "" : "s", total[0] + total[1] + total[2] + total[3] + total[5], total[0], total[5], total[1],
            total[2], total[3], plan_skipped, s->fingerprint_disagreements,
            total[4] ? "; interrupted: the file is resumable with --resume" : "");
  if (total[4] && rank == 0)
    fprintf(stderr, "kval: interrupted by %s: %s holds every finished case; finish it with the same command and "
            "--resume %s\n", total[4] == SIGINT ? "SIGINT" : "SIGTERM", shown, shown);
  if (total[4]) return total[4] == SIGINT ? KV_EXIT_SIGINT : KV_EXIT_SIGTERM;
  if (total[1] || s->fingerprint_disagreements) return KV_EXIT_FAIL;
  if (total[2]) return KV_EXIT_RUNTIME;
  return KV_EXIT_PASS;
}

/* The open output while rank 0 waits for the other ranks (kv_progress_begin). */
/* The checker's known answers on every rank (the same on each: no collective needed); a wrong
 * one ends the job before anything runs or is written. */
static int self_test(const kv_plan *plan, const kv_options *opt, int rank) {
  char what[512];
  const int passed = kv_selftest(&plan->run, what, sizeof what);
  if (passed < 0) {
    if (rank == 0)
      fprintf(stderr, "kval: the self-test of the checker failed: %s; a run could not be trusted, nothing was run\n",
              what);
    return KV_EXIT_RUNTIME;
  }
  if (rank == 0 && opt->verbose) fprintf(stderr, "kval: self-test of the checker: %d known answers right\n", passed);
  return KV_EXIT_PASS;
}

static kv_output *waiting_output;
static void write_arrived_rows(void) {
  if (waiting_output && kv_output_poll(waiting_output) != KV_OK)
    KV_FATAL("writing results to the output file failed; finished cases up to the last flush are kept");
}

/* Bind, initialise the backend, open the file, run, close. */
static int run_plan(int argc, char **argv, const kv_options *opt, const kv_backend *be, const kv_plan *plan,
                    const kv_deck *deck, int rank, int nranks) {
  MPI_Comm node;
  int local_rank, local_size;
  if (CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node)) ||
      CHECK_MPI(MPI_Comm_rank(node, &local_rank)) || CHECK_MPI(MPI_Comm_size(node, &local_size)))
    KV_FATAL("cannot build the node-local communicator");
  MPI_Comm_free(&node);
  kv_rank_info info;
  if (!all_ok(be->init(local_rank, local_size, &plan->run, &info) == KV_OK)) {
    if (rank == 0) fprintf(stderr, "kval: backend %s could not start on every rank (messages above)\n", be->name);
    return KV_EXIT_RUNTIME;
  }
  kv_rank_info *infos = rank == 0 ? KV_MALLOC((size_t)nranks * sizeof *infos) : NULL;
  if (rank == 0 && !infos) KV_FATAL("out of memory");
  if (CHECK_MPI(MPI_Gather(&info, (int)sizeof info, MPI_BYTE, infos, (int)sizeof info, MPI_BYTE, 0, MPI_COMM_WORLD)))
    KV_FATAL("cannot gather rank identities");
  kv_meta_strings ms;
  kv_run_meta meta;
  if (kv_meta_collect(argc, argv, &info, MPI_COMM_WORLD, &ms) != KV_OK) KV_FATAL("cannot collect run metadata");
  kv_meta_fill(&ms, be->name, nranks, &meta);
  char path[1024];
  if (opt->resume) snprintf(path, sizeof path, "%s", opt->resume);
  else if (opt->output) snprintf(path, sizeof path, "%s", opt->output);
  else kv_meta_default_output(&ms, path, sizeof path);

  /* From here on SIGINT/SIGTERM stop the run cleanly: a signal that comes while the file
   * is being created or the backend starts is honoured before the first case. */
  kv_runner_install_signals();
  kv_output *out = NULL;
  unsigned char *done = NULL;
  kv_status st = opt->resume ? kv_output_resume(path, plan, deck, &meta, opt->retry_errors, MPI_COMM_WORLD, &out, &done)
                             : kv_output_create(path, opt->force, plan, deck, &meta, infos, MPI_COMM_WORLD, &out);
  if (st != KV_OK) { /* the same status on every rank: refused (2) or could not be made (3) */
    free(infos);
    be->finalize();
    return st == KV_REFUSED ? KV_EXIT_USAGE : KV_EXIT_RUNTIME;
  }
  kv_set_fatal_hook(kv_output_emergency_flush);
  waiting_output = out;
  kv_progress_begin(plan, infos, MPI_COMM_WORLD, strcmp(kv_output_flavour(), "serial") == 0, write_arrived_rows);
  kv_output_set_idle(out, kv_progress_poll);
  char shown[1024];
  kv_escape(path, shown, sizeof shown);
  if (rank == 0 && !opt->quiet)
    fprintf(stderr, "kval: %zu cases on %d ranks (%s mode, %s backend, %s HDF5) -> %s\n", plan->n_cases, nranks,
            plan->mode == KV_MODE_FLEET ? "fleet" : "split", be->name, kv_output_flavour(), shown);
  kv_run_summary sum;
  st = kv_runner_run(plan, opt, be, &info, out, done, MPI_COMM_WORLD, &sum);
  free(done);
  waiting_output = NULL;
  if (kv_output_close(out) != KV_OK) st = KV_ERR;
  kv_progress_end();
  free(infos);
  kv_set_fatal_hook(NULL);
  be->finalize();
  int code = exit_code(&sum, plan, rank, nranks, path);
  if (!all_ok(st == KV_OK)) code = KV_EXIT_RUNTIME;
  if (opt->metrics && !all_ok(rank != 0 || kv_metrics_write(path, opt->metrics, code) == KV_OK) && code == KV_EXIT_PASS)
    code = KV_EXIT_RUNTIME;
  if (rank == 0 && !opt->quiet) fprintf(stderr, "kval: results in %s\n", shown);
  /* A fatal device error ends its rank only now, after every collective and the close. */
  if (kv_fatal_pending())
    KV_FATAL("%s; this rank stopped running cases there, its case is recorded with status error, and %s holds "
             "every finished case of every rank", kv_fatal_pending(), path);
  return code;
}

int kv_app_run(int argc, char **argv) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  char host[MPI_MAX_PROCESSOR_NAME];
  int hlen = 0;
  if (MPI_Get_processor_name(host, &hlen) != MPI_SUCCESS) snprintf(host, sizeof host, "unknown");
  kv_check_init(rank, host);

  static char err[ERRLEN];
  kv_options opt;
  if (kv_cli_parse(argc, argv, &opt, err, sizeof err) != 0) {
    if (rank == 0) {
      print_error(err);
      fprintf(stderr, "Try 'kval --help'.\n");
    }
    return KV_EXIT_USAGE;
  }
  if (opt.help || opt.version || opt.list) {
    if (rank == 0) {
      if (opt.help) kv_cli_usage(stdout);
      if (opt.version) printf("kval %s (git %s)\n", kv_meta_version(), kv_meta_git_commit());
      if (opt.list) print_list();
    }
    return KV_EXIT_PASS;
  }
  kv_fleet_set_verbose(opt.verbose);
  if (opt.metrics && !opt.dry_run && !all_ok(rank != 0 || kv_metrics_check_path(opt.metrics, err, sizeof err) == 0)) {
    if (rank == 0) fprintf(stderr, "%s\n", err);
    return KV_EXIT_USAGE;
  }
  kv_deck deck;
  if (!all_ok(read_and_parse_deck(&opt, rank, &deck, err) == 0)) {
    if (rank == 0) print_error(err);
    return KV_EXIT_USAGE;
  }
  int be_code = KV_EXIT_USAGE;
  err[0] = '\0';
  const kv_backend *be = opt.dry_run ? dry_run_backend(&opt) : choose_backend(&opt, err, &be_code);
  /* --dry-run --backend cuda plans by name in a kval built without CUDA (a login node). */
  const char *be_name = be ? be->name : opt.dry_run && strcmp(opt.backend, "cuda") == 0 ? "cuda" : NULL;
  if (!be_name) {
    if (rank == 0) print_error(err[0] ? err : "kval: no backend");
    kv_deck_free(&deck);
    return be_code;
  }
  if (!be && rank == 0)
    fprintf(stderr, "kval: note: this kval was built without the cuda backend; the plan is made for it by name\n");
  kv_plan plan;
  int plan_ok = kv_plan_build(&deck, opt.only, be_name, opt.mode, opt.have_seed, opt.seed, &plan, err, sizeof err) == 0;
  if (plan_ok && check_injects(&opt, &plan, nranks, err) != 0) {
    plan_ok = 0;
    kv_plan_free(&plan);
  }
  if (!all_ok(plan_ok)) {
    if (rank == 0) print_error(err);
    kv_deck_free(&deck);
    return KV_EXIT_USAGE;
  }
  /* The output is checked before anything starts, for --dry-run too (what the run would
   * refuse, --dry-run refuses); creation checks it again. */
  int code = KV_EXIT_PASS;
  if (rank == 0 && (opt.output || opt.resume)) {
    kv_status st = kv_output_check_target(opt.resume ? opt.resume : opt.output, opt.force, opt.resume != NULL,
                                          opt.deck_path);
    code = st == KV_OK ? KV_EXIT_PASS : st == KV_REFUSED ? KV_EXIT_USAGE : KV_EXIT_RUNTIME;
  }
  if (MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) KV_FATAL("MPI_Bcast failed");
  if (code == KV_EXIT_PASS) code = self_test(&plan, &opt, rank);
  if (code == KV_EXIT_PASS && opt.dry_run) {
    if (rank == 0) {
      kv_estimate_scale scale;
      kv_calibrate(be, &plan, &scale);
      kv_plan_print(&plan, nranks, scale.scale, scale.rates, stdout);
    }
    if (rank == 0) kv_plan_print_paths(&plan, opt.verbose, stdout);
  } else if (code == KV_EXIT_PASS) {
    code = run_plan(argc, argv, &opt, be, &plan, &deck, rank, nranks);
  }
  kv_plan_free(&plan);
  kv_deck_free(&deck);
  return code;
}
