/* norm.h - the layernorm and rmsnorm families as the rest of their folder sees them: the two
 * descriptors, the case dimensions decoded once, and the CPU kernels (the emulation, the fp64
 * references and their double-double twins). */
#ifndef KVAL_FAMILIES_NORM_H
#define KVAL_FAMILIES_NORM_H

#ifdef __cplusplus
extern "C" {
#endif

#include "family.h"

extern const kv_family kv_family_layernorm, kv_family_rmsnorm;

typedef struct {
  long long rows, hidden;
  double eps;
} kv_norm_dims;
void kv_norm_dims_of(const kv_case *c, kv_norm_dims *d);
/* 1 when the case's `general` parameter sends fp32-accumulation rows to the general path. */
int kv_norm_general_forced(const kv_case *c);

kv_status kv_layernorm_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_rmsnorm_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_layernorm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                 double *ref, double *mag, double *aux_ref, double *aux_mag);
kv_status kv_rmsnorm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                               double *ref, double *mag, double *aux_ref, double *aux_mag);
kv_status kv_layernorm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                    double *ref, double *mag, double *aux_ref, double *aux_mag);
kv_status kv_rmsnorm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
