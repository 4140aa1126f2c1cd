/* fa2_api.h - the C++ interface of the FlashAttention-2 forward kernel and of its GPU fp64
 * reference, independent of kval's case machinery so that the standalone driver
 * (families/fa2/bench/fa2_bench.cu) links the same objects kval does. fa2_launch.cu adapts a kv_case to
 * these calls and reports their errors through CHECK_CUDA. */
#ifndef KVAL_FA2_API_H
#define KVAL_FA2_API_H

#include <cuda_runtime_api.h>
#include <stddef.h>

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

/* Resources of one instantiation. */
struct kv_fa2_kernel_info {
  int registers, local_bytes, smem_bytes, blocks_per_sm;
  int block_m, block_n, stages, threads;
};

/* One instantiation (explicitly instantiated in fa2_d<D>.cu). */
template <int D, int STORE, int ACC, bool CAUSAL>
cudaError_t kv_fa2_run(const kv_fa2_args &a, cudaStream_t stream);
template <int D, int STORE, int ACC, bool CAUSAL>
cudaError_t kv_fa2_info(kv_fa2_kernel_info *info);

/* kval-wgmma, the Hopper variant (fa2_wgmma.cuh, instantiated in fa2_wgmma_d<D>.cu): head dims
 * 64 and 128, fp16/bf16 storage with fp32 accumulation, compute capability 9.0. */
template <int D, int STORE, bool CAUSAL>
cudaError_t kv_fa2_wgmma_run(const kv_fa2_args &a, cudaStream_t stream, const char **why);
template <int D, int STORE, bool CAUSAL>
cudaError_t kv_fa2_wgmma_info(kv_fa2_kernel_info *info);

/* The two kernels of the family: the mma.sync kernel (every head dim and precision) and the
 * Hopper one. */
enum kv_fa2_variant { KV_FA2_VARIANT_MMA = 0, KV_FA2_VARIANT_WGMMA = 1 };

/* Run-time dispatch (fa2_dispatch.cu). cudaErrorInvalidValue for a combination that is not
 * instantiated (head dim not 32/64/96/128/256, fp16 accumulation with bf16 storage, ...), a
 * grid too large, or a non-positive scale; *why (may be NULL) then names the reason. */
cudaError_t kv_fa2_forward(const kv_fa2_args &a, int headdim, int store, int acc, int causal,
                           cudaStream_t stream, const char **why);
cudaError_t kv_fa2_resources(int headdim, int store, int acc, int causal, kv_fa2_kernel_info *info,
                             const char **why);
/* The same for a variant; kval-wgmma also answers cudaErrorInvalidValue with a reason for a
 * head dim other than 64/128, a reduced accumulator, or a device that is not compute
 * capability 9.0 (kv_fa2_variant_supported says which, without launching). */
cudaError_t kv_fa2_variant_forward(int variant, const kv_fa2_args &a, int headdim, int store, int acc, int causal,
                                   cudaStream_t stream, const char **why);
cudaError_t kv_fa2_variant_resources(int variant, int headdim, int store, int acc, int causal,
                                     kv_fa2_kernel_info *info, const char **why);
/* NULL when the variant has this combination, else the reason (device not checked). */
const char *kv_fa2_variant_unsupported(int variant, int headdim, int store, int acc);

/* GPU fp64 reference (fa2_reference.cu), the definition of families/fa2_ref.c evaluated with
 * cuBLAS DGEMM: ref = O [batch, seqlen_q, heads, D], mag the magnitude term of the same shape,
 * lse [batch, seqlen_q, heads] (may be NULL), all fp64 on the device. */
struct kv_fa2_ref_args {
  const void *q, *k, *v; /* storage type `store` */
  int store;             /* kv_fa2_store */
  long long batch, heads, seqlen_q, seqlen_k, headdim;
  int causal;
  double scale, rho; /* softmax scale; rho of the magnitude term (kv_fa2_mag_rho) */
  double *ref, *mag, *lse;
};
/* Device workspace the reference allocates for a problem (bytes). */
size_t kv_fa2_reference_workspace(const kv_fa2_ref_args &r);
/* 0 on success; otherwise nonzero with a message naming the failed call in err. */
int kv_fa2_reference_run(const kv_fa2_ref_args &r, cudaStream_t stream, char *err, size_t errlen);

#endif
