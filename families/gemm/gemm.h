/* gemm.h - the gemm family (D = alpha op(A) op(B) + beta C) as the rest of the family sees
 * it: the descriptor, the shape parser, the case dimensions decoded once, and the CPU kernels
 * (emulation, fp64 reference and its double-double twin). */
#ifndef KVAL_FAMILIES_GEMM_H
#define KVAL_FAMILIES_GEMM_H

#ifdef __cplusplus
extern "C" {
#endif

#include "family.h"

extern const kv_family kv_family_gemm;

/* Parse "MxNxK" (decimal, each 1..2^30, 'x' or 'X' between): 0 on success, -1 otherwise. */
int kv_gemm_parse_shape(const char *s, long long *m, long long *n, long long *k);

typedef struct {
  long long m, n, k;
  int a_trans, b_trans; /* layout letter 't': A stored as row-major KxM / B as row-major NxK */
  double alpha, beta;
  int has_c;            /* beta != 0: input 2 is C (row-major MxN) */
  double scale_a, scale_b; /* FP8 per-tensor scales: the values are scale_a A, scale_b B */
  long long promote;       /* FP8 promotion interval in products, 0 = never (gemm_limits.h) */
  kv_dtype st, out;        /* storage type of A and B; type of C and D (kv_precision_output) */
} kv_gemm_dims;
void kv_gemm_dims_of(const kv_case *c, kv_gemm_dims *d);

kv_status kv_gemm_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_gemm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                            double *mag, double *aux_ref, double *aux_mag);
kv_status kv_gemm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                               double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
