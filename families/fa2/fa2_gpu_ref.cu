/* fa2_gpu_ref.cu - the GPU fp64 reference of the fa2 family: the definition of
 * fa2_cpu_ref.c evaluated for every row with cuBLAS DGEMM. Per (batch, head) and chunk
 * of query rows:
 *   S = scale * Q K^T and A = scale * |Q| |K|^T   (DGEMM, keys up to the chunk's last visible one)
 *   per row: m = max over visible keys of S, p_j = exp(S_j - m) (0 for masked keys),
 *            l = sum p_j, w_j = p_j (1 + A_j + rho), lse = m + log(l) (-inf when no key is visible),
 *            the LSE's magnitude term kv_fa2_lse_mag(sum_j P_j A_j, m, lse, n, D, u_acc)
 *   O = P V / l, mag = W |V| / l                    (DGEMM straight into the output layout)
 * Inputs are widened exactly from fp16/bf16 to fp64. A fully masked row has O = 0, mag = 0. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "core/cublas_check.h"
#include "families/device/widen.cuh"
#include "families/fa2/fa2_api.h"
#include "families/fa2/fa2_reference.h"

namespace {

using kv::ref::grid_for;
using kv::ref::widen_rows;

constexpr long long kChunkElems = 1LL << 25; /* doubles in one score buffer (256 MB) */
constexpr int kRowThreads = 256;

__device__ double block_reduce(double v, bool is_max, double *scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    const double w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmax(v, w) : v + w;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = is_max ? -INFINITY : 0.0;
  for (int w = 0; w < kRowThreads / 32; ++w) v = is_max ? fmax(v, scratch[w]) : v + scratch[w];
  return v;
}

/* One block per query row ii of the chunk: S row -> P, A row -> W over the chunk's nk keys,
 * l, the LSE and its magnitude term (fa2_reference.h). */
struct softmax_args {
  double *S, *A, *l_out, *lse, *lse_mag;
  long long ld, nk, lq, lk, b, h, heads, row0, headdim;
  int causal;
  double rho, u_acc;
};

__global__ void __launch_bounds__(kRowThreads) softmax_rows(softmax_args g) {
  double *const S = g.S, *const A = g.A;
  const long long ld = g.ld, nk = g.nk, lq = g.lq, lk = g.lk, b = g.b, h = g.h, heads = g.heads, row0 = g.row0;
  const int causal = g.causal;
  const double rho = g.rho;
  __shared__ double scratch[kRowThreads / 32];
  const long long ii = blockIdx.x, i = row0 + ii;
  const long long last = causal ? i + lk - lq : lk - 1;
  const long long n = last + 1 < 0 ? 0 : (last + 1 > lk ? lk : last + 1);
  double *s = S + ii * ld, *a = A + ii * ld;
  double m = -INFINITY;
  for (long long j = threadIdx.x; j < n; j += kRowThreads) m = fmax(m, s[j]);
  m = block_reduce(m, true, scratch);
  double l = 0.0, abar = 0.0;
  for (long long j = threadIdx.x; j < nk; j += kRowThreads) {
    const double p = j < n ? exp(s[j] - m) : 0.0;
    l += p;
    abar += p * a[j];
    a[j] = j < n ? p * (1.0 + a[j] + rho) : 0.0;
    s[j] = p;
  }
  l = block_reduce(l, false, scratch);
  abar = block_reduce(abar, false, scratch);
  if (threadIdx.x == 0) {
    g.l_out[ii] = l;
    const long long row = (b * lq + i) * heads + h;
    const double value = n > 0 ? m + log(l) : -INFINITY;
    if (g.lse) g.lse[row] = value;
    if (g.lse_mag)
      g.lse_mag[row] = n > 0 ? kv_fa2_lse_mag(abar / l, m, value, (double)n, (double)g.headdim, g.u_acc) : 0.0;
  }
}

/* o and mag rows of the chunk divided by l (0 for rows without a visible key). */
__global__ void normalise_rows(double *o, double *mag, const double *l, long long rows, long long D, long long ld) {
  const long long n = rows * D;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long ii = t / D, d = t % D;
    const double li = l[ii];
    o[ii * ld + d] = li > 0.0 ? o[ii * ld + d] / li : 0.0;
    mag[ii * ld + d] = li > 0.0 ? mag[ii * ld + d] / li : 0.0;
  }
}

long long chunk_rows(const kv_fa2_ref_args &r) {
  const long long lk = r.seqlen_k > 0 ? r.seqlen_k : 1;
  long long nr = kChunkElems / lk;
  if (nr < 1) nr = 1;
  return nr < r.seqlen_q ? nr : (r.seqlen_q > 0 ? r.seqlen_q : 1);
}

/* Device buffers of one reference evaluation, freed on every path. */
struct workspace {
  double *kd = nullptr, *ka = nullptr, *vd = nullptr, *va = nullptr, *qd = nullptr, *qa = nullptr;
  double *s = nullptr, *a = nullptr, *l = nullptr;
  cublasHandle_t blas = nullptr;
  ~workspace() {
    double *all[] = {kd, ka, vd, va, qd, qa, s, a, l};
    for (double *p : all)
      if (p) (void)CHECK_CUDA(cudaFree(p));
    if (blas) (void)CHECK_CUBLAS(cublasDestroy(blas));
  }
};

}  // namespace

