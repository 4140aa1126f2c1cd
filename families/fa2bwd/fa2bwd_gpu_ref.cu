/* fa2bwd_gpu_ref.cu - the GPU fp64 reference of the fa2bwd family: the definition of
 * fa2bwd_reference.h (the same as fa2bwd_cpu_ref.c) evaluated for every row with cuBLAS DGEMM.
 * Per (batch, head): K, |K|, V, |V| of all seqlen keys widened to fp64, then per chunk of nr
 * query rows (keys [0, nk) visible to some row of the chunk; nk = last row + 1 when causal):
 *   S = s Q K^T, A = s |Q| |K|^T, dP = dO V^T, B = |dO| |V|^T        (DGEMM, rows x nk)
 *   per row (one block): m = max S, l = sum exp(S - m), lse = m + log(l), P = exp(S - m) / l;
 *     D = sum P dP, Dabs = sum P B, abar = sum P A, c = kv_fa2bwd_row_factor(abar, m, lse, n);
 *     e = A + c, dS = P (dP - D), T = kv_fa2bwd_ds_weight, W = kv_fa2bwd_p_weight
 *     (all 0 for masked pairs); P, W, dS, T overwrite S, A, dP, B
 *   dQ = s dS K, mag_dQ = s T |K|                                   (DGEMM, into the output)
 *   dK += s dS^T Q, mag_dK += s T^T |Q|, dV += P^T dO, mag_dV += W^T |dO|
 *                                   (DGEMM with beta = 1 over the chunks, the parts zeroed first)
 * Inputs are widened exactly from fp16/bf16 to fp64; row sums use cub's fixed reduction tree.
 *
 * cuBLAS is column-major: a row-major [rows, ld] buffer is its transpose, column-major with
 * leading dimension ld. So the widened K (row-major L x D) is K^T (D x L, ld D), a work matrix
 * (row-major rows x L) is S^T (L x rows, ld L), and an output part's rows of one head (row-major,
 * row stride heads * D) are dQ^T etc. (D x rows, ld heads * D). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cub/block/block_reduce.cuh>

#include "core/cublas_check.h"
#include "families/device/widen.cuh"
#include "families/fa2bwd/fa2bwd_api.h"
#include "families/fa2bwd/fa2bwd_reference.h"

namespace {

using kv::ref::grid_for;
using kv::ref::widen_rows;

constexpr long long kChunkElems = 1LL << 25; /* doubles in one work matrix (256 MB) */
constexpr int kRowThreads = 256;
constexpr int kWorkMatrices = 4; /* S/P, A/W, dP/dS, B/T */

using block_reduce = cub::BlockReduce<double, kRowThreads>; /* a fixed tree: the same order every run */

/* The block's reduction of v by op, returned to every thread; scratch and result are free for
 * the next call on return. */
template <typename Op>
__device__ double block_all_reduce(double v, Op op, block_reduce::TempStorage &scratch, double &result) {
  v = block_reduce(scratch).Reduce(v, op);
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  v = result;
  __syncthreads();
  return v;
}

/* The chunk's four work matrices, row-major rows x ld (ld = seqlen), the first nk columns in
 * use. In: S, A, dP, B; out: P (in S), W (in A), dS (in dP), T (in B). */
struct row_args {
  double *s, *a, *dp, *b;
  long long ld, nk, row0, seqlen;
  int causal;
  double rho, eta;
};

/* One block per query row ii of the chunk (row i = row0 + ii, keys j < n visible): steps 2, 4,
 * 5 and 6 of the definition. Every thread visits the same columns in every pass, so only the
 * reductions synchronise. */
__global__ void __launch_bounds__(kRowThreads) row_weights(const row_args g) {
  __shared__ block_reduce::TempStorage scratch;
  __shared__ double result;
  const long long ii = blockIdx.x, i = g.row0 + ii, n = g.causal ? i + 1 : g.seqlen, nk = g.nk;
  double *const s = g.s + ii * g.ld, *const a = g.a + ii * g.ld, *const dp = g.dp + ii * g.ld,
                *const bb = g.b + ii * g.ld;

  double m = -INFINITY;
  for (long long j = threadIdx.x; j < n; j += kRowThreads) m = fmax(m, s[j]);
  m = block_all_reduce(m, [](double x, double y) { return fmax(x, y); }, scratch, result);

  double l = 0.0;
  for (long long j = threadIdx.x; j < n; j += kRowThreads) {
    const double x = exp(s[j] - m);
    s[j] = x;
    l += x;
  }
  l = block_all_reduce(l, [](double x, double y) { return x + y; }, scratch, result);
  const double lse = m + log(l);

  double dsum = 0.0, dabs = 0.0, abar = 0.0;
  for (long long j = threadIdx.x; j < n; j += kRowThreads) {
    const double p = s[j] / l;
    s[j] = p;
    dsum += p * dp[j];
    dabs += p * bb[j];
    abar += p * a[j];
  }
  dsum = block_all_reduce(dsum, [](double x, double y) { return x + y; }, scratch, result);
  dabs = block_all_reduce(dabs, [](double x, double y) { return x + y; }, scratch, result);
  abar = block_all_reduce(abar, [](double x, double y) { return x + y; }, scratch, result);
  const double c = kv_fa2bwd_row_factor(abar, m, lse, static_cast<double>(n));

  for (long long j = threadIdx.x; j < nk; j += kRowThreads) {
    if (j < n) {
      const double p = s[j], e = a[j] + c, dpj = dp[j], bj = bb[j];
      a[j] = kv_fa2bwd_p_weight(p, e, g.rho, g.eta);
      bb[j] = kv_fa2bwd_ds_weight(p, bj, dabs, e, g.rho, g.eta);
      dp[j] = p * (dpj - dsum);
    } else {
      s[j] = 0.0;
      a[j] = 0.0;
      bb[j] = 0.0;
      dp[j] = 0.0;
    }
  }
}

