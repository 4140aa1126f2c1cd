/* families.h - the four kernel-family descriptors (registered by family.c) and the helpers
 * that the plan, the backends and the CUDA kernels share with them: case dimensions decoded
 * from the axes and parameters, the GEMM shape parser, and the extended-precision references
 * the tests use to judge the fp64 ones. */
#ifndef KVAL_FAMILIES_H
#define KVAL_FAMILIES_H

#include "family.h"

extern const kv_family kv_family_fa2, kv_family_gemm, kv_family_layernorm, kv_family_rmsnorm;

/* ---- gemm ---- */

/* Parse "MxNxK" (decimal, each 1..2^30, 'x' or 'X' between): 0 on success, -1 otherwise. */
int kv_gemm_parse_shape(const char *s, long long *m, long long *n, long long *k);

typedef struct {
  long long m, n, k;
  int a_trans, b_trans; /* layout letter 't': A stored as row-major KxM / B as row-major NxK */
  double alpha, beta;
  int has_c;            /* beta != 0: input 2 is C (row-major MxN) */
} kv_gemm_dims;
void kv_gemm_dims_of(const kv_case *c, kv_gemm_dims *d);

/* ---- fa2 ---- */

typedef struct {
  long long batch, seqlen, seqlen_k, heads, headdim;
  int causal;
  int wgmma;         /* variant kval-wgmma (its own key block size) rather than kval-mma */
  double scale;      /* softmax scale (param, or 1/sqrt(headdim)) */
  float scale_f;     /* (float)scale: the LSE is scale_f * rowmax + log(rowsum) */
  float scale_log2;  /* (float)(scale * log2(e)): p = exp2(S * scale_log2 - rowmax * scale_log2) */
} kv_fa2_dims;
void kv_fa2_dims_of(const kv_case *c, kv_fa2_dims *d);

/* Last key index query row i may attend (bottom-right aligned causal mask; seqlen_k - 1 when
 * not causal). Negative: the row is fully masked. */
long long kv_fa2_last_key(const kv_fa2_dims *d, long long i);

/* The factor rho of fa2's magnitude term (see fa2_ref.c):
 * mag = sum_j P_j |V_jd| (1 + scale sum_k |q_k k_jk| + rho), rho = u_storage / (u_acc sqrt(K))
 * carries the rounding of P to the storage type into the units of the tolerance's
 * c2 sqrt(K) u_acc term. The GPU reference uses the same value. */
double kv_fa2_mag_rho(const kv_case *c);

/* ---- layernorm, rmsnorm ---- */

typedef struct {
  long long rows, hidden;
  double eps;
} kv_norm_dims;
void kv_norm_dims_of(const kv_case *c, kv_norm_dims *d);

/* ---- the families' CPU kernels and references, defined across each family's files ---- */
kv_status kv_gemm_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_fa2_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_fa2_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                           double *ref, double *mag, double *aux_ref);
kv_status kv_layernorm_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                 double *ref, double *mag, double *aux_ref);
kv_status kv_rmsnorm_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                               double *ref, double *mag, double *aux_ref);

/* ---- extended-precision references (double-double accumulation; same contract as the
 * families' reference()) used by the tests to check the fp64 ones on ill-conditioned data ---- */

kv_status kv_gemm_reference_compensated(const kv_case *c, const void *const *in, const size_t *rows,
                                        size_t n_rows, double *ref, double *mag, double *aux_ref);
kv_status kv_fa2_reference_compensated(const kv_case *c, const void *const *in, const size_t *rows,
                                       size_t n_rows, double *ref, double *mag, double *aux_ref);
kv_status kv_layernorm_reference_compensated(const kv_case *c, const void *const *in, const size_t *rows,
                                             size_t n_rows, double *ref, double *mag, double *aux_ref);
kv_status kv_rmsnorm_reference_compensated(const kv_case *c, const void *const *in, const size_t *rows,
                                           size_t n_rows, double *ref, double *mag, double *aux_ref);

#endif
