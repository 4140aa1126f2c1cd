/* fa2bwd_api.h - the C++ interface of the FlashAttention-2 backward kernels and of their GPU
 * fp64 reference at the level of an attention problem, independent of kval's cases: a problem
 * is prepared once (instantiation chosen, grids checked, shared-memory limits raised) and then
 * launched many times. fa2bwd_cuda.cu adapts a case to these calls; its problem object
 * (kv_fa2bwd_case, below) is what the bench driver's own launches read (families/fa2bwd/bench).
 *
 * Layouts (self-attention, seqlen keys per query): q, k, v, o, dout, dq, dk, dv
 * [batch, seqlen, heads, D] in the storage type; lse and dsum [batch, seqlen, heads] fp32 (lse in
 * natural log, as the fa2 forward writes it). */
#ifndef KVAL_FA2BWD_API_H
#define KVAL_FA2BWD_API_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/cuda_check.cuh"
#include "core/dtype.h"
#include "family.h"
#include "families/fa2/fa2_api.h"
#include "families/fa2bwd/fa2bwd_limits.h"

/* One backward problem: the forward's inputs and outputs, the output gradient dout, the
 * workspace dsum (D_i = sum_d dout_id o_id, written by the launch's first kernel) and the
 * three gradients. */
struct kv_fa2bwd_args {
  const void *q, *k, *v, *o, *dout;
  const float *lse;
  float *dsum;
  void *dq, *dk, *dv;
  /* kval-wgmma's workspace (kv_fa2bwd_wgmma_workspace): dQ's fp32 partial sums and one
   * counter per query block of a (batch, head) that orders their adds */
  float *dq_accum;
  int *dq_sem;
  int batch, heads, seqlen;
  float scale;      /* softmax scale in fp32 (dQ = scale dS K, dK = scale dS^T Q) */
  float scale_log2; /* softmax scale * log2(e) in fp32: P = exp2(S * scale_log2 - lse * log2(e)) */
  int dq_rotate;    /* set by prepare: kval-wgmma-fused may rotate its walks (kRotateWalks) */
};

/* A prepared problem: one launch runs its kernels on one stream (D, dK/dV, dQ; kval-wgmma-fused:
 * D, the fused kernel, dQ from the workspace). A plain value: a copy launches the same kernels
 * on the same tensors. */
#define KV_FA2BWD_MAPS 7
struct kv_fa2bwd_problem {
  kv_fa2bwd_args a;
  CUtensorMap maps[KV_FA2BWD_MAPS]; /* kval-wgmma: q, k, v, dout, dq, dk, dv */
  int variant, headdim, causal;
  kv_precision prec;
  cudaError_t (*launch)(const kv_fa2bwd_problem &pr, cudaStream_t stream);
  cudaError_t (*info)(kv_kernel_resources *r); /* the dK/dV kernel's resources (the costliest) */
};

/* The instantiations' prepare steps (kval-mma: explicitly instantiated in inst/fa2bwd_mma_d<D>.cu):
 * check the grids, raise the kernels' dynamic shared-memory limits, set pr->launch and
 * pr->info; a problem the kernels refuse: cudaErrorInvalidValue with *why a static reason. */
template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2bwd_mma_prepare(kv_fa2bwd_problem *pr, const char **why);
/* The same for kval-wgmma and kval-wgmma-fused (pr->variant; inst/fa2bwd_wgmma_d<D>.cu), which
 * also encodes the problem's tensor maps. */
template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2bwd_wgmma_prepare(kv_fa2bwd_problem *pr, const char **why);

/* Problem level (fa2bwd_dispatch.cu): kv_fa2bwd_prepare checks kv_fa2bwd_unsupported() and the
 * arguments and picks the instantiation; kv_fa2bwd_launch: one launch on `stream`, checked;
 * kv_fa2bwd_resources: registers, memory and occupancy of the dK/dV kernel. */
kv_status kv_fa2bwd_prepare(const kv_fa2bwd_args &a, int variant, int headdim, kv_precision prec, int causal,
                            kv_fa2bwd_problem *pr, const char **why);
kv_status kv_fa2bwd_launch(const kv_fa2bwd_problem &pr, cudaStream_t stream);
kv_status kv_fa2bwd_resources(const kv_fa2bwd_problem &pr, kv_kernel_resources *r);

/* GPU fp64 reference (fa2bwd_gpu_ref.cu), the definition of fa2bwd_reference.h evaluated with
 * cuBLAS DGEMM on the rounded inputs: ref and mag hold 3 x batch x seqlen x heads x headdim
 * doubles, dQ then dK then dV, each [batch, seqlen, heads, headdim]. */
struct kv_fa2bwd_ref_args {
  const void *q, *k, *v, *dout; /* storage type `store` */
  kv_dtype store;               /* fp16 or bf16 */
  long long batch, heads, seqlen, headdim;
  int causal;
  double scale, rho, eta; /* softmax scale; rho and eta of the magnitude terms (kv_fa2bwd_mag_terms) */
  double *ref, *mag;
};
/* Device workspace the reference allocates for a problem (bytes). */
size_t kv_fa2bwd_gpu_reference_workspace(const kv_fa2bwd_ref_args &r);
/* The reference, enqueued on `stream` and synchronised; a failed call is reported (CHECK_CUDA,
 * CHECK_CUBLAS). */
kv_status kv_fa2bwd_gpu_reference(const kv_fa2bwd_ref_args &r, cudaStream_t stream);

/* The problem object of kv_cuda_fa2bwd (fa2bwd_cuda.cu): the forward problem that computes o
 * and lse once at prepare (kval-mma of the fa2 family), the prepared backward problem, the
 * reference's arguments, and the buffers the case owns (o, lse, dsum, the dQ workspace). */
struct kv_fa2bwd_case {
  kv_fa2_problem fwd;
  kv_fa2bwd_problem kernel;
  kv_fa2bwd_ref_args ref;
  void *d_o;
  float *d_lse, *d_dsum, *d_dq_accum;
  int *d_dq_sem;
};

#endif
