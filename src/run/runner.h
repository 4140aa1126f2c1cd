/* runner.h - the common driver: runs a rank's cases through a backend, turns each
 * backend result into statistics, verdict and fingerprint, applies --inject faults, streams
 * rows to the output, prints progress, and compares fingerprints across ranks at the end. */
#ifndef KVAL_RUNNER_H
#define KVAL_RUNNER_H

#include <mpi.h>

#include "backends/backend.h"
#include "input/cli.h"
#include "output/output.h"
#include "input/plan.h"

typedef struct {
  int n_pass, n_fail, n_error, n_skipped, n_run;
  int n_inaccurate; /* findings that fail nothing (conform.h) */
  int fingerprint_disagreements;
  int interrupted_by; /* 0, SIGINT or SIGTERM */
} kv_run_summary;

/* SIGINT/SIGTERM set a flag the runner checks between cases (finish the current case,
 * flush, close, exit 130/143). */
void kv_runner_install_signals(void);

/* Run this rank's cases; collective over comm. `done` (may be NULL) marks cases a resumed
 * file already holds. */
kv_status kv_runner_run(const kv_plan *p, const kv_options *opt, const kv_backend *be,
                        const kv_rank_info *info, kv_output *o, const unsigned char *done,
                        MPI_Comm comm, kv_run_summary *sum);

#endif
