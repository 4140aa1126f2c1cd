/* fleet.c - gather every rank's fingerprints on rank 0 and compare them per case within
 * groups of ranks that have the same device model (see fleet.h). */
#include "run/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

static int produced_output(signed char s) { return s == KV_PASS || s == KV_FAIL_TOLERANCE || s == KV_FAIL_NONFINITE; }

/* Compare one case among the ranks of one model group (members[0..m)); fills agrees and
 * returns the number of distinct fingerprints, *majority and *group_n (ranks compared).
 * When the most common fingerprint is tied (e.g. 1 vs 1 on two GPUs) there is no majority:
 * every rank of the group that produced an output is marked as disagreeing. */
static int compare_group(const int *members, int m, const signed char *st, const uint64_t *fp, size_t n_cases,
                         size_t ci, unsigned char *agrees, uint64_t *majority, int *group_n) {
  int distinct = 0, best = 0, compared = 0, tie = 0;
  uint64_t best_fp = 0;
  for (int a = 0; a < m; a++) {
    size_t ia = (size_t)members[a] * n_cases + ci;
    if (!produced_output(st[ia])) continue;
    compared++;
    int seen_before = 0, count = 0;
    for (int b = 0; b < m; b++) {
      size_t ib = (size_t)members[b] * n_cases + ci;
      if (!produced_output(st[ib]) || fp[ib] != fp[ia]) continue;
      if (b < a) seen_before = 1;
      count++;
    }
    if (seen_before) continue;
    distinct++;
    if (count > best) {
      best = count;
      best_fp = fp[ia];
      tie = 0;
    } else if (count == best) {
      tie = 1;
    }
  }
  for (int a = 0; a < m; a++) {
    size_t ia = (size_t)members[a] * n_cases + ci;
    agrees[members[a]] = produced_output(st[ia]) ? (!tie && fp[ia] == best_fp) : 2;
  }
  *majority = best_fp;
  *group_n = compared;
  return distinct;
}

long kv_fleet_compare(const kv_plan *p, const signed char *status, const uint64_t *fingerprint,
                      const kv_rank_info *infos, MPI_Comm comm, kv_fp_case **out) {
  int rank, nranks;
  if (CHECK_MPI(MPI_Comm_rank(comm, &rank)) || CHECK_MPI(MPI_Comm_size(comm, &nranks))) return -1;
  size_t n = p->n_cases;
  signed char *all_st = NULL;
  uint64_t *all_fp = NULL;
  if (rank == 0) {
    all_st = KV_MALLOC((size_t)nranks * n + 1);
    all_fp = KV_MALLOC(((size_t)nranks * n + 1) * sizeof *all_fp);
  }
  int ok = rank != 0 || (all_st && all_fp);
  kv_status st = CHECK_MPI(MPI_Gather(status, (int)n, MPI_SIGNED_CHAR, all_st, (int)n, MPI_SIGNED_CHAR, 0, comm));
  if (st == KV_OK)
    st = CHECK_MPI(MPI_Gather(fingerprint, (int)n, MPI_UINT64_T, all_fp, (int)n, MPI_UINT64_T, 0, comm));
  long mismatches = 0;
  if (rank == 0 && st == KV_OK && ok) {
    kv_fp_case *cases = KV_CALLOC(n ? n : 1, sizeof *cases);
    int *members = KV_MALLOC((size_t)nranks * sizeof *members);
    unsigned char *grouped = KV_CALLOC((size_t)nranks, 1);
    ok = cases && members && grouped;
    for (size_t ci = 0; ok && ci < n; ci++) {
      kv_fp_case *fc = &cases[ci];
      fc->family = p->cases[ci].fp->family_index;
      fc->cell = p->cases[ci].cell;
      fc->agrees = KV_MALLOC((size_t)nranks);
      if (!fc->agrees) {
        ok = 0;
        break;
      }
      memset(grouped, 0, (size_t)nranks);
      int largest = 0;
      for (int r0 = 0; r0 < nranks; r0++) {
        if (grouped[r0]) continue;
        int m = 0;
        for (int r = r0; r < nranks; r++)
          if (!grouped[r] && strcmp(infos[r].device_name, infos[r0].device_name) == 0) {
            grouped[r] = 1;
            members[m++] = r;
          }
        uint64_t majority;
        int compared;
        int distinct = compare_group(members, m, all_st, all_fp, n, ci, fc->agrees, &majority, &compared);
        if (distinct > fc->n_distinct) fc->n_distinct = distinct;
        if (compared > largest) {
          largest = compared;
          fc->majority = majority;
        }
      }
      for (int r = 0; r < nranks; r++) {
        if (fc->agrees[r] != 0) continue;
        char what[512];
        kv_case_describe(&p->cases[ci], what, sizeof what);
        if (fc->n_distinct > 1 && all_fp[(size_t)r * n + ci] == fc->majority)
          fprintf(stderr,
                  "kval: FINGERPRINT MISMATCH %s: rank %d (host %s, %s %s) computed %016llx; no fingerprint has a "
                  "majority among the ranks of its model, so every rank is named\n",
                  what, r, infos[r].host, infos[r].device_name, infos[r].uuid,
                  (unsigned long long)all_fp[(size_t)r * n + ci]);
        else
          fprintf(stderr,
                  "kval: FINGERPRINT MISMATCH %s: rank %d (host %s, %s %s) computed %016llx, the majority of its "
                  "model group computed %016llx\n",
                  what, r, infos[r].host, infos[r].device_name, infos[r].uuid,
                  (unsigned long long)all_fp[(size_t)r * n + ci], (unsigned long long)fc->majority);
        mismatches++;
      }
    }
    free(members);
    free(grouped);
    if (ok) {
      *out = cases;
    } else {
      kv_fleet_free(cases, n);
      mismatches = -1;
    }
  }
  free(all_st);
  free(all_fp);
  if (st != KV_OK) mismatches = -1;
  if (CHECK_MPI(MPI_Bcast(&mismatches, 1, MPI_LONG, 0, comm))) return -1;
  return mismatches;
}

void kv_fleet_free(kv_fp_case *cases, size_t n) {
  if (!cases) return;
  for (size_t i = 0; i < n; i++) free(cases[i].agrees);
  free(cases);
}
