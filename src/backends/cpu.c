/* cpu.c - the `cpu` backend: runs every family's CPU emulation (the same algorithm and
 * precision model as the GPU kernels) on outputs between guard bands, times it with the host
 * clock, makes the same checks as the cuda backend (inputs unchanged, guard bands intact, the
 * first, last timed and verification launches write the same bits), and computes the fp64
 * CPU reference (sampled rows when the full reference exceeds the budget). It lets every other
 * part of kval run on machines without a GPU; test-only, it binds ranks to fake GPUs
 * (KVAL_TEST_FAKE_GPUS) so the binding rules run under a real Slurm without GPUs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/binding.h"
#include "families/kit.h"
#include "families/ref_threads.h"
#include "core/timing.h"
#include "numerics/checksum.h"
#include "numerics/fingerprint.h"
#include "numerics/rng.h"

static int node_ranks = 1;   /* ranks of this node share its memory */
static int host_threads = 1; /* and its CPUs: the threads of the host checksum (kv_ref_host_threads) */

static void read_cpu_model(char *buf, size_t n) {
  snprintf(buf, n, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *colon = strchr(line, ':');
      if (colon) {
        colon++;
        while (*colon == ' ') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, n, "%s", colon);
      }
      break;
    }
  }
  fclose(f);
}

/* Host memory-copy bandwidth, read + write counted, over the thread's CPU time like the
 * kernels' (a loaded machine's preemption is not counted): the recorded roofline of this
 * backend, whose emulations may run from caches (cold_timing 0: not judged). */
static double measure_copy_gbps(void) {
  const size_t bytes = (size_t)64 << 20;
  char *a = KV_MALLOC(bytes), *b = KV_MALLOC(bytes);
  double best = NAN;
  if (a && b) {
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int rep = 0; rep < 3; rep++) {
      double t0 = kv_cputime();
      memcpy(b, a, bytes);
      double t = kv_cputime() - t0;
      double gbps = 2.0 * (double)bytes / t / 1e9;
      if (!(gbps <= best)) best = gbps;
    }
  }
  free(a);
  free(b);
  return best;
}

static int cpu_available(void) { return 1; }

/* Test-only, KVAL_TEST_FAKE_GPUS=1: every entry of CUDA_VISIBLE_DEVICES counts as a GPU this
 * rank sees, and the rank binds to one with the cuda backend's rule (kv_binding_bind), so
 * Slurm's GPU allocation (gres.conf File= entries standing in for GPUs) and the binding
 * errors run on machines without GPUs. Unset or 0: no binding, device_index -1. */
static kv_status fake_gpu_binding(int local_rank, int local_size, const char *host, int *device) {
  const char *v = getenv("KVAL_TEST_FAKE_GPUS");
  *device = -1;
  if (!v || !strcmp(v, "0")) return KV_OK;
  kv_status known = KV_OK;
  if (strcmp(v, "1") != 0) { /* still take part in the node's collective, so no rank waits */
    kv_report(__FILE__, __LINE__, "binding", "KVAL_TEST_FAKE_GPUS must be 0 or 1, got '%.64s'", v);
    known = KV_ERR;
  }
  return kv_binding_bind(local_rank, local_size, kv_binding_count(getenv("CUDA_VISIBLE_DEVICES")), known, host,
                         device);
}

static kv_status cpu_init(int local_rank, int local_size, const kv_run_settings *rs, kv_rank_info *info) {
  (void)rs;
  memset(info, 0, sizeof *info);
  kv_node_name(info->host, sizeof info->host);
  info->local_rank = local_rank;
  info->local_size = local_size;
  node_ranks = local_size > 0 ? local_size : 1;
  host_threads = kv_ref_host_threads(node_ranks);
  KV_TRY(fake_gpu_binding(local_rank, local_size, info->host, &info->device_index));
  read_cpu_model(info->device_name, sizeof info->device_name);
  snprintf(info->uuid, sizeof info->uuid, "CPU-%.100s-%d", info->host, local_rank);
  snprintf(info->serial, sizeof info->serial, "n/a");
  snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "n/a");
  info->sm_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
  info->memory_bytes = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  info->copy_gbps = measure_copy_gbps();
  info->matrix_tflops = NAN;
  info->fp64_tflops = NAN;
  snprintf(info->nvml, sizeof info->nvml, "not used (cpu backend)");
  return KV_OK;
}

