/* calibrate.h - the cost model's rates measured on this machine for --dry-run: the cpu
 * backend runs one small case of each family of the plan and compares its CPU time with the
 * model's estimate of it (calibrate.c). */
#ifndef KVAL_CALIBRATE_H
#define KVAL_CALIBRATE_H

#include "backends/backend.h"
#include "input/plan.h"

typedef struct {
  double scale[KV_MAX_FAMILIES]; /* per family section (kv_plan.fam): measured / estimated time */
  char rates[160];               /* how the estimates are made, for the --dry-run summary */
} kv_estimate_scale;

/* Fill s for plan p on backend be (NULL: the plan is made by name for a backend this kval
 * lacks). The cpu backend is calibrated (at most about 0.1 s of probes per family); the cuda
 * backend's estimates stay at the H200 rates (scale 1). */
void kv_calibrate(const kv_backend *be, const kv_plan *p, kv_estimate_scale *s);

#endif
