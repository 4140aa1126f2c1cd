/* metrics.c - `kval --metrics FILE`: after the file is closed, rank 0 reads it back (status,
 * fp_agrees, time_median, time_mean, reps, throttle_reasons of every family and /ranks) and
 * writes Prometheus text-format metrics for node_exporter's textfile collector, one series
 * per GPU, to FILE.tmp.PID, fsyncs it and renames it to FILE. The median slowdown of a GPU is
 * the median over its cases of its time over the median time of the other GPUs of its model
 * (NaN without such a peer); throttle seconds add up the timed kernel time of the cases during
 * which NVML reported a slowdown reason (power cap, thermal, hardware slowdown, power brake). */
#include "output/metrics.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/internal.h"

/* NVML clocks-throttle reasons that slow the GPU down (not idle, application clocks, sync boost). */
#define KV_THROTTLE_SLOWDOWN (0x4 | 0x8 | 0x20 | 0x40 | 0x80)

typedef struct {
  char *host, *uuid, *pci, *model, *serial;
  int device_index;
  long pass, failed, errors, disagree;
  double throttle_s, slowdown;
  double *ratios;
  size_t n_ratios;
} gpu_stats;

int kv_metrics_check_path(const char *path, char *err, size_t errlen) {
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", path);
  const char *dir = dirname(copy);
  if (access(dir, W_OK) != 0) {
    snprintf(err, errlen, "kval: --metrics %s: directory '%s' is not writable: %s (expected a file in an existing "
             "writable directory, e.g. node_exporter's textfile collector directory)", path, dir, strerror(errno));
    return -1;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place); NaN when n == 0. */
static double median(double *v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Read the whole dataset `name` of g into a malloc'ed buffer of memory type mt (NULL: the
 * dataset's own type, for the status enum); *count gets the number of elements. */
static void *read_all(hid_t g, const char *name, hid_t mt, size_t elem, size_t *count) {
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
  if (CHECK_H5(ds)) return NULL;
  hid_t sp = H5Dget_space(ds), ft = mt < 0 ? H5Dget_type(ds) : H5I_INVALID_HID;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  void *buf = n >= 0 ? KV_MALLOC((size_t)n * elem + 1) : NULL;
  if (buf && CHECK_H5(H5Dread(ds, mt < 0 ? ft : mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf))) {
    free(buf);
    buf = NULL;
  }
  *count = n > 0 ? (size_t)n : 0;
  kv_h5_close_id(&ft);
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  return buf;
}

/* /ranks/name (variable-length strings) as malloc'ed copies, one per rank. */
static kv_status read_strings(hid_t ranks, const char *name, int nranks, gpu_stats *gpus, size_t member) {
  hid_t t = H5Tcopy(H5T_C_S1), ds = H5Dopen2(ranks, name, H5P_DEFAULT), sp = H5I_INVALID_HID;
  char **v = KV_CALLOC((size_t)nranks, sizeof *v);
  kv_status st = CHECK_H5(t) || CHECK_H5(ds) || !v ? KV_ERR : KV_OK;
  if (st == KV_OK) st = CHECK_H5(H5Tset_size(t, H5T_VARIABLE)) || CHECK_H5(H5Tset_cset(t, H5T_CSET_UTF8));
  if (st == KV_OK) st = CHECK_H5(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v));
  for (int r = 0; st == KV_OK && r < nranks; r++) *(char **)((char *)&gpus[r] + member) = strdup(v[r] ? v[r] : "");
  if (st == KV_OK && (sp = H5Dget_space(ds)) >= 0) CHECK_H5(H5Dvlen_reclaim(t, sp, H5P_DEFAULT, v));
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  kv_h5_close_id(&t);
  free(v);
  return st;
}

/* Statuses: pass, fail* (failed), error; everything else (not_run, skipped, findings) is neither. */
static int status_kind(hid_t enum_type, signed char code) {
  char name[64] = "";
  if (H5Tenum_nameof(enum_type, &code, name, sizeof name) < 0) return 0;
  if (strcmp(name, "pass") == 0) return 1;
  if (strncmp(name, "fail", 4) == 0) return 2;
  return strcmp(name, "error") == 0 ? 3 : 0;
}

static int produced_output(int kind) { return kind == 1 || kind == 2; }

/* Accumulate one family group into gpus. */
static kv_status add_family(hid_t g, int nranks, gpu_stats *gpus) {
  size_t n_st, n, n_t, n_m, n_r, n_th;
  signed char *status = read_all(g, "status", -1, 1, &n_st);
  signed char *agrees = read_all(g, "fp_agrees", H5T_NATIVE_SCHAR, 1, &n);
  double *t = read_all(g, "time_median", H5T_NATIVE_DOUBLE, sizeof(double), &n_t);
  double *tmean = read_all(g, "time_mean", H5T_NATIVE_DOUBLE, sizeof(double), &n_m);
  long long *reps = read_all(g, "reps", H5T_NATIVE_LLONG, sizeof(long long), &n_r);
  long long *thr = read_all(g, "throttle_reasons", H5T_NATIVE_LLONG, sizeof(long long), &n_th);
  hid_t ds = H5Dopen2(g, "status", H5P_DEFAULT), et = ds >= 0 ? H5Dget_type(ds) : H5I_INVALID_HID;
  kv_status st = status && agrees && t && tmean && reps && thr && et >= 0 && n == n_st && n == n_t && n == n_m &&
                         n == n_r && n == n_th && n % (size_t)nranks == 0
                     ? KV_OK
                     : KV_ERR;
  size_t cells = st == KV_OK ? n / (size_t)nranks : 0;
  int *kind = st == KV_OK ? KV_MALLOC(n * sizeof *kind + 1) : NULL;
  double *peers = KV_MALLOC((size_t)nranks * sizeof *peers);
  if (!kind || !peers) st = KV_ERR;
  for (size_t i = 0; st == KV_OK && i < n; i++) kind[i] = status_kind(et, status[i]);
  for (int r = 0; st == KV_OK && r < nranks; r++) {
    gpu_stats *gs = &gpus[r];
    double *grown = realloc(gs->ratios, (gs->n_ratios + cells + 1) * sizeof *grown);
    if (!grown) {
      st = KV_ERR;
      break;
    }
    gs->ratios = grown;
    for (size_t c = 0; c < cells; c++) {
      size_t i = (size_t)r * cells + c;
      gs->pass += kind[i] == 1;
      gs->failed += kind[i] == 2;
      gs->errors += kind[i] == 3;
      gs->disagree += agrees[i] == 0;
      if (produced_output(kind[i]) && thr[i] > 0 && (thr[i] & KV_THROTTLE_SLOWDOWN) && reps[i] > 0 &&
          isfinite(tmean[i]))
        gs->throttle_s += (double)reps[i] * tmean[i];
      if (!produced_output(kind[i]) || !(t[i] > 0)) continue;
      size_t np = 0;
      for (int q = 0; q < nranks; q++) {
        size_t j = (size_t)q * cells + c;
        if (q != r && strcmp(gpus[q].model, gs->model) == 0 && produced_output(kind[j]) && t[j] > 0)
          peers[np++] = t[j];
      }
      if (np) gs->ratios[gs->n_ratios++] = t[i] / median(peers, np);
    }
  }
  free(kind);
  free(peers);
  free(status);
  free(agrees);
  free(t);
  free(tmean);
  free(reps);
  free(thr);
  kv_h5_close_id(&et);
  kv_h5_close_id(&ds);
  return st;
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void label(FILE *f, const char *key, const char *value, int first) {
  fprintf(f, "%s%s=\"", first ? "" : ",", key);
  for (const char *c = value; *c; c++) {
    if (*c == '\\' || *c == '"') fputc('\\', f);
    if (*c == '\n') fputs("\\n", f);
    else fputc(*c, f);
  }
  fputc('"', f);
}

static void gpu_labels(FILE *f, const gpu_stats *gs) {
  char index[16];
  snprintf(index, sizeof index, "%d", gs->device_index);
  fputc('{', f);
  label(f, "host", gs->host, 1);
  label(f, "gpu", index, 0);
  label(f, "uuid", gs->uuid, 0);
  label(f, "pci_bus_id", gs->pci, 0);
  label(f, "serial", gs->serial, 0);
  label(f, "model", gs->model, 0);
  fputc('}', f);
}

static void write_text(FILE *f, gpu_stats *gpus, int nranks, long long complete, int exit_code, double now) {
  static const struct {
    const char *name, *help;
  } series[] = {
      {"kval_gpu_ok", "1 when the GPU passed every case of the last kval run and agreed with its peers' fingerprints"},
      {"kval_gpu_passed_cases", "cases of the last kval run that passed on this GPU"},
      {"kval_gpu_failed_cases", "cases of the last kval run that failed validation on this GPU"},
      {"kval_gpu_error_cases", "cases of the last kval run that ended with a runtime error on this GPU"},
      {"kval_gpu_fingerprint_disagreements", "cases whose output bits differ from the GPU's peers of the same model"},
      {"kval_gpu_median_slowdown", "median over cases of time / median time of the other GPUs of the model (NaN: no peer)"},
      {"kval_gpu_throttle_seconds", "timed kernel seconds during which NVML reported a slowdown (power, thermal, hardware)"},
      {"kval_gpu_last_run_timestamp_seconds", "Unix time at which the last kval run on this GPU finished"},
  };
  for (int r = 0; r < nranks; r++) gpus[r].slowdown = median(gpus[r].ratios, gpus[r].n_ratios);
  for (size_t k = 0; k < sizeof series / sizeof series[0]; k++) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", series[k].name, series[k].help, series[k].name);
    for (int r = 0; r < nranks; r++) {
      gpu_stats *gs = &gpus[r];
      double v[] = {gs->failed == 0 && gs->errors == 0 && gs->disagree == 0 && complete == 1, (double)gs->pass,
                    (double)gs->failed, (double)gs->errors, (double)gs->disagree, gs->slowdown,
                    gs->throttle_s, now};
      fputs(series[k].name, f);
      gpu_labels(f, gs);
      if (isnan(v[k])) fputs(" NaN\n", f);
      else fprintf(f, " %.17g\n", v[k]);
    }
  }
  fprintf(f, "# HELP kval_run_complete 1 when the last kval run reached every planned case\n"
             "# TYPE kval_run_complete gauge\nkval_run_complete %lld\n"
             "# HELP kval_run_exit_code exit status of the last kval run (0 all passed, 1 failures, 3 runtime error)\n"
             "# TYPE kval_run_exit_code gauge\nkval_run_exit_code %d\n",
          complete, exit_code);
}

static kv_status read_file(const char *h5path, int *nranks, gpu_stats **out, long long *complete) {
  hid_t file = H5Fopen(h5path, H5F_ACC_RDONLY, H5P_DEFAULT), ranks = H5I_INVALID_HID;
  if (CHECK_H5(file)) return KV_ERR;
  long long n = 0;
  int found = 0, found_c = 0;
  kv_status st = kv_h5_attr_read_i64(file, "nranks", &n, &found);
  if (st == KV_OK) st = kv_h5_attr_read_i64(file, "complete", complete, &found_c);
  gpu_stats *gpus = st == KV_OK && found && n > 0 ? KV_CALLOC((size_t)n, sizeof *gpus) : NULL;
  if (!gpus) st = KV_ERR;
  if (st == KV_OK) st = CHECK_H5(ranks = H5Gopen2(file, "ranks", H5P_DEFAULT));
  static const struct {
    const char *name;
    size_t member;
  } strs[] = {{"host", offsetof(gpu_stats, host)},      {"uuid", offsetof(gpu_stats, uuid)},
              {"pci_bus_id", offsetof(gpu_stats, pci)}, {"device_name", offsetof(gpu_stats, model)},
              {"serial", offsetof(gpu_stats, serial)}};
  for (size_t k = 0; st == KV_OK && k < sizeof strs / sizeof strs[0]; k++)
    st = read_strings(ranks, strs[k].name, (int)n, gpus, strs[k].member);
  size_t cnt = 0;
  int *index = st == KV_OK ? read_all(ranks, "device_index", H5T_NATIVE_INT, sizeof(int), &cnt) : NULL;
  for (long long r = 0; index && r < n && (size_t)r < cnt; r++) gpus[r].device_index = index[r];
  if (!index) st = KV_ERR;
  free(index);
  H5G_info_t info;
  if (st == KV_OK) st = CHECK_H5(H5Gget_info(file, &info));
  for (hsize_t i = 0; st == KV_OK && i < info.nlinks; i++) { /* every family group (not /ranks, not types) */
    char name[256];
    if (H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0) {
      st = KV_ERR;
      break;
    }
    hid_t obj = H5Oopen(file, name, H5P_DEFAULT);
    if (CHECK_H5(obj)) st = KV_ERR;
    else if (H5Iget_type(obj) == H5I_GROUP && strcmp(name, "ranks") != 0) st = add_family(obj, (int)n, gpus);
    kv_h5_close_id(&obj);
  }
  kv_h5_close_id(&ranks);
  kv_h5_close_id(&file);
  if (!found_c) *complete = 0;
  *nranks = (int)n;
  *out = gpus;
  return st;
}

kv_status kv_metrics_write(const char *h5path, const char *path, int exit_code) {
  int nranks = 0;
  long long complete = 0;
  gpu_stats *gpus = NULL;
  kv_status st = read_file(h5path, &nranks, &gpus, &complete);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = st == KV_OK ? fopen(tmp, "w") : NULL;
  if (st == KV_OK && !f) {
    fprintf(stderr, "kval: --metrics: cannot write %s: %s\n", tmp, strerror(errno));
    st = KV_ERR;
  }
  if (f) {
    write_text(f, gpus, nranks, complete, exit_code, (double)time(NULL));
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) st = KV_ERR;
    if (fclose(f) != 0) st = KV_ERR;
    if (st == KV_OK && rename(tmp, path) != 0) st = KV_ERR;
    if (st != KV_OK) {
      fprintf(stderr, "kval: --metrics: cannot write %s: %s\n", path, strerror(errno));
      unlink(tmp);
    }
  }
  for (int r = 0; gpus && r < nranks; r++) {
    free(gpus[r].host);
    free(gpus[r].uuid);
    free(gpus[r].pci);
    free(gpus[r].model);
    free(gpus[r].serial);
    free(gpus[r].ratios);
  }
  free(gpus);
  if (st != KV_OK) fprintf(stderr, "kval: --metrics: no metrics written for %s\n", h5path);
  return st;
}
