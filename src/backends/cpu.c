/* backend_cpu.c - the `cpu` backend: runs every family's CPU emulation (the same algorithm
 * and precision model as the GPU kernels), times it with the host clock, and computes the
 * fp64 CPU reference (sampled rows when the full reference exceeds the budget). It lets
 * every other part of kval run on machines without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "families/kit.h"
#include "core/timing.h"

static int node_ranks = 1; /* ranks of this node share its memory */

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

/* Host memory-copy bandwidth, read + write counted (the roofline ceiling of this backend). */
static double measure_copy_gbps(void) {
  const size_t bytes = (size_t)64 << 20;
  char *a = KV_MALLOC(bytes), *b = KV_MALLOC(bytes);
  double best = NAN;
  if (a && b) {
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int rep = 0; rep < 3; rep++) {
      double t0 = kv_wtime();
      memcpy(b, a, bytes);
      double t = kv_wtime() - t0;
      double gbps = 2.0 * (double)bytes / t / 1e9;
      if (!(gbps <= best)) best = gbps;
    }
  }
  free(a);
  free(b);
  return best;
}

static int cpu_available(void) { return 1; }

static kv_status cpu_init(int local_rank, int local_size, const kv_run_settings *rs, kv_rank_info *info) {
  (void)rs;
  memset(info, 0, sizeof *info);
  if (gethostname(info->host, sizeof info->host) != 0) snprintf(info->host, sizeof info->host, "unknown");
  info->host[sizeof info->host - 1] = '\0';
  info->local_rank = local_rank;
  info->local_size = local_size;
  node_ranks = local_size > 0 ? local_size : 1;
  info->device_index = -1;
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

static void free_tensors(void **bufs, int n) {
  for (int i = 0; i < n; i++) free(bufs[i]);
}

/* Time the emulation: warm-up, then repeat until the median is stable, the time cap is
 * spent, or max_reps. */
static kv_status time_emulation(const kv_case *c, const kv_run_settings *rs, void *const *in, void *const *out,
                                kv_case_data *d) {
  const kv_family *f = c->fp->family;
  for (int i = 0; i < rs->warmup; i++) KV_TRY(f->emulate(c, in, out));
  d->times = KV_MALLOC((size_t)rs->max_reps * sizeof *d->times);
  KV_TRY(CHECK_ALLOC(d->times));
  double spent = 0.0;
  d->n_times = 0;
  while (d->n_times < rs->max_reps) {
    double t0 = kv_wtime();
    KV_TRY(f->emulate(c, in, out));
    double t = kv_wtime() - t0;
    d->times[d->n_times++] = t;
    spent += t;
    if (spent >= rs->time_cap) break;
    if (d->n_times >= rs->min_reps && kv_timing_median_rse(d->times, d->n_times) <= rs->rse_target) break;
  }
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
  kv_status st = (d->ref && d->mag && (!has_aux || d->aux_ref)) ? KV_OK : KV_ERR;
  double t0 = kv_wtime();
  if (st == KV_OK) st = f->reference(c, in, rows, n, d->ref, d->mag, d->aux_ref);
  d->ref_seconds = kv_wtime() - t0;
  if (sample) {
    d->rows = sample;
  } else {
    free(rows);
    d->rows = NULL;
  }
  return st;
}

static kv_status cpu_run_case(const kv_case *c, const kv_run_settings *rs, kv_case_data *d, char *message,
                              size_t msglen) {
  const kv_family *f = c->fp->family;
  kv_tensors t;
  kv_cost cost;
  memset(&t, 0, sizeof t);
  f->tensors(c, &t);
  f->cost(c, &cost);
  void *in[KV_MAX_TENSORS] = {0}, *out[KV_MAX_TENSORS] = {0};
  kv_status st = KV_OK;
  for (int i = 0; i < t.n_in && st == KV_OK; i++) {
    in[i] = KV_MALLOC(t.in[i].count * kv_dtype_size(t.in[i].dtype));
    st = in[i] ? kv_generate_host(&t.in[i], kv_stream_key(rs->seed, c->key, (uint64_t)i), in[i]) : KV_ERR;
  }
  for (int i = 0; i < t.n_out && st == KV_OK; i++) {
    size_t bytes = t.out[i].count * kv_dtype_size(t.out[i].dtype);
    out[i] = KV_MALLOC(bytes);
    if (out[i]) memset(out[i], 0xff, bytes); /* poison: all-ones is NaN in every float type */
    else st = KV_ERR;
  }
  if (st == KV_OK) st = time_emulation(c, rs, in, out, d);
  if (st == KV_OK) st = cpu_reference(c, &cost, rs, (const void *const *)in, t.n_out > 1, d);
  if (st == KV_OK) {
    d->out = out[0];
    d->out_count = t.out[0].count;
    d->out_type = t.out[0].dtype;
    out[0] = NULL;
    if (t.n_out > 1) {
      d->aux = out[1];
      d->aux_count = t.out[1].count;
      out[1] = NULL;
    }
  } else {
    snprintf(message, msglen, "cpu backend: %s case failed (see the error above)", f->name);
  }
  kv_telemetry_unknown(&d->tel);
  d->res.registers = d->res.smem_bytes = d->res.local_bytes = d->res.occupancy = -1;
  free_tensors(in, t.n_in);
  free_tensors(out, t.n_out);
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
