/* cli.c - kval's command line: the option table, parsing of "--opt value" and "--opt=value"
 * forms with every value checked, and the usage text. Pure: no MPI, no I/O except
 * kv_cli_usage; errors read "kval: OPTION: what (expected what is valid)". */
#include "input/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "run/inject.h"

typedef enum {
  OPT_OUTPUT, OPT_BACKEND, OPT_MODE, OPT_ONLY, OPT_SET, OPT_SEED, OPT_DRY_RUN, OPT_LIST, OPT_HELP,
  OPT_VERSION, OPT_FORCE, OPT_RESUME, OPT_RETRY_ERRORS, OPT_INJECT, OPT_QUIET, OPT_VERBOSE, OPT_METRICS
} opt_id;

typedef struct {
  const char *name; /* long name without "--" */
  char short_name;  /* 0 when none */
  opt_id id;
  const char *arg;  /* value placeholder; NULL for flags */
  const char *help;
} option;

static const option options[] = {
    {"output", 'o', OPT_OUTPUT, "FILE", "HDF5 output file (default kval-<Slurm job id or timestamp>.h5)"},
    {"backend", 0, OPT_BACKEND, "B", "cuda, cpu or auto (default auto: cuda when a GPU is visible, else cpu)"},
    {"mode", 0, OPT_MODE, "M", "fleet (default: every rank runs every case) or split (each case once)"},
    {"only", 0, OPT_ONLY, "LIST", "run only these comma-separated families (one not in the deck runs with defaults)"},
    {"set", 0, OPT_SET, "S.K=V", "override deck key K of section S with values V, e.g. 'fa2.seqlen=1024 2048' (repeatable)"},
    {"seed", 0, OPT_SEED, "N", "input seed, a decimal integer 0..2^64-1 (replaces [run] seed)"},
    {"dry-run", 0, OPT_DRY_RUN, NULL, "print the plan (cases per rank, estimated cost, skipped cases) and exit"},
    {"list", 0, OPT_LIST, NULL, "list the kernel families, their axes and parameters, and the backends"},
    {"force", 0, OPT_FORCE, NULL, "overwrite an existing output file"},
    {"resume", 0, OPT_RESUME, "FILE", "continue an interrupted run in FILE (same deck, ranks, mode, seed)"},
    {"retry-errors", 0, OPT_RETRY_ERRORS, NULL, "with --resume: also rerun cases whose status is error"},
    {"inject", 0, OPT_INJECT, "K@R[:C]", "inject fault K (bitflip|nan|scale|slow|sticky|hang) on rank R, optionally only into case C "
                                         "(an index into the plan); repeatable, to test the checks"},
    {"quiet", 0, OPT_QUIET, NULL, "print only errors and the final summary"},
    {"verbose", 0, OPT_VERBOSE, NULL, "print every fingerprint disagreement (rank and case), not one line per rank"},
    {"metrics", 0, OPT_METRICS, "FILE", "after the run write node_exporter textfile metrics per GPU to FILE (atomically)"},
    {"help", 'h', OPT_HELP, NULL, "print this help and exit"},
    {"version", 0, OPT_VERSION, NULL, "print the version and exit"},
};
#define N_OPTIONS (int)(sizeof options / sizeof options[0])

