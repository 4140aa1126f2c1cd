/* buffers.c - the device buffers of one case and the checks that need nothing but them:
 * tensors between guard bands (a store past either end of a tensor changes a band; an input's
 * bands are NaN bits, so a read past its end that reaches an output makes it NaN), inputs
 * whose checksum must not change (a kernel that writes into its inputs would otherwise have
 * its reference computed on the corrupted inputs), and the output checksums of every launch
 * (the harness's of the first and every timed one, and the verification launch's: any two that
 * differ: the kernel is nondeterministic, or the verification launch on re-poisoned outputs
 * did not rewrite what the first wrote). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/context.h"
#include "core/cuda_check.cuh"
#include "numerics/rng.h"

#define N_SUMS (2 * KV_MAX_TENSORS + 1)
#define VERIFICATION_SUM (2 * KV_MAX_TENSORS)

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

double kv_cuda_case_bytes(const kv_tensors *t, const kv_cost *cost) {
  double bytes = 0.0;
  for (int i = 0; i < t->n_in; i++) bytes += (double)tensor_bytes(&t->in[i]) + 2.0 * KV_GUARD_BYTES;
  for (int i = 0; i < t->n_out; i++) bytes += (double)tensor_bytes(&t->out[i]) + 2.0 * KV_GUARD_BYTES;
  bytes += 2.0 * 8.0 * (double)t->out[0].count; /* ref + mag */
  if (t->n_out > 1) bytes += 2.0 * 8.0 * (double)cost->rows;
  return bytes;
}

kv_status kv_cuda_buffers_alloc(const kv_tensors *t, const kv_cost *cost, kv_cuda_buffers *b) {
  for (int i = 0; i < t->n_in; i++) {
    KV_TRY(CHECK_CUDA(cudaMalloc(&b->in_alloc[i], tensor_bytes(&t->in[i]) + 2 * KV_GUARD_BYTES)));
    b->in[i] = (char *)b->in_alloc[i] + KV_GUARD_BYTES;
  }
  for (int i = 0; i < t->n_out; i++) {
    KV_TRY(CHECK_CUDA(cudaMalloc(&b->out_alloc[i], tensor_bytes(&t->out[i]) + 2 * KV_GUARD_BYTES)));
    b->out[i] = (char *)b->out_alloc[i] + KV_GUARD_BYTES; /* 256-byte aligned like the allocation */
  }
  KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->ref, t->out[0].count * sizeof(double))));
  KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->mag, t->out[0].count * sizeof(double))));
  if (t->n_out > 1) {
    KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->aux_ref, cost->rows * sizeof(double))));
    KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->aux_mag, cost->rows * sizeof(double))));
  }
  return CHECK_CUDA(cudaMalloc((void **)&b->sums, N_SUMS * sizeof *b->sums));
}

kv_status kv_cuda_buffers_poison(const kv_cuda_ctx *ctx, const kv_tensors *t, kv_cuda_buffers *b) {
  for (int i = 0; i < t->n_out; i++)
    KV_TRY(CHECK_CUDA(cudaMemsetAsync(b->out[i], 0xff, tensor_bytes(&t->out[i]), ctx->stream)));
  return KV_OK;
}

kv_status kv_cuda_buffers_fill(const kv_cuda_ctx *ctx, const kv_case *c, const kv_run_settings *rs,
                               const kv_tensors *t, kv_cuda_buffers *b) {
  KV_TRY(CHECK_CUDA(cudaMemsetAsync(b->sums, 0, N_SUMS * sizeof *b->sums, ctx->stream)));
  for (int i = 0; i < t->n_in; i++) {
    KV_TRY(CHECK_CUDA(cudaMemsetAsync(b->in_alloc[i], KV_INPUT_GUARD_BYTE, KV_GUARD_BYTES, ctx->stream)));
    KV_TRY(CHECK_CUDA(cudaMemsetAsync((char *)b->in[i] + tensor_bytes(&t->in[i]), KV_INPUT_GUARD_BYTE, KV_GUARD_BYTES,
                                      ctx->stream)));
    KV_TRY(kv_cuda_generate(b->in[i], &t->in[i], kv_stream_key(rs->seed, c->key, (uint64_t)i), ctx->stream));
    KV_TRY(kv_cuda_checksum(b->in[i], tensor_bytes(&t->in[i]), 0, &b->sums[i], ctx->stream));
  }
  for (int i = 0; i < t->n_out; i++)
    KV_TRY(CHECK_CUDA(cudaMemsetAsync(b->out_alloc[i], KV_GUARD_BYTE, tensor_bytes(&t->out[i]) + 2 * KV_GUARD_BYTES,
                                      ctx->stream)));
  return kv_cuda_buffers_poison(ctx, t, b);
}

