/* norm_api.h - the LayerNorm/RMSNorm CUDA code at the level of a problem (pointers, rows,
 * hidden, eps, precision), independent of kval's cases: the kernel variant of a row length
 * chosen once (prepare: fast, peeled, general or serial path, see norm_dispatch.cu), its
 * launch and resources, and the fp64 GPU reference (norm_gpu_ref.cu). norm_cuda.cu adapts a
 * case to these calls; its problem object is a kv_norm_problem, which the bench driver
 * prepares again for every configuration of the table (families/norm/bench). Every entry returns kv_status; a problem no kernel can run is KV_ERR with
 * *why a static reason. CUDA C++ only (included by .cu files). */
#ifndef KVAL_NORM_API_H
#define KVAL_NORM_API_H

#include "families/norm/norm_traits.h"
#include "family.h"

/* One norm problem, its kernel chosen by kv_norm_prepare. */
struct kv_norm_problem {
  kv_norm_params p;
  double eps; /* the case's eps as given (the kernels use p.eps, its float rounding) */
  bool layernorm;
  kv_dtype storage, accum;
  kv_norm_kernel kernel; /* set by kv_norm_prepare */
  unsigned blocks;       /* grid of the launch */
};

/* Compiled kernels of one storage type (inst/norm_fp16.cu, norm_bf16.cu, norm_fp32.cu).
 * `config` is a table index, or -1 for the general path (fp32 accumulation) or the serial
 * path (fp16/bf16 accumulation); returns func NULL when the combination is not compiled. */
kv_norm_kernel kv_norm_kernel_fp16(bool layernorm, kv_dtype accum, int config);
kv_norm_kernel kv_norm_kernel_bf16(bool layernorm, kv_dtype accum, int config);
kv_norm_kernel kv_norm_kernel_fp32(bool layernorm, kv_dtype accum, int config);

/* Elements per 16-byte vector of a storage type. */
int kv_norm_vec_elems(kv_dtype storage);
/* The table entry, and whether it holds a whole row of `hidden` elements (with the pointers
 * 16-byte aligned and fp32 accumulation). */
kv_norm_config kv_norm_config_at(int config);
bool kv_norm_config_fits(const kv_norm_problem *pr, int config);
/* The configuration the family runs (-1: general or serial path). */
int kv_norm_default_config(const kv_norm_problem *pr);
/* Choose the kernel of configuration `config` (-1: general or serial path) and the grid. */
kv_status kv_norm_prepare(kv_norm_problem *pr, int config, const char **why);
/* One launch of the chosen kernel, checked. */
kv_status kv_norm_launch(const kv_norm_problem *pr, cudaStream_t s);
kv_status kv_norm_resources(const kv_norm_problem *pr, kv_kernel_resources *r);
/* fp64 reference of the whole output (norm_gpu_ref.cu): ref and mag, rows * hidden each. */
kv_status kv_norm_gpu_reference(const kv_norm_problem *pr, double *d_ref, double *d_mag, cudaStream_t s);

#endif
