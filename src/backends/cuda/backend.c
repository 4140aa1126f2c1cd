/* backend.c - the `cuda` backend: binds the rank to its GPU, measures the ceilings, and
 * runs a case: device buffers laid out as kv_tensors, inputs generated on the device
 * (bit-identical to the host generator), outputs poisoned with NaN bits, the family's prepare,
 * the timing harness around the family's launch (or, for the bench harness, a launch override
 * on the family's prepared problem: kv_cuda_run_case_with), the output copied back, the GPU
 * fp64 reference over the whole output, the error statistics computed on the device from it
 * (errstats.cu; the whole reference comes to the host only when the runner asks for host
 * statistics), a cross-check of that reference against the family's CPU reference on a few
 * sampled rows, and --inject sticky as a real device fault (fault.cu). */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/context.h"
#include "backends/cuda/nvml.h"
#include "core/cuda_check.cuh"
#include "core/timing.h"
#include "numerics/rng.h"
#include "numerics/tolerance.h"

#define XCHECK_ROWS 16 /* rows of the CPU cross-check of the GPU reference */

static kv_cuda_ctx ctx = {.device = -1};

static int cuda_available(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static kv_status cuda_init(int local_rank, int local_size, const kv_run_settings *rs, kv_rank_info *info) {
  (void)rs;
  memset(info, 0, sizeof *info);
  if (gethostname(info->host, sizeof info->host) != 0) snprintf(info->host, sizeof info->host, "unknown");
  info->host[sizeof info->host - 1] = '\0';
  info->local_rank = local_rank;
  info->local_size = local_size;
  KV_TRY(kv_cuda_bind(local_rank, local_size, info->host, &ctx.device));
  KV_TRY(kv_cuda_identify(ctx.device, info));
  ctx.max_sm_clock = kv_nvml_max_sm_clock();
  KV_TRY(CHECK_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking)));
  int l2 = 0;
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx.device)));
  ctx.flush_bytes = 2 * (size_t)l2 > ((size_t)32 << 20) ? 2 * (size_t)l2 : ((size_t)32 << 20);
  KV_TRY(CHECK_CUDA(cudaMalloc(&ctx.flush, ctx.flush_bytes)));
  const char *skip = getenv("KVAL_SKIP_CEILINGS");
  if (skip && !strcmp(skip, "1")) { /* quick runs and sanitizer runs: no roofline ceilings */
    info->copy_gbps = info->matrix_tflops = info->fp64_tflops = NAN;
    return KV_OK;
  }
  return kv_cuda_ceilings(ctx.stream, info);
}

static double cuda_free_bytes(void) {
  size_t free_b = 0, total = 0;
  return CHECK_CUDA(cudaMemGetInfo(&free_b, &total)) == KV_OK ? (double)free_b : 0.0;
}

static void set_message(char *message, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_message(char *message, size_t msglen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, msglen, fmt, ap);
  va_end(ap);
}

/* Device buffers of one case; every pointer NULL until allocated. */
typedef struct {
  void *in[KV_MAX_TENSORS], *out[KV_MAX_TENSORS];
  double *ref, *mag, *aux_ref;
} case_buffers;

static kv_status buffers_free(case_buffers *b) {
  void *all[2 * KV_MAX_TENSORS + 3] = {b->ref, b->mag, b->aux_ref};
  for (int i = 0; i < KV_MAX_TENSORS; i++) all[3 + i] = b->in[i], all[3 + KV_MAX_TENSORS + i] = b->out[i];
  kv_status st = KV_OK;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i] && CHECK_CUDA(cudaFree(all[i])) != KV_OK) st = KV_ERR;
  memset(b, 0, sizeof *b);
  return st;
}

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

static double case_device_bytes(const kv_tensors *t, const kv_cost *cost) {
  double bytes = 0.0;
  for (int i = 0; i < t->n_in; i++) bytes += (double)tensor_bytes(&t->in[i]);
  for (int i = 0; i < t->n_out; i++) bytes += (double)tensor_bytes(&t->out[i]);
  bytes += 2.0 * 8.0 * (double)t->out[0].count; /* ref + mag */
  if (t->n_out > 1) bytes += 8.0 * (double)cost->rows;
  return bytes;
}

