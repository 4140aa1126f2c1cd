/* fleet.c - gather every rank's fingerprints on rank 0 and compare them per case within
 * groups of ranks that have the same device model (see fleet.h); print one summary line per
 * rank that disagrees (and, with --verbose, one line per disagreeing rank and case). */
#include "run/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

static int produced_output(signed char s) {
  return s == KV_PASS || s == KV_FAIL_TOLERANCE || s == KV_FAIL_NONFINITE || s == KV_INACCURATE;
}

static int fleet_verbose;
void kv_fleet_set_verbose(int verbose) { fleet_verbose = verbose; }

/* Per rank, over all cases: how its fingerprint compared with the other ranks of its model. */
typedef struct {
  long compared; /* cases its group compared (two or more ranks with an output) */
  long differs;  /* ... where it differs from its group's majority */
  long no_major; /* ... where its group had no majority (a tie: every rank is named) */
  int group_n;   /* largest number of ranks its group compared in one case */
} rank_tally;

/* The comparison of one case within one model group. */
typedef struct {
  int distinct, compared, tie;
  uint64_t majority;
  int n_majority; /* ranks that computed the majority fingerprint */
} group_result;

/* Compare one case among the ranks of one model group (members[0..m)); fills agrees.
 * When the most common fingerprint is tied (e.g. 1 vs 1 on two GPUs) there is no majority:
 * every rank of the group that produced an output is marked as disagreeing. */
static group_result compare_group(const int *members, int m, const signed char *st, const uint64_t *fp, size_t n_cases,
                                  size_t ci, unsigned char *agrees) {
  group_result g = {0, 0, 0, 0, 0};
  for (int a = 0; a < m; a++) {
    size_t ia = (size_t)members[a] * n_cases + ci;
    if (!produced_output(st[ia])) continue;
    g.compared++;
    int seen_before = 0, count = 0;
    for (int b = 0; b < m; b++) {
      size_t ib = (size_t)members[b] * n_cases + ci;
      if (!produced_output(st[ib]) || fp[ib] != fp[ia]) continue;
      if (b < a) seen_before = 1;
      count++;
    }
    if (seen_before) continue;
    g.distinct++;
    if (count > g.n_majority) {
      g.n_majority = count;
      g.majority = fp[ia];
      g.tie = 0;
    } else if (count == g.n_majority) {
      g.tie = 1;
    }
  }
  for (int a = 0; a < m; a++) {
    size_t ia = (size_t)members[a] * n_cases + ci;
    agrees[members[a]] = produced_output(st[ia]) ? (!g.tie && fp[ia] == g.majority) : 2;
  }
  return g;
}

int kv_fleet_compare_case(const int *members, int m, const signed char *status, const uint64_t *fingerprint,
                          size_t n_cases, size_t ci, unsigned char *agrees) {
  return compare_group(members, m, status, fingerprint, n_cases, ci, agrees).distinct;
}

/* --verbose: one line per disagreeing (rank, case). */
static void print_detail(const kv_case *c, int r, const kv_rank_info *info, uint64_t fp, const group_result *g) {
  char what[512];
  kv_case_describe(c, what, sizeof what);
  if (g->tie)
    fprintf(stderr,
            "kval: FINGERPRINT MISMATCH %s: rank %d (host %s, %s %s) computed %016llx; no fingerprint has a majority "
            "among the %d ranks of its model that ran the case, so every one of them is named\n",
            what, r, info->host, info->device_name, info->uuid, (unsigned long long)fp, g->compared);
  else
    fprintf(stderr,
            "kval: FINGERPRINT MISMATCH %s: rank %d (host %s, %s %s) computed %016llx, the majority of its model "
            "(%d of %d ranks) computed %016llx\n",
            what, r, info->host, info->device_name, info->uuid, (unsigned long long)fp, g->n_majority, g->compared,
            (unsigned long long)g->majority);
}

/* The end-of-run summary: one line per rank with disagreements. */
static void print_summary(const rank_tally *t, const kv_rank_info *infos, int nranks, const char *path_hint) {
  long total = 0;
  for (int r = 0; r < nranks; r++) {
    if (!t[r].differs && !t[r].no_major) continue;
    total += t[r].differs + t[r].no_major;
    char parts[256] = "";
    if (t[r].differs)
      snprintf(parts, sizeof parts, "%ld differ from the majority of its model", t[r].differs);
    if (t[r].no_major) {
      size_t len = strlen(parts);
      snprintf(parts + len, sizeof parts - len, "%s%ld have no majority (a tie among %d ranks: this run cannot tell "
               "which rank is wrong)", len ? ", " : "", t[r].no_major, t[r].group_n);
    }
    fprintf(stderr, "kval: FINGERPRINT MISMATCH: rank %d (host %s, %s %s): %ld of %ld compared cases disagree: %s\n", r,
            infos[r].host, infos[r].device_name, infos[r].uuid, t[r].differs + t[r].no_major, t[r].compared, parts);
  }
  if (total && !fleet_verbose) fprintf(stderr, "kval: %s\n", path_hint);
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
    group_result *of_rank = KV_MALLOC((size_t)nranks * sizeof *of_rank);
    rank_tally *tally = KV_CALLOC((size_t)nranks, sizeof *tally);
    ok = cases && members && grouped && of_rank && tally;
    for (size_t ci = 0; ok && ci < n; ci++) {
      kv_fp_case *fc = &cases[ci];
      fc->family = p->cases[ci].fp->slot;
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
        group_result g = compare_group(members, m, all_st, all_fp, n, ci, fc->agrees);
        for (int a = 0; a < m; a++) of_rank[members[a]] = g;
        if (g.distinct > fc->n_distinct) fc->n_distinct = g.distinct;
        if (g.compared > largest) {
          largest = g.compared;
          fc->majority = g.majority;
        }
      }
      for (int r = 0; r < nranks; r++) {
        const group_result *g = &of_rank[r];
        if (fc->agrees[r] == 2 || g->compared < 2) continue;
        tally[r].compared++;
        if (g->compared > tally[r].group_n) tally[r].group_n = g->compared;
        if (fc->agrees[r] != 0) continue;
        if (g->tie) tally[r].no_major++;
        else tally[r].differs++;
        if (fleet_verbose) print_detail(&p->cases[ci], r, &infos[r], all_fp[(size_t)r * n + ci], g);
        mismatches++;
      }
    }
    if (ok) print_summary(tally, infos, nranks, "every disagreeing case is recorded in the file (fp_agrees = 0; "
                                                "kval-analyze fleet lists them); --verbose prints one line per case");
    free(members);
    free(grouped);
    free(of_rank);
    free(tally);
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
