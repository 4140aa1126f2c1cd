/* result.c - a result row with every statistic unset, and a part's statistics as a row of part_stats. */
#include "core/result.h"

#include <math.h>
#include <string.h>

#include "core/dtype.h"

void kv_result_init(kv_result *r, int rank, int family, uint64_t cell) {
  memset(r, 0, sizeof *r);
  r->rank = rank;
  r->family = family;
  r->cell = cell;
  r->status = KV_NOT_RUN;
#define KV_X(name, member, unit, doc) r->member = NAN;
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) r->member = -1;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  for (int p = 0; p < KV_MAX_PARTS; p++)
    for (int k = 0; k < KV_N_PART_STATS; k++) r->part_stats[p][k] = NAN;
  r->tel.throttle_reasons = 0; /* a bitmask: none seen */
}

void kv_result_part_stats(const kv_errstats *st, double *row) {
#define KV_X(name, member, doc) row[KV_PART_##name] = (double)st->member;
  KV_PART_STATS(KV_X)
#undef KV_X
}