static kv_status buffers_alloc(const kv_tensors *t, const kv_cost *cost, case_buffers *b) {
  for (int i = 0; i < t->n_in; i++) KV_TRY(CHECK_CUDA(cudaMalloc(&b->in[i], tensor_bytes(&t->in[i]))));
  for (int i = 0; i < t->n_out; i++) KV_TRY(CHECK_CUDA(cudaMalloc(&b->out[i], tensor_bytes(&t->out[i]))));
  KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->ref, t->out[0].count * sizeof(double))));
  KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->mag, t->out[0].count * sizeof(double))));
  if (t->n_out > 1) KV_TRY(CHECK_CUDA(cudaMalloc((void **)&b->aux_ref, cost->rows * sizeof(double))));
  return KV_OK;
}

/* Inputs from the shared generator; outputs poisoned: all-ones bits are NaN in fp16, bf16,
 * fp32 and fp64, so an element the kernel does not write fails the NaN count. */
static kv_status fill_buffers(const kv_case *c, const kv_run_settings *rs, const kv_tensors *t, case_buffers *b) {
  for (int i = 0; i < t->n_in; i++)
    KV_TRY(kv_cuda_generate(b->in[i], &t->in[i], kv_stream_key(rs->seed, c->key, (uint64_t)i), ctx.stream));
  for (int i = 0; i < t->n_out; i++)
    KV_TRY(CHECK_CUDA(cudaMemsetAsync(b->out[i], 0xff, tensor_bytes(&t->out[i]), ctx.stream)));
  return CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
}

static kv_status download(void **host, const void *dev, size_t bytes) {
  *host = KV_MALLOC(bytes);
  KV_TRY(CHECK_ALLOC(*host));
  return CHECK_CUDA(cudaMemcpy(*host, dev, bytes, cudaMemcpyDeviceToHost));
}

/* The kernel output on the host, the GPU fp64 reference (timed), and either the error
 * statistics computed on the device (d->device_stats) or the whole reference on the host. */
static kv_status collect(const kv_case *c, const void *problem, const kv_run_settings *rs, const kv_tensors *t,
                         const kv_cost *cost, case_buffers *b, kv_case_data *d) {
  const kv_cuda_family *cf = c->fp->family->cuda;
  KV_TRY(download(&d->out, b->out[0], tensor_bytes(&t->out[0])));
  d->out_count = t->out[0].count;
  d->out_type = t->out[0].dtype;
  if (t->n_out > 1) {
    KV_TRY(download((void **)&d->aux, b->out[1], tensor_bytes(&t->out[1])));
    d->aux_count = t->out[1].count;
  }
  const double t0 = kv_wtime();
  KV_TRY(cf->reference(problem, b->ref, b->mag, b->aux_ref, ctx.stream));
  KV_TRY(CHECK_CUDA(cudaStreamSynchronize(ctx.stream)));
  d->ref_seconds = kv_wtime() - t0;
  d->rows = NULL;
  d->n_rows = cost->rows;
  d->row_len = cost->row_len;
  if (t->n_out > 1) KV_TRY(download((void **)&d->aux_ref, b->aux_ref, cost->rows * sizeof(double)));
  if (d->device_stats) {
    const kv_tolerance tol = rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
    KV_TRY(kv_cuda_errstats(b->out[0], t->out[0].dtype, NULL, b->ref, b->mag, t->out[0].count, c->prec, &tol,
                            cost->red_len, &d->stats, ctx.stream));
    d->has_stats = 1;
    return KV_OK;
  }
  KV_TRY(download((void **)&d->ref, b->ref, t->out[0].count * sizeof(double)));
  return download((void **)&d->mag, b->mag, t->out[0].count * sizeof(double));
}

/* Rows rows[0..n) of a device array of rows of len doubles, packed on the host. */
static kv_status download_rows(double *host, const double *dev, const size_t *rows, size_t n, size_t len) {
  for (size_t r = 0; r < n; r++)
    KV_TRY(CHECK_CUDA(cudaMemcpy(host + r * len, dev + rows[r] * len, len * sizeof *host, cudaMemcpyDeviceToHost)));
  return KV_OK;
}

/* Relative disagreement of two reference values: 0 when equal (infinities included),
 * |g - c| / max(|c|, scale) otherwise, +inf when only one is finite or either is NaN. */
