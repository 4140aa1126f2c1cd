/* conform.h - the conformance verdict of a case: does the kernel compute what the precision
 * model says a correct implementation computes? Accuracy (the error against the fp64
 * reference and its bound) and conformance are two questions; a case that fails the first and
 * passes the second is `inaccurate`: a correct kernel of an inadequate precision, a finding of
 * a precision study, not a failure. Conformance is measured against the cpu emulation, run
 * again on the host on inputs generated again, and only where the model is exact (the family's
 * emulation_exact: the kernel must equal the emulation bit for bit) for a reduced accumulation
 * (narrower than fp32: a 16-bit accumulator, or the FP8 tensor cores' 14-bit sums); elsewhere no
 * case can be inaccurate. docs/NUMERICS.md section 4. */
#ifndef KVAL_CONFORM_H
#define KVAL_CONFORM_H

#include "backends/backend.h"

/* 1 when the conformance of case c can be judged: its accumulation is narrower than fp32
 * (kv_precision_accum_roundoff) and its family says the kernel must equal the emulation bit for bit. */
int kv_conform_judged(const kv_case *c);

/* Deviation of the kernel's outputs from the emulation of case c. */
typedef struct {
  double max_ulp;    /* max over output 0 of the distance in ULPs of its storage type (kv_ulp_distance;
                        NaN against NaN and equal infinities count 0, a non-finite against anything else +inf) */
  size_t n_differ;   /* elements of output 0 and the auxiliary output whose bits differ (NaN against NaN equal) */
  size_t first;      /* flat index of the first differing element of output 0 (or of the auxiliary output) */
} kv_conformance;

/* Generate c's inputs on the host (the generator every backend uses), run the family's
 * emulation on them and compare its outputs with d->out and d->aux. KV_ERR when the buffers
 * cannot be allocated or the emulation fails. */
kv_status kv_conform_measure(const kv_case *c, const kv_run_settings *rs, const kv_case_data *d, kv_conformance *m);

#endif
