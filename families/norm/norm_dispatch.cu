/* norm_dispatch.cu - host side of the LayerNorm/RMSNorm kernels at the level of a problem
 * (norm_api.h): the table of fast-path shapes, the default choice of kernel variant for a row
 * length (fast, peeled, general or serial path), the kernel of a configuration, its launch
 * and resources. */
#include "families/norm/norm_api.h"

int kv_norm_vec_elems(kv_dtype storage) { return storage == KV_FP32 ? 4 : 8; }

kv_norm_config kv_norm_config_at(int config) {
  switch (config) {
#define KV_X(idx, TPR, NV, KIND) \
  case idx:                      \
    return kv_norm_config{TPR, NV, KV_NORM_##KIND};
    KV_NORM_CONFIGS(KV_X)
#undef KV_X
    default:
      return kv_norm_config{0, 0, KV_NORM_FAST};
  }
}

static bool aligned16(const void *q) { return ((uintptr_t)q & 15u) == 0; }

/* The register-resident kernels: fp32 accumulation, 16-byte aligned tensors (a problem
 * without pointers, as for the resource query, counts as aligned: cudaMalloc's are). */
static bool resident_ok(const kv_norm_problem *pr) {
  const kv_norm_params &p = pr->p;
  return pr->accum == KV_FP32 && p.hidden > 0 && aligned16(p.x) && aligned16(p.w) && aligned16(p.b) && aligned16(p.y);
}

/* 16-byte vectors a row may touch: hidden / N when the rows are whole vectors, else up to
 * (hidden + 2N - 2) / N for a row starting N - 1 elements past a boundary. */
static long long vectors_needed(const kv_norm_problem *pr, kv_norm_kind kind) {
  const int n = kv_norm_vec_elems(pr->storage);
  return kind == KV_NORM_PEELED ? (pr->p.hidden + 2LL * n - 2) / n : pr->p.hidden / n;
}

bool kv_norm_config_fits(const kv_norm_problem *pr, int config) {
  const kv_norm_config c = kv_norm_config_at(config);
  if (c.tpr <= 0 || !resident_ok(pr)) return false;
  if (c.kind != KV_NORM_PEELED && pr->p.hidden % kv_norm_vec_elems(pr->storage) != 0) return false;
  return (long long)c.tpr * c.nv >= vectors_needed(pr, c.kind);
}

/* The measured choice (families/norm/bench/norm_bench.cu on an H200; docs/PERFORMANCE.md): one warp or
 * less per row up to 32 vectors; then two vectors per thread and as many threads per row as
 * that takes up to 512 vectors (8192 bytes; RMSNorm's single reduction runs best there with
 * four), four vectors per thread up to 2048, eight beyond. Fewer vectors per thread (more
 * threads, fewer registers) keeps more rows in flight; 1024-thread rows lost occupancy, so
 * the largest rows hold more vectors per thread. Rows that are not whole vectors: RMSNorm
 * takes the peeled kernel with the least capacity that holds them (2606-2844 GB/s against
 * the general path's 2415-2420 at 16384x4100), LayerNorm the general path (2152 against the
 * peeled kernel's 1951). */
int kv_norm_default_config(const kv_norm_problem *pr) {
  if (!resident_ok(pr)) return -1;
  if (pr->p.hidden % kv_norm_vec_elems(pr->storage) != 0) {
    if (pr->layernorm) return -1;
    int best = -1;
    for (int c = 0; c < KV_NORM_N_CONFIGS; c++) {
      const kv_norm_config k = kv_norm_config_at(c);
      if (k.kind == KV_NORM_PEELED && kv_norm_config_fits(pr, c) &&
          (best < 0 || k.tpr * k.nv < kv_norm_config_at(best).tpr * kv_norm_config_at(best).nv))
        best = c;
    }
    return best;
  }
  /* table entries for rows of up to 8, 16, 32, ..., 4096 vectors */
  static const int layernorm[] = {0, 1, 2, 3, 16, 7, 10, 12, 14, 15};
  static const int rmsnorm[] = {0, 1, 2, 3, 16, 7, 9, 12, 14, 15};
  const int *by_size = pr->layernorm ? layernorm : rmsnorm;
  const long long nvec = vectors_needed(pr, KV_NORM_FAST);
  long long cap = 8;
  for (int i = 0; i < 10; i++, cap *= 2)
    if (nvec <= cap) return by_size[i];
  return -1;
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
