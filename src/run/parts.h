/* parts.h - the error statistics of each part of a case's output (kv_family.out_parts):
 * computed on the host, checked against the whole output's, and the part an element is in. */
#ifndef KVAL_PARTS_H
#define KVAL_PARTS_H

#include "backends/backend.h"
#include "numerics/errstats.h"

/* The statistics of each of the family's parts (kv_family_parts of them) into parts, from the
 * output, reference and magnitude the backend handed back in d (the rows it compared: all, or
 * a sample in ascending order as kv_reference_rows takes it). Worst indices are flat indices
 * into the whole output. KV_ERR when out of memory. */
kv_status kv_parts_host_stats(const kv_case *c, const kv_cost *cost, const kv_tolerance *tol, const kv_case_data *d,
                              kv_errstats *parts);

/* The first way the parts' statistics fail to tile the whole output's, in msg ("" when they
 * do): counts and histograms that do not add up, maxima or the worst element that differ, bias
 * sums that differ beyond the order of their terms. */
void kv_parts_consistency(const kv_errstats *whole, const kv_errstats *parts, int n_parts, char *msg, size_t len);

/* The name of the part that holds flat output index `index` (rows of cost->row_len elements),
 * or NULL when the family has no parts or there is no such element. */
const char *kv_parts_name_of(const kv_case *c, const kv_cost *cost, int64_t index);

#endif
