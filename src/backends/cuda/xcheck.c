/* xcheck.c - the checker checked, on a few sampled output rows of every case: the device
 * inputs (downloaded whole for the CPU reference) against the host generator on a sample of
 * elements (kv_input_finding: a device generator bug would otherwise change what every case
 * tests, unseen, as kernel and references read the same wrong inputs); the GPU fp64
 * reference (value, magnitude term, auxiliary output and its magnitude) against the family's
 * CPU reference on the same device inputs (d->ref_xcheck, judged against KV_REF_XCHECK_BOUND),
 * and the device error statistics against the host's: the device statistics of exactly the
 * sampled elements must equal kv_errstats_compute's (maxima, counts, histogram, worst index
 * exactly; sums to 1e-12), and the statistics of the whole output must be consistent with them
 * (every element counted, maxima at least the sample's). A mismatch is a harness error
 * (d->harness): the device statistics, not the kernel, are wrong. The comparisons are
 * run/crosscheck.c's, which kval's self-test checks in every run.
 * The CPU reference needs only the inputs, so it starts as soon as they are generated
 * (kv_cuda_xcheck_start) and runs on a host thread of its own, on the host cores the rank may
 * use (kv_reference_threaded), while the device times the kernel and computes its own
 * reference; kv_cuda_xcheck_finish waits for it and compares. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/context.h"
#include "core/cuda_check.cuh"
#include "families/ref_threads.h"
#include "numerics/errstats.h"
#include "numerics/tolerance.h"
#include "run/crosscheck.h"

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

/* Rows rows[0..n) of a device array of rows of len doubles, packed on the host. */
static kv_status download_rows(const kv_cuda_ctx *ctx, double *host, const double *dev, const size_t *rows, size_t n,
                               size_t len) {
  for (size_t r = 0; r < n; r++)
    KV_TRY(CHECK_CUDA(cudaMemcpyAsync(host + r * len, dev + rows[r] * len, len * sizeof *host,
                                      cudaMemcpyDeviceToHost, ctx->stream)));
  return KV_OK;
}

/* The sampled rows of everything the cross-checks compare. */
typedef struct {
  size_t n, len, *rows;
  void *in[KV_MAX_TENSORS];
  double *gref, *gmag, *gaux, *gaux_mag; /* the GPU reference's rows */
  double *ref, *mag, *aux, *aux_mag;     /* the CPU reference's */
} sample;

static void sample_free(sample *s) {
  for (int i = 0; i < KV_MAX_TENSORS; i++) kv_cuda_host_put(s->in[i]);
  double *all[] = {s->gref, s->gmag, s->gaux, s->gaux_mag, s->ref, s->mag, s->aux, s->aux_mag};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  free(s->rows);
}

/* The sampled rows and their host buffers (NaN: a row no reference wrote disagrees), and the
 * whole inputs on the host. */
static kv_status sample_inputs(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                               const kv_run_settings *rs, const kv_cuda_buffers *b, double deadline, sample *s) {
  memset(s, 0, sizeof *s);
  s->n = kv_xcheck_rows(c, cost, rs, &s->rows);
  s->len = cost->row_len;
  KV_TRY(s->n > 0 ? KV_OK : KV_ERR);
  const size_t m = s->n * s->len;
  const int aux = t->n_out > 1;
  for (int i = 0; i < t->n_in; i++) {
    KV_TRY(kv_cuda_host_get(tensor_bytes(&t->in[i]), &s->in[i]));
    KV_TRY(CHECK_CUDA(
        cudaMemcpyAsync(s->in[i], b->in[i], tensor_bytes(&t->in[i]), cudaMemcpyDeviceToHost, ctx->stream)));
  }
  double **bufs[] = {&s->gref, &s->gmag, &s->ref, &s->mag, &s->gaux, &s->gaux_mag, &s->aux, &s->aux_mag};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
    if (i >= 4 && !aux) break;
    *bufs[i] = KV_MALLOC((i < 4 ? m : s->n) * sizeof(double));
    KV_TRY(CHECK_ALLOC(*bufs[i]));
    memset(*bufs[i], 0xff, (i < 4 ? m : s->n) * sizeof(double));
  }
  return kv_cuda_wait(ctx, deadline, "the download of the cross-check's inputs");
}

/* The GPU reference's sampled rows on the host. */
static kv_status sample_gpu_reference(const kv_cuda_ctx *ctx, const kv_cuda_buffers *b, double deadline, sample *s) {
  KV_TRY(download_rows(ctx, s->gref, b->ref, s->rows, s->n, s->len));
  KV_TRY(download_rows(ctx, s->gmag, b->mag, s->rows, s->n, s->len));
  if (s->aux) {
    KV_TRY(download_rows(ctx, s->gaux, b->aux_ref, s->rows, s->n, 1));
    KV_TRY(download_rows(ctx, s->gaux_mag, b->aux_mag, s->rows, s->n, 1));
  }
  return kv_cuda_wait(ctx, deadline, "the download of the cross-check's rows");
}

/* The GPU reference's sampled rows against the CPU reference's (run/crosscheck.c). */
static double reference_disagreement(const sample *s) {
  const kv_ref_sample g = {s->gref, s->gmag, s->gaux, s->gaux_mag, s->n, s->len};
  const kv_ref_sample c = {s->ref, s->mag, s->aux, s->aux_mag, s->n, s->len};
  return kv_xcheck_disagreement(&g, &c);
}

