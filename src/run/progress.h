/* progress.h - rank 0 notices a rank that stopped reporting progress and names it (host,
 * device, case), then waits or aborts per [run] on_stall (progress.c). */
#ifndef KVAL_PROGRESS_H
#define KVAL_PROGRESS_H

#include <mpi.h>

#include "backends/backend.h"
#include "input/plan.h"

#define KV_PROGRESS_IDLE (-1LL) /* "this rank has no case left" */

/* Collective: start the reports; infos (significant on rank 0) names every rank. With
 * wait_at_idle, rank 0 reporting KV_PROGRESS_IDLE waits until every rank has, calling
 * `waiting` (may be NULL) meanwhile. */
void kv_progress_begin(const kv_plan *p, const kv_rank_info *infos, MPI_Comm comm, int wait_at_idle,
                       void (*waiting)(void));
/* This rank starts plan case ci (KV_PROGRESS_IDLE: none left); rank 0 also polls. */
void kv_progress_case(long long ci);
/* Rank 0: read the reports that arrived and check every rank's deadline (no-op elsewhere,
 * and before begin or after end). */
void kv_progress_poll(void);
/* Collective: every report is delivered, then the reports end. */
void kv_progress_end(void);

#endif
