/* fa2bwd.h - the fa2bwd family (FlashAttention-2 backward) as the rest of the family sees it:
 * the descriptor, the case dimensions decoded once from the axes and parameters (shared by the
 * descriptor, the CPU reference, the emulation and the CUDA adapter), the magnitude factor of
 * the reference, and the CPU kernels (emulation, fp64 reference and its double-double twin).
 *
 * Layouts (self-attention): inputs q, k, v, dout [batch, seqlen, heads, headdim]; the one
 * checked output dqkv holds dQ, dK and dV one after the other, each [batch, seqlen, heads,
 * headdim] in the storage type, so its rows (of headdim) are 3 x batch x seqlen x heads: row
 * r is gradient r / (batch seqlen heads) (0 dQ, 1 dK, 2 dV) of token row r % (batch seqlen
 * heads) = (b * seqlen + i) * heads + h. The forward's o and lse, which the backward reads,
 * are computed from q, k, v by the case itself (the fa2 forward kernel on the GPU, the
 * emulation's forward on the cpu backend), not generated. */
#ifndef KVAL_FAMILIES_FA2BWD_H
#define KVAL_FAMILIES_FA2BWD_H

#ifdef __cplusplus
extern "C" {
#endif

#include "family.h"

extern const kv_family kv_family_fa2bwd;

typedef struct {
  long long batch, seqlen, heads, headdim;
  int causal;
  int variant;      /* kv_fa2bwd_variant (fa2bwd_limits.h) */
  double scale;     /* softmax scale (param, or 1/sqrt(headdim)) */
  float scale_f;    /* (float)scale */
  float scale_log2; /* (float)(scale * log2(e)) */
} kv_fa2bwd_dims;
void kv_fa2bwd_dims_of(const kv_case *c, kv_fa2bwd_dims *d);

/* Visible keys of query row i: i + 1 when causal, else seqlen. */
long long kv_fa2bwd_keys(const kv_fa2bwd_dims *d, long long i);

/* The constants of the magnitude terms (fa2bwd_reference.h), in units of the tolerance's
 * u_acc sqrt(K), K = max(seqlen, headdim): rho = u_storage / (u_acc sqrt(K)) and eta = half
 * the storage type's subnormal spacing / (u_acc sqrt(K)). Both references use these values. */
void kv_fa2bwd_mag_terms(const kv_case *c, double *rho, double *eta);

kv_status kv_fa2bwd_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_fa2bwd_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag);
kv_status kv_fa2bwd_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                     double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