static int usage_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int usage_error(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(err, errlen, "kval: ");
  if (n >= 0 && (size_t)n < errlen) vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* A non-empty run of decimal digits, as an unsigned value <= max: 0 on success. */
static int parse_decimal(const char *s, const char *e, unsigned long long max, unsigned long long *v) {
  if (s == e) return -1;
  unsigned long long acc = 0;
  for (const char *p = s; p < e; p++) {
    if (*p < '0' || *p > '9') return -1;
    unsigned d = (unsigned)(*p - '0');
    if (acc > (max - d) / 10) return -1;
    acc = acc * 10 + d;
  }
  *v = acc;
  return 0;
}

/* "section.key=..." with a non-empty section and key; the deck parser checks the rest. */
static int check_set(const char *v) {
  const char *dot = strchr(v, '.'), *eq = strchr(v, '=');
  return dot && eq && dot > v && eq > dot + 1 ? 0 : -1;
}

static int one_of(const char *v, const char *a, const char *b, const char *c) {
  return strcmp(v, a) == 0 || strcmp(v, b) == 0 || (c && strcmp(v, c) == 0);
}

static int apply(kv_options *o, const option *op, const char *shown, const char *v, char *err, size_t errlen) {
  switch (op->id) {
    case OPT_OUTPUT:
    case OPT_RESUME:
      if (!*v) return usage_error(err, errlen, "%s: empty file name (expected the path of an HDF5 file)", shown);
      if (op->id == OPT_OUTPUT) o->output = v;
      else o->resume = v;
      return 0;
    case OPT_METRICS:
      if (!*v) return usage_error(err, errlen, "%s: empty file name (expected the path of a .prom file)", shown);
      o->metrics = v;
      return 0;
    case OPT_BACKEND:
      if (!one_of(v, "cuda", "cpu", "auto"))
        return usage_error(err, errlen, "%s: invalid value '%s' (expected cuda, cpu or auto)", shown, v);
      o->backend = v;
      return 0;
    case OPT_MODE:
      if (!one_of(v, "fleet", "split", NULL))
        return usage_error(err, errlen, "%s: invalid value '%s' (expected fleet or split)", shown, v);
      o->mode = strcmp(v, "fleet") == 0 ? KV_MODE_FLEET : KV_MODE_SPLIT;
      return 0;
    case OPT_ONLY: {
      size_t n = strlen(v);
      if (n == 0 || v[0] == ',' || v[n - 1] == ',' || strstr(v, ",,"))
        return usage_error(err, errlen, "%s: invalid value '%s' (expected family names separated by commas, e.g. fa2,gemm)",
                           shown, v);
      o->only = v;
      return 0;
    }
    case OPT_SET:
      if (check_set(v) != 0)
        return usage_error(err, errlen, "%s: invalid value '%s' (expected SECTION.KEY=VALUES, e.g. --set 'fa2.seqlen=1024 2048')",
                           shown, v);
      if (o->n_sets == KV_MAX_SETS)
        return usage_error(err, errlen, "%s: too many overrides (expected at most %d --set options)", shown, KV_MAX_SETS);
      o->sets[o->n_sets++] = v;
      return 0;
    case OPT_SEED: {
      unsigned long long s;
      if (parse_decimal(v, v + strlen(v), UINT64_MAX, &s) != 0)
        return usage_error(err, errlen, "%s: invalid value '%s' (expected a decimal integer 0..18446744073709551615)",
                           shown, v);
      o->seed = (uint64_t)s;
      o->have_seed = 1;
      return 0;
    }
    case OPT_INJECT:
    {
      kv_inject inj;
      char why[256];
      if (kv_inject_parse(v, &inj, why, sizeof why) != 0)
        return usage_error(err, errlen,
                           "%s: invalid value '%s' (expected KIND@RANK[:CASE] with KIND bitflip, nan, scale, slow, "
                           "sticky or hang, RANK an integer >= 0 and CASE a case index >= 0, e.g. bitflip@1:0)",
                           shown, v);
    }
      if (o->n_injects == KV_MAX_INJECTS)
        return usage_error(err, errlen, "%s: too many faults (expected at most %d --inject options)", shown,
                           KV_MAX_INJECTS);
      o->injects[o->n_injects++] = v;
      return 0;
    case OPT_DRY_RUN: o->dry_run = 1; break;
    case OPT_LIST: o->list = 1; break;
    case OPT_HELP: o->help = 1; break;
    case OPT_VERSION: o->version = 1; break;
    case OPT_FORCE: o->force = 1; break;
    case OPT_RETRY_ERRORS: o->retry_errors = 1; break;
    case OPT_QUIET: o->quiet = 1; break;
    case OPT_VERBOSE: o->verbose = 1; break;
  }
  return 0;
}

/* Find the option of argument `a` ("--name", "--name=value", "-x", "-xVALUE"); *inline_value
 * is the text after '=' (long) or after the letter (short), NULL when none. */
static const option *lookup(const char *a, const char **inline_value) {
  *inline_value = NULL;
  if (a[1] == '-') {
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    for (int k = 0; k < N_OPTIONS; k++)
      if (strlen(options[k].name) == n && strncmp(options[k].name, name, n) == 0) {
        if (eq) *inline_value = eq + 1;
        return &options[k];
      }
    return NULL;
  }
  for (int k = 0; k < N_OPTIONS; k++)
    if (options[k].short_name && options[k].short_name == a[1]) {
      if (a[2]) *inline_value = a + 2;
      return &options[k];
    }
  return NULL;
}

int kv_cli_parse(int argc, char **argv, kv_options *o, char *err, size_t errlen) {
  memset(o, 0, sizeof *o);
  o->backend = "auto";
  o->mode = KV_MODE_FLEET;
  int options_done = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && strcmp(a, "--") == 0) {
      options_done = 1;
      continue;
    }
    if (options_done || a[0] != '-' || a[1] == '\0') {
      if (o->deck_path)
        return usage_error(err, errlen, "unexpected argument '%s' (expected one DECK; got '%s' already)", a,
                           o->deck_path);
      o->deck_path = a;
      continue;
    }
    const char *v;
    const option *op = lookup(a, &v);
    if (!op) return usage_error(err, errlen, "unknown option '%s' (run 'kval --help' for the options)", a);
    char shown[32];
    if (a[1] == '-') snprintf(shown, sizeof shown, "--%s", op->name);
    else snprintf(shown, sizeof shown, "-%c", op->short_name);
    if (!op->arg && v)
      return usage_error(err, errlen, "%s: takes no value (got '%s')", shown, a);
    if (op->arg && !v) {
      if (i + 1 >= argc) return usage_error(err, errlen, "%s: missing value (expected %s)", shown, op->arg);
      v = argv[++i];
    }
    if (apply(o, op, shown, v ? v : "", err, errlen) != 0) return -1;
  }
  if (o->help || o->version || o->list) return 0;
  if (!o->deck_path) return usage_error(err, errlen, "missing DECK (usage: kval [options] DECK; run 'kval --help')");
  if (o->resume) {
    if (o->output && strcmp(o->output, o->resume) != 0)
      return usage_error(err, errlen, "-o '%s' and --resume '%s' name different files (expected -o omitted or the same file)",
                         o->output, o->resume);
    if (o->force)
      return usage_error(err, errlen, "--force and --resume exclude each other (--force overwrites the file, --resume continues it)");
    o->output = o->resume;
  }
  if (o->retry_errors && !o->resume)
    return usage_error(err, errlen, "--retry-errors needs --resume FILE (it reruns the failed cases of that file)");
  return 0;
}

