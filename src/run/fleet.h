/* fleet.h - the end-of-run fingerprint comparison of fleet mode: ranks whose devices are
 * the same model must produce the same output bits for the same case. */
#ifndef KVAL_FLEET_H
#define KVAL_FLEET_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "output/output.h"
#include "input/plan.h"

/* Collective. status/fingerprint: this rank's value per plan case (p->n_cases entries;
 * status not_run where the rank did not run the case). infos: every rank's identity
 * (significant on rank 0). On rank 0, *out receives one kv_fp_case per plan case (free
 * with kv_fleet_free); rank 0 prints one line per disagreeing rank (host, device UUID, its
 * count of disagreeing cases, and whether they differ from a majority or there was none).
 * Returns the number of disagreeing (rank, case) pairs, the same on every rank, or -1. */
long kv_fleet_compare(const kv_plan *p, const signed char *status, const uint64_t *fingerprint,
                      const kv_rank_info *infos, MPI_Comm comm, kv_fp_case **out);

void kv_fleet_free(kv_fp_case *cases, size_t n);

/* The comparison of one case ci among the ranks members[0..m) of one device model (status and
 * fingerprint indexed rank * n_cases + case): agrees[rank] = 1 when the rank's fingerprint is
 * the majority's, 0 when it differs or the most common fingerprint is tied (two GPUs that
 * disagree: both are named), 2 when the rank produced no output. Returns the number of distinct
 * fingerprints. kv_fleet_compare makes it for every case; the self-test checks it. */
int kv_fleet_compare_case(const int *members, int m, const signed char *status, const uint64_t *fingerprint,
                          size_t n_cases, size_t ci, unsigned char *agrees);

/* --verbose: kv_fleet_compare also prints one line per disagreeing rank and case. */
void kv_fleet_set_verbose(int verbose);

#endif
