/* fa2.h - the fa2 family (FlashAttention-2 forward) as the rest of the family sees it: the
 * descriptor, the case dimensions decoded once from the axes and parameters (shared by the
 * descriptor, the CPU reference, the emulation and the CUDA adapter), the causal mask and the
 * magnitude factor of the reference, and the CPU kernels (emulation, fp64 reference and its
 * double-double twin). */
#ifndef KVAL_FAMILIES_FA2_H
#define KVAL_FAMILIES_FA2_H

#ifdef __cplusplus
extern "C" {
#endif

#include "family.h"

extern const kv_family kv_family_fa2;

typedef struct {
  long long batch, seqlen, seqlen_k, heads, headdim;
  int causal;
  int variant;       /* kv_fa2_variant (fa2_limits.h): the kernel, whose key block size the emulation follows */
  double scale;      /* softmax scale (param, or 1/sqrt(headdim)) */
  float scale_f;     /* (float)scale: the LSE is scale_f * rowmax + log(rowsum) */
  float scale_log2;  /* (float)(scale * log2(e)): p = exp2(S * scale_log2 - rowmax * scale_log2) */
} kv_fa2_dims;
void kv_fa2_dims_of(const kv_case *c, kv_fa2_dims *d);

/* Last key index query row i may attend (bottom-right aligned causal mask; seqlen_k - 1 when
 * not causal). Negative: the row is fully masked. */
long long kv_fa2_last_key(const kv_fa2_dims *d, long long i);

/* The factor rho of fa2's magnitude term (see fa2_cpu_ref.c):
 * mag = sum_j P_j |V_jd| (1 + scale sum_k |q_k k_jk| + rho), rho = u_storage / (u_acc sqrt(K))
 * carries the rounding of P to the storage type into the units of the tolerance's
 * c2 sqrt(K) u_acc term. The GPU reference uses the same value. */
double kv_fa2_mag_rho(const kv_case *c);

kv_status kv_fa2_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_fa2_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                           double *mag, double *aux_ref, double *aux_mag);
kv_status kv_fa2_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                              double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