void kv_cli_usage(FILE *f) {
  fprintf(f, "usage: kval [options] DECK\n"
             "\n"
             "Validate and time GPU kernels over the sweep described by DECK (format: inputs/README.md).\n"
             "Each MPI rank drives one GPU; the results of all ranks go into one HDF5 file.\n"
             "\n"
             "options:\n");
  for (int k = 0; k < N_OPTIONS; k++) {
    const option *op = &options[k];
    char left[40];
    if (op->short_name) snprintf(left, sizeof left, "-%c, --%s%s%s", op->short_name, op->name, op->arg ? " " : "", op->arg ? op->arg : "");
    else snprintf(left, sizeof left, "--%s%s%s", op->name, op->arg ? " " : "", op->arg ? op->arg : "");
    fprintf(f, "  %-22s %s\n", left, op->help);
  }
  fprintf(f, "\n"
             "Options with a value take \"--opt value\" or \"--opt=value\"; given twice, the last one counts\n"
             "(--set and --inject accumulate). --help, --list and --version need no DECK.\n"
             "\n"
             "exit status:\n"
             "  %-4d every case passed\n"
             "  %-4d some case failed validation, or fingerprints of identical GPUs disagree\n"
             "  %-4d usage or input error (bad option, malformed deck)\n"
             "  %-4d runtime error (CUDA, MPI, HDF5, out of memory)\n"
             "  %-4d interrupted by SIGINT: the file is flushed, finish it with --resume FILE\n"
             "  %-4d interrupted by SIGTERM (e.g. Slurm time limit): the file is flushed, finish it with --resume FILE\n",
          KV_EXIT_PASS, KV_EXIT_FAIL, KV_EXIT_USAGE, KV_EXIT_RUNTIME, KV_EXIT_SIGINT, KV_EXIT_SIGTERM);
}
