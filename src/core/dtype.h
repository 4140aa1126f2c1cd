/* dtype.h - storage and accumulator types, precisions (storage:accumulator pairs) and the
 * per-case status enum. Names here are the ones used in decks, in the HDF5 file and in
 * analysis/ (e.g. precision "fp16:fp32" = fp16 storage, fp32 accumulation). */
#ifndef KVAL_DTYPE_H
#define KVAL_DTYPE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

/* The values never change (they are stored in files); new types are appended. KV_E4M3 and
 * KV_E5M2 are the 8-bit formats of numerics/fp8.h (storage only, fp32 accumulation). */
typedef enum { KV_FP16 = 0, KV_BF16 = 1, KV_FP32 = 2, KV_FP64 = 3, KV_E4M3 = 4, KV_E5M2 = 5, KV_NDTYPES } kv_dtype;

typedef struct {
  kv_dtype storage; /* inputs and outputs are rounded to this type */
  kv_dtype accum;   /* accumulator type of the kernel's reductions */
} kv_precision;

size_t kv_dtype_size(kv_dtype t);     /* bytes per element in storage */
const char *kv_dtype_name(kv_dtype t); /* "fp16", "bf16", "fp32", "fp64", "e4m3", "e5m2" */
int kv_dtype_parse(const char *s, kv_dtype *out); /* 0 on success */
double kv_dtype_unit_roundoff(kv_dtype t);        /* u = 2^-p: fp16 2^-11, bf16 2^-8, fp32 2^-24, e4m3 2^-4 */
int kv_dtype_is_fp8(kv_dtype t);                  /* e4m3 or e5m2 */

/* "fp16:fp32" <-> precision. Parse returns 0 on success, -1 on a malformed name. */
int kv_precision_parse(const char *s, kv_precision *out);
void kv_precision_format(kv_precision p, char *buf, size_t n);
/* Returns NULL when the pair is meaningful, else a static reason string
 * (e.g. accumulator narrower than a different storage type, fp64 anywhere, an 8-bit
 * accumulator). */
const char *kv_precision_invalid_reason(kv_precision p);

/* The one rule for the type of a case's outputs (and of GEMM's C): the storage type, except
 * bf16 for 8-bit storage (FP8 GEMMs write a 16-bit result, as cuBLASLt's FP8 kernels do).
 * analysis/kval_analysis/cases.py reads it from the file's output dtype attribute. */
kv_dtype kv_precision_output(kv_precision p);

/* The unit roundoff of the accumulation that the tolerance's sqrt(K) term charges: the
 * accumulator type's, except for 8-bit storage, whose tensor-core fp32 accumulation keeps
 * only KV_FP8_ACC_BITS significand bits (numerics/fp8.h; docs/NUMERICS.md). */
double kv_precision_accum_roundoff(kv_precision p);

/* Status of one case, stored in the file as an HDF5 enum with these names and values (the
 * values never change; new ones are appended). Every fail_* fails the job (exit 1); error is a
 * runtime error (exit 3); inaccurate is a finding that fails nothing (src/run/conform.h). */
typedef enum {
  KV_NOT_RUN = 0,
  KV_PASS = 1,
  KV_FAIL_TOLERANCE = 2,
  KV_FAIL_NONFINITE = 3,
  KV_SKIPPED = 4,
  KV_ERROR = 5,                 /* the case could not be run or checked (a backend, harness or timeout error) */
  KV_FAIL_NONDETERMINISTIC = 6, /* two launches of the case wrote different bits */
  KV_FAIL_OUT_OF_BOUNDS = 7,    /* a write outside the output tensors: a guard band or an input changed */
  KV_FAIL_BIAS = 8,             /* a systematic rounding bias that round to nearest cannot produce */
  KV_FAIL_TIMING = 9,           /* an impossible measurement: faster than the measured ceiling */
  KV_INACCURATE = 10,           /* beyond its fp64 bound, but exactly what the precision model computes */
  KV_NSTATUS
} kv_case_status;
const char *kv_status_name(kv_case_status s);

#ifdef __cplusplus
}
#endif

#endif