/* Device statistics of the sampled elements (flat indices uploaded, the GPU reference's rows
 * packed) against the host's of the same elements. The uploads go on the case's stream: a
 * synchronous cudaMemcpy from pageable memory may return before its DMA ends, and the
 * non-blocking stream's kernel then read stale memory (seen on the H200 as a device
 * max_bound_ratio ten times the host's). The host buffers live until kv_cuda_errstats has
 * waited for the stream. */
static kv_status check_stats(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                             const kv_run_settings *rs, const kv_cuda_buffers *b, const sample *s, kv_case_data *d) {
  const size_t m = s->n * s->len;
  int64_t *index = KV_MALLOC(m * sizeof *index), *d_index = NULL;
  double *d_ref = NULL, *d_mag = NULL;
  KV_TRY(CHECK_ALLOC(index));
  for (size_t r = 0; r < s->n; r++)
    for (size_t j = 0; j < s->len; j++) index[r * s->len + j] = (int64_t)(s->rows[r] * s->len + j);
  const kv_tolerance tol = rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
  kv_errstats dev, host;
  kv_status st = kv_errstats_compute(d->out, t->out[0].dtype, index, s->gref, s->gmag, m, c->prec, &tol,
                                     cost->red_len, &host) == 0 ? KV_OK : KV_ERR;
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_index, m * sizeof *d_index));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_ref, m * sizeof *d_ref));
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc((void **)&d_mag, m * sizeof *d_mag));
  const enum cudaMemcpyKind up = cudaMemcpyHostToDevice;
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_index, index, m * sizeof *d_index, up, ctx->stream));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_ref, s->gref, m * sizeof *d_ref, up, ctx->stream));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(d_mag, s->gmag, m * sizeof *d_mag, up, ctx->stream));
  if (st == KV_OK)
    st = kv_cuda_errstats(b->out[0], t->out[0].dtype, d_index, d_ref, d_mag, m, c->prec, &tol, cost->red_len,
                          kv_cuda_deadline(rs, 0.0), &dev, ctx->stream);
  if (st == KV_OK) kv_xcheck_compare_stats(&dev, &host, &d->stats, t->out[0].count, d->harness, sizeof d->harness);
  if (!kv_fatal_pending()) {
    void *all[] = {d_index, d_ref, d_mag};
    for (int i = 0; i < 3; i++)
      if (all[i] && CHECK_CUDA(cudaFree(all[i])) != KV_OK) st = KV_ERR;
  }
  free(index);
  return st;
}

/* A cross-check under way: its sample and the host thread computing the CPU reference. */
struct kv_cuda_xcheck_job {
  sample s;
  const kv_case *c;
  int threads;
  pthread_t tid;
  int running;  /* the thread exists and has not been joined */
  kv_status st; /* the CPU reference's status, once joined */
};

static void *cpu_reference(void *arg) {
  kv_cuda_xcheck_job *j = arg;
  sample *s = &j->s;
  j->st = kv_reference_threaded(j->c, (const void *const *)s->in, s->rows, s->n, s->len, s->ref, s->mag, s->aux,
                                s->aux_mag, j->threads);
  return NULL;
}

/* The thread starts with every signal blocked (SIGINT/SIGTERM stay with the main thread, whose
 * runner stops cleanly; the reference's own worker threads inherit the mask). */
static kv_status start_thread(kv_cuda_xcheck_job *j) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const int e = pthread_create(&j->tid, NULL, cpu_reference, j);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    kv_report(__FILE__, __LINE__, "pthread", "pthread_create failed (error %d) starting the cross-check's CPU reference",
              e);
    return KV_ERR;
  }
  j->running = 1;
  return KV_OK;
}

static kv_status join(kv_cuda_xcheck_job *j) {
  if (!j->running) return j->st;
  pthread_join(j->tid, NULL);
  j->running = 0;
  return j->st;
}

kv_status kv_cuda_xcheck_start(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                               const kv_run_settings *rs, const kv_cuda_buffers *b, kv_cuda_xcheck_job **job) {
  kv_cuda_xcheck_job *j = KV_MALLOC(sizeof *j);
  *job = j;
  KV_TRY(CHECK_ALLOC(j));
  memset(j, 0, sizeof *j);
  j->c = c;
  j->threads = ctx->ref_threads;
  j->st = KV_ERR; /* until the thread has run */
  KV_TRY(sample_inputs(ctx, c, t, cost, rs, b, kv_cuda_deadline(rs, 0.0), &j->s));
  return start_thread(j);
}

void kv_cuda_xcheck_drop(kv_cuda_xcheck_job *job) {
  if (!job) return;
  (void)join(job);
  sample_free(&job->s);
  free(job);
}

kv_status kv_cuda_xcheck_finish(const kv_cuda_ctx *ctx, const kv_case *c, const kv_tensors *t, const kv_cost *cost,
                                const kv_run_settings *rs, const kv_cuda_buffers *b, kv_cuda_xcheck_job *job,
                                kv_case_data *d) {
  sample *s = &job->s;
  kv_status st = sample_gpu_reference(ctx, b, kv_cuda_deadline(rs, 0.0), s);
  if (join(job) != KV_OK) st = KV_ERR;
  if (st == KV_OK) kv_input_finding(d, c, rs, t, (const void *const *)s->in);
  if (st == KV_OK) d->ref_xcheck = reference_disagreement(s);
  if (st == KV_OK && d->has_stats) st = check_stats(ctx, c, t, cost, rs, b, s, d);
  return st;
}
