/* backend.c - the `cuda` backend: binds the rank to its GPU, measures the ceilings, and runs a
 * case: device buffers laid out as kv_tensors with guard bands around the outputs (buffers.c),
 * inputs generated on the device (bit-identical to the host generator) and checksummed,
 * outputs poisoned with NaN bits, the case prepared once, downloads into pinned host buffers
 * kept from case to case (hostpool.c), the timing harness (harness.c) around
 * the family's launch (or, for the bench harness, a launch override on the family's prepared
 * problem: kv_cuda_run_case_with), a
 * verification launch on outputs poisoned again, the checks of guard bands, inputs and launch
 * checksums, the outputs copied back (and their checksum recomputed on the host), the GPU fp64
 * reference over the whole output, the error statistics on the device (errstats.cu; the whole
 * reference comes to the host only when the runner asks for host statistics), the
 * cross-checks of the reference and of the statistics on sampled rows (xcheck.c: their CPU
 * reference runs on a host thread from the input generation on, beside the device), and --inject
 * sticky / hang as real device faults (fault.cu).
 * Every wait for the device is under the watchdog (watchdog.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/context.h"
#include "backends/cuda/nvml.h"
#include "families/ref_threads.h"
#include "core/cuda_check.cuh"
#include "core/timing.h"
#include "numerics/tolerance.h"

static kv_cuda_ctx ctx = {.device = -1};

static int cuda_available(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static kv_status cuda_init(int local_rank, int local_size, const kv_run_settings *rs, kv_rank_info *info) {
  (void)rs;
  memset(info, 0, sizeof *info);
  kv_node_name(info->host, sizeof info->host);
  info->local_rank = local_rank;
  info->local_size = local_size;
  KV_TRY(kv_cuda_bind(local_rank, local_size, info->host, &ctx.device));
  kv_cuda_host_init(local_size);
  ctx.ref_threads = kv_ref_host_threads(local_size);
  char note[320];
  if (kv_ref_binding_note(local_size, note, sizeof note))
    fprintf(stderr, "kval: note: host %s local rank %d: %s\n", info->host, local_rank, note);
  KV_TRY(kv_cuda_identify(ctx.device, info));
  ctx.max_sm_clock = kv_nvml_max_sm_clock();
  KV_TRY(CHECK_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking)));
  KV_TRY(CHECK_CUDA(cudaEventCreateWithFlags(&ctx.done, cudaEventDisableTiming)));
  int l2 = 0;
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx.device)));
  ctx.flush_bytes = 2 * (size_t)l2 > ((size_t)32 << 20) ? 2 * (size_t)l2 : ((size_t)32 << 20);
  KV_TRY(CHECK_CUDA(cudaMalloc(&ctx.flush, ctx.flush_bytes)));
  const char *skip = getenv("KVAL_SKIP_CEILINGS");
  if (skip && !strcmp(skip, "1")) { /* quick runs and sanitizer runs: no roofline ceilings */
    info->copy_gbps = info->matrix_tflops = info->fp64_tflops = NAN;
  } else {
    KV_TRY(kv_cuda_ceilings(ctx.stream, info));
  }
  info->cold_timing = 1;
  ctx.copy_gbps = info->copy_gbps;
  ctx.matrix_tflops = info->matrix_tflops;
  ctx.fp64_tflops = info->fp64_tflops;
  return KV_OK;
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

/* The watchdog's estimates of a case's work from the rank's ceilings (an H200's rates where
 * they were not measured): one launch at the roofline, the fp64 reference at 5% of the DGEMM
 * rate, and a memory-bound pass over the output's reference and magnitude. */
static double rate_or(double measured, double fallback) { return isfinite(measured) && measured > 0 ? measured : fallback; }
static double launch_estimate(const kv_cost *cost) {
  const double peak = rate_or(ctx.matrix_tflops, 1000.0) * 1e12, bw = rate_or(ctx.copy_gbps, 4000.0) * 1e9;
  return fmax(cost->flops / peak, cost->bytes / bw);
}
static double reference_estimate(const kv_cost *cost) {
  return cost->ref_flops / (0.05 * rate_or(ctx.fp64_tflops, 50.0) * 1e12);
}
static double pass_estimate(double bytes) { return bytes / (rate_or(ctx.copy_gbps, 4000.0) * 1e9); }

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

