/* norm_gpu_ref.cu - the GPU fp64 reference of LayerNorm and RMSNorm over the whole output:
 * one block per row, the storage-rounded inputs widened exactly to double, two-pass mean
 * and variance in double (block sums as in kv_norm::block_sum), rstd = 1 / sqrt(var + eps)
 * with the case's eps in double, and per element the reference value and the magnitude term of
 * the tolerance, defined exactly as the CPU reference in families/norm/norm_cpu_ref.c (the
 * definition; the backend cross-checks the two on sampled rows):
 *   xhat = (x - mean) rstd, ref = xhat w + b (b = 0, mean = 0 for RMSNorm),
 *   mag = |w| (|xhat| + rstd sum|x| / n) for LayerNorm, |w| |xhat| for RMSNorm. */
#include "families/norm/norm_kernels.cuh"

namespace {

constexpr int REF_BLOCK = 256;

template <class T, bool LN>
__global__ void __launch_bounds__(REF_BLOCK) norm_reference_kernel(kv_norm_params p, double eps, double *ref,
                                                                   double *mag) {
  using S = kv_norm::storage<T>;
  __shared__ double red[REF_BLOCK / 32];
  const size_t n = (size_t)p.hidden, base = (size_t)blockIdx.x * n;
  const double nd = (double)p.hidden;

  double mean = 0.0;
  if constexpr (LN) mean = kv_norm::block_mean<REF_BLOCK, T>(p, base, red);
  double q = 0.0, a = 0.0;
  for (size_t j = threadIdx.x; j < n; j += REF_BLOCK) {
    const double x = (double)S::load(p.x, base + j), d = x - mean;
    q += d * d;
    a += fabs(x);
  }
  const double var = kv_norm::block_sum<REF_BLOCK>(q, red) / nd;
  const double abs_mean = LN ? kv_norm::block_sum<REF_BLOCK>(a, red) / nd : 0.0;
  const double rstd = 1.0 / sqrt(var + eps);
  for (size_t j = threadIdx.x; j < n; j += REF_BLOCK) {
    const double xhat = ((double)S::load(p.x, base + j) - mean) * rstd;
    const double w = (double)S::load(p.w, j), b = LN ? (double)S::load(p.b, j) : 0.0;
    ref[base + j] = xhat * w + b;
    mag[base + j] = fabs(w) * (fabs(xhat) + rstd * abs_mean);
  }
}

}  // namespace

template <class T>
static kv_status launch(const kv_norm_problem *pr, double *ref, double *mag, cudaStream_t s) {
  if (pr->layernorm)
    norm_reference_kernel<T, true><<<(unsigned)pr->p.rows, REF_BLOCK, 0, s>>>(pr->p, pr->eps, ref, mag);
  else
    norm_reference_kernel<T, false><<<(unsigned)pr->p.rows, REF_BLOCK, 0, s>>>(pr->p, pr->eps, ref, mag);
  return CHECK_LAUNCH("norm_reference_kernel");
}

kv_status kv_norm_gpu_reference(const kv_norm_problem *pr, double *d_ref, double *d_mag, cudaStream_t s) {
  if (pr->p.rows <= 0 || pr->p.hidden <= 0) return KV_OK;
  if (pr->p.rows > 0x7fffffffLL) {
    kv_report(__FILE__, __LINE__, "norm", "%lld rows exceed the grid limit", pr->p.rows);
    return KV_ERR;
  }
  switch (pr->storage) {
    case KV_FP16: return launch<__half>(pr, d_ref, d_mag, s);
    case KV_BF16: return launch<__nv_bfloat16>(pr, d_ref, d_mag, s);
    case KV_FP32: return launch<float>(pr, d_ref, d_mag, s);
    default:
      kv_report(__FILE__, __LINE__, "norm", "no reference for storage %s", kv_dtype_name(pr->storage));
      return KV_ERR;
  }
}
