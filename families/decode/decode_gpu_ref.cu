/* decode_gpu_ref.cu - the GPU fp64 reference of the decode family: the definition of
 * decode_cpu_ref.c evaluated for every row, reading K and V through the block table. Per
 * chunk of nr consecutive rows (nr = min(rows, 2^25 / ctx_len)):
 *   scores:  S[t][i] = scale q_i . k_t, A[t][i] = scale sum |q_i k_t|   (thread per (t, i))
 *   softmax: per row m = max S, p_t = exp(S - m), l = sum p, lse = m + log(l), the LSE's
 *            magnitude term (kv_fa2_lse_mag); S <- p, A <- p (1 + A + rho)   (block per row;
 *            rho = kv_decode_mag_rho: P rounded to the io type in the kernel)
 *   output:  per (row, d, run of kTokRun tokens) sums of p_t v_td and A_t |v_td|, then the
 *            runs added in order and divided by l                     (thread per (row, d))
 * Inputs are widened exactly from their types (q: io; K, V: store) to fp64 and K, V multiplied
 * by the cache's scales (exact); every sum has a fixed order. */
#include <cub/block/block_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "families/decode/decode_api.h"
#include "families/device/widen.cuh"
#include "families/fa2/fa2_reference.h"

namespace {

using kv::ref::widen;

constexpr long long kChunkElems = 1LL << 25; /* doubles in one score buffer (256 MB) */
constexpr long long kTokRun = 4096;          /* tokens per partial sum of the output step */
constexpr int kRowThreads = 256;

/* Offset of token t of the sequence and kv head of global row r. */
__device__ __forceinline__ long long token_offset(const kv_decode_ref_args &a, long long r, long long t) {
  const long long hq = r % a.q_heads, b = r / (a.q_heads * a.q_len), h = hq / (a.q_heads / a.kv_heads);
  const long long page = a.table[b * a.pages_per_seq + t / a.page];
  return ((page * a.kv_heads + h) * a.page + t % a.page) * a.headdim;
}

__global__ void scores(const kv_decode_ref_args a, long long r0, long long nr, double *S, double *A) {
  const long long n = nr * a.ctx, D = a.headdim;
  for (long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long ii = x % nr, t = x / nr, r = r0 + ii, ko = token_offset(a, r, t);
    double dot = 0.0, abs_dot = 0.0;
    for (long long k = 0; k < D; ++k) {
      const double p = widen(a.q, r * D + k, a.io) * (widen(a.k, ko + k, a.store) * a.k_scale);
      dot += p;
      abs_dot += fabs(p);
    }
    S[x] = a.scale * dot;
    A[x] = a.scale * abs_dot;
  }
}

__global__ void __launch_bounds__(kRowThreads)
    softmax_rows(const kv_decode_ref_args a, long long r0, long long nr, double u_acc, double *S, double *A, double *l_out) {
  using reduce = cub::BlockReduce<double, kRowThreads>; /* a fixed tree: the same order every run */
  __shared__ typename reduce::TempStorage scratch;
  __shared__ double row_max;
  const long long ii = blockIdx.x, n = a.ctx;
  double m = -INFINITY;
  for (long long t = threadIdx.x; t < n; t += kRowThreads) m = fmax(m, S[t * nr + ii]);
  m = reduce(scratch).Reduce(m, [](double x, double y) { return fmax(x, y); });
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;
  double l = 0.0, abar = 0.0;
  for (long long t = threadIdx.x; t < n; t += kRowThreads) {
    const double p = exp(S[t * nr + ii] - m);
    l += p;
    abar += p * A[t * nr + ii];
    A[t * nr + ii] = p * (1.0 + A[t * nr + ii] + a.rho);
    S[t * nr + ii] = p;
  }
  __syncthreads();
  l = reduce(scratch).Sum(l);
  __syncthreads();
  abar = reduce(scratch).Sum(abar);
  if (threadIdx.x == 0) {
    l_out[ii] = l;
    const double lse = m + log(l);
    if (a.lse) a.lse[r0 + ii] = lse;
    if (a.lse_mag)
      a.lse_mag[r0 + ii] =
          kv_fa2_lse_mag(abar / l, m, lse, static_cast<double>(n), static_cast<double>(a.headdim), u_acc);
  }
}

__global__ void output_runs(const kv_decode_ref_args a, long long r0, long long nr, const double *S, const double *A,
                            double *po, double *pm) {
  const long long D = a.headdim, runs = (a.ctx + kTokRun - 1) / kTokRun, n = nr * D * runs;
  for (long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = x % D, ii = (x / D) % nr, run = x / (D * nr), r = r0 + ii;
    const long long t1 = (run + 1) * kTokRun < a.ctx ? (run + 1) * kTokRun : a.ctx;
    double o = 0.0, mg = 0.0;
    for (long long t = run * kTokRun; t < t1; ++t) {
      const double v = widen(a.v, token_offset(a, r, t) + d, a.store) * a.v_scale;
      o += S[t * nr + ii] * v;
      mg += A[t * nr + ii] * fabs(v);
    }
    po[x] = o;
    pm[x] = mg;
  }
}

__global__ void output_rows(const kv_decode_ref_args a, long long r0, long long nr, const double *po, const double *pm,
                            const double *l) {
  const long long D = a.headdim, runs = (a.ctx + kTokRun - 1) / kTokRun, n = nr * D;
  for (long long x = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; x < n;
       x += static_cast<long long>(gridDim.x) * blockDim.x) {
    double o = 0.0, mg = 0.0;
    for (long long run = 0; run < runs; ++run) {
      o += po[run * n + x];
      mg += pm[run * n + x];
    }
    const long long ii = x / D;
    a.ref[(r0 + ii) * D + x % D] = o / l[ii];
    a.mag[(r0 + ii) * D + x % D] = mg / l[ii];
  }
}

unsigned grid_for(long long n) { return kv::ref::grid_for(n, 8192); }

/* Device buffers of one reference evaluation, freed on every path. */
struct workspace {
  double *s = nullptr, *a = nullptr, *l = nullptr, *po = nullptr, *pm = nullptr;
  ~workspace() {
    double *all[] = {s, a, l, po, pm};
    for (double *p : all)
      if (p) (void)CHECK_CUDA(cudaFree(p));
  }
};

}  // namespace

