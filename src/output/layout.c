/* output_layout.c - lays out a kval HDF5 file (docs: LAYOUT in README). Phase 1, the
 * structure: one group per family with every per-cell dataset [rank, axes...] created with
 * its fill value (collective in the parallel flavour, so the fill is written in parallel).
 * Phase 2, the description, by rank 0 on a serial handle (the dimension-scale API and
 * variable-length strings are serial-only): root attributes, /ranks, family attributes, the
 * scale datasets and their attachment, and the skipped cells of every rank. */
#include "output/internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "output/row.h"

/* Per-cell datasets besides the X-macro fields: name, units, description. */
static const char *const status_doc = "case status (enum: not_run, pass, fail_tolerance, fail_nonfinite, skipped, error)";
static const char *const fingerprint_doc = "64-bit fingerprint of the output bits (0: not run)";
static const char *const checksum_doc = "XXH64 of the row's canonical bytes (status, fingerprint, message, float64 "
                                        "and int64 fields in result.h order, hist; little-endian); 0: no row";
static const char *const message_doc = "skip reason or error message";
static const char *const hist_doc = "count of elements per log10|out - ref| bin (lower edges in hist_bin)";
static const char *const fp_distinct_doc = "distinct fingerprints among ranks with the same device model (0: not compared)";
static const char *const fp_majority_doc = "majority fingerprint among ranks with the same device model (0: not compared)";
static const char *const fp_agrees_doc = "1 agrees with the majority of its device model, 0 disagrees, 2 not comparable";

