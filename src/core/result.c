/* result.c - a result row with every statistic unset. */
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
  r->tel.throttle_reasons = 0; /* a bitmask: none seen */
}
