/* norm_dispatch.cu - host side of the LayerNorm/RMSNorm kernels at the level of a problem
 * (pointers, rows, hidden, eps, precision): the table of fast-path shapes, the default choice
 * of kernel variant for a row length (fast path, general path or serial path), and the launch.
 * No dependence on cases or families, so bench/norm_bench.cu links it alone. */
#include "cuda/norm_traits.h"

int kv_norm_vec_elems(kv_dtype storage) { return storage == KV_FP32 ? 4 : 8; }

kv_norm_config kv_norm_config_at(int config) {
  switch (config) {
#define KV_X(idx, TPR, NV) \
  case idx:                \
    return kv_norm_config{TPR, NV};
    KV_NORM_CONFIGS(KV_X)
#undef KV_X
    default:
      return kv_norm_config{0, 0};
  }
}

static bool vectorizable(const kv_norm_problem *pr) {
  const int n = kv_norm_vec_elems(pr->storage);
  return pr->accum == KV_FP32 && pr->p.hidden > 0 && pr->p.hidden % n == 0;
}

bool kv_norm_config_fits(const kv_norm_problem *pr, int config) {
  const kv_norm_config c = kv_norm_config_at(config);
  return c.tpr > 0 && vectorizable(pr) && (long long)c.tpr * c.nv >= pr->p.hidden / kv_norm_vec_elems(pr->storage);
}

/* The measured choice (bench/norm_bench.cu on an H200, 2026-11-30; docs/PERFORMANCE.md): one
 * warp or less per row up to 32 vectors; then two vectors per thread and as many threads per
 * row as that takes up to 512 vectors (8192 bytes; RMSNorm's single reduction runs best there
 * with four), four vectors per thread up to 2048, eight beyond. Fewer vectors per thread (more
 * threads, fewer registers) keeps more rows in flight; 1024-thread rows lost occupancy, so
 * the largest rows hold more vectors per thread. */
int kv_norm_default_config(const kv_norm_problem *pr) {
  if (!vectorizable(pr)) return -1;
  /* table entries for rows of up to 8, 16, 32, ..., 4096 vectors */
  static const int layernorm[] = {0, 1, 2, 3, 16, 7, 10, 12, 14, 15};
  static const int rmsnorm[] = {0, 1, 2, 3, 16, 7, 9, 12, 14, 15};
  const int *by_size = pr->layernorm ? layernorm : rmsnorm;
  const int nvec = pr->p.hidden / kv_norm_vec_elems(pr->storage);
  int cap = 8;
  for (int i = 0; i < 10; i++, cap *= 2)
    if (nvec <= cap) return by_size[i];
  return -1;
}

kv_status kv_norm_select(const kv_norm_problem *pr, int config, kv_norm_kernel *k) {
  if (config >= 0 && !kv_norm_config_fits(pr, config)) {
    kv_report(__FILE__, __LINE__, "norm", "fast configuration %d does not fit hidden %d of %s:%s", config,
              pr->p.hidden, kv_dtype_name(pr->storage), kv_dtype_name(pr->accum));
    return KV_ERR;
  }
  switch (pr->storage) {
    case KV_FP16: *k = kv_norm_kernel_fp16(pr->layernorm, pr->accum, config); break;
    case KV_BF16: *k = kv_norm_kernel_bf16(pr->layernorm, pr->accum, config); break;
    case KV_FP32: *k = kv_norm_kernel_fp32(pr->layernorm, pr->accum, config); break;
    default: k->func = nullptr; break;
  }
  if (!k->func) {
    kv_report(__FILE__, __LINE__, "norm", "no %s kernel for %s:%s", pr->layernorm ? "layernorm" : "rmsnorm",
              kv_dtype_name(pr->storage), kv_dtype_name(pr->accum));
    return KV_ERR;
  }
  return KV_OK;
}

kv_status kv_norm_launch_config(const kv_norm_problem *pr, int config, cudaStream_t s) {
  kv_norm_kernel k;
  KV_TRY(kv_norm_select(pr, config, &k));
  if (pr->p.rows <= 0) return KV_OK;
  const long long blocks = (pr->p.rows + k.rows_per_block - 1) / k.rows_per_block;
  if (blocks > 0x7fffffffLL) {
    kv_report(__FILE__, __LINE__, "norm", "%lld rows exceed the grid limit", pr->p.rows);
    return KV_ERR;
  }
  kv_norm_params p = pr->p;
  void *args[] = {&p};
  KV_TRY(CHECK_CUDA(cudaLaunchKernel(k.func, dim3((unsigned)blocks), dim3((unsigned)k.block), args, 0, s)));
  return CHECK_LAUNCH(k.name);
}

kv_status kv_norm_launch(const kv_norm_problem *pr, cudaStream_t s) {
  return kv_norm_launch_config(pr, kv_norm_default_config(pr), s);
}