/* One number from a cgroup v2 file; NAN when absent or "max". */
static double cgroup_value(const char *path) {
  FILE *f = fopen(path, "r");
  double v = NAN;
  if (f) {
    char buf[64];
    if (fgets(buf, sizeof buf, f) && strncmp(buf, "max", 3) != 0) v = strtod(buf, NULL);
    fclose(f);
  }
  return v;
}

/* This rank's share of the node's free memory, within the job's cgroup limit (Slurm --mem). */
static double cpu_free_bytes(void) {
  double avail = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  double limit = cgroup_value("/sys/fs/cgroup/memory.max") - cgroup_value("/sys/fs/cgroup/memory.current");
  if (isfinite(limit) && limit < avail) avail = limit > 0 ? limit : 0;
  return avail / node_ranks;
}

/* Host buffers of one case: each tensor between two guard bands (the cuda backend's checks,
 * src/backends/cuda/buffers.c, made on the host; an input's bands are NaN bits). */
typedef struct {
  void *in[KV_MAX_TENSORS], *out[KV_MAX_TENSORS];
  unsigned char *in_alloc[KV_MAX_TENSORS], *out_alloc[KV_MAX_TENSORS];
  uint64_t in_sum[KV_MAX_TENSORS];
} host_buffers;

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

static void buffers_free(host_buffers *b) {
  for (int i = 0; i < KV_MAX_TENSORS; i++) {
    free(b->in_alloc[i]);
    free(b->out_alloc[i]);
  }
  memset(b, 0, sizeof *b);
}

/* Outputs poisoned: all-ones bits are NaN in every float type, so an element the emulation
 * does not write fails the NaN count. */
static void poison(const kv_tensors *t, host_buffers *b) {
  for (int i = 0; i < t->n_out; i++) memset(b->out[i], 0xff, tensor_bytes(&t->out[i]));
}

static kv_status buffers_make(const kv_case *c, const kv_run_settings *rs, const kv_tensors *t, host_buffers *b) {
  for (int i = 0; i < t->n_in; i++) {
    b->in_alloc[i] = KV_MALLOC(tensor_bytes(&t->in[i]) + 2 * KV_GUARD_BYTES);
    KV_TRY(CHECK_ALLOC(b->in_alloc[i]));
    b->in[i] = b->in_alloc[i] + KV_GUARD_BYTES;
    memset(b->in_alloc[i], KV_INPUT_GUARD_BYTE, KV_GUARD_BYTES);
    memset(b->in_alloc[i] + KV_GUARD_BYTES + tensor_bytes(&t->in[i]), KV_INPUT_GUARD_BYTE, KV_GUARD_BYTES);
    KV_TRY(kv_generate_host(&t->in[i], kv_stream_key(rs->seed, c->key, (uint64_t)i), b->in[i]));
    b->in_sum[i] = kv_fingerprint(b->in[i], tensor_bytes(&t->in[i]));
  }
  for (int i = 0; i < t->n_out; i++) {
    b->out_alloc[i] = KV_MALLOC(tensor_bytes(&t->out[i]) + 2 * KV_GUARD_BYTES);
    KV_TRY(CHECK_ALLOC(b->out_alloc[i]));
    memset(b->out_alloc[i], KV_GUARD_BYTE, tensor_bytes(&t->out[i]) + 2 * KV_GUARD_BYTES);
    b->out[i] = b->out_alloc[i] + KV_GUARD_BYTES;
  }
  poison(t, b);
  return KV_OK;
}

