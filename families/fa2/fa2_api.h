/* fa2_api.h - the C++ interface of the FlashAttention-2 forward kernels and of their GPU fp64
 * reference at the level of an attention problem, independent of kval's cases: a problem is
 * prepared once (variant and instantiation chosen, TMA descriptors encoded, the device
 * checked) and then launched many times. fa2_cuda.cu adapts a case to these calls; its problem
 * object (kv_fa2_case, below) is what the bench driver's own launches read (families/fa2/bench).
 * The instantiation templates (inst/) take kval's kv_dtype for the storage and accumulator
 * types; the problem-level entries take kval's precision and return kv_status. */
#ifndef KVAL_FA2_API_H
#define KVAL_FA2_API_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/cuda_check.cuh"
#include "core/dtype.h"
#include "family.h"
#include "families/fa2/fa2_limits.h"
#include "families/fa2/fa2_mma_traits.h"

/* One attention problem. q, o: [batch, seqlen_q, heads, D]; k, v: [batch, seqlen_k, heads, D]
 * in the storage type; lse: [batch, seqlen_q, heads] fp32 (natural log). */
struct kv_fa2_args {
  const void *q, *k, *v;
  void *o;
  float *lse;
  int batch, heads, seqlen_q, seqlen_k;
  float scale;      /* softmax scale in fp32 (the LSE is scale * rowmax + log(rowsum)) */
  float scale_log2; /* softmax scale * log2(e) in fp32, > 0 */
};

/* A problem prepared once (kv_fa2_prepare) and launched many times (kv_fa2_launch): the
 * decoded problem, the chosen instantiation's launch and resource query, and for kval-wgmma
 * the TMA descriptors of Q, K, V and O, encoded for these tensors. A plain value: a copy
 * launches the same kernel on the same tensors. */
struct kv_fa2_problem {
  kv_fa2_args a;
  int variant, headdim, causal; /* kv_fa2_variant (fa2_limits.h), head dim, mask */
  kv_precision prec;
  CUtensorMap maps[4]; /* kval-wgmma: Q, K, V, O */
  cudaError_t (*launch)(const kv_fa2_problem &pr, cudaStream_t stream);
  cudaError_t (*info)(kv_kernel_resources *r);
};

/* The instantiations' prepare steps (explicitly instantiated in inst/fa2_mma_d<D>.cu and
 * inst/fa2_wgmma_d<D>.cu): check the grid (and for kval-wgmma encode the TMA descriptors),
 * raise the kernel's dynamic shared-memory limit, and set pr->launch and pr->info. A problem
 * the kernel refuses: cudaErrorInvalidValue with *why a static reason.
 * kval-wgmma is the Hopper variant: head dims 64 and 128, fp16/bf16 storage with fp32
 * accumulation, compute capability 9.0. */
template <int D, kv_dtype STORE, kv_dtype ACC, bool CAUSAL>
cudaError_t kv_fa2_mma_prepare(kv_fa2_problem *pr, const char **why);
template <int D, kv_dtype STORE, bool CAUSAL>
cudaError_t kv_fa2_wgmma_prepare(kv_fa2_problem *pr, const char **why);

/* Problem level (fa2_dispatch.cu). kv_fa2_prepare: the variant (fa2_limits.h) and its
 * instantiation for the head dim, precision and mask, after kv_fa2_unsupported(), the
 * argument checks and, for kval-wgmma, a compute capability 9.0 device; KV_ERR with *why a
 * static reason for a problem no kernel runs (or a grid too large), a failed CUDA call KV_ERR
 * through CHECK_CUDA. kv_fa2_launch: one launch on `stream`, checked, and nothing else.
 * kv_fa2_resources: registers, memory and occupancy of the chosen instantiation. */
kv_status kv_fa2_prepare(const kv_fa2_args &a, int variant, int headdim, kv_precision prec, int causal,
                         kv_fa2_problem *pr, const char **why);
kv_status kv_fa2_launch(const kv_fa2_problem &pr, cudaStream_t stream);
kv_status kv_fa2_resources(const kv_fa2_problem &pr, kv_kernel_resources *r);

/* GPU fp64 reference (fa2_gpu_ref.cu), the definition of fa2_cpu_ref.c evaluated with cuBLAS
 * DGEMM: ref = O [batch, seqlen_q, heads, D], mag the magnitude term of the same shape,
 * lse [batch, seqlen_q, heads] and its magnitude term lse_mag (either may be NULL), all fp64 on
 * the device. */
struct kv_fa2_ref_args {
  const void *q, *k, *v; /* storage type `store` */
  kv_dtype store;        /* fp16 or bf16 */
  kv_dtype accum;        /* the kernel's accumulator (the LSE's magnitude term uses its unit roundoff) */
  long long batch, heads, seqlen_q, seqlen_k, headdim;
  int causal;
  double scale, rho; /* softmax scale; rho of the magnitude term (kv_fa2_mag_rho) */
  double *ref, *mag, *lse, *lse_mag;
};
/* Device workspace the reference allocates for a problem (bytes). */
size_t kv_fa2_gpu_reference_workspace(const kv_fa2_ref_args &r);
/* The reference, synchronised; a failed call is reported (CHECK_CUDA, CHECK_CUBLAS). */
kv_status kv_fa2_gpu_reference(const kv_fa2_ref_args &r, cudaStream_t stream);

/* The problem object of kv_cuda_fa2 (fa2_cuda.cu): the prepared kernel problem and the
 * reference's arguments of one case. The bench driver's own launches read `kernel`. */
struct kv_fa2_case {
  kv_fa2_problem kernel;
  kv_fa2_ref_args ref;
};

#endif
