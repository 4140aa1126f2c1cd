/* inject.c - fault injection for testing the validator itself (see inject.h). */
#include "run/inject.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/halfprec.h"

static const char *const kind_names[] = {"bitflip", "nan", "scale", "slow", "sticky", "hang"};

/* A non-empty run of decimal digits [s, e) with value <= max (no sign, no spaces): the
 * same rule as the option parser, so every --inject it accepts parses here too. */
static int parse_decimal(const char *s, const char *e, long long max, long long *v) {
  long long acc = 0;
  if (s == e) return -1;
  for (const char *p = s; p < e; p++) {
    if (*p < '0' || *p > '9') return -1;
    int d = *p - '0';
    if (acc > (max - d) / 10) return -1;
    acc = acc * 10 + d;
  }
  *v = acc;
  return 0;
}

int kv_inject_parse(const char *spec, kv_inject *out, char *err, size_t errlen) {
  const char *at = strchr(spec, '@');
  if (!at) {
    snprintf(err, errlen, "kval: --inject: '%s' has no '@' (expected KIND@RANK[:CASE], KIND one of bitflip nan scale slow sticky hang)", spec);
    return -1;
  }
  size_t klen = (size_t)(at - spec);
  int kind = -1;
  for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
    if (strlen(kind_names[i]) == klen && strncmp(spec, kind_names[i], klen) == 0) kind = i;
  if (kind < 0) {
    snprintf(err, errlen, "kval: --inject: unknown kind '%.*s' in '%s' (expected bitflip, nan, scale, slow, sticky or hang)", (int)klen, spec, spec);
    return -1;
  }
  const char *colon = strchr(at + 1, ':'), *end = at + 1 + strlen(at + 1);
  long long rank, case_index = -1;
  if (parse_decimal(at + 1, colon ? colon : end, INT_MAX, &rank) != 0) {
    snprintf(err, errlen, "kval: --inject: bad rank in '%s' (expected a rank number >= 0 after '@')", spec);
    return -1;
  }
  if (colon && parse_decimal(colon + 1, end, LLONG_MAX, &case_index) != 0) {
    snprintf(err, errlen, "kval: --inject: bad case index in '%s' (expected a case number >= 0 after ':')", spec);
    return -1;
  }
  out->kind = (kv_inject_kind)kind;
  out->rank = (int)rank;
  out->case_index = case_index;
  return 0;
}

/* The most significant mantissa bit of the storage type. */
static void flip_bit(void *buf, size_t i, kv_dtype t) {
  switch (t) {
    case KV_FP16: ((uint16_t *)buf)[i] ^= (uint16_t)(1u << 9); break;
    case KV_BF16: ((uint16_t *)buf)[i] ^= (uint16_t)(1u << 6); break;
    case KV_FP32: ((uint32_t *)buf)[i] ^= 1u << 22; break;
    default: ((uint64_t *)buf)[i] ^= 1ull << 51; break;
  }
}

static int targets(const kv_inject *inj, int rank, size_t case_index) {
  return inj->rank == rank && (inj->case_index < 0 || (size_t)inj->case_index == case_index);
}

void kv_inject_requests(const kv_inject *inj, int n, int rank, size_t case_index, kv_case_data *d) {
  d->device_stats = 1;
  d->device_fault = d->device_hang = 0;
  for (int k = 0; k < n; k++) {
    if (!targets(&inj[k], rank, case_index)) continue;
    if (inj[k].kind == KV_INJECT_BITFLIP || inj[k].kind == KV_INJECT_NAN || inj[k].kind == KV_INJECT_SCALE)
      d->device_stats = 0;
    if (inj[k].kind == KV_INJECT_STICKY) d->device_fault = 1;
    if (inj[k].kind == KV_INJECT_HANG) d->device_hang = 1;
  }
}

int kv_inject_apply(const kv_inject *inj, int n, int rank, size_t case_index, kv_case_data *d) {
  int applied = 0;
  for (int k = 0; k < n; k++) {
    if (!targets(&inj[k], rank, case_index)) continue;
    size_t mid = d->out_count / 2;
    switch (inj[k].kind) {
      case KV_INJECT_BITFLIP: flip_bit(d->out, mid, d->out_type); break;
      case KV_INJECT_NAN: kv_store(d->out, mid, d->out_type, NAN); break;
      case KV_INJECT_SCALE:
        for (size_t i = 0; i < d->out_count; i++)
          kv_store(d->out, i, d->out_type, kv_load(d->out, i, d->out_type) * (1.0 + 1e-3));
        break;
      case KV_INJECT_SLOW:
        for (int i = 0; i < d->n_times; i++) d->times[i] *= KV_INJECT_SLOW_FACTOR;
        break;
      case KV_INJECT_STICKY:
        kv_fatal_defer(__FILE__, __LINE__, "injected sticky device error (--inject sticky@%d) in case %zu", rank,
                       case_index);
        break;
      case KV_INJECT_HANG:
        kv_fatal_defer(__FILE__, __LINE__,
                       "timeout: the kernel did not finish within the watchdog's deadline (simulated by --inject "
                       "hang@%d on a backend without a device) in case %zu",
                       rank, case_index);
        break;
    }
    applied++;
  }
  return applied;
}
