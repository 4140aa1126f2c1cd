/* gemm_gpu_ref.cu - the GEMM family's fp64 reference on the GPU, as families/gemm/gemm.c
 * defines it on the CPU: ref = alpha op(A) op(B) + beta C and
 * mag = |alpha| |op(A)| |op(B)| + |beta| |C| (C only when beta != 0), over the whole M x N
 * output, row-major; for FP8 storage alpha carries the per-tensor scales (alpha scale_a scale_b,
 * in double) and C is of the output type (bf16). The rounded inputs are upcast to double (exact) in stream-ordered
 * scratch buffers and multiplied by cuBLAS DGEMM (column-major view: D^T = op(B)^T op(A)^T);
 * the magnitude term is a second DGEMM on the absolute values. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "core/cublas_check.h"
#include "families/gemm/gemm_api.h"

static cublasHandle_t kv_ref_handle;
static int kv_ref_ready;

/* y[i] = x[i] (or |x[i]|) in double, for storage bits x of type T. */
template <class T> __global__ void kv_ref_upcast(const T *__restrict__ x, double *__restrict__ y, size_t n, int absval) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    double v;
    if constexpr (std::is_same<T, __half>::value)
      v = (double)__half2float(x[i]);
    else if constexpr (std::is_same<T, __nv_bfloat16>::value)
      v = (double)__bfloat162float(x[i]);
    else
      v = (double)static_cast<float>(x[i]); /* e4m3, e5m2: exact */
    y[i] = absval ? fabs(v) : v;
  }
}

__global__ void kv_ref_abs(double *y, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = fabs(y[i]);
}

static unsigned kv_ref_blocks(size_t n) {
  const size_t b = (n + 255) / 256;
  return (unsigned)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

template <class T> static void kv_ref_upcast_as(const void *x, double *y, size_t n, int absval, cudaStream_t s) {
  kv_ref_upcast<T><<<kv_ref_blocks(n), 256, 0, s>>>(static_cast<const T *>(x), y, n, absval);
}

/* x of type t (fp16, bf16, e4m3, e5m2) upcast into y. */
static kv_status kv_ref_upcast_to(kv_dtype t, const void *x, double *y, size_t n, int absval, cudaStream_t s) {
  switch (t) {
    case KV_FP16: kv_ref_upcast_as<__half>(x, y, n, absval, s); break;
    case KV_BF16: kv_ref_upcast_as<__nv_bfloat16>(x, y, n, absval, s); break;
    case KV_E4M3: kv_ref_upcast_as<__nv_fp8_e4m3>(x, y, n, absval, s); break;
    case KV_E5M2: kv_ref_upcast_as<__nv_fp8_e5m2>(x, y, n, absval, s); break;
    default:
      kv_report(__FILE__, __LINE__, "gemm", "reference: type %s not implemented", kv_dtype_name(t));
      return KV_ERR;
  }
  return CHECK_LAUNCH("kv_ref_upcast");
}

/* out = alpha op(A) op(B) + beta out, all double, row-major out (M x N). */
static kv_status kv_ref_dgemm(const kv_gemm_args *p, const double *a, const double *b, double alpha, double beta,
                              double *out) {
  const cublasOperation_t op_b = p->b_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p->a_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = p->b_t ? p->k : p->n, lda = p->a_t ? p->m : p->k;
  return CHECK_CUBLAS(
      cublasDgemm(kv_ref_handle, op_b, op_a, p->n, p->m, p->k, &alpha, b, ldb, a, lda, &beta, out, p->n));
}

kv_status kv_gemm_gpu_reference(const kv_gemm_args *p, double *d_ref, double *d_mag, cudaStream_t stream) {
  const kv_dtype stype = p->prec.storage, out = kv_precision_output(p->prec);
  const double alpha = p->alpha * p->scale_a * p->scale_b;
  if (!kv_ref_ready) {
    KV_TRY(CHECK_CUBLAS(cublasCreate(&kv_ref_handle)));
    kv_ref_ready = 1;
  }
  KV_TRY(CHECK_CUBLAS(cublasSetStream(kv_ref_handle, stream)));
  const size_t na = (size_t)p->m * p->k, nb = (size_t)p->k * p->n, nc = (size_t)p->m * p->n;
  double *wa = NULL, *wb = NULL;
  kv_status st = CHECK_CUDA(cudaMallocAsync((void **)&wa, na * sizeof(double), stream));
  if (st == KV_OK) st = CHECK_CUDA(cudaMallocAsync((void **)&wb, nb * sizeof(double), stream));
  if (st == KV_OK) st = kv_ref_upcast_to(stype, p->a, wa, na, 0, stream);
  if (st == KV_OK) st = kv_ref_upcast_to(stype, p->b, wb, nb, 0, stream);
  if (st == KV_OK && p->beta != 0.0) {
    st = kv_ref_upcast_to(out, p->c, d_ref, nc, 0, stream);
    if (st == KV_OK) st = kv_ref_upcast_to(out, p->c, d_mag, nc, 1, stream);
  }
  if (st == KV_OK) st = kv_ref_dgemm(p, wa, wb, alpha, p->beta, d_ref);
  if (st == KV_OK) {
    kv_ref_abs<<<kv_ref_blocks(na), 256, 0, stream>>>(wa, na);
    kv_ref_abs<<<kv_ref_blocks(nb), 256, 0, stream>>>(wb, nb);
    st = CHECK_LAUNCH("kv_ref_abs");
  }
  if (st == KV_OK) st = kv_ref_dgemm(p, wa, wb, fabs(alpha), fabs(p->beta), d_mag);
  if (wa && CHECK_CUDA(cudaFreeAsync(wa, stream)) != KV_OK) st = KV_ERR;
  if (wb && CHECK_CUDA(cudaFreeAsync(wb, stream)) != KV_OK) st = KV_ERR;
  return st;
}