/* The harness's probe: the outputs' checksum into a device word. */
typedef struct {
  const kv_tensors *t;
  const kv_cuda_buffers *b;
} probe_arg;
static kv_status probe(void *arg, unsigned long long *d_sum) {
  const probe_arg *p = arg;
  return kv_cuda_buffers_sum_outputs(&ctx, p->t, p->b, d_sum);
}

/* What is launched and timed: the family's launch of its prepared problem, or a bench
 * override's of the state it derived from that problem. */
typedef struct {
  kv_cuda_launch_fn launch;
  kv_status (*resources)(const void *, kv_kernel_resources *);
  const void *kernel;
} launchable;

/* The verification launch, whose outputs are downloaded and judged: outputs poisoned again,
 * one launch, its checksum into the verification slot. */
static kv_status verification_launch(const launchable *l, const kv_tensors *t, kv_cuda_buffers *b, double deadline) {
  KV_TRY(kv_cuda_buffers_poison(&ctx, t, b));
  KV_TRY(l->launch(l->kernel, ctx.stream));
  KV_TRY(kv_cuda_buffers_sum_outputs(&ctx, t, b, kv_cuda_buffers_verification_slot(b)));
  return kv_cuda_wait(&ctx, deadline, "the verification launch");
}

/* bytes of a device buffer into a host buffer of the pool (released by kv_case_data_free). */
static kv_status download(kv_case_data *d, void **host, const void *dev, size_t bytes, double deadline,
                          const char *what) {
  d->release = kv_cuda_host_put;
  KV_TRY(kv_cuda_host_get(bytes, host));
  KV_TRY(CHECK_CUDA(cudaMemcpyAsync(*host, dev, bytes, cudaMemcpyDeviceToHost, ctx.stream)));
  return kv_cuda_wait(&ctx, deadline, what);
}

/* The device statistics of each part of output 0 (kv_family.out_parts: contiguous rows),
 * worst indices made flat indices of the whole output; the judge checks that they tile the
 * whole output's (rows that do not split evenly are its harness error: none handed back). */
static kv_status part_stats(const kv_case *c, const kv_tensors *t, const kv_cost *cost, const kv_tolerance *tol,
                            const kv_cuda_buffers *b, double deadline, kv_case_data *d) {
  const int n_parts = kv_family_parts(c->fp->family);
  if (n_parts == 0 || cost->rows % (size_t)n_parts) return KV_OK;
  const size_t esize = kv_dtype_size(t->out[0].dtype);
  for (int p = 0; p < n_parts; p++) {
    const size_t first = kv_part_first_row(cost->rows, n_parts, p) * cost->row_len;
    const size_t end = kv_part_first_row(cost->rows, n_parts, p + 1) * cost->row_len;
    kv_errstats *st = &d->part_stats[p];
    KV_TRY(kv_cuda_errstats((const char *)b->out[0] + first * esize, t->out[0].dtype, NULL, b->ref + first,
                            b->mag + first, end - first, c->prec, tol, cost->red_len, deadline, st, ctx.stream));
    if (st->worst_index >= 0) st->worst_index += (int64_t)first;
  }
  d->has_part_stats = 1;
  return KV_OK;
}

/* The kernel outputs on the host, the GPU fp64 reference (timed), and either the error
 * statistics computed on the device (d->device_stats) or the whole reference on the host. */