/* x[i] += c for i < n. */
__global__ void add_constant(double *x, long long n, double c) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    x[i] += c;
}

bool has_work(const kv_fa2bwd_ref_args &r) {
  return r.batch > 0 && r.heads > 0 && r.seqlen > 0 && r.headdim > 0;
}

/* Query rows per chunk: nr = min(seqlen, max(1, 2^25 / seqlen)). */
long long chunk_rows(const kv_fa2bwd_ref_args &r) {
  long long nr = kChunkElems / r.seqlen;
  if (nr < 1) nr = 1;
  return nr < r.seqlen ? nr : r.seqlen;
}

/* Doubles of the one device allocation: K, |K|, V, |V| of one head (4 L D), Q, |Q|, dO, |dO|
 * of a chunk (4 nr D) and the four work matrices (4 nr L). */
long long workspace_doubles(const kv_fa2bwd_ref_args &r) {
  const long long L = r.seqlen, D = r.headdim, nr = chunk_rows(r);
  return 4 * L * D + 4 * nr * D + kWorkMatrices * nr * L;
}

/* The device buffers of one reference evaluation, carved from one allocation, and the cuBLAS
 * handle; freed on every path. */
struct workspace {
  double *base = nullptr;
  double *kd = nullptr, *ka = nullptr, *vd = nullptr, *va = nullptr; /* L x D */
  double *qd = nullptr, *qa = nullptr, *dod = nullptr, *doa = nullptr; /* nr x D */
  double *s = nullptr, *a = nullptr, *dp = nullptr, *b = nullptr;    /* nr x L */
  cublasHandle_t blas = nullptr;
  ~workspace() {
    if (base) (void)CHECK_CUDA(cudaFree(base));
    if (blas) (void)CHECK_CUBLAS(cublasDestroy(blas));
  }
  kv_status allocate(const kv_fa2bwd_ref_args &r) {
    const long long L = r.seqlen, D = r.headdim, nr = chunk_rows(r);
    KV_TRY(CHECK_CUDA(cudaMalloc(&base, sizeof(double) * static_cast<size_t>(workspace_doubles(r)))));
    double *next = base;
    auto carve = [&next](long long n) {
      double *p = next;
      next += n;
      return p;
    };
    kd = carve(L * D);
    ka = carve(L * D);
    vd = carve(L * D);
    va = carve(L * D);
    qd = carve(nr * D);
    qa = carve(nr * D);
    dod = carve(nr * D);
    doa = carve(nr * D);
    s = carve(nr * L);
    a = carve(nr * L);
    dp = carve(nr * L);
    b = carve(nr * L);
    return KV_OK;
  }
};

/* C (m x n, ldc) = alpha op(A) op(B) + beta C, column-major. */
kv_status dgemm(cublasHandle_t blas, cublasOperation_t op_a, cublasOperation_t op_b, long long m, long long n,
                long long k, double alpha, const double *A, long long lda, const double *B, long long ldb, double beta,
                double *C, long long ldc) {
  return CHECK_CUBLAS(cublasDgemm(blas, op_a, op_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                                  &alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), &beta, C,
                                  static_cast<int>(ldc)));
}

}  // namespace

/* bytes = 8 (4 L D + 4 nr D + 4 nr L), L = seqlen, D = headdim, nr = min(L, max(1, floor(2^25 / L)));
 * 0 when batch, heads, seqlen or headdim is 0 (nothing is allocated then). cuBLAS's own
 * workspace inside the handle is not counted. */
size_t kv_fa2bwd_gpu_reference_workspace(const kv_fa2bwd_ref_args &r) {
  if (!has_work(r)) return 0;
  return sizeof(double) * static_cast<size_t>(workspace_doubles(r));
}

