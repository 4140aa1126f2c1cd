/* crosscheck.h - the comparisons of the cuda backend's cross-checks (backends/cuda/xcheck.c),
 * in host code of their own so that kval's self-test (selftest.c) can give them known answers
 * in every run, on any backend: the GPU fp64 reference's sampled rows against the CPU
 * reference's, and the device error statistics of the sampled elements against the host's. */
#ifndef KVAL_RUN_CROSSCHECK_H
#define KVAL_RUN_CROSSCHECK_H

#include <stddef.h>

#include "numerics/errstats.h"

/* n rows of len values of a reference (value and magnitude term), with one auxiliary value
 * and its magnitude per row (aux and aux_mag NULL: no auxiliary output). */
typedef struct {
  const double *ref, *mag, *aux, *aux_mag;
  size_t n, len;
} kv_ref_sample;

/* The largest relative disagreement of the GPU reference g with the CPU reference c over every
 * value, magnitude, auxiliary value and its magnitude: |g - c| / max(|c|, scale), where scale is
 * the CPU magnitude term for a value and 0 otherwise; 0 when equal (infinities included), +inf
 * where only one side is finite or either is NaN (a row no reference wrote starts as NaN). */
double kv_xcheck_disagreement(const kv_ref_sample *g, const kv_ref_sample *c);

/* The first field where dev (the device statistics of the sampled elements) differs from host
 * (kv_errstats_compute of the same elements: maxima, counts, histogram and worst index
 * exactly; sums to a relative 1e-12, their order differing), or where all (the device
 * statistics of the whole output, of n elements) contradict them (an element not counted, a
 * maximum or count below the sample's), into msg; msg is left as it was when they agree. */
void kv_xcheck_compare_stats(const kv_errstats *dev, const kv_errstats *host, const kv_errstats *all, size_t n,
                             char *msg, size_t len);

#endif
