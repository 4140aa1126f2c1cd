/* harness.c - the bench harness (harness.h): a driver's options, its [run] settings, the cuda
 * backend's init and run path, the runner's verdict and statistics, one table line and one
 * CSV row per case, and the counts at the end. */
#include "bench/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "families/testkit/family_case.h"
#include "input/deck.h"
#include "run/judge.h"

#define MAX_SETS 16

struct kv_bench {
  const kv_family *family; /* the driver's first family: its axes are the CSV columns */
  kv_run_settings run;     /* [run] of the deck, --set applied */
  kv_rank_info info;       /* the GPU: identity and measured ceilings */
  FILE *csv;
  int n_pass, n_fail, n_error, n_skipped, n_inaccurate;
};

static int usage(const char *prog, const kv_bench_command *commands) {
  fprintf(stderr, "usage: %s [all", prog);
  for (int i = 0; commands[i].name; i++) fprintf(stderr, "|%s", commands[i].name);
  fprintf(stderr, "] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...\n");
  return 2;
}

/* The command named `word`: its index, -1 for all, -2 for none. */
static int command_of(const char *word, const kv_bench_command *commands) {
  if (!strcmp(word, "all")) return -1;
  for (int i = 0; commands[i].name; i++)
    if (!strcmp(word, commands[i].name)) return i;
  return -2;
}

/* The deck's [run] settings with the --set overrides (run.KEY=VALUE only), through the job's
 * deck parser and plan, which check every key and value as they do for kval. */
static int run_settings(const kv_family *f, const char *path, char *const *sets, int n_sets, kv_run_settings *rs) {
  kv_deck d;
  kv_plan p;
  char err[1024];
  if (kv_deck_parse_file(path, &d, err, sizeof err) != 0) {
    fprintf(stderr, "bench: %s\n", err);
    return 2;
  }
  int rc = 0;
  for (int i = 0; i < n_sets && rc == 0; i++) {
    if (strncmp(sets[i], "run.", 4) != 0) {
      snprintf(err, sizeof err, "--set %s: the bench takes [run] settings only (run.KEY=VALUE)", sets[i]);
      rc = 2;
    } else if (kv_deck_apply_set(&d, sets[i], err, sizeof err) != 0) {
      rc = 2;
    }
  }
  if (rc == 0 && kv_plan_build(&d, f->name, "cuda", KV_MODE_SPLIT, 0, 0, &p, err, sizeof err) != 0) rc = 2;
  if (rc == 0) {
    *rs = p.run;
    kv_plan_free(&p);
  } else {
    fprintf(stderr, "bench: %s\n", err);
  }
  kv_deck_free(&d);
  return rc;
}

static int is_named_axis(const kv_axis_desc *a) {
  return strcmp(a->name, "variant") == 0 || strcmp(a->name, "precision") == 0;
}

static void csv_header(const kv_bench *b) {
  fprintf(b->csv, "family,backend,precision");
  for (const kv_axis_desc *a = b->family->axes; a->name; a++)
    if (!is_named_axis(a)) fprintf(b->csv, ",%s", a->name);
  fprintf(b->csv, ",ms,tflops,gbps,verdict,max_bound_ratio,rel_l2,reps,registers,local_bytes,occupancy\n");
}

/* Options, [run] settings, the backend's init, the device lines, the CSV header; *command: the
 * chosen command's index, -1 for all. 0, or the driver's exit code. */