kv_status kv_fa2bwd_gpu_reference(const kv_fa2bwd_ref_args &r, cudaStream_t stream) {
  if (!has_work(r)) return KV_OK;
  const long long L = r.seqlen, D = r.headdim, H = r.heads, ldo = H * D, nr = chunk_rows(r);
  const size_t part = static_cast<size_t>(r.batch * L * H * D);
  const uint16_t *q = static_cast<const uint16_t *>(r.q), *k = static_cast<const uint16_t *>(r.k),
                 *v = static_cast<const uint16_t *>(r.v), *dout = static_cast<const uint16_t *>(r.dout);
  double *const dq = r.ref, *const dk = r.ref + part, *const dv = r.ref + 2 * part;
  double *const mag_dq = r.mag, *const mag_dk = r.mag + part, *const mag_dv = r.mag + 2 * part;
  const double s = r.scale;
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;

  workspace w;
  KV_TRY(w.allocate(r));
  KV_TRY(CHECK_CUBLAS(cublasCreate(&w.blas)));
  KV_TRY(CHECK_CUBLAS(cublasSetStream(w.blas, stream)));
  /* dK and dV (and their magnitudes) are sums over the chunks */
  KV_TRY(CHECK_CUDA(cudaMemsetAsync(dk, 0, 2 * part * sizeof(double), stream)));
  KV_TRY(CHECK_CUDA(cudaMemsetAsync(mag_dk, 0, 2 * part * sizeof(double), stream)));

  for (long long b = 0; b < r.batch; ++b)
    for (long long h = 0; h < H; ++h) {
      widen_rows<<<grid_for(L * D), 256, 0, stream>>>(k, r.store, L, H, D, b, h, 0, L, w.kd, w.ka);
      KV_TRY(CHECK_CUDA(cudaGetLastError()));
      widen_rows<<<grid_for(L * D), 256, 0, stream>>>(v, r.store, L, H, D, b, h, 0, L, w.vd, w.va);
      KV_TRY(CHECK_CUDA(cudaGetLastError()));
      /* key row 0 of this head in the dK / dV parts */
      const size_t key_off = static_cast<size_t>((b * L * H + h) * D);
      for (long long r0 = 0; r0 < L; r0 += nr) {
        const long long rows = L - r0 < nr ? L - r0 : nr, nk = r.causal ? r0 + rows : L;
        const size_t query_off = static_cast<size_t>(((b * L + r0) * H + h) * D);
        widen_rows<<<grid_for(rows * D), 256, 0, stream>>>(q, r.store, L, H, D, b, h, r0, rows, w.qd, w.qa);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));
        widen_rows<<<grid_for(rows * D), 256, 0, stream>>>(dout, r.store, L, H, D, b, h, r0, rows, w.dod, w.doa);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));

        /* S^T (nk x rows, ld L) = s K (nk x D: K^T buffer transposed) Q^T (D x rows, ld D); A, dP, B alike */
        KV_TRY(dgemm(w.blas, T, N, nk, rows, D, s, w.kd, D, w.qd, D, 0.0, w.s, L));
        KV_TRY(dgemm(w.blas, T, N, nk, rows, D, s, w.ka, D, w.qa, D, 0.0, w.a, L));
        KV_TRY(dgemm(w.blas, T, N, nk, rows, D, 1.0, w.vd, D, w.dod, D, 0.0, w.dp, L));
        KV_TRY(dgemm(w.blas, T, N, nk, rows, D, 1.0, w.va, D, w.doa, D, 0.0, w.b, L));

        const row_args g = {w.s, w.a, w.dp, w.b, L, nk, r0, L, r.causal, r.rho, r.eta};
        row_weights<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(g);
        KV_TRY(CHECK_CUDA(cudaGetLastError()));

        /* dQ^T (D x rows, ld H D) = s K^T (D x nk, ld D) dS^T (nk x rows, ld L); mag with |K|, T */
        KV_TRY(dgemm(w.blas, N, N, D, rows, nk, s, w.kd, D, w.dp, L, 0.0, dq + query_off, ldo));
        KV_TRY(dgemm(w.blas, N, N, D, rows, nk, s, w.ka, D, w.b, L, 0.0, mag_dq + query_off, ldo));
        /* dK^T (D x nk, ld H D) += s Q^T (D x rows, ld D) dS (rows x nk: dS^T buffer transposed);
         * mag with |Q|, T; dV^T += dO^T P and its mag with |dO|, W */
        KV_TRY(dgemm(w.blas, N, T, D, nk, rows, s, w.qd, D, w.dp, L, 1.0, dk + key_off, ldo));
        KV_TRY(dgemm(w.blas, N, T, D, nk, rows, s, w.qa, D, w.b, L, 1.0, mag_dk + key_off, ldo));
        KV_TRY(dgemm(w.blas, N, T, D, nk, rows, 1.0, w.dod, D, w.s, L, 1.0, dv + key_off, ldo));
        KV_TRY(dgemm(w.blas, N, T, D, nk, rows, 1.0, w.doa, D, w.a, L, 1.0, mag_dv + key_off, ldo));
      }
    }
  /* every gradient's own rounding into the storage type's subnormal range */
  add_constant<<<grid_for(static_cast<long long>(3 * part)), 256, 0, stream>>>(r.mag, static_cast<long long>(3 * part), r.eta);
  KV_TRY(CHECK_CUDA(cudaGetLastError()));
  return CHECK_CUDA(cudaStreamSynchronize(stream));
}
