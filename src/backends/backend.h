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
#include "core/result.h"
#include "core/timing.h"
#include "numerics/errstats.h"
#include "input/plan.h"

#define KV_STR 128

/* Identity and measured ceilings of the rank's device; one /ranks row. */
typedef struct {
  char host[KV_STR];       /* the node: kv_node_name() */
  int local_rank, local_size;
  int device_index;        /* -1 on the cpu backend (its fake GPU with KVAL_TEST_FAKE_GPUS=1) */
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
  int cold_timing;         /* 1: the timed launches start from cold caches (the cuda backend flushes
                            * L2 between repetitions), so a rate above the measured ceilings cannot be
                            * true (fail_timing); 0: they may run from caches (the cpu backend's
                            * emulations on small cases), the roofline fraction is recorded only */
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
  double *aux_mag;     /* n_rows magnitude terms of the auxiliary output's bound, or NULL */
  double *times;       /* timed repetitions, seconds */
  int n_times;
  uint64_t *launch_sums; /* the outputs' launch checksum after the first launch [0] and after
                          * every timed repetition [1 .. n_times] (numerics/checksum.h) */
  double ref_seconds;  /* wall time of the reference */
  double ref_xcheck;   /* GPU vs CPU reference disagreement (NaN when not cross-checked) */
  kv_telemetry tel;    /* around the measurement */
  kv_phases phases;    /* wall time of the backend's phases (the runner adds judge and total) */
  kv_kernel_resources res; /* of the kernel variant (-1 when unknown, e.g. on the cpu backend) */
  /* Requests of the runner, set before run_case (a backend may ignore them):
   * device_stats - compute the error statistics where the data is (the device) and hand them
   *                back in stats (has_stats = 1); ref and mag then need not come to the host;
   * device_fault - cause a real sticky device error in this case (--inject sticky);
   * device_hang  - launch a kernel that never finishes in this case (--inject hang). */
  int device_stats, device_fault, device_hang;
  int has_stats;       /* 1: stats holds the error statistics of output 0 against ref */
  int has_part_stats;  /* 1: part_stats holds those of each part of output 0 (kv_family.out_parts) */
  void (*release)(void *); /* frees out, aux, ref, mag, aux_ref and aux_mag (a backend's host
                            * buffers); NULL: they came from malloc */
  kv_errstats stats;
  kv_errstats part_stats[KV_MAX_PARTS];
  /* What the backend's own checks found ("" when nothing), each judged by the runner:
   * out_of_bounds - a guard band around an output, or an input tensor, changed (which, where);
   * nondeterministic - launches of the case wrote different output bits (which launches);
   * harness - the checker disagreed with itself (device statistics vs the host's on a sample). */
  char out_of_bounds[KV_MESSAGE_LEN], nondeterministic[KV_MESSAGE_LEN], harness[KV_MESSAGE_LEN];
} kv_case_data;

/* Empty case data before run_case: no buffers, the cross-check and the phase times unknown. */
void kv_case_data_init(kv_case_data *d);
void kv_case_data_free(kv_case_data *d);

/* The checks every backend makes around a case's launches (the buffers differ: host or device
 * memory). Each tensor lies between two guard bands of KV_GUARD_BYTES bytes: an output's hold
 * KV_GUARD_BYTE, an input's KV_INPUT_GUARD_BYTE, all-ones bits, NaN in every float type, so a
 * kernel that reads an input past either end and lets the value reach an output (even times a
 * zero weight, as a masked tail can) makes that output NaN. kv_guard_finding describes the
 * first changed byte of tensor `tensor`'s bands (before: the band in front of it, after: the
 * one behind; `input`: an input's bands) in d->out_of_bounds. The checksums of the outputs
 * after the first launch, after every timed repetition (d->launch_sums) and after the
 * verification launch (outputs poisoned again: verification_sum) must agree:
 * kv_launch_finding describes a disagreement in d->nondeterministic (the first repetition
 * that differs and how many do, so a race that corrupts one launch in ten is seen). */
#define KV_GUARD_BYTES 4096
#define KV_GUARD_BYTE 0xa5
#define KV_INPUT_GUARD_BYTE 0xff
void kv_guard_finding(kv_case_data *d, const char *tensor, int input, const unsigned char *before,
                      const unsigned char *after);
void kv_launch_finding(kv_case_data *d, uint64_t verification_sum);
/* The checker's own checks, on the host, in every case. kv_input_finding: the inputs the
 * kernel read (in, on the host) hold the generator's bits on a sample (kv_generate_verify); the
 * first that does not is described in d->harness. kv_checksum_finding: the launch checksum
 * of the verification launch (numerics/checksum.h, over every output, output k with salt k;
 * at most two outputs: out and aux) equals the host's over the same outputs, d->out and
 * d->aux, summed on up to `threads` host threads; a disagreement is described in d->harness. */
void kv_input_finding(kv_case_data *d, const kv_case *c, const kv_run_settings *rs, const kv_tensors *t,
                      const void *const *in);
void kv_checksum_finding(kv_case_data *d, const kv_tensors *t, uint64_t verification_sum, int threads);
/* The launch checksum of bytes [0, n) of buf with its salt (numerics/checksum.h) on up to
 * `threads` host threads, each part at least part_bytes long: the same sum as one thread.
 * kv_checksum_finding sums outputs in parts of KV_CHECKSUM_PART_BYTES (smaller outputs on the
 * calling thread: a thread start costs more than their sum). */
#define KV_CHECKSUM_PART_BYTES ((size_t)1 << 20)
uint64_t kv_checksum_threaded(const void *buf, size_t n, unsigned salt, int threads, size_t part_bytes);

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

/* The rows of the cross-check of a case (kv_xcheck_row_count of them): evenly spaced, first
 * and last included, or the case's floor rows (kv_cost.floor_rows) when the budget leaves
 * two. Returns the count, *rows (ascending; the caller frees it) always set when the count
 * is not 0; 0 with *rows NULL on an allocation failure or an empty output. */
size_t kv_xcheck_rows(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, size_t **rows);

/* The name of this rank's node, for /ranks host: Slurm's node name (SLURMD_NODENAME, set in
 * every task of a job step) when present, else the host name; never empty. Slurm's name tells
 * apart nodes that share a host name (several slurmd on one machine) and is the name that
 * sinfo, scontrol and jobs/fleet.sh use. */
void kv_node_name(char *buf, size_t n);

#endif