static kv_status collect(const kv_case *c, const void *problem, const kv_run_settings *rs, const kv_tensors *t,
                         const kv_cost *cost, kv_cuda_buffers *b, kv_case_data *d) {
  const double pass = kv_cuda_deadline(rs, pass_estimate(24.0 * (double)t->out[0].count));
  KV_TRY(download(d, &d->out, b->out[0], tensor_bytes(&t->out[0]), pass, "the download of the output"));
  d->out_count = t->out[0].count;
  d->out_type = t->out[0].dtype;
  if (t->n_out > 1) {
    KV_TRY(download(d, (void **)&d->aux, b->out[1], tensor_bytes(&t->out[1]), pass, "the download of the output"));
    d->aux_count = t->out[1].count;
  }
  const double t0 = kv_wtime();
  KV_TRY(c->fp->family->cuda->reference(problem, b->ref, b->mag, b->aux_ref, b->aux_mag, ctx.stream));
  KV_TRY(kv_cuda_wait(&ctx, kv_cuda_deadline(rs, reference_estimate(cost)), "the GPU fp64 reference"));
  d->ref_seconds = kv_wtime() - t0;
  d->rows = NULL;
  d->n_rows = cost->rows;
  d->row_len = cost->row_len;
  if (t->n_out > 1) {
    KV_TRY(download(d, (void **)&d->aux_ref, b->aux_ref, cost->rows * sizeof(double), pass, "the download of the reference"));
    KV_TRY(download(d, (void **)&d->aux_mag, b->aux_mag, cost->rows * sizeof(double), pass, "the download of the reference"));
  }
  if (d->device_stats) {
    const kv_tolerance tol = rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
    const double s0 = kv_wtime();
    const double deadline = kv_cuda_deadline(rs, 8.0 * pass_estimate(24.0 * (double)t->out[0].count));
    KV_TRY(kv_cuda_errstats(b->out[0], t->out[0].dtype, NULL, b->ref, b->mag, t->out[0].count, c->prec, &tol,
                            cost->red_len, deadline, &d->stats, ctx.stream));
    KV_TRY(part_stats(c, t, cost, &tol, b, deadline, d));
    d->phases.stats = kv_wtime() - s0;
    d->has_stats = 1;
    return KV_OK;
  }
  KV_TRY(download(d, (void **)&d->ref, b->ref, t->out[0].count * sizeof(double), pass, "the download of the reference"));
  return download(d, (void **)&d->mag, b->mag, t->out[0].count * sizeof(double), pass, "the download of the reference");
}

/* --inject sticky: a real sticky device error after the case's kernel ran. CHECK_CUDA defers
 * the fatal error; a device that did not fault fails the case (the injection tested nothing).
 * --inject hang: a kernel that never finishes, which the watchdog must name. */
static kv_status inject(const kv_case *c, const kv_case_data *d, double deadline) {
  if (d->device_hang) {
    KV_TRY(kv_cuda_hang(ctx.stream));
    KV_TRY(kv_cuda_wait(&ctx, deadline, "the kernel (with --inject hang)"));
    kv_report(__FILE__, __LINE__, c->fp->family->name, "cell %zu: the injected hang finished", c->cell);
    return KV_ERR;
  }
  if (kv_cuda_fault(ctx.stream) != KV_OK) return KV_ERR;
  kv_report(__FILE__, __LINE__, c->fp->family->name, "cell %zu: the injected device fault did not fault", c->cell);
  return KV_ERR;
}