kv_status kv_decode_gpu_reference(const kv_decode_ref_args &r, cudaStream_t stream) {
  const long long rows = r.batch * r.q_len * r.q_heads, D = r.headdim, runs = (r.ctx + kTokRun - 1) / kTokRun;
  if (rows <= 0 || r.ctx <= 0) return KV_OK;
  long long nr = kChunkElems / r.ctx;
  nr = nr < 1 ? 1 : (nr > rows ? rows : nr);
  workspace w;
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.s, sizeof(double) * static_cast<size_t>(nr * r.ctx))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.a, sizeof(double) * static_cast<size_t>(nr * r.ctx))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.l, sizeof(double) * static_cast<size_t>(nr))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.po, sizeof(double) * static_cast<size_t>(nr * D * runs))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.pm, sizeof(double) * static_cast<size_t>(nr * D * runs))));
  for (long long r0 = 0; r0 < rows; r0 += nr) {
    const long long n = rows - r0 < nr ? rows - r0 : nr;
    scores<<<grid_for(n * r.ctx), 256, 0, stream>>>(r, r0, n, w.s, w.a);
    KV_TRY(CHECK_CUDA(cudaGetLastError()));
    softmax_rows<<<static_cast<unsigned>(n), kRowThreads, 0, stream>>>(r, r0, n, kv_dtype_unit_roundoff(r.accum), w.s, w.a, w.l);
    KV_TRY(CHECK_CUDA(cudaGetLastError()));
    output_runs<<<grid_for(n * D * runs), 256, 0, stream>>>(r, r0, n, w.s, w.a, w.po, w.pm);
    KV_TRY(CHECK_CUDA(cudaGetLastError()));
    output_rows<<<grid_for(n * D), 256, 0, stream>>>(r, r0, n, w.po, w.pm, w.l);
    KV_TRY(CHECK_CUDA(cudaGetLastError()));
  }
  return CHECK_CUDA(cudaStreamSynchronize(stream));
}