kv_status kv_cuda_buffers_sum_outputs(const kv_cuda_ctx *ctx, const kv_tensors *t, const kv_cuda_buffers *b,
                                      unsigned long long *d_sum) {
  for (int i = 0; i < t->n_out; i++)
    KV_TRY(kv_cuda_checksum(b->out[i], tensor_bytes(&t->out[i]), (unsigned)i, d_sum, ctx->stream));
  return KV_OK;
}

unsigned long long *kv_cuda_buffers_verification_slot(const kv_cuda_buffers *b) { return &b->sums[VERIFICATION_SUM]; }

/* The guard bands of one tensor, downloaded and compared. */
static kv_status check_guard(const kv_cuda_ctx *ctx, const kv_tensor_spec *t, int input, const void *alloc,
                             unsigned char *band, double deadline, kv_case_data *d) {
  const char *base = (const char *)alloc;
  KV_TRY(CHECK_CUDA(cudaMemcpyAsync(band, base, KV_GUARD_BYTES, cudaMemcpyDeviceToHost, ctx->stream)));
  KV_TRY(CHECK_CUDA(cudaMemcpyAsync(band + KV_GUARD_BYTES, base + KV_GUARD_BYTES + tensor_bytes(t), KV_GUARD_BYTES,
                                    cudaMemcpyDeviceToHost, ctx->stream)));
  KV_TRY(kv_cuda_wait(ctx, deadline, "the download of the guard bands"));
  kv_guard_finding(d, t->name, input, band, band + KV_GUARD_BYTES);
  return KV_OK;
}

/* The guard bands of every output and input. */
static kv_status check_guards(const kv_cuda_ctx *ctx, const kv_tensors *t, const kv_cuda_buffers *b, double deadline,
                              kv_case_data *d) {
  unsigned char *band = KV_MALLOC(2 * KV_GUARD_BYTES);
  KV_TRY(CHECK_ALLOC(band));
  kv_status st = KV_OK;
  for (int i = 0; i < t->n_out && st == KV_OK; i++)
    st = check_guard(ctx, &t->out[i], 0, b->out_alloc[i], band, deadline, d);
  for (int i = 0; i < t->n_in && st == KV_OK; i++)
    st = check_guard(ctx, &t->in[i], 1, b->in_alloc[i], band, deadline, d);
  free(band);
  return st;
}

kv_status kv_cuda_buffers_check(const kv_cuda_ctx *ctx, const kv_tensors *t, kv_cuda_buffers *b, double deadline,
                                kv_case_data *d) {
  for (int i = 0; i < t->n_in; i++)
    KV_TRY(kv_cuda_checksum(b->in[i], tensor_bytes(&t->in[i]), 0, &b->sums[KV_MAX_TENSORS + i], ctx->stream));
  unsigned long long sums[N_SUMS];
  KV_TRY(CHECK_CUDA(cudaMemcpyAsync(sums, b->sums, sizeof sums, cudaMemcpyDeviceToHost, ctx->stream)));
  KV_TRY(kv_cuda_wait(ctx, deadline, "the checksums of the inputs and outputs"));
  KV_TRY(check_guards(ctx, t, b, deadline, d));
  for (int i = 0; i < t->n_in && !d->out_of_bounds[0]; i++)
    if (sums[i] != sums[KV_MAX_TENSORS + i])
      snprintf(d->out_of_bounds, sizeof d->out_of_bounds, "input %s changed during the launches", t->in[i].name);
  b->verification_sum = sums[VERIFICATION_SUM];
  kv_launch_finding(d, b->verification_sum);
  return KV_OK;
}

kv_status kv_cuda_buffers_free(kv_cuda_buffers *b) {
  void *all[] = {b->ref, b->mag, b->aux_ref, b->aux_mag, b->sums};
  kv_status st = KV_OK;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i] && CHECK_CUDA(cudaFree(all[i])) != KV_OK) st = KV_ERR;
  for (int i = 0; i < KV_MAX_TENSORS; i++) {
    if (b->in_alloc[i] && CHECK_CUDA(cudaFree(b->in_alloc[i])) != KV_OK) st = KV_ERR;
    if (b->out_alloc[i] && CHECK_CUDA(cudaFree(b->out_alloc[i])) != KV_OK) st = KV_ERR;
  }
  memset(b, 0, sizeof *b);
  return st;
}
