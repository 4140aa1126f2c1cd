/* output.h - the shared HDF5 file. Rank 0 creates it with every dataset of the plan filled
 * with "not run" (NaN, -1, status not_run) and every axis attached as a dimension scale;
 * results reach it as cases finish and it is flushed every few seconds. With parallel HDF5
 * every rank writes its own cells collectively, round by round; with serial HDF5 ranks send
 * their rows to rank 0, which writes. The file layout is the same either way (README). */
#ifndef KVAL_OUTPUT_H
#define KVAL_OUTPUT_H

#include <mpi.h>
#include <stdint.h>

#include "backends/backend.h"
#include "input/deck.h"
#include "input/plan.h"
#include "core/result.h"

/* Root attributes of the file. */
typedef struct {
  const char *version, *git_commit, *command_line, *creation_time;
  const char *mpi_version, *cuda_runtime, *cuda_driver;
  const char *slurm_job_id, *slurm_nodes; /* "" when not under Slurm */
  const char *backend;
  int nranks;
} kv_run_meta;

/* Per-case fleet comparison of fingerprints among ranks with the same device model
 * (fleet mode), computed on rank 0 and written by kv_output_fingerprints. */
typedef struct {
  int family;
  uint64_t cell;
  int n_distinct;           /* distinct fingerprints in the worst model group */
  uint64_t majority;        /* the majority fingerprint (of the largest group) */
  unsigned char *agrees;    /* per rank: 1 agrees, 0 disagrees, 2 not comparable */
} kv_fp_case;

typedef struct kv_output kv_output;

/* Status of create and resume when the user's input is refused (the file exists, is in use,
 * is not a regular file, is the deck, does not match the run): exit 2, nothing written.
 * KV_ERR there is a runtime failure (the file cannot be created or written): exit 3. */
#define KV_REFUSED 2

/* "parallel" or "serial": the HDF5 flavour this build uses. */
const char *kv_output_flavour(void);

/* Rank 0, no MPI: may `path` be created (resume: continued)? The checks of create and resume
 * that need no HDF5, for an early answer and for --dry-run: KV_OK, KV_REFUSED or KV_ERR,
 * reported (see target.h). */
kv_status kv_output_check_target(const char *path, int force, int resume, const char *deck_path);

/* Collective. Create `path` (refuses an existing file unless force), write attributes, the
 * deck text, /ranks (infos: nranks rows, significant on rank 0) and the family groups; KV_OK,
 * KV_REFUSED or KV_ERR on every rank. The file is laid out as PATH.part-XXXXXXXX, with its
 * space reserved, and renamed to PATH once complete; rank 0 holds a lock on it until close. */
kv_status kv_output_create(const char *path, int force, const kv_plan *p, const kv_deck *d,
                           const kv_run_meta *m, const kv_rank_info *infos, MPI_Comm comm,
                           kv_output **o);

/* Collective. Reopen `path` for --resume: the deck text, rank count, mode and seed must
 * match (else a clear error). *done (allocated, broadcast to all ranks) marks per
 * [rank * p->n_cases + case] whether the case already has a result to keep (status other
 * than not_run, and other than error when retry_errors). */
kv_status kv_output_resume(const char *path, const kv_plan *p, const kv_deck *d, const kv_run_meta *m,
                           int retry_errors, MPI_Comm comm, kv_output **o, unsigned char **done);
/* (Every row resume keeps is verified first: a status outside the enum, a plan-skipped cell
 * that is not skipped, or a row whose checksum does not match refuses the file, naming it.
 * The rows of the journals of the interrupted run are merged into the file before.) */

/* A finished row, before it is handed to kv_output_write: appended to this rank's journal
 * and synced, so it survives a kill even before its writer gets to it. */
void kv_output_journal(kv_output *o, const kv_result *r);

/* Called while this rank waits for the others inside the output module (rank 0 polls for
 * stalled ranks there); NULL for none. */
void kv_output_set_idle(kv_output *o, void (*idle)(void));

/* Collective, after kv_output_resume: this rank's stored status and fingerprint of every
 * plan case that `done` marks as kept, so the summary, the exit code and the fleet
 * fingerprint comparison of a resumed run cover the whole file. Other entries are left as
 * they are. */
kv_status kv_output_kept(kv_output *o, const unsigned char *done, signed char *status, uint64_t *fingerprint);

/* Collective per round in the parallel flavour (every rank calls it the same number of
 * times, r == NULL when it has nothing this round); in the serial flavour non-root ranks
 * send r to rank 0 and rank 0 writes everything that has arrived. *stop: in, this rank's
 * wish to stop (signal); out, whether the run stops now (agreed among ranks in the parallel
 * flavour). Flushes when the flush interval has passed. */
kv_status kv_output_write(kv_output *o, const kv_result *r, int *stop);

/* Not collective: serial flavour, rank 0: write the rows that have arrived from the other
 * ranks and flush when due (while rank 0 waits for them); otherwise nothing. */
kv_status kv_output_poll(kv_output *o);

/* Collective: write the fleet fingerprint comparison (n cases, significant on rank 0). */
kv_status kv_output_fingerprints(kv_output *o, const kv_fp_case *fp, size_t n);

/* Collective: drain, flush and close. */
kv_status kv_output_close(kv_output *o);

/* Fatal-path hook: flush whatever this rank can flush, without collectives. */
void kv_output_emergency_flush(void);

#endif
