/* family.h - the kernel-family descriptor and its registry. A family (fa2, gemm, layernorm,
 * rmsnorm) declares its sweep axes and scalar parameters (its deck section), prunes invalid
 * cases, counts FLOPs and bytes, describes its input and output tensors, and brings its CPU
 * emulation (the cpu backend's kernel), its fp64 CPU reference and that reference's
 * double-double twin. Its CUDA side is reached through `cuda` (family_cuda.h). A family is one
 * folder families/<f>/ plus one line in families/families.def and one include line in
 * Makefile.am (see families/README.md). */
#ifndef KVAL_FAMILY_H
#define KVAL_FAMILY_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "core/dtype.h"
#include "numerics/rng.h"

#define KV_MAX_AXES 12
#define KV_MAX_PARAMS 8
#define KV_MAX_TENSORS 4
#define KV_MAX_PARTS 4 /* parts of the checked output a family may name (kv_family.out_parts) */

typedef enum { KV_AXIS_INT, KV_AXIS_STR, KV_AXIS_REAL } kv_axis_type;

typedef struct {
  const char *name;           /* deck key and HDF5 dimension name */
  kv_axis_type type;
  const char *defaults;       /* deck text used when the key is absent; NULL: the key is required */
  const char *const *choices; /* STR axes: allowed values, NULL-terminated; NULL: any token */
  double min, max;            /* INT and REAL axes: inclusive range of allowed values */
  const char *help;
} kv_axis_desc;

typedef struct {
  const char *name; /* deck key of a scalar parameter of the section */
  double defaults;
  double min, max; /* inclusive range */
  const char *help;
} kv_param_desc;

struct kv_family;
struct kv_family_plan;

/* One case: a cell of a family's dense sweep grid. */
typedef struct kv_case {
  const struct kv_family_plan *fp; /* family, axis values and parameters */
  size_t cell;                     /* row-major flat index into the family's grid */
  int idx[KV_MAX_AXES];            /* position along each axis */
  long long ival[KV_MAX_AXES];     /* INT axis values (0 for other axes) */
  double rval[KV_MAX_AXES];        /* REAL axis values (0 for other axes) */
  const char *sval[KV_MAX_AXES];   /* STR axis values (NULL for other axes) */
  kv_precision prec;               /* decoded from the family's "precision" axis */
  uint64_t key;                    /* case key for the input generator (family and cell) */
  double est_seconds;              /* cost-model estimate used by split balancing and ETA */
} kv_case;

#define KV_XCHECK_ROWS 16    /* rows of a cross-check whose CPU reference fits the budget */
#define KV_FLOOR_ROWS_MAX 8  /* floor rows a family may name (kv_cost) */

/* FLOP and byte counts of one case (roofline, balancing, sampling, memory check). */
typedef struct {
  double flops;        /* useful floating-point operations of the kernel */
  double bytes;        /* minimal device-memory traffic: inputs read once, outputs written once */
  double red_len;      /* reduction length K of the tolerance's sqrt(K) term */
  double ref_flops;    /* fp64 reference operations for the whole output */
  double ref_row_flops; /* fp64 CPU reference operations of the costliest row asked for alone (a
                           sampled row that needs statistics shared by many rows: fa2bwd's key
                           rows); 0: ref_flops / rows (kv_cost_row_flops) */
  double device_bytes; /* device memory the case needs (inputs, outputs, reference buffers) */
  size_t rows;         /* output 0 seen as rows x row_len, the unit of reference sampling */
  size_t row_len;
  /* The rows the smallest cross-check sample takes (ascending, distinct, < rows): for an output
   * of several stacked parts the set that reaches every part for the cost of about two rows
   * (fa2bwd: dQ, dK and dV of one head's first and last token); n_floor_rows 0: the first and
   * the last row. */
  size_t floor_rows[KV_FLOOR_ROWS_MAX];
  int n_floor_rows;
} kv_cost;

