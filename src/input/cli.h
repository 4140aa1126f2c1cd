/* cli.h - command-line options of kval. Parsing is pure (no MPI, no I/O) so it can be
 * unit-tested and fuzzed; errors name the option and what would be valid. */
#ifndef KVAL_CLI_H
#define KVAL_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "input/plan.h"

#define KV_MAX_SETS 64
#define KV_MAX_INJECTS 16

typedef struct {
  const char *deck_path;
  const char *output;      /* -o FILE; NULL: kval-<job id or timestamp>.h5 */
  const char *backend;     /* cuda | cpu | auto */
  kv_mode mode;
  const char *only;        /* comma-separated families, NULL: all sections of the deck */
  const char *sets[KV_MAX_SETS];
  int n_sets;
  int have_seed;
  uint64_t seed;
  int dry_run, list, help, version;
  int force;               /* overwrite an existing output file */
  const char *resume;      /* --resume FILE */
  int retry_errors;        /* with --resume: rerun cases whose status is error */
  const char *injects[KV_MAX_INJECTS]; /* --inject KIND@RANK[:CASE] */
  int n_injects;
  int quiet;
  int verbose;             /* one line per fingerprint disagreement (default: one per rank) */
  const char *metrics;     /* --metrics FILE: node_exporter textfile metrics after the run */
} kv_options;

/* Parse argv; 0 on success, -1 with a message in err (usage error, exit 2). */
int kv_cli_parse(int argc, char **argv, kv_options *o, char *err, size_t errlen);
void kv_cli_usage(FILE *f);

#endif