static int bench_open(kv_bench *b, const char *family, const kv_bench_command *commands, int argc, char **argv,
                      int *command) {
  memset(b, 0, sizeof *b);
  kv_check_init(0, "bench");
  b->family = kv_family_find(family, NULL);
  if (!b->family || !b->family->cuda) {
    fprintf(stderr, "%s: family %s has no CUDA side in this build\n", argv[0], family);
    return 2;
  }
  const char *csv = NULL, *deck = NULL;
  char *sets[MAX_SETS];
  int n_sets = 0, chosen = -2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!strcmp(argv[i], "--deck") && i + 1 < argc)
      deck = argv[++i];
    else if (!strcmp(argv[i], "--set") && i + 1 < argc && n_sets < MAX_SETS)
      sets[n_sets++] = argv[++i];
    else if (chosen == -2 && (chosen = command_of(argv[i], commands)) != -2)
      continue;
    else
      return usage(argv[0], commands);
  }
  *command = chosen == -2 ? -1 : chosen;
  char path[1024];
  if (!deck) {
    const char *top = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/inputs/default.deck", top && top[0] ? top : ".");
    deck = path;
  }
  const int rc = run_settings(b->family, deck, sets, n_sets, &b->run);
  if (rc != 0 && deck == path) fprintf(stderr, "%s: set top_srcdir to the source tree, or give --deck FILE\n", argv[0]);
  if (rc != 0) return rc;
  if (!kv_backend_cuda.available()) {
    printf("%s: no GPU\n", argv[0]);
    return 77;
  }
  if (kv_backend_cuda.init(0, 1, &b->run, &b->info) != KV_OK) {
    fprintf(stderr, "%s: the cuda backend failed to start\n", argv[0]);
    return 3;
  }
  const kv_rank_info *in = &b->info;
  printf("device %s %s, %d SMs, copy %.0f GB/s, bf16 %.0f TFLOP/s, fp64 %.1f TFLOP/s, nvml %s\n", in->device_name,
         in->uuid, in->sm_count, in->copy_gbps, in->matrix_tflops, in->fp64_tflops, in->nvml);
  printf("run: [run] of %s: warmup %d, reps %d..%d, rse_target %g, time_cap %g s, L2 %s\n", deck, b->run.warmup,
         b->run.min_reps, b->run.max_reps, b->run.rse_target, b->run.time_cap, b->run.l2_flush ? "flushed" : "warm");
  if (csv) {
    b->csv = fopen(csv, "w");
    if (!b->csv) {
      perror(csv);
      kv_backend_cuda.finalize();
      return 2;
    }
    csv_header(b);
  }
  return 0;
}

/* The case's axes but variant and precision, as "name=value ..." (table) or ",value..." (CSV). */
static void axes_text(const kv_case *c, int csv, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  const kv_axis_desc *axes = c->fp->family->axes;
  for (int a = 0; axes[a].name && used < n; a++) {
    if (is_named_axis(&axes[a])) continue;
    char value[96];
    if (axes[a].type == KV_AXIS_INT)
      snprintf(value, sizeof value, "%lld", c->ival[a]);
    else if (axes[a].type == KV_AXIS_REAL)
      snprintf(value, sizeof value, "%.17g", c->rval[a]);
    else
      snprintf(value, sizeof value, "%s", c->sval[a]);
    const int w = csv ? snprintf(buf + used, n - used, ",%s", value)
                      : snprintf(buf + used, n - used, "%s%s=%s", used ? " " : "", axes[a].name, value);
    used += w > 0 ? (size_t)w : 0;
  }
}

static void report(kv_bench *b, const kv_case *c, const char *backend, const kv_result *r) {
  char prec[32], axes[512], cols[512];
  kv_precision_format(c->prec, prec, sizeof prec);
  axes_text(c, 0, axes, sizeof axes);
  const char *verdict = kv_status_name((kv_case_status)r->status);
  const double ms = 1e3 * r->timing.median;
  printf("%-9s %-22s %-9s %-52s %9.4f ms %7.1f TFLOP/s %6.0f GB/s %-14s bound %.3g regs %d local %d blocks %d reps %d%s%s\n",
         c->fp->family->name, backend, prec, axes, ms, r->tflops, r->gbps, verdict, r->stats.max_bound_ratio, r->res.registers,
         r->res.local_bytes, r->res.occupancy, r->timing.reps, r->message[0] ? ": " : "", r->message);
  fflush(stdout);
  if (!b->csv) return;
  axes_text(c, 1, cols, sizeof cols);
  fprintf(b->csv, "%s,%s,%s%s,%.5f,%.2f,%.1f,%s,%.4g,%.3e,%d,%d,%d,%d\n", c->fp->family->name, backend, prec, cols, ms, r->tflops, r->gbps,
          verdict, r->stats.max_bound_ratio, r->stats.rel_l2, r->timing.reps, r->res.registers, r->res.local_bytes,
          r->res.occupancy);
  fflush(b->csv);
}