static double disagreement(double g, double c, double scale) {
  if (g == c) return 0.0;
  if (!isfinite(g) || !isfinite(c)) return INFINITY;
  double den = fmax(fabs(c), scale);
  return fabs(g - c) / (den > 0.0 ? den : DBL_MIN);
}

/* Rows of the cross-check: up to XCHECK_ROWS evenly spaced rows, fewer when the CPU
 * reference of that many would exceed the run's CPU reference budget (at least 2). */
static size_t xcheck_rows(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, size_t **rows) {
  kv_run_settings small = *rs;
  small.sample_rows = XCHECK_ROWS;
  const double per_row = cost->rows ? cost->ref_flops / (double)cost->rows : 0.0;
  while (small.sample_rows > 2 && per_row * small.sample_rows > rs->cpu_ref_budget) small.sample_rows /= 2;
  small.cpu_ref_budget = -1.0; /* always sample (all rows only when there are few) */
  size_t n = kv_reference_rows(c, cost, &small, rows);
  if (n > 0 && !*rows) {
    *rows = KV_MALLOC(n * sizeof **rows);
    if (CHECK_ALLOC(*rows) != KV_OK) return 0;
    for (size_t i = 0; i < n; i++) (*rows)[i] = i;
  }
  return n;
}

/* GPU vs CPU fp64 reference (value, magnitude term, auxiliary output) on sampled rows: the
 * CPU one reads the device inputs copied to the host, the GPU one only those rows. */
static kv_status cross_check(const kv_case *c, const kv_tensors *t, const kv_cost *cost, const kv_run_settings *rs,
                             const case_buffers *b, kv_case_data *d) {
  const kv_family *f = c->fp->family;
  void *h_in[KV_MAX_TENSORS] = {0};
  size_t *rows = NULL;
  double *ref = NULL, *mag = NULL, *aux = NULL, *gref = NULL, *gmag = NULL;
  const size_t n = xcheck_rows(c, cost, rs, &rows), len = cost->row_len;
  kv_status st = n > 0 ? KV_OK : KV_ERR;
  for (int i = 0; i < t->n_in && st == KV_OK; i++) st = download(&h_in[i], b->in[i], tensor_bytes(&t->in[i]));
  if (st == KV_OK) {
    ref = KV_MALLOC(n * len * sizeof *ref);
    mag = KV_MALLOC(n * len * sizeof *mag);
    gref = KV_MALLOC(n * len * sizeof *gref);
    gmag = KV_MALLOC(n * len * sizeof *gmag);
    aux = t->n_out > 1 ? KV_MALLOC(n * sizeof *aux) : NULL;
    st = (ref && mag && gref && gmag && (t->n_out < 2 || aux)) ? KV_OK : KV_ERR;
  }
  if (st == KV_OK) st = download_rows(gref, b->ref, rows, n, len);
  if (st == KV_OK) st = download_rows(gmag, b->mag, rows, n, len);
  if (st == KV_OK) st = f->reference(c, (const void *const *)h_in, rows, n, ref, mag, aux);
  double worst = 0.0;
  for (size_t r = 0; r < n && st == KV_OK; r++) {
    for (size_t j = 0; j < len; j++) {
      const size_t k = r * len + j;
      worst = fmax(worst, disagreement(gref[k], ref[k], fabs(mag[k])));
      worst = fmax(worst, disagreement(gmag[k], mag[k], 0.0));
    }
    if (aux) worst = fmax(worst, disagreement(d->aux_ref[rows[r]], aux[r], 0.0));
  }
  if (st == KV_OK) d->ref_xcheck = worst;
  for (int i = 0; i < t->n_in; i++) free(h_in[i]);
  free(rows);
  free(ref);
  free(mag);
  free(gref);
  free(gmag);
  free(aux);
  return st;
}

/* --inject sticky: a real sticky device error after the case's kernel ran. CHECK_CUDA defers
 * the fatal error; a device that did not fault fails the case (the injection tested nothing). */
static kv_status inject_fault(const kv_case *c) {
  if (kv_cuda_fault(ctx.stream) != KV_OK) return KV_ERR;
  kv_report(__FILE__, __LINE__, c->fp->family->name, "cell %zu: the injected device fault did not fault", c->cell);
  return KV_ERR;
}

