/* decode_api.h - the C++ interface of the paged-KV decode kernels and of their GPU fp64
 * reference at the level of a decode problem, independent of kval's cases: a problem is
 * prepared once (instantiation chosen, split plan fixed, shared-memory limit raised) and then
 * launched many times. decode_cuda.cu adapts a case to these calls; its problem object
 * (kv_decode_case) is what the bench driver's own launches read (families/decode/bench). */
#ifndef KVAL_DECODE_API_H
#define KVAL_DECODE_API_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cuda_check.cuh"
#include "core/dtype.h"
#include "family.h"
#include "families/decode/decode_limits.h"

/* One decode problem (layouts: decode.h). When splits > 1: part_o [splits, rows, D] and
 * part_lse [splits, rows] (rows = batch x q_len x q_heads, fp32) hold the splits' partials,
 * and arrivals [batch, kv_heads] counts the splits of a group that have finished (zero before
 * the first launch; the kernel leaves it zero). */
struct kv_decode_args {
  const void *q, *k, *v;
  void *o;
  float *lse;
  const int32_t *table; /* [batch, pages_per_seq] */
  float *part_o, *part_lse;
  int *arrivals;
  int batch, q_len, q_heads, kv_heads, group, rows, page, pages_per_seq, ctx, splits, split_pages;
  float scale, scale_log2; /* the scores' scale with the K cache's k_scale folded in, and times log2 e */
  float v_scale;            /* the V cache's scale: out = o v_scale / l */
};

struct kv_decode_problem {
  kv_decode_args a;
  int headdim;
  kv_precision prec;
  kv_dtype kv; /* the KV cache's type: prec.storage, KV_E4M3 or KV_E5M2 */
  cudaError_t (*launch)(const kv_decode_problem &pr, cudaStream_t stream);
  cudaError_t (*info)(kv_kernel_resources *r);
};

/* The instantiations' prepare steps (explicitly instantiated in inst/decode_<storage>[_<kv>].cu):
 * raise the split kernel's dynamic shared-memory limit, set pr->launch and pr->info. */
template <int D, kv_dtype STORE, kv_dtype KV>
cudaError_t kv_decode_prepare_inst(kv_decode_problem *pr);

/* Problem level (decode_dispatch.cu): kv_decode_unsupported() and the argument checks (KV_ERR
 * with *why a static reason), then the instantiation; one checked launch; resources of the
 * split kernel. */
kv_status kv_decode_prepare(const kv_decode_args &a, int headdim, kv_precision prec, kv_dtype kv, kv_decode_problem *pr,
                            const char **why);
kv_status kv_decode_launch(const kv_decode_problem &pr, cudaStream_t stream);
kv_status kv_decode_resources(const kv_decode_problem &pr, kv_kernel_resources *r);

/* GPU fp64 reference (decode_gpu_ref.cu), the definition of decode_cpu_ref.c: ref and mag
 * [rows, D], lse and lse_mag [rows] (either may be NULL), fp64 on the device. */
struct kv_decode_ref_args {
  const void *q, *k, *v;
  const int32_t *table;
  kv_dtype store, io, accum; /* the KV cache's type; q's (the storage type); the accumulator */
  long long batch, q_len, q_heads, kv_heads, page, pages_per_seq, ctx, headdim;
  double scale, rho; /* softmax scale; rho of the magnitude term (kv_decode_mag_rho) */
  double k_scale, v_scale; /* the cache's scales: K = k_cache k_scale, V = v_cache v_scale */
  double *ref, *mag, *lse, *lse_mag;
};
/* The reference, synchronised; a failed call is reported (CHECK_CUDA). */
kv_status kv_decode_gpu_reference(const kv_decode_ref_args &r, cudaStream_t stream);

/* The problem object of kv_cuda_decode (decode_cuda.cu): the kernel problem, the reference's
 * arguments and the device buffers the adapter owns (block table, split partials and arrival
 * counts). */
struct kv_decode_case {
  kv_decode_problem kernel;
  kv_decode_ref_args ref;
  int32_t *d_table;
  float *d_part;
  int *d_arrivals;
};

#endif