/* The same axes, in the same order: the CSV columns are the first family's. */
static int same_axes(const kv_family *a, const kv_family *b) {
  int i = 0;
  for (; a->axes[i].name && b->axes[i].name; i++)
    if (strcmp(a->axes[i].name, b->axes[i].name) != 0) return 0;
  return !a->axes[i].name && !b->axes[i].name;
}

kv_status kv_bench_case(kv_bench *b, const char *family, const char *spec, const char *backend,
                        const kv_cuda_launch_override *ovr) {
  const kv_family *fam = kv_family_find(family, NULL);
  if (!fam || !fam->cuda || !same_axes(fam, b->family))
    KV_FATAL("bench: family %s has no CUDA side or not the axes of %s", family, b->family->name);
  fcase f;
  fcase_init(&f, fam, spec);
  const kv_case *c = &f.c;
  const int v = kv_family_axis_index(fam, "variant");
  if (!backend) backend = v >= 0 ? c->sval[v] : "kval";
  const char *why = kv_precision_invalid_reason(c->prec);
  if (!why && fam->invalid) why = fam->invalid(c, "cuda");
  if (why) {
    b->n_skipped++;
    printf("%-9s %-22s skipped (%s): %s\n", family, backend, spec, why);
    return KV_OK;
  }
  kv_cost cost;
  fam->cost(c, &cost);
  kv_case_data d;
  memset(&d, 0, sizeof d);
  d.device_stats = 1;
  kv_result r;
  kv_result_init(&r, 0, f.fp.family_index, 0);
  char msg[KV_MESSAGE_LEN] = "";
  if (kv_cuda_run_case_with(c, &b->run, ovr, &d, msg, sizeof msg) != KV_OK || kv_fatal_pending()) {
    r.status = KV_ERROR;
    snprintf(r.message, sizeof r.message, "%s", kv_fatal_pending() ? kv_fatal_pending() : msg);
  } else if (kv_judge_case(c, &cost, &b->run, &b->info, &d, &r) != KV_OK) {
    r.status = KV_ERROR;
    snprintf(r.message, sizeof r.message, "error statistics failed (out of memory?)");
  }
  kv_case_data_free(&d);
  report(b, c, backend, &r);
  if (r.status == KV_PASS) b->n_pass++;
  else if (r.status == KV_INACCURATE) b->n_inaccurate++; /* a finding of the precision, not a failure */
  else if (r.status == KV_ERROR) b->n_error++;
  else b->n_fail++;
  return kv_fatal_pending() ? KV_ERR : KV_OK;
}

int kv_bench_main(const char *family, const kv_bench_command *commands, int argc, char **argv) {
  kv_bench b;
  int command;
  const int rc = bench_open(&b, family, commands, argc, argv, &command);
  if (rc != 0) return rc;
  for (int i = command < 0 ? 0 : command; commands[i].name; i++)
    if (commands[i].run(&b) != KV_OK || command >= 0) break;
  kv_backend_cuda.finalize();
  if (b.csv) fclose(b.csv);
  printf("bench: %d cases passed, %d inaccurate, %d failed validation, %d errors, %d skipped\n", b.n_pass,
         b.n_inaccurate, b.n_fail, b.n_error, b.n_skipped);
  return b.n_fail || b.n_error || kv_fatal_pending() ? 1 : 0;
}