/* The launch checksum of the outputs (output i with salt i), as the cuda backend's device sum. */
static uint64_t outputs_sum(const kv_tensors *t, const host_buffers *b) {
  uint64_t s = 0;
  for (int i = 0; i < t->n_out; i++) s += kv_checksum_bytes(b->out[i], tensor_bytes(&t->out[i]), (unsigned)i);
  return s;
}

/* Guard bands, inputs, and the launches' output checksums (every timed one, verification). */
static void check_buffers(const kv_tensors *t, const host_buffers *b, uint64_t verification_sum, kv_case_data *d) {
  for (int i = 0; i < t->n_out; i++)
    kv_guard_finding(d, t->out[i].name, 0, b->out_alloc[i],
                     b->out_alloc[i] + KV_GUARD_BYTES + tensor_bytes(&t->out[i]));
  for (int i = 0; i < t->n_in; i++)
    kv_guard_finding(d, t->in[i].name, 1, b->in_alloc[i], b->in_alloc[i] + KV_GUARD_BYTES + tensor_bytes(&t->in[i]));
  for (int i = 0; i < t->n_in && !d->out_of_bounds[0]; i++)
    if (kv_fingerprint(b->in[i], tensor_bytes(&t->in[i])) != b->in_sum[i])
      snprintf(d->out_of_bounds, sizeof d->out_of_bounds, "input %s changed during the launches", t->in[i].name);
  kv_launch_finding(d, verification_sum);
}

/* Time the emulation by this thread's CPU time (a loaded machine's preemption would otherwise
 * be most of a small case's time and differ between ranks): warm-up, then repeat until the
 * median is stable, the time cap is spent, or max_reps; the outputs' checksum after the first
 * launch and after every timed one (untimed), then the verification launch on outputs
 * poisoned again (its outputs are the ones judged). */
static kv_status time_emulation(const kv_case *c, const kv_run_settings *rs, const kv_tensors *t, host_buffers *b,
                                uint64_t *verification_sum, kv_case_data *d) {
  const kv_family *f = c->fp->family;
  const int max_reps = rs->max_reps > 0 ? rs->max_reps : 1;
  d->times = KV_MALLOC((size_t)max_reps * sizeof *d->times);
  d->launch_sums = KV_MALLOC(((size_t)max_reps + 1) * sizeof *d->launch_sums);
  KV_TRY(CHECK_ALLOC(d->times));
  KV_TRY(CHECK_ALLOC(d->launch_sums));
  for (int i = 0; i < rs->warmup; i++) {
    KV_TRY(f->emulate(c, b->in, b->out));
    if (i == 0) d->launch_sums[0] = outputs_sum(t, b);
  }
  double spent = 0.0;
  d->n_times = 0;
  while (d->n_times < max_reps) {
    const double t0 = kv_cputime();
    KV_TRY(f->emulate(c, b->in, b->out));
    const double dt = kv_cputime() - t0;
    d->times[d->n_times++] = dt;
    d->launch_sums[d->n_times] = outputs_sum(t, b);
    spent += dt;
    if (spent >= rs->time_cap) break;
    if (d->n_times >= rs->min_reps && kv_timing_median_rse(d->times, d->n_times) <= rs->rse_target) break;
  }
  if (rs->warmup == 0) d->launch_sums[0] = d->launch_sums[1]; /* the first launch was timed */
  poison(t, b);
  KV_TRY(f->emulate(c, b->in, b->out));
  *verification_sum = outputs_sum(t, b);
  return KV_OK;
}

