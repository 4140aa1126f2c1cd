/* cuda_ceilings.c - the roofline ceilings measured once per rank at start-up (well under
 * 5 s on an H200): device-to-device copy bandwidth (cudaMemcpyAsync of 2 GiB, bytes read +
 * written counted), dense bf16 matrix rate (cublasGemmEx 8192^3, fp32 accumulation) and
 * fp64 matrix rate (cublasDgemm 4096^3). Inputs are random (kv_cuda_generate), never zeros;
 * each figure is the median of several CUDA-event-timed runs after warm-up. */
#include <cublas_v2.h>
#include <math.h>
#include <stdlib.h>

#include "backends/cuda/context.h"
#include "core/cublas_check.h"
#include "core/cuda_check.cuh"
#include "numerics/rng.h"

typedef struct {
  cublasHandle_t h;
  size_t n;          /* copy: bytes; gemm: matrix order */
  void *a, *b, *c;
} op_args;

typedef kv_status (*op_fn)(const op_args *, cudaStream_t);

static kv_status op_copy(const op_args *o, cudaStream_t s) {
  return CHECK_CUDA(cudaMemcpyAsync(o->b, o->a, o->n, cudaMemcpyDeviceToDevice, s));
}

static kv_status op_gemm_bf16(const op_args *o, cudaStream_t s) {
  (void)s; /* the handle is bound to the stream */
  const float one = 1.0f, zero = 0.0f;
  const int n = (int)o->n;
  return CHECK_CUBLAS(cublasGemmEx(o->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, o->a, CUDA_R_16BF, n, o->b,
                                   CUDA_R_16BF, n, &zero, o->c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

static kv_status op_dgemm(const op_args *o, cudaStream_t s) {
  (void)s;
  const double one = 1.0, zero = 0.0;
  const int n = (int)o->n;
  return CHECK_CUBLAS(cublasDgemm(o->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, o->a, n, o->b, n, &zero, o->c, n));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median seconds of `reps` event-timed runs after `warm` untimed ones. */
static kv_status time_op(op_fn op, const op_args *o, cudaStream_t s, int warm, int reps, double *seconds) {
  cudaEvent_t e0 = NULL, e1 = NULL;
  double t[16];
  kv_status st = CHECK_CUDA(cudaEventCreate(&e0));
  if (st == KV_OK) st = CHECK_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < warm && st == KV_OK; i++) st = op(o, s);
  for (int i = 0; i < reps && st == KV_OK; i++) {
    float ms = 0.0f;
    st = CHECK_CUDA(cudaEventRecord(e0, s));
    if (st == KV_OK) st = op(o, s);
    if (st == KV_OK) st = CHECK_CUDA(cudaEventRecord(e1, s));
    if (st == KV_OK) st = CHECK_CUDA(cudaEventSynchronize(e1));
    if (st == KV_OK) st = CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t[i] = 1e-3 * ms;
  }
  if (e0 && CHECK_CUDA(cudaEventDestroy(e0)) != KV_OK) st = KV_ERR;
  if (e1 && CHECK_CUDA(cudaEventDestroy(e1)) != KV_OK) st = KV_ERR;
  if (st != KV_OK) return st;
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  *seconds = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  return KV_OK;
}

static kv_status fill_random(void *buf, kv_dtype t, size_t count, uint64_t stream, cudaStream_t s) {
  kv_tensor_spec spec = {"ceiling input", t, count, KV_DIST_NORMAL, 1.0, 0.0};
  return kv_cuda_generate(buf, &spec, kv_stream_key(0x6365696c696e67ULL, 0, stream), s);
}

static kv_status free_all(op_args *o, kv_status st) {
  void *bufs[3] = {o->a, o->b, o->c};
  for (int i = 0; i < 3; i++)
    if (bufs[i] && CHECK_CUDA(cudaFree(bufs[i])) != KV_OK) st = KV_ERR;
  o->a = o->b = o->c = NULL;
  return st;
}

/* Copy bandwidth: 2 GiB (less when memory is short), 2 + 7 runs. */
static kv_status measure_copy(cudaStream_t s, double *gbps) {
  size_t free_b = 0, total = 0;
  KV_TRY(CHECK_CUDA(cudaMemGetInfo(&free_b, &total)));
  op_args o = {0};
  o.n = (size_t)2 << 30;
  while (o.n > ((size_t)64 << 20) && 2 * o.n + ((size_t)512 << 20) > free_b) o.n /= 2;
  kv_status st = CHECK_CUDA(cudaMalloc(&o.a, o.n));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc(&o.b, o.n));
  if (st == KV_OK) st = fill_random(o.a, KV_FP32, o.n / 4, 1, s);
  double t = 0.0;
  if (st == KV_OK) st = time_op(op_copy, &o, s, 2, 7, &t);
  if (st == KV_OK) *gbps = 2.0 * (double)o.n / t / 1e9;
  return free_all(&o, st);
}

/* GEMM rate of an n^3 product of random matrices of type t (bf16 through GemmEx, or fp64). */
static kv_status measure_gemm(cublasHandle_t h, cudaStream_t s, kv_dtype t, size_t n, int reps, double *tflops) {
  op_args o = {h, n, NULL, NULL, NULL};
  const size_t bytes = n * n * kv_dtype_size(t);
  kv_status st = CHECK_CUDA(cudaMalloc(&o.a, bytes));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc(&o.b, bytes));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc(&o.c, bytes));
  if (st == KV_OK) st = fill_random(o.a, t, n * n, 2, s);
  if (st == KV_OK) st = fill_random(o.b, t, n * n, 3, s);
  double sec = 0.0;
  if (st == KV_OK) st = time_op(t == KV_FP64 ? op_dgemm : op_gemm_bf16, &o, s, 2, reps, &sec);
  if (st == KV_OK) *tflops = 2.0 * (double)n * (double)n * (double)n / sec / 1e12;
  return free_all(&o, st);
}

kv_status kv_cuda_ceilings(cudaStream_t s, kv_rank_info *info) {
  info->copy_gbps = info->matrix_tflops = info->fp64_tflops = NAN;
  KV_TRY(measure_copy(s, &info->copy_gbps));
  cublasHandle_t h;
  KV_TRY(CHECK_CUBLAS(cublasCreate(&h)));
  kv_status st = CHECK_CUBLAS(cublasSetStream(h, s));
  if (st == KV_OK) st = measure_gemm(h, s, KV_BF16, 8192, 7, &info->matrix_tflops);
  if (st == KV_OK) st = measure_gemm(h, s, KV_FP64, 4096, 5, &info->fp64_tflops);
  if (CHECK_CUBLAS(cublasDestroy(h)) != KV_OK) st = KV_ERR;
  return st;
}