/* The steps of a case after its buffers exist; *step names the one that failed. */
static kv_status run_steps(const kv_case *c, const kv_run_settings *rs, const kv_cuda_launch_override *ovr,
                           const kv_tensors *t, const kv_cost *cost, kv_cuda_buffers *b, void **problem, void **state,
                           kv_case_data *d, kv_cuda_xcheck_job **xj, double mark, const char **step,
                           const char **why) {
  const kv_cuda_family *cf = c->fp->family->cuda;
  const double launch_deadline = kv_cuda_deadline(rs, launch_estimate(cost));
  *step = "input generation";
  KV_TRY(kv_cuda_buffers_fill(&ctx, c, rs, t, b));
  KV_TRY(kv_cuda_wait(&ctx, kv_cuda_deadline(rs, pass_estimate(cost->device_bytes)), "the input generation"));
  *step = "start of the cross-checks (inputs to the host, the CPU reference's thread)";
  const double x0 = kv_wtime();
  KV_TRY(kv_cuda_xcheck_start(&ctx, c, t, cost, rs, b, xj));
  const double xcheck_start = kv_wtime() - x0; /* counted with the cross-checks, not the setup */
  *step = "prepare";
  KV_TRY(cf->prepare(c, b->in, b->out, problem, why));
  launchable l = {cf->launch, cf->resources, *problem};
  if (ovr) {
    *step = "prepare of the bench launch";
    KV_TRY(ovr->prepare(*problem, ovr->arg, state, why));
    l = (launchable){ovr->launch, ovr->resources, *state};
  }
  /* What prepare enqueued outside the case's stream has landed before the first launch: a
   * synchronous cudaMemcpy from pageable memory (decode's block table, the cuBLASLt scales,
   * tcprobe's operands) returns before its DMA does, and the case's stream, non-blocking,
   * does not wait for the legacy stream - a first launch that read a half-copied block table
   * was judged nondeterministic. */
  *step = "the device work of prepare";
  KV_TRY(CHECK_CUDA(cudaDeviceSynchronize()));
  kv_kernel_resources res;
  if (l.resources(l.kernel, &res) == KV_OK) d->res = res;
  d->phases.setup = kv_lap(&mark) - xcheck_start;
  *step = "launch";
  probe_arg pa = {t, b};
  KV_TRY(kv_cuda_time_case(&ctx, l.launch, l.kernel, rs, launch_deadline, probe, &pa, d));
  d->phases.timing = kv_lap(&mark);
  KV_TRY(verification_launch(&l, t, b, launch_deadline));
  if (d->device_fault || d->device_hang) {
    *step = "injected device fault";
    return inject(c, d, launch_deadline);
  }
  *step = "checks of the guard bands, inputs and launches";
  KV_TRY(kv_cuda_buffers_check(&ctx, t, b, kv_cuda_deadline(rs, pass_estimate(cost->device_bytes)), d));
  *step = "GPU reference and error statistics";
  d->phases.stats = 0.0;
  KV_TRY(collect(c, *problem, rs, t, cost, b, d));
  kv_checksum_finding(d, t, b->verification_sum, ctx.ref_threads);
  d->phases.checks = kv_lap(&mark) - d->ref_seconds - d->phases.stats; /* with the downloads */
  *step = "cross-checks of the reference and the statistics";
  const kv_status st = kv_cuda_xcheck_finish(&ctx, c, t, cost, rs, b, *xj, d);
  d->phases.xcheck = xcheck_start + kv_lap(&mark);
  return st;
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
  kv_case_cost(c, &cost);
  const double need = kv_cuda_case_bytes(&t, &cost), avail = cuda_free_bytes();
  if (need > avail) {
    set_message(message, msglen, "needs %.2f GiB, %.2f GiB free", need / 1073741824.0, avail / 1073741824.0);
    return KV_ERR;
  }
  kv_cuda_buffers b;
  memset(&b, 0, sizeof b);
  void *problem = NULL, *state = NULL;
  const char *step = "device allocation", *why = NULL;
  const double mark = kv_wtime();
  kv_cuda_xcheck_job *xj = NULL;
  kv_status st = kv_cuda_buffers_alloc(&t, &cost, &b);
  if (st == KV_OK) st = run_steps(c, rs, ovr, &t, &cost, &b, &problem, &state, d, &xj, mark, &step, &why);
  kv_cuda_xcheck_drop(xj); /* its thread joined on every path: it reads host buffers of the pool */
  if (kv_fatal_pending()) { /* a timeout or a sticky error: the device must not be touched again */
    set_message(message, msglen, "cuda %s: %s", step, kv_fatal_pending());
    return KV_ERR;
  }
  if (state) ovr->release(state);
  if (problem) f->cuda->release(problem);
  if (kv_cuda_buffers_free(&b) != KV_OK && st == KV_OK) {
    step = "device free";
    st = KV_ERR;
  }
  if (st != KV_OK) set_message(message, msglen, "cuda %s: %s", step, why ? why : "failed (see the log)");
  return st;
}

static kv_status cuda_run_case(const kv_case *c, const kv_run_settings *rs, kv_case_data *d, char *message,
                               size_t msglen) {
  return kv_cuda_run_case_with(c, rs, NULL, d, message, msglen);
}

static void cuda_finalize(void) {
  if (!kv_fatal_pending()) {
    if (ctx.flush) (void)CHECK_CUDA(cudaFree(ctx.flush));
    if (ctx.done) (void)CHECK_CUDA(cudaEventDestroy(ctx.done));
    if (ctx.stream) (void)CHECK_CUDA(cudaStreamDestroy(ctx.stream));
  }
  kv_cuda_host_release();
  kv_nvml_close();
  ctx.flush = NULL;
  ctx.done = NULL;
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