/* The CPU reference's operations for one sampled row: ref_row_flops, or the average row. */
static inline double kv_cost_row_flops(const kv_cost *c) {
  return c->ref_row_flops > 0 ? c->ref_row_flops : c->rows ? c->ref_flops / (double)c->rows : 0.0;
}

/* Rows of the cross-check of the GPU reference against the CPU one (backends/cuda/xcheck.c)
 * and of its time estimate (input/estimate.c): KV_XCHECK_ROWS, halved while their CPU
 * reference would exceed cpu_ref_budget, down to 2 - the floor, where the rows taken are
 * the case's floor rows (kv_cost.floor_rows). At most the output's rows. */
static inline size_t kv_xcheck_row_count(const kv_cost *c, double cpu_ref_budget) {
  const double per_row = kv_cost_row_flops(c);
  size_t n = KV_XCHECK_ROWS;
  while (n > 2 && per_row * (double)n > cpu_ref_budget) n /= 2;
  return n < c->rows ? n : c->rows;
}

/* An input or output tensor. Inputs are generated as round(offset + scale * base). */
typedef struct {
  const char *name;
  kv_dtype dtype;
  size_t count;
  int dist; /* kv_base_dist */
  double scale, offset;
} kv_tensor_spec;

typedef struct {
  int n_in, n_out; /* out[0] is the checked output; out[1], if any, the auxiliary output (fa2 LSE, fp32) */
  kv_tensor_spec in[KV_MAX_TENSORS], out[KV_MAX_TENSORS];
} kv_tensors;

/* Resource usage of the kernel variant a case launches (-1 where unknown: the cpu backend,
 * library kernels). */
typedef struct {
  int registers;   /* per thread */
  int smem_bytes;  /* static + dynamic shared memory per block */
  int local_bytes; /* local memory per thread (spills) */
  int occupancy;   /* resident blocks per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor) */
} kv_kernel_resources;

typedef kv_status (*kv_reference_fn)(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                     double *ref, double *mag, double *aux_ref, double *aux_mag);

struct kv_cuda_family; /* family_cuda.h */

/* A numeric coordinate that a family derives from one of its string axes (gemm: M, N and K
 * from the shape "MxNxK"). The file holds it as a 1-D int64 dataset along that axis, named by
 * the CF `coordinates` attribute of every per-cell dataset, so netCDF clients see numbers. */
typedef struct {
  const char *name;      /* dataset name, e.g. "K" */
  const char *axis;      /* the string axis it is derived from, e.g. "shape" */
  const char *long_name; /* CF long_name */
  long long (*value)(const char *axis_value); /* -1 where the axis value has no such number */
} kv_coord_desc;

