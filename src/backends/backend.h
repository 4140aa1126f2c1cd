/* backend.h - execution backends as structs of function pointers in a NULL-terminated
 * registry (IOR's aiori pattern). A backend produces, for one case, the kernel output on
 * the host, the fp64 reference of the rows it covers (or the error statistics computed on
 * the device) and the timing samples; the runner turns those into statistics, a verdict and
 * a result row. */
#ifndef KVAL_BACKEND_H
#define KVAL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "family.h"
#include "core/timing.h"
#include "numerics/errstats.h"
#include "input/plan.h"

#define KV_STR 128

/* Identity and measured ceilings of the rank's device; one /ranks row. */
typedef struct {
  char host[KV_STR];
  int local_rank, local_size;
  int device_index;        /* -1 on the cpu backend */
  char device_name[KV_STR];
  char uuid[KV_STR];
  char serial[KV_STR];
  char pci_bus_id[KV_STR];
  int sm_count;
  int cc_major, cc_minor;
  double memory_bytes;
  int driver_version, runtime_version;
  double copy_gbps;        /* measured device-to-device copy bandwidth, read + write counted */
  double matrix_tflops;    /* measured dense bf16 matrix rate (NaN on the cpu backend) */
  double fp64_tflops;      /* measured fp64 matrix rate (NaN where not measured) */
  char nvml[KV_STR];       /* "ok" or why NVML telemetry is missing */
} kv_rank_info;

/* Everything a backend hands back for one case. The runner owns the buffers after the call
 * and frees them with kv_case_data_free(). */
typedef struct {
  void *out;           /* output 0 on the host, storage bits */
  size_t out_count;
  kv_dtype out_type;
  float *aux;          /* auxiliary output on the host (fa2 LSE), NULL when none */
  size_t aux_count;
  size_t *rows;        /* output rows covered by ref (NULL: all rows, in order) */
  size_t n_rows, row_len;
  double *ref, *mag;   /* n_rows * row_len reference values and magnitude terms (NULL with has_stats) */
  double *aux_ref;     /* n_rows auxiliary reference values, or NULL */
  double *times;       /* timed repetitions, seconds */
  int n_times;
  double ref_seconds;  /* wall time of the reference */
  double ref_xcheck;   /* GPU vs CPU reference disagreement (NaN when not cross-checked) */
  kv_telemetry tel;    /* around the measurement */
  kv_kernel_resources res; /* of the kernel variant (-1 when unknown, e.g. on the cpu backend) */
  /* Requests of the runner, set before run_case (a backend may ignore them):
   * device_stats - compute the error statistics where the data is (the device) and hand them
   *                back in stats (has_stats = 1); ref and mag then need not come to the host;
   * device_fault - cause a real sticky device error in this case (--inject sticky). */
  int device_stats, device_fault;
  int has_stats;       /* 1: stats holds the error statistics of output 0 against ref */
  kv_errstats stats;
} kv_case_data;

void kv_case_data_free(kv_case_data *d);

typedef struct kv_backend {
  const char *name;
  const char *summary;
  /* 1 when the backend can run here (cuda: a GPU is visible). */
  int (*available)(void);
  /* Bind the rank to its device (local rank, local size), measure ceilings, fill info. */
  kv_status (*init)(int local_rank, int local_size, const kv_run_settings *rs, kv_rank_info *info);
  /* Free device memory in bytes (cases that need more are skipped). */
  double (*free_bytes)(void);
  /* Run one case. A failure that leaves the backend usable returns KV_ERR with message set
   * (the case gets status error and the run goes on); a sticky device error calls KV_FATAL. */
  kv_status (*run_case)(const kv_case *c, const kv_run_settings *rs, kv_case_data *d,
                        char *message, size_t msglen);
  void (*finalize)(void);
} kv_backend;

extern const kv_backend *const kv_backends[]; /* NULL-terminated */
const kv_backend *kv_backend_find(const char *name);
/* "auto": cuda when available, else cpu. */
const kv_backend *kv_backend_select(const char *name);

/* Shared by backends: the reference rows of a case (all of them when the CPU reference fits
 * the budget, else a deterministic sample of rs->sample_rows rows). Returns the count;
 * *rows is NULL when all rows are covered. */
size_t kv_reference_rows(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, size_t **rows);

#endif
