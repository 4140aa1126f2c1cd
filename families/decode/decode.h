/* decode.h - the decode family (paged-KV decode attention) as the rest of the family sees it:
 * the descriptor, the case dimensions decoded once from the axes and parameters (shared by the
 * descriptor, the CPU reference, the emulation and the CUDA adapter), the block table of a
 * case, and the CPU kernels (emulation, fp64 reference and its double-double twin).
 *
 * Types: q and out in the storage type (fp16 or bf16); k_cache and v_cache in it or, by the
 * kv_type axis, in e4m3 or e5m2; lse fp32. The cache holds K / k_scale and V / v_scale
 * (vLLM's per-tensor KV-cache scales, params k_scale and v_scale, 1 by default): attention reads
 * K = k_cache x k_scale and V = v_cache x v_scale.
 * Layouts: q and out [batch, q_len, q_heads, headdim]; lse [batch, q_len, q_heads] (fp32,
 * natural log); k_cache and v_cache [num_pages, kv_heads, page_size, headdim] with
 * num_pages = batch x pages_per_seq; token t of sequence b lives in page
 * table[b * pages_per_seq + t / page_size], slot t % page_size. Query head hq reads kv head
 * hq / (q_heads / kv_heads); every query token attends to all ctx_len cached tokens. */
#ifndef KVAL_FAMILIES_DECODE_H
#define KVAL_FAMILIES_DECODE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stdint.h>

#include "family.h"

extern const kv_family kv_family_decode;

typedef struct {
  long long batch, ctx, page, q_heads, kv_heads, q_len, headdim;
  long long group;         /* q_heads / kv_heads */
  long long rows;          /* query rows per block: q_len x group */
  long long pages_per_seq; /* ceil(ctx / page) */
  long long num_pages;     /* batch x pages_per_seq */
  int splits;              /* kv_decode_splits (decode_limits.h) */
  long long split_pages;   /* pages per split */
  double scale;            /* softmax scale (param, or 1/sqrt(headdim)) */
  float k_scale, v_scale;  /* the cache's dequantization scales (params, fp32): K = k_cache x k_scale */
  float scale_f, scale_log2; /* the kernel's score scales, k_scale folded in: scale k_scale (x log2 e) */
  uint64_t table_key;      /* 0: contiguous table, else the shuffle's key */
  kv_dtype kv_type;        /* k_cache and v_cache: the storage type, KV_E4M3 or KV_E5M2 */
  kv_dtype io_type;        /* q, out and P before P V: the storage type */
} kv_decode_dims;
/* sms: the GPU's SM count for the split rule (0: none known); the deck's `sms` param overrides
 * it, and where both are 0 the rule takes KV_DECODE_NOMINAL_SMS. */
void kv_decode_dims_of(const kv_case *c, int sms, kv_decode_dims *d);

/* The block table, num_pages int32: a permutation of 0 .. num_pages - 1 (Fisher-Yates from
 * table_key), or the identity when the deck's table_seed is 0. */
void kv_decode_block_table(const kv_decode_dims *d, int32_t *table);

/* rho of the magnitude term (kv_tolerance_p_rho at the case's reduction length
 * max(headdim, ctx_len)): the kernel rounds P to the storage type before P V, as fa2 does.
 * The CPU and GPU references use the same value. */
double kv_decode_mag_rho(kv_precision prec, const kv_decode_dims *d);

kv_status kv_decode_emulate(const kv_case *c, void *const *in, void *const *out);
kv_status kv_decode_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag);
kv_status kv_decode_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                     double *ref, double *mag, double *aux_ref, double *aux_mag);

#ifdef __cplusplus
}
#endif

#endif