kv_status kv_layout_structure(kv_output *o, hid_t file) {
  const double nan = NAN;
  const int64_t fill_int = KV_FILL_INT;
  const signed char fill_status = KV_NOT_RUN, fill_agrees = KV_FILL_AGREES;
  for (int f = 0; f < o->plan->n_fam; f++) {
    kv_out_family *of = &o->fam[f];
    int nd = of->n_dims;
    hsize_t hdims[KV_MAX_AXES + 2];
    memcpy(hdims, of->dims, sizeof hdims);
    hdims[nd] = KV_HIST_BINS;
    hid_t g = H5Gcreate2(file, of->fp->family->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (CHECK_H5(g)) return KV_ERR;
    hid_t ds[8 + KV_N_DOUBLES + KV_N_INTS]; /* 8: status ... fp_agrees below */
    int n = 0;
    kv_status st = KV_OK;
#define KV_MAKE(name, ft, rank, dims, mt, fill)                                                 \
  if (st == KV_OK) st = kv_h5_create_dataset(g, name, ft, rank, dims, mt, fill, &ds[n++]);
    KV_MAKE("status", o->t_status, nd, of->dims, o->t_status, &fill_status)
    KV_MAKE("fingerprint", H5T_STD_U64LE, nd, of->dims, H5T_NATIVE_UINT64, NULL)
    KV_MAKE("checksum", H5T_STD_U64LE, nd, of->dims, H5T_NATIVE_UINT64, NULL)
#define KV_X(name, member, unit, doc) KV_MAKE(#name, H5T_IEEE_F64LE, nd, of->dims, H5T_NATIVE_DOUBLE, &nan)
    KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) KV_MAKE(#name, H5T_STD_I64LE, nd, of->dims, H5T_NATIVE_INT64, &fill_int)
    KV_RESULT_INTS(KV_X)
#undef KV_X
    KV_MAKE("message", o->t_message, nd, of->dims, o->t_message, NULL)
    KV_MAKE("hist", H5T_STD_U64LE, nd + 1, hdims, H5T_NATIVE_UINT64, NULL)
    KV_MAKE("fp_distinct", H5T_STD_I32LE, nd - 1, of->dims + 1, H5T_NATIVE_INT32, NULL)
    KV_MAKE("fp_majority", H5T_STD_U64LE, nd - 1, of->dims + 1, H5T_NATIVE_UINT64, NULL)
    KV_MAKE("fp_agrees", H5T_STD_I8LE, nd, of->dims, H5T_NATIVE_INT8, &fill_agrees)
#undef KV_MAKE
    for (int i = 0; i < n; i++) kv_h5_close_id(&ds[i]);
    kv_h5_close_id(&g);
    if (st != KV_OK) return KV_ERR;
  }
  return KV_OK;
}

/* A small 1-D dataset holding `data` (n values of memory type mt), made a dimension scale
 * named `name` when scale is nonzero. Left open in *ds. */
static kv_status small_dataset(hid_t loc, const char *name, hid_t ft, hid_t mt, hsize_t n, const void *data,
                               int scale, hid_t *ds) {
  *ds = H5I_INVALID_HID;
  hid_t sp = H5Screate_simple(1, &n, NULL);
  if (CHECK_H5(sp)) return KV_ERR;
  *ds = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  kv_status st = CHECK_H5(*ds);
  if (st == KV_OK && n > 0) st = CHECK_H5(H5Dwrite(*ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
  if (st == KV_OK && scale) st = CHECK_H5(H5DSset_scale(*ds, name));
  kv_h5_close_id(&sp);
  if (st != KV_OK) kv_report(__FILE__, __LINE__, "HDF5", "cannot write dataset '%s'", name);
  return st;
}

/* The dimension scale `rank`: int32 0..nranks-1. */
static kv_status rank_scale(kv_output *o, hid_t loc, hid_t *ds) {
  int32_t *r = KV_MALLOC(sizeof *r * (size_t)o->nranks);
  if (!r) return KV_ERR;
  for (int i = 0; i < o->nranks; i++) r[i] = i;
  kv_status st = small_dataset(loc, "rank", H5T_STD_I32LE, H5T_NATIVE_INT32, (hsize_t)o->nranks, r, 1, ds);
  free(r);
  return st;
}

void kv_layout_run_settings(const kv_run_settings *rs, char *buf, size_t n) {
  int used = snprintf(buf, n,
                      "warmup=%d min_reps=%d max_reps=%d rse_target=%.17g time_cap=%.17g l2_flush=%d "
                      "cpu_ref_budget=%.17g sample_rows=%d watchdog=%.17g bias_limit=%.17g",
                      rs->warmup, rs->min_reps, rs->max_reps, rs->rse_target, rs->time_cap, rs->l2_flush,
                      rs->cpu_ref_budget, rs->sample_rows, rs->watchdog, rs->bias_limit);
  if (rs->has_tol_override && used >= 0 && (size_t)used < n)
    snprintf(buf + used, n - (size_t)used, " tol_c1=%.17g tol_c2=%.17g tol_abs_floor=%.17g tol_rel_floor=%.17g",
             rs->tol_override.c1, rs->tol_override.c2, rs->tol_override.abs_floor, rs->tol_override.rel_floor);
}

static kv_status root_attributes(kv_output *o, hid_t file, const kv_deck *d, const kv_run_meta *m) {
  unsigned maj = 0, min = 0, rel = 0;
  if (CHECK_H5(H5get_libversion(&maj, &min, &rel))) return KV_ERR;
  char h5ver[64], names[256] = "", settings[1024];
  kv_layout_run_settings(&o->plan->run, settings, sizeof settings);
  snprintf(h5ver, sizeof h5ver, "%u.%u.%u", maj, min, rel);
  for (int s = 0; s < KV_NSTATUS; s++) {
    size_t len = strlen(names);
    snprintf(names + len, sizeof names - len, "%s%d=%s", s ? "," : "", s, kv_status_name((kv_case_status)s));
  }
  const struct {
    const char *name, *value;
  } strs[] = {
      {"kval_version", m->version},       {"git_commit", m->git_commit},
      {"command_line", m->command_line},  {"deck_text", d->text},
      {"deck_path", d->path},             {"creation_time", m->creation_time},
      {"mpi_version", m->mpi_version},    {"hdf5_version", h5ver},
      {"cuda_runtime", m->cuda_runtime},  {"cuda_driver", m->cuda_driver},
      {"slurm_job_id", m->slurm_job_id},  {"slurm_nodes", m->slurm_nodes},
      {"backend", m->backend},            {"mode", kv_output_mode_name(o->plan->mode)},
      {"hdf5_flavour", kv_output_flavour()}, {"status_names", names},
      {"run_settings", settings},
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    KV_TRY(kv_h5_attr_str(file, o->t_vstr, strs[i].name, strs[i].value));
  KV_TRY(kv_h5_attr_u64(file, "seed", o->plan->run.seed));
  KV_TRY(kv_h5_attr_u64(file, "file_id", o->file_id));
  KV_TRY(kv_h5_attr_i64(file, "nranks", o->nranks));
  KV_TRY(kv_h5_attr_i64(file, "layout_version", KV_LAYOUT_VERSION));
  return kv_h5_attr_i64(file, "complete", 0);
}

/* /ranks: one 1-D dataset over `rank` per kv_rank_info field. */
typedef enum { RF_STR, RF_INT, RF_DBL } rank_field_kind;
static const struct {
  const char *name;
  rank_field_kind kind;
  size_t off;
} rank_fields[] = {
#define KV_RF(field, kind) {#field, kind, offsetof(kv_rank_info, field)}
    KV_RF(host, RF_STR),         KV_RF(local_rank, RF_INT),     KV_RF(local_size, RF_INT),
    KV_RF(device_index, RF_INT), KV_RF(device_name, RF_STR),    KV_RF(uuid, RF_STR),
    KV_RF(serial, RF_STR),       KV_RF(pci_bus_id, RF_STR),     KV_RF(sm_count, RF_INT),
    KV_RF(cc_major, RF_INT),     KV_RF(cc_minor, RF_INT),       KV_RF(memory_bytes, RF_DBL),
    KV_RF(driver_version, RF_INT), KV_RF(runtime_version, RF_INT), KV_RF(copy_gbps, RF_DBL),
    KV_RF(matrix_tflops, RF_DBL), KV_RF(fp64_tflops, RF_DBL),   KV_RF(nvml, RF_STR),
#undef KV_RF
};

static kv_status ranks_group(kv_output *o, hid_t file, const kv_rank_info *infos) {
  size_t n = (size_t)o->nranks;
  hid_t g = H5Gcreate2(file, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), scale = H5I_INVALID_HID;
  if (CHECK_H5(g)) return KV_ERR;
  void *buf = KV_MALLOC(n * (sizeof(double) > sizeof(char *) ? sizeof(double) : sizeof(char *)));
  kv_status st = buf ? rank_scale(o, g, &scale) : KV_ERR;
  for (size_t k = 0; st == KV_OK && k < sizeof rank_fields / sizeof rank_fields[0]; k++) {
    hid_t ft, mt;
    for (size_t i = 0; i < n; i++) {
      const char *field = (const char *)&infos[i] + rank_fields[k].off;
      if (rank_fields[k].kind == RF_STR) ((const char **)buf)[i] = field;
      else if (rank_fields[k].kind == RF_INT) ((int32_t *)buf)[i] = *(const int *)field;
      else ((double *)buf)[i] = *(const double *)field;
    }
    if (rank_fields[k].kind == RF_STR) ft = mt = o->t_vstr;
    else if (rank_fields[k].kind == RF_INT) ft = H5T_STD_I32LE, mt = H5T_NATIVE_INT32;
    else ft = H5T_IEEE_F64LE, mt = H5T_NATIVE_DOUBLE;
    hid_t ds;
    st = small_dataset(g, rank_fields[k].name, ft, mt, n, buf, 0, &ds);
    if (st == KV_OK) st = CHECK_H5(H5DSattach_scale(ds, scale, 0));
    kv_h5_close_id(&ds);
  }
  free(buf);
  kv_h5_close_id(&scale);
  kv_h5_close_id(&g);
  return st;
}

/* Family attributes: axes, cell counts, parameters, n_results (0 until close). */
static kv_status family_attributes(kv_output *o, const kv_family_plan *fp, hid_t g) {
  char axes[KV_MAX_AXES * 64] = "";
  for (int a = 0; a < fp->n_axes; a++) {
    size_t len = strlen(axes);
    snprintf(axes + len, sizeof axes - len, "%s%s", a ? "," : "", fp->family->axes[a].name);
  }
  KV_TRY(kv_h5_attr_str(g, o->t_vstr, "axes", axes));
  KV_TRY(kv_h5_attr_i64(g, "n_cells", (long long)fp->n_cells));
  KV_TRY(kv_h5_attr_i64(g, "n_valid", (long long)fp->n_valid));
  KV_TRY(kv_h5_attr_i64(g, "n_skipped", (long long)fp->n_skipped));
  KV_TRY(kv_h5_attr_i64(g, "n_results", 0));
  for (int k = 0; fp->family->params && fp->family->params[k].name; k++)
    KV_TRY(kv_h5_attr_f64(g, fp->family->params[k].name, fp->param[k]));
  return KV_OK;
}

/* Scales of a family: [0] rank, [1..n_axes] the axes, [n_axes + 1] hist_bin. */
static kv_status family_scales(kv_output *o, const kv_family_plan *fp, hid_t g, hid_t *sc) {
  KV_TRY(rank_scale(o, g, &sc[0]));
  for (int a = 0; a < fp->n_axes; a++) {
    const kv_axis_values *v = &fp->axis[a];
    if (fp->family->axes[a].type == KV_AXIS_STR)
      KV_TRY(small_dataset(g, fp->family->axes[a].name, o->t_vstr, o->t_vstr, (hsize_t)v->n, v->strs, 1, &sc[1 + a]));
    else if (fp->family->axes[a].type == KV_AXIS_REAL)
      KV_TRY(small_dataset(g, fp->family->axes[a].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (hsize_t)v->n, v->reals, 1,
                           &sc[1 + a]));
    else
      KV_TRY(small_dataset(g, fp->family->axes[a].name, H5T_STD_I64LE, H5T_NATIVE_LLONG, (hsize_t)v->n, v->ints, 1,
                           &sc[1 + a]));
  }
  double edges[KV_HIST_BINS];
  edges[0] = -INFINITY;
  edges[1] = KV_HIST_LOG10_MIN - 1;
  for (int b = 2; b < KV_HIST_BINS - 1; b++) edges[b] = KV_HIST_LOG10_MIN + (b - 2);
  edges[KV_HIST_BINS - 1] = NAN;
  KV_TRY(small_dataset(g, "hist_bin", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, KV_HIST_BINS, edges, 1, &sc[1 + fp->n_axes]));
  return CHECK_H5(H5DSset_label(sc[1 + fp->n_axes], 0, "log10 |out - ref|, lower bin edge"));
}

/* Open dataset `name`, give it units/description, attach scales sc[first..first+n). */
static kv_status describe_dataset(kv_output *o, hid_t g, const char *name, const char *units, const char *doc,
                                  const hid_t *sc, int first, int n) {
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
  if (CHECK_H5(ds)) return KV_ERR;
  kv_status st = KV_OK;
  if (units) st = kv_h5_attr_str(ds, o->t_vstr, "units", units);
  if (st == KV_OK) st = kv_h5_attr_str(ds, o->t_vstr, "description", doc);
  for (int i = 0; st == KV_OK && i < n; i++) st = CHECK_H5(H5DSattach_scale(ds, sc[first + i], (unsigned)i));
  kv_h5_close_id(&ds);
  return st;
}

/* CF attributes of the status enum (flag_values, flag_meanings), so tools that do not map
 * HDF5 enums (xarray) still see the names. */
static kv_status status_flags(kv_output *o, hid_t g) {
  signed char values[KV_NSTATUS];
  char meanings[256] = "";
  for (int s = 0; s < KV_NSTATUS; s++) {
    values[s] = (signed char)s;
    size_t len = strlen(meanings);
    snprintf(meanings + len, sizeof meanings - len, "%s%s", s ? " " : "", kv_status_name((kv_case_status)s));
  }
  hsize_t n = KV_NSTATUS;
  hid_t ds = H5Dopen2(g, "status", H5P_DEFAULT), sp = H5I_INVALID_HID, a = H5I_INVALID_HID;
  kv_status st = CHECK_H5(ds);
  if (st == KV_OK) st = CHECK_H5(sp = H5Screate_simple(1, &n, NULL));
  if (st == KV_OK) st = CHECK_H5(a = H5Acreate2(ds, "flag_values", H5T_STD_I8LE, sp, H5P_DEFAULT, H5P_DEFAULT));
  if (st == KV_OK) st = CHECK_H5(H5Awrite(a, H5T_NATIVE_SCHAR, values));
  if (st == KV_OK) st = kv_h5_attr_str(ds, o->t_vstr, "flag_meanings", meanings);
  kv_h5_close_id(&a);
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  return st;
}

/* Checksum of a skipped row: the reason, every other field its fill value. */
static uint64_t skipped_checksum(const char *message) {
  double dbl[KV_N_DOUBLES + 1];
  int64_t ints[KV_N_INTS + 1];
  uint64_t hist[KV_HIST_BINS] = {0};
  for (int i = 0; i < KV_N_DOUBLES; i++) dbl[i] = NAN;
  for (int i = 0; i < KV_N_INTS; i++) ints[i] = KV_FILL_INT;
  unsigned char row[KV_ROW_BYTES];
  kv_row_pack(row, KV_SKIPPED, 0, message, dbl, ints, hist);
  return kv_row_checksum(row);
}

/* Status skipped, the reason in message and the row's checksum, on every rank's row. */
static kv_status mark_skipped(kv_output *o, const kv_out_family *of, hid_t g) {
  size_t n = of->fp->n_cells;
  signed char *status = KV_MALLOC(n);
  char *msg = KV_CALLOC(n, KV_MESSAGE_LEN);
  uint64_t *sum = KV_CALLOC(n, sizeof *sum);
  hid_t ds_status = H5Dopen2(g, "status", H5P_DEFAULT), ds_msg = H5Dopen2(g, "message", H5P_DEFAULT);
  hid_t ds_sum = H5Dopen2(g, "checksum", H5P_DEFAULT);
  kv_status st = !status || !msg || !sum || CHECK_H5(ds_status) || CHECK_H5(ds_msg) || CHECK_H5(ds_sum) ? KV_ERR : KV_OK;
  for (size_t c = 0; st == KV_OK && c < n; c++) {
    const char *why = of->fp->skip_reason ? of->fp->skip_reason[c] : NULL;
    status[c] = why ? KV_SKIPPED : KV_NOT_RUN;
    if (!why) continue;
    strncpy(msg + c * KV_MESSAGE_LEN, why, KV_MESSAGE_LEN);
    sum[c] = skipped_checksum(msg + c * KV_MESSAGE_LEN);
  }
  hsize_t start[KV_MAX_AXES + 1] = {0}, count[KV_MAX_AXES + 1];
  memcpy(count, of->dims, sizeof count);
  count[0] = 1;
  for (int r = 0; st == KV_OK && r < o->nranks; r++) {
    hid_t fs, ms;
    start[0] = (hsize_t)r;
    st = kv_h5_select(of->n_dims, of->dims, start, count, n, &fs, &ms);
    if (st != KV_OK) break;
    if (CHECK_H5(H5Dwrite(ds_msg, o->t_message, ms, fs, H5P_DEFAULT, msg)) ||
        CHECK_H5(H5Dwrite(ds_sum, H5T_NATIVE_UINT64, ms, fs, H5P_DEFAULT, sum)) ||
        CHECK_H5(H5Dwrite(ds_status, o->t_status, ms, fs, H5P_DEFAULT, status)))
      st = KV_ERR;
    kv_h5_close_id(&fs);
    kv_h5_close_id(&ms);
  }
  kv_h5_close_id(&ds_status);
  kv_h5_close_id(&ds_msg);
  kv_h5_close_id(&ds_sum);
  free(status);
  free(msg);
  free(sum);
  return st;
}

static kv_status describe_family(kv_output *o, const kv_out_family *of, hid_t file) {
  const kv_family_plan *fp = of->fp;
  int na = fp->n_axes;
  hid_t sc[KV_MAX_AXES + 2];
  for (int i = 0; i < na + 2; i++) sc[i] = H5I_INVALID_HID;
  hid_t g = H5Gopen2(file, fp->family->name, H5P_DEFAULT);
  if (CHECK_H5(g)) return KV_ERR;
  kv_status st = family_attributes(o, fp, g);
  if (st == KV_OK) st = family_scales(o, fp, g, sc);
#define KV_DESC(name, units, doc, first, n) \
  if (st == KV_OK) st = describe_dataset(o, g, name, units, doc, sc, first, n);
  KV_DESC("status", NULL, status_doc, 0, na + 1)
  KV_DESC("fingerprint", NULL, fingerprint_doc, 0, na + 1)
  KV_DESC("checksum", NULL, checksum_doc, 0, na + 1)
#define KV_X(name, member, unit, doc) KV_DESC(#name, unit, doc, 0, na + 1)
  KV_RESULT_DOUBLES(KV_X)
  KV_RESULT_INTS(KV_X)
#undef KV_X
  KV_DESC("message", NULL, message_doc, 0, na + 1)
  KV_DESC("hist", "1", hist_doc, 0, na + 2)
  KV_DESC("fp_distinct", "1", fp_distinct_doc, 1, na)
  KV_DESC("fp_majority", NULL, fp_majority_doc, 1, na)
  KV_DESC("fp_agrees", NULL, fp_agrees_doc, 0, na + 1)
#undef KV_DESC
  if (st == KV_OK) st = status_flags(o, g);
  if (st == KV_OK && fp->n_skipped > 0) st = mark_skipped(o, of, g);
  for (int i = 0; i < na + 2; i++) kv_h5_close_id(&sc[i]);
  kv_h5_close_id(&g);
  return st;
}

kv_status kv_layout_describe(kv_output *o, hid_t file, const kv_deck *d, const kv_run_meta *m,
                             const kv_rank_info *infos) {
  KV_TRY(root_attributes(o, file, d, m));
  KV_TRY(ranks_group(o, file, infos));
  for (int f = 0; f < o->plan->n_fam; f++) KV_TRY(describe_family(o, &o->fam[f], file));
  return KV_OK;
}

double kv_layout_bytes(const kv_output *o, const kv_deck *d) {
  const double per_row = 1 + 8 + 8 + KV_MESSAGE_LEN + 8.0 * (KV_N_DOUBLES + KV_N_INTS + KV_HIST_BINS) + 1;
  const double datasets = 9 + KV_N_DOUBLES + KV_N_INTS;
  double bytes = 1048576.0 + 4.0 * (double)strlen(d->text) + 4096.0 * o->nranks;
  for (int f = 0; f < o->plan->n_fam; f++) {
    const kv_family_plan *fp = o->fam[f].fp;
    double cells = (double)fp->n_cells, scale_refs = 0;
    for (int a = 0; a < fp->n_axes; a++) scale_refs += 64.0 * fp->axis[a].n;
    bytes += cells * (o->nranks * per_row + 12) + datasets * (16384 + 64.0 * (fp->n_axes + 2)) + scale_refs + 65536;
  }
  return bytes;
}
