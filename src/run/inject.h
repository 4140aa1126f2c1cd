/* inject.h - --inject KIND@RANK[:CASE]: faults applied to a kernel's result after it runs,
 * to test that the validator detects them (bitflip, nan, scale, slow), a sticky device error
 * and a kernel that never finishes (sticky, hang: real on the cuda backend, simulated on cpu)
 * to test the fatal path and the watchdog. */
#ifndef KVAL_INJECT_H
#define KVAL_INJECT_H

#include <stddef.h>

#include "backends/backend.h"

typedef enum {
  KV_INJECT_BITFLIP,
  KV_INJECT_NAN,
  KV_INJECT_SCALE,
  KV_INJECT_SLOW,
  KV_INJECT_STICKY,
  KV_INJECT_HANG
} kv_inject_kind;

/* What slow multiplies the timings by (see kv_inject_apply). */
#define KV_INJECT_SLOW_FACTOR 3.0

typedef struct {
  kv_inject_kind kind;
  int rank;
  long long case_index; /* index into the plan's case list; -1: every case of the rank */
} kv_inject;

/* Parse "KIND@RANK[:CASE]"; 0 on success, -1 with a message naming the option. */
int kv_inject_parse(const char *spec, kv_inject *out, char *err, size_t errlen);

/* The backend requests for (rank, case_index), set in d before run_case:
 * d->device_stats = 1 unless an injection will modify output 0 on the host (bitflip, nan,
 * scale: the statistics must then come from the host, over the modified output);
 * d->device_fault = 1 when a sticky injection targets the case (a backend with a device, cuda,
 * then causes a real sticky device error: run_case fails through CHECK_CUDA's fatal path);
 * d->device_hang = 1 when a hang injection does (cuda launches a kernel that never finishes). */
void kv_inject_requests(const kv_inject *inj, int n, int rank, size_t case_index, kv_case_data *d);

/* Apply the injections that target (rank, case_index) to the backend's result:
 * bitflip - flips the most significant mantissa bit of the middle element of output 0;
 * nan     - sets the middle element of output 0 to NaN;
 * scale   - multiplies every element of output 0 by (1 + 1e-3), rounded to storage;
 * slow    - multiplies every timed repetition by KV_INJECT_SLOW_FACTOR (3: a GPU stuck at a low
 *           clock; far above the run-to-run noise of the cpu backend's times on a loaded machine,
 *           which moved single cases by up to 2x and once hid a 1.5x injection from the fleet check);
 * sticky  - a device error that leaves the context unusable: simulated here (kv_fatal_defer)
 *           for a backend without a device; the case is recorded as error, then the rank ends
 *           through the fatal path. (On cuda the real fault made run_case fail: not reached.)
 * hang    - a kernel that never finishes: on cuda a real one, which the watchdog names (run_case
 *           fails: not reached); simulated here as the watchdog's timeout, the same fatal path.
 * Returns how many were applied. */
int kv_inject_apply(const kv_inject *inj, int n, int rank, size_t case_index, kv_case_data *d);

#endif
