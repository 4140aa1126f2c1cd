/* norm_dispatch.cu - host side of the LayerNorm/RMSNorm kernels at the level of a problem
 * (norm_api.h): the configuration of a problem (norm_limits.h's choice where the tensors are
 * aligned), the kernel of a configuration, its launch and resources. */
#include "families/norm/norm_api.h"

int kv_norm_vec_elems(kv_dtype storage) { return kv_norm_vec_of(storage); }

kv_norm_config kv_norm_config_at(int config) { return kv_norm_config_of(config); }

static bool aligned16(const void *q) { return ((uintptr_t)q & 15u) == 0; }

/* The register-resident kernels: fp32 accumulation, 16-byte aligned tensors (a problem
 * without pointers, as for the resource query, counts as aligned: cudaMalloc's are). */
static bool resident_ok(const kv_norm_problem *pr) {
  const kv_norm_params &p = pr->p;
  return pr->accum == KV_FP32 && p.hidden > 0 && aligned16(p.x) && aligned16(p.w) && aligned16(p.b) && aligned16(p.y);
}

bool kv_norm_config_fits(const kv_norm_problem *pr, int config) {
  return resident_ok(pr) && kv_norm_holds(pr->storage, pr->p.hidden, config);
}

/* kv_norm_choice (norm_limits.h) for aligned tensors, else -1 (the general or serial path). */
int kv_norm_default_config(const kv_norm_problem *pr) {
  return resident_ok(pr) ? kv_norm_choice(pr->layernorm, pr->storage, pr->accum, pr->p.hidden) : -1;
}

kv_status kv_norm_prepare(kv_norm_problem *pr, int config, const char **why) {
  *why = nullptr;
  if (config >= 0 && !kv_norm_config_fits(pr, config)) {
    *why = "norm: the configuration does not hold the row (or the tensors are not 16-byte aligned)";
    return KV_ERR;
  }
  switch (pr->storage) {
    case KV_FP16: pr->kernel = kv_norm_kernel_fp16(pr->layernorm, pr->accum, config); break;
    case KV_BF16: pr->kernel = kv_norm_kernel_bf16(pr->layernorm, pr->accum, config); break;
    case KV_FP32: pr->kernel = kv_norm_kernel_fp32(pr->layernorm, pr->accum, config); break;
    default: pr->kernel.func = nullptr; break;
  }
  if (!pr->kernel.func) {
    *why = "norm: no kernel for this storage and accumulator pair";
    return KV_ERR;
  }
  const long long rows = pr->p.rows > 0 ? pr->p.rows : 0;
  const long long blocks = (rows + pr->kernel.rows_per_block - 1) / pr->kernel.rows_per_block;
  if (blocks > 0x7fffffffLL) {
    *why = "norm: the rows exceed the grid limit (2^31 - 1 blocks)";
    return KV_ERR;
  }
  pr->blocks = (unsigned)blocks;
  return KV_OK;
}

kv_status kv_norm_launch(const kv_norm_problem *pr, cudaStream_t s) {
  if (pr->blocks == 0) return KV_OK;
  kv_norm_params p = pr->p;
  void *args[] = {&p};
  KV_TRY(CHECK_CUDA(cudaLaunchKernel(pr->kernel.func, dim3(pr->blocks), dim3((unsigned)pr->kernel.block), args, 0, s)));
  return CHECK_LAUNCH(pr->kernel.name);
}

kv_status kv_norm_resources(const kv_norm_problem *pr, kv_kernel_resources *r) {
  cudaFuncAttributes a;
  KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&a, pr->kernel.func)));
  int blocks = 0;
  KV_TRY(CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, pr->kernel.func, pr->kernel.block, 0)));
  r->registers = a.numRegs;
  r->smem_bytes = (int)a.sharedSizeBytes;
  r->local_bytes = (int)a.localSizeBytes;
  r->occupancy = blocks;
  return KV_OK;
}