typedef struct kv_family {
  const char *name;    /* deck section, HDF5 group */
  const char *summary; /* one line for --list */
  const kv_axis_desc *axes; /* terminated by an entry with name NULL; must include "precision" */
  const kv_param_desc *params; /* terminated by name NULL; may be NULL */

  /* NULL when the case is valid on this backend, else a static reason it is skipped. */
  const char *(*invalid)(const kv_case *c, const char *backend);
  void (*cost)(const kv_case *c, kv_cost *out);
  void (*tensors)(const kv_case *c, kv_tensors *t);

  /* The cpu backend's kernel: the same algorithm and precision model as the GPU kernel. */
  kv_status (*emulate)(const kv_case *c, void *const *in, void *const *out);
  /* 1 when the GPU kernel of the case must reproduce the emulation bit for bit (the precision
   * model is exact there, e.g. CUDA-core reductions in a 16-bit accumulator); NULL: never. */
  int (*emulation_exact)(const kv_case *c);
  /* 1 when the case's output must be free of rounding bias: rounded to nearest from an
   * accumulation whose own error has no systematic sign (e.g. fp32 accumulation of sums of
   * mixed signs, where the tensor cores' truncation averages out); the rounding-bias verdict
   * judges it. NULL: never (a reduced accumulator, or same-sign sums whose truncation bias is
   * part of the precision model). */
  int (*unbiased)(const kv_case *c);
  /* The names of the equal, contiguous parts of output 0 whose error statistics are recorded
   * apart (fa2bwd: dq, dk, dv, each a third of the rows), NULL-terminated, at most
   * KV_MAX_PARTS; NULL: one output, no parts. Each part's statistics are the file's
   * part_stats and a failure's message names the part; the verdicts stay the whole output's
   * (src/run/parts.c, docs/NUMERICS.md section 3). */
  const char *const *out_parts;

  /* fp64 reference on the rounded inputs, for the listed output rows (rows of kv_cost):
   * ref and mag hold n_rows * row_len values, aux_ref and aux_mag (may be NULL) the auxiliary
   * output of those rows and the magnitude term of its bound (one value per row for fa2's LSE;
   * the auxiliary output passes within c2 * aux_mag of aux_ref). */
  kv_reference_fn reference;
  /* The same reference with double-double accumulation: the tests judge the fp64 one with it
   * on ill-conditioned inputs. */
  kv_reference_fn reference_dd;
  /* 1 when the reference splits its own work over the host threads kv_ref_part_threads()
   * gives it better than by rows (gemm: by output columns, each converted chunk of B shared by
   * all rows): kv_reference_threaded then calls it once with every thread. */
  int ref_splits_within;

  const struct kv_cuda_family *cuda; /* NULL when built without CUDA */

  const kv_coord_desc *coords; /* numeric coordinates derived from axes, terminated by name NULL; may be NULL */

  /* The kernel path of the case on the GPU as space-separated tags "VARIANT:WHAT": the
   * instantiation the dispatcher launches and the branches it takes (tails, grids, load and
   * store paths, alpha/beta, the input distribution), from the same rules the dispatcher
   * calls (the family's limits header). May be NULL. */
  void (*path)(const kv_case *c, char *buf, size_t n);
  /* Tag i (0, 1, ...) of every tag the dispatcher can take, in buf; 0 past the last. */
  int (*path_tag)(int i, char *buf, size_t n);

  /* A probe family's measurement (tcprobe): the outcome code decoded from output 0 as the
   * kernel wrote it (host copy, out[0] of kv_tensors), recorded per rank as the `outcome`
   * dataset, and the outcome in words into words (n bytes; the case's message). *contradicts
   * is set to 1 when the outcome contradicts the precision model (the case fails; words then
   * say what the model needs), else 0. NULL: the family measures no outcome. */
  long long (*outcome)(const kv_case *c, const void *out, int *contradicts, char *words, size_t n);
} kv_family;

/* The registry, NULL-terminated. */
extern const kv_family *const kv_families[];
const kv_family *kv_family_find(const char *name, int *index);
int kv_family_count(void);
/* The number of parts of the family's output 0 (kv_family.out_parts); 0 when it has none. */
int kv_family_parts(const kv_family *f);
/* The rows of part p of n_parts: [p * rows / n_parts, (p + 1) * rows / n_parts); the output's
 * rows must be a multiple of n_parts (the judge says so as a harness error otherwise). */
static inline size_t kv_part_first_row(size_t rows, int n_parts, int p) { return rows / (size_t)n_parts * (size_t)p; }

/* Axis lookups by name for families and tools; -1 when absent. */
int kv_family_axis_index(const kv_family *f, const char *axis);
int kv_family_n_axes(const kv_family *f);
int kv_family_n_params(const kv_family *f);
/* Value of a scalar parameter of the case's section (deck value or default). */
double kv_case_param(const kv_case *c, const char *name);
/* Value of an INT / STR axis of the case by name (aborts through KV_FATAL on a wrong name:
 * that is a programming error). */
long long kv_case_int(const kv_case *c, const char *axis);
double kv_case_real(const kv_case *c, const char *axis);
const char *kv_case_str(const kv_case *c, const char *axis);
/* "family[cell N] axis=value ..." for messages. */
void kv_case_describe(const kv_case *c, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