static kv_status cpu_reference(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs,
                               const void *const *in, int has_aux, kv_case_data *d) {
  const kv_family *f = c->fp->family;
  size_t *sample = NULL;
  size_t n = kv_reference_rows(c, cost, rs, &sample);
  if (n == 0) return KV_ERR;
  size_t *rows = sample;
  if (!rows) { /* all rows: the family still takes an explicit list */
    rows = KV_MALLOC(n * sizeof *rows);
    KV_TRY(CHECK_ALLOC(rows));
    for (size_t i = 0; i < n; i++) rows[i] = i;
  }
  d->n_rows = n;
  d->row_len = cost->row_len;
  d->ref = KV_MALLOC(n * cost->row_len * sizeof *d->ref);
  d->mag = KV_MALLOC(n * cost->row_len * sizeof *d->mag);
  d->aux_ref = has_aux ? KV_MALLOC(n * sizeof *d->aux_ref) : NULL;
  d->aux_mag = has_aux ? KV_MALLOC(n * sizeof *d->aux_mag) : NULL;
  kv_status st = (d->ref && d->mag && (!has_aux || (d->aux_ref && d->aux_mag))) ? KV_OK : KV_ERR;
  double t0 = kv_wtime();
  if (st == KV_OK) st = f->reference(c, in, rows, n, d->ref, d->mag, d->aux_ref, d->aux_mag);
  d->ref_seconds = kv_wtime() - t0;
  if (sample) {
    d->rows = sample;
  } else {
    free(rows);
    d->rows = NULL;
  }
  return st;
}

/* Output k of the buffers into a new host buffer. */
static kv_status copy_out(const host_buffers *b, const kv_tensors *t, int k, void **dst) {
  *dst = KV_MALLOC(tensor_bytes(&t->out[k]));
  KV_TRY(CHECK_ALLOC(*dst));
  memcpy(*dst, b->out[k], tensor_bytes(&t->out[k]));
  return KV_OK;
}

static kv_status cpu_run_case(const kv_case *c, const kv_run_settings *rs, kv_case_data *d, char *message,
                              size_t msglen) {
  const kv_family *f = c->fp->family;
  kv_tensors t;
  kv_cost cost;
  memset(&t, 0, sizeof t);
  f->tensors(c, &t);
  kv_case_cost(c, &cost);
  kv_telemetry_unknown(&d->tel);
  d->res.registers = d->res.smem_bytes = d->res.local_bytes = d->res.occupancy = -1;
  host_buffers b;
  memset(&b, 0, sizeof b);
  uint64_t verification_sum = 0;
  double mark = kv_wtime();
  kv_status st = buffers_make(c, rs, &t, &b);
  if (st == KV_OK) kv_input_finding(d, c, rs, &t, (const void *const *)b.in);
  d->phases.setup = kv_lap(&mark);
  if (st == KV_OK) st = time_emulation(c, rs, &t, &b, &verification_sum, d);
  d->phases.timing = kv_lap(&mark);
  if (st == KV_OK) check_buffers(&t, &b, verification_sum, d);
  if (st == KV_OK) st = copy_out(&b, &t, 0, &d->out);
  if (st == KV_OK && t.n_out > 1) st = copy_out(&b, &t, 1, (void **)&d->aux);
  if (st == KV_OK) kv_checksum_finding(d, &t, verification_sum, host_threads);
  d->phases.checks = kv_lap(&mark);
  if (st == KV_OK) st = cpu_reference(c, &cost, rs, (const void *const *)b.in, t.n_out > 1, d);
  d->out_count = t.out[0].count;
  d->out_type = t.out[0].dtype;
  d->aux_count = t.n_out > 1 ? t.out[1].count : 0;
  if (st != KV_OK) snprintf(message, msglen, "cpu backend: %s case failed (see the error above)", f->name);
  buffers_free(&b);
  return st;
}

static void cpu_finalize(void) {}

const kv_backend kv_backend_cpu = {
    .name = "cpu",
    .summary = "CPU emulation of every family (bit-exact precision model), fp64 CPU reference",
    .available = cpu_available,
    .init = cpu_init,
    .free_bytes = cpu_free_bytes,
    .run_case = cpu_run_case,
    .finalize = cpu_finalize,
};