kv_status kv_cuda_run_case_with(const kv_case *c, const kv_run_settings *rs, const kv_cuda_launch_override *ovr,
                                kv_case_data *d, char *message, size_t msglen) {
  const kv_family *f = c->fp->family;
  d->ref_xcheck = NAN;
  kv_telemetry_unknown(&d->tel);
  d->res.registers = d->res.smem_bytes = d->res.local_bytes = d->res.occupancy = -1;
  if (!f->cuda) {
    set_message(message, msglen, "%s has no CUDA implementation in this build", f->name);
    return KV_ERR;
  }
  kv_tensors t;
  kv_cost cost;
  memset(&t, 0, sizeof t);
  f->tensors(c, &t);
  f->cost(c, &cost);
  const double need = case_device_bytes(&t, &cost), avail = cuda_free_bytes();
  if (need > avail) {
    set_message(message, msglen, "needs %.2f GiB, %.2f GiB free", need / 1073741824.0, avail / 1073741824.0);
    return KV_ERR;
  }
  case_buffers b;
  memset(&b, 0, sizeof b);
  void *problem = NULL, *state = NULL;
  const char *step = "device allocation", *why = NULL;
  kv_status st = buffers_alloc(&t, &cost, &b);
  if (st == KV_OK) {
    step = "input generation";
    st = fill_buffers(c, rs, &t, &b);
  }
  if (st == KV_OK) {
    step = "prepare";
    st = f->cuda->prepare(c, b.in, b.out, &problem, &why);
  }
  /* what is timed: the family's launch of its problem, or the override's of its state */
  kv_cuda_launch_fn launch = f->cuda->launch;
  kv_status (*resources)(const void *, kv_kernel_resources *) = f->cuda->resources;
  const void *kernel = problem;
  if (st == KV_OK && ovr) {
    step = "prepare of the bench launch";
    st = ovr->prepare(problem, ovr->arg, &state, &why);
    launch = ovr->launch;
    resources = ovr->resources;
    kernel = state;
  }
  kv_kernel_resources res;
  if (st == KV_OK && resources(kernel, &res) == KV_OK) d->res = res;
  if (st == KV_OK) {
    step = "launch";
    st = kv_cuda_time_case(&ctx, launch, kernel, rs, d);
  }
  if (st == KV_OK && d->device_fault) {
    step = "injected device fault";
    st = inject_fault(c);
  }
  if (st == KV_OK) {
    step = "GPU reference and error statistics";
    st = collect(c, problem, rs, &t, &cost, &b, d);
  }
  if (st == KV_OK && cross_check(c, &t, &cost, rs, &b, d) != KV_OK)
    kv_report(__FILE__, __LINE__, f->name, "cell %zu: CPU cross-check of the GPU reference failed", c->cell);
  if (state) ovr->release(state);
  if (problem) f->cuda->release(problem);
  if (buffers_free(&b) != KV_OK && st == KV_OK) {
    step = "device free";
    st = KV_ERR;
  }
  if (st != KV_OK && why) {
    set_message(message, msglen, "cuda %s: %s", step, why);
    return st;
  }
  if (st != KV_OK) set_message(message, msglen, "cuda %s failed (see the log)", step);
  return st;
}

static kv_status cuda_run_case(const kv_case *c, const kv_run_settings *rs, kv_case_data *d, char *message,
                               size_t msglen) {
  return kv_cuda_run_case_with(c, rs, NULL, d, message, msglen);
}

static void cuda_finalize(void) {
  if (ctx.flush) (void)CHECK_CUDA(cudaFree(ctx.flush));
  if (ctx.stream) (void)CHECK_CUDA(cudaStreamDestroy(ctx.stream));
  kv_nvml_close();
  ctx.flush = NULL;
  ctx.stream = NULL;
  ctx.device = -1;
}

const kv_backend kv_backend_cuda = {
    .name = "cuda",
    .summary = "the project's CUDA kernels on this rank's GPU, GPU fp64 reference (CPU cross-checked)",
    .available = cuda_available,
    .init = cuda_init,
    .free_bytes = cuda_free_bytes,
    .run_case = cuda_run_case,
    .finalize = cuda_finalize,
};