size_t kv_fa2_gpu_reference_workspace(const kv_fa2_ref_args &r) {
  const long long nr = chunk_rows(r), lk = r.seqlen_k, D = r.headdim;
  return sizeof(double) * static_cast<size_t>(4 * lk * D + 2 * nr * D + 2 * nr * (lk > 0 ? lk : 1) + nr);
}

kv_status kv_fa2_gpu_reference(const kv_fa2_ref_args &r, cudaStream_t stream) {
  const long long lq = r.seqlen_q, lk = r.seqlen_k, D = r.headdim, H = r.heads;
  if (r.batch <= 0 || lq <= 0 || H <= 0) return KV_OK;
  const long long nr = chunk_rows(r), ldk = lk > 0 ? lk : 1;
  const uint16_t *q = static_cast<const uint16_t *>(r.q), *k = static_cast<const uint16_t *>(r.k),
                 *v = static_cast<const uint16_t *>(r.v);
  workspace w;
  const size_t kv_bytes = sizeof(double) * static_cast<size_t>(ldk * D);
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.kd, kv_bytes)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.ka, kv_bytes)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.vd, kv_bytes)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.va, kv_bytes)));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.qd, sizeof(double) * static_cast<size_t>(nr * D))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.qa, sizeof(double) * static_cast<size_t>(nr * D))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.s, sizeof(double) * static_cast<size_t>(nr * ldk))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.a, sizeof(double) * static_cast<size_t>(nr * ldk))));
  KV_TRY(CHECK_CUDA(cudaMalloc(&w.l, sizeof(double) * static_cast<size_t>(nr))));
  KV_TRY(CHECK_CUBLAS(cublasCreate(&w.blas)));
  KV_TRY(CHECK_CUBLAS(cublasSetStream(w.blas, stream)));
  const double one = 1.0, zero = 0.0, scale = r.scale;
  const int iD = static_cast<int>(D), ild = static_cast<int>(ldk), ldo = static_cast<int>(H * D);

  for (long long b = 0; b < r.batch; ++b)
    for (long long h = 0; h < H; ++h) {
      if (lk > 0) {
        widen_rows<<<grid_for(lk * D), 256, 0, stream>>>(k, r.store, lk, H, D, b, h, 0, lk, w.kd, w.ka);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));
        widen_rows<<<grid_for(lk * D), 256, 0, stream>>>(v, r.store, lk, H, D, b, h, 0, lk, w.vd, w.va);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));
      }
      for (long long r0 = 0; r0 < lq; r0 += nr) {
        const long long rows = lq - r0 < nr ? lq - r0 : nr;
        /* keys any row of the chunk sees: [0, nk) */
        long long nk = r.causal ? r0 + rows + lk - lq : lk;
        nk = nk < 0 ? 0 : (nk > lk ? lk : nk);
        const size_t out_off = static_cast<size_t>(((b * lq + r0) * H + h) * D);
        if (nk > 0) {
          widen_rows<<<grid_for(rows * D), 256, 0, stream>>>(q, r.store, lq, H, D, b, h, r0, rows, w.qd, w.qa);
          KV_TRY(CHECK_CUDA(cudaGetLastError()));
          /* column-major: S^T (nk x rows, ld lk) = K (nk x D) Q^T; K, Q stored row-major, ld D */
          const int ink = static_cast<int>(nk), irows = static_cast<int>(rows);
          KV_TRY(CHECK_CUBLAS(cublasDgemm(w.blas, CUBLAS_OP_T, CUBLAS_OP_N, ink, irows, iD, &scale, w.kd, iD, w.qd, iD,
                                          &zero, w.s, ild)));
          KV_TRY(CHECK_CUBLAS(cublasDgemm(w.blas, CUBLAS_OP_T, CUBLAS_OP_N, ink, irows, iD, &scale, w.ka, iD, w.qa, iD,
                                          &zero, w.a, ild)));
        }
        const softmax_args g = {w.s, w.a, w.l, r.lse, r.lse_mag, ldk, nk, lq, lk, b, h, H, r0, D, r.causal,
                                r.rho, kv_dtype_unit_roundoff(r.accum)};
        softmax_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(g);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));
        if (nk > 0) {
          /* column-major: O^T (D x rows, ld H*D) = V^T (D x nk, ld D) P^T (nk x rows, ld lk) */
          const int ink = static_cast<int>(nk), irows = static_cast<int>(rows);
          KV_TRY(CHECK_CUBLAS(cublasDgemm(w.blas, CUBLAS_OP_N, CUBLAS_OP_N, iD, irows, ink, &one, w.vd, iD, w.s, ild,
                                          &zero, r.ref + out_off, ldo)));
          KV_TRY(CHECK_CUBLAS(cublasDgemm(w.blas, CUBLAS_OP_N, CUBLAS_OP_N, iD, irows, ink, &one, w.va, iD, w.a, ild,
                                          &zero, r.mag + out_off, ldo)));
        }
        normalise_rows<<<grid_for(rows * D), 256, 0, stream>>>(r.ref + out_off, r.mag + out_off, w.l, rows, D,
                                                               H * D);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));
      }
    }
  return CHECK_CUDA(cudaStreamSynchronize(stream));
}
