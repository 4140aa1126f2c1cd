/* dtype.c - names, sizes and unit roundoffs of storage/accumulator types, precision pairs
 * and the case status names. */
#include "core/dtype.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "numerics/fp8.h"
#include "numerics/ulp.h"

static const char *const dtype_names[KV_NDTYPES] = {"fp16", "bf16", "fp32", "fp64", "e4m3", "e5m2"};

size_t kv_dtype_size(kv_dtype t) {
  static const size_t sizes[KV_NDTYPES] = {2, 2, 4, 8, 1, 1};
  return (unsigned)t < KV_NDTYPES ? sizes[t] : 0;
}

const char *kv_dtype_name(kv_dtype t) { return (unsigned)t < KV_NDTYPES ? dtype_names[t] : "?"; }

int kv_dtype_parse(const char *s, kv_dtype *out) {
  for (int i = 0; i < KV_NDTYPES; i++)
    if (strcmp(s, dtype_names[i]) == 0) {
      *out = (kv_dtype)i;
      return 0;
    }
  return -1;
}

double kv_dtype_unit_roundoff(kv_dtype t) { return (unsigned)t < KV_NDTYPES ? ldexp(1.0, -kv_type_precision(t)) : 0.0; }

int kv_dtype_is_fp8(kv_dtype t) { return t == KV_E4M3 || t == KV_E5M2; }

int kv_precision_parse(const char *s, kv_precision *out) {
  const char *colon = strchr(s, ':');
  if (!colon || colon == s || strchr(colon + 1, ':')) return -1;
  char storage[16];
  size_t n = (size_t)(colon - s);
  if (n >= sizeof storage) return -1;
  memcpy(storage, s, n);
  storage[n] = '\0';
  kv_precision p;
  if (kv_dtype_parse(storage, &p.storage) != 0 || kv_dtype_parse(colon + 1, &p.accum) != 0) return -1;
  *out = p;
  return 0;
}

void kv_precision_format(kv_precision p, char *buf, size_t n) {
  snprintf(buf, n, "%s:%s", kv_dtype_name(p.storage), kv_dtype_name(p.accum));
}

const char *kv_precision_invalid_reason(kv_precision p) {
  if (p.storage == KV_FP64 || p.accum == KV_FP64) return "fp64 is the reference precision, not a kernel precision";
  if (kv_dtype_is_fp8(p.accum)) return "an 8-bit type is a storage type only: FP8 storage accumulates in fp32 (e4m3:fp32)";
  if (p.accum != KV_FP32 && p.accum != p.storage)
    return "accumulator must be fp32 or the storage type (e.g. bf16 storage with fp16 accumulation is meaningless)";
  return NULL;
}

kv_dtype kv_precision_output(kv_precision p) { return kv_dtype_is_fp8(p.storage) ? KV_BF16 : p.storage; }

double kv_precision_accum_roundoff(kv_precision p) {
  return kv_dtype_is_fp8(p.storage) ? ldexp(1.0, -KV_FP8_ACC_BITS) : kv_dtype_unit_roundoff(p.accum);
}

const char *kv_status_name(kv_case_status s) {
  static const char *const names[KV_NSTATUS] = {"not_run",        "pass",  "fail_tolerance",        "fail_nonfinite",
                                                "skipped",        "error", "fail_nondeterministic", "fail_out_of_bounds",
                                                "fail_bias",      "fail_timing", "inaccurate"};
  return (unsigned)s < KV_NSTATUS ? names[s] : "?";
}
