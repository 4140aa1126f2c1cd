/* output_layout.c - lays out a kval HDF5 file (docs: LAYOUT in README). Phase 1, the
 * structure: the named status enum type and one group per family with every per-cell dataset
 * [rank, axes...] created with its fill value (collective in the parallel flavour, so the
 * fill is written in parallel). Phase 2, the description, by rank 0 on a serial handle (the
 * dimension-scale API and variable-length strings are serial-only): root attributes, /ranks,
 * family attributes, the scale datasets and their attachment, the numeric coordinates a
 * family derives from its axes, and the skipped cells of every rank. The description follows
 * the CF conventions (Conventions, long_name, UDUNITS units, _FillValue, flag_values), so
 * netCDF clients (ncdump, netCDF4-python, xarray) read the file as well as h5py does. */
#include "output/internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "output/row.h"

/* Per-cell datasets besides the X-macro fields: name, units, description. */
static const char *const status_doc = "case status (enum: names and values in the file attribute status_names)";
static const char *const fingerprint_doc = "64-bit fingerprint of the output bits (0: not run)";
static const char *const checksum_doc = "XXH64 of the row's canonical bytes (status, fingerprint, message, float64 "
                                        "and int64 fields in result.h order, hist; little-endian); 0: no row";
static const char *const message_doc = "skip reason or error message";
static const char *const hist_doc = "count of elements per log10|out - ref| bin (lower edges in hist_bin)";
static const char *const fp_distinct_doc = "distinct fingerprints among ranks with the same device model (0: not compared)";
static const char *const fp_majority_doc = "majority fingerprint among ranks with the same device model (0: not compared)";
static const char *const fp_agrees_doc = "1 agrees with the majority of its device model, 0 disagrees, 2 not comparable";
static const char *const hist_bin_doc = "log10 |out - ref|, lower bin edge";
static const char *const part_stats_doc = "error statistics of each part of the checked output (names in part, "
                                          "statistics in part_stat)";
static const char *const part_doc = "part of the checked output (the family's out_parts: equal, contiguous rows)";
static const char *const part_stat_doc = "error statistic of a part (the whole output's dataset of the same name)";

/* The status enum as a named (committed) datatype of the root group: netCDF-C reads an enum
 * variable only through a named type, and (in netCDF-C 4.9) only when it has read that type
 * before the variable; objects are visited in name order, and "case_status" < "status". */
#define KV_STATUS_TYPE_NAME "case_status"

kv_status kv_layout_structure(kv_output *o, hid_t file) {
  const double nan = NAN;
  const int64_t fill_int = KV_FILL_INT;
  const signed char fill_status = KV_NOT_RUN, fill_agrees = KV_FILL_AGREES;
  hid_t t_case = H5Tcopy(o->t_status);
  if (CHECK_H5(t_case)) return KV_ERR;
  if (CHECK_H5(H5Tcommit2(file, KV_STATUS_TYPE_NAME, t_case, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))) {
    kv_h5_close_id(&t_case);
    return KV_ERR;
  }
  for (int f = 0; f < o->plan->n_fam; f++) {
    kv_out_family *of = &o->fam[f];
    int nd = of->n_dims;
    hsize_t hdims[KV_MAX_AXES + 2], pdims[KV_MAX_AXES + 3];
    memcpy(hdims, of->dims, sizeof hdims);
    hdims[nd] = KV_HIST_BINS;
    memcpy(pdims, of->dims, sizeof of->dims);
    const int n_parts = kv_family_parts(of->fp->family);
    pdims[nd] = (hsize_t)n_parts;
    pdims[nd + 1] = KV_N_PART_STATS;
    hid_t g = H5Gcreate2(file, of->fp->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (CHECK_H5(g)) {
      kv_h5_close_id(&t_case);
      return KV_ERR;
    }
    hid_t ds[9 + KV_N_DOUBLES + KV_N_INTS]; /* 9: status ... part_stats below */
    int n = 0;
    kv_status st = KV_OK;
#define KV_MAKE(name, ft, rank, dims, mt, fill)                                                 \
  if (st == KV_OK) st = kv_h5_create_dataset(g, name, ft, rank, dims, mt, fill, &ds[n++]);
    KV_MAKE("status", t_case, nd, of->dims, o->t_status, &fill_status)
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
    if (n_parts > 0) KV_MAKE("part_stats", H5T_IEEE_F64LE, nd + 2, pdims, H5T_NATIVE_DOUBLE, &nan)
#undef KV_MAKE
    for (int i = 0; i < n; i++) kv_h5_close_id(&ds[i]);
    kv_h5_close_id(&g);
    if (st != KV_OK) {
      kv_h5_close_id(&t_case);
      return KV_ERR;
    }
  }
  kv_h5_close_id(&t_case);
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
  char h5ver[64], names[256] = "", settings[1024], source[256], history[4200];
  kv_layout_run_settings(&o->plan->run, settings, sizeof settings);
  snprintf(h5ver, sizeof h5ver, "%u.%u.%u", maj, min, rel);
  snprintf(source, sizeof source, "kval %s (git %s), %s backend", m->version, m->git_commit, m->backend);
  snprintf(history, sizeof history, "%s: %s", m->creation_time, m->command_line);
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
      {"run_settings", settings},         {"Conventions", "CF-1.10"},
      {"title", "kval GPU kernel validation: error and timing statistics per rank and case"},
      {"source", source},                 {"history", history},
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    KV_TRY(kv_h5_attr_str(file, o->t_vstr, strs[i].name, strs[i].value));
  KV_TRY(kv_h5_attr_u64(file, "seed", o->plan->run.seed));
  KV_TRY(kv_h5_attr_u64(file, "file_id", o->file_id));
  KV_TRY(kv_h5_attr_i64(file, "nranks", o->nranks));
  KV_TRY(kv_h5_attr_i64(file, "layout_version", KV_LAYOUT_VERSION));
  return kv_h5_attr_i64(file, "complete", 0);
}

/* /ranks: one 1-D dataset over `rank` per kv_rank_info field, with its UDUNITS units
 * (numbers only) and CF long_name. */
typedef enum { RF_STR, RF_INT, RF_DBL } rank_field_kind;
static const struct {
  const char *name;
  rank_field_kind kind;
  size_t off;
  const char *units, *long_name;
} rank_fields[] = {
#define KV_RF(field, kind, units, doc) {#field, kind, offsetof(kv_rank_info, field), units, doc}
    KV_RF(host, RF_STR, NULL, "host name of the rank's node"),
    KV_RF(local_rank, RF_INT, "1", "rank within its node"),
    KV_RF(local_size, RF_INT, "1", "ranks on its node"),
    KV_RF(device_index, RF_INT, "1", "CUDA device index of the rank's GPU (-1: cpu backend)"),
    KV_RF(device_name, RF_STR, NULL, "device model"),
    KV_RF(uuid, RF_STR, NULL, "GPU UUID"),
    KV_RF(serial, RF_STR, NULL, "board serial number"),
    KV_RF(pci_bus_id, RF_STR, NULL, "PCI bus id"),
    KV_RF(sm_count, RF_INT, "1", "streaming multiprocessors"),
    KV_RF(cc_major, RF_INT, "1", "compute capability, major"),
    KV_RF(cc_minor, RF_INT, "1", "compute capability, minor"),
    KV_RF(memory_bytes, RF_DBL, "byte", "device memory"),
    KV_RF(driver_version, RF_INT, "1", "CUDA driver version (1000 * major + 10 * minor)"),
    KV_RF(runtime_version, RF_INT, "1", "CUDA runtime version (1000 * major + 10 * minor)"),
    KV_RF(copy_gbps, RF_DBL, "1e9 byte s-1", "measured device-to-device copy bandwidth, in GB/s"),
    KV_RF(matrix_tflops, RF_DBL, "1e12 s-1", "measured cuBLAS bf16 matrix rate, in TFLOP/s"),
    KV_RF(fp64_tflops, RF_DBL, "1e12 s-1", "measured DGEMM rate, in TFLOP/s"),
    KV_RF(nvml, RF_STR, NULL, "NVML state (ok, or why telemetry is missing)"),
#undef KV_RF
};

/* CF long_name and, unless NULL, units of the open dataset ds. */
static kv_status cf_names(kv_output *o, hid_t ds, const char *units, const char *long_name) {
  if (units) KV_TRY(kv_h5_attr_str(ds, o->t_vstr, "units", units));
  return kv_h5_attr_str(ds, o->t_vstr, "long_name", long_name);
}

/* The CF _FillValue attribute of ds: `value` (of memory type mt) stored in the dataset's own type. */
static kv_status fill_attribute(hid_t ds, hid_t mt, const void *value) {
  hid_t ft = H5Dget_type(ds), sp = H5Screate(H5S_SCALAR), a = H5I_INVALID_HID;
  kv_status st = CHECK_H5(ft) || CHECK_H5(sp) ? KV_ERR : KV_OK;
  if (st == KV_OK) st = CHECK_H5(a = H5Acreate2(ds, "_FillValue", ft, sp, H5P_DEFAULT, H5P_DEFAULT));
  if (st == KV_OK) st = CHECK_H5(H5Awrite(a, mt, value));
  kv_h5_close_id(&a);
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ft);
  return st;
}

static kv_status ranks_group(kv_output *o, hid_t file, const kv_rank_info *infos) {
  size_t n = (size_t)o->nranks;
  hid_t g = H5Gcreate2(file, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), scale = H5I_INVALID_HID;
  if (CHECK_H5(g)) return KV_ERR;
  void *buf = KV_MALLOC(n * (sizeof(double) > sizeof(char *) ? sizeof(double) : sizeof(char *)));
  kv_status st = buf ? rank_scale(o, g, &scale) : KV_ERR;
  if (st == KV_OK) st = cf_names(o, scale, "1", "MPI rank");
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
    if (st == KV_OK) st = cf_names(o, ds, rank_fields[k].units, rank_fields[k].long_name);
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
  KV_TRY(kv_h5_attr_str(g, o->t_vstr, "family", fp->family->name)); /* the group: [family] or [family.NAME] */
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
  KV_TRY(cf_names(o, sc[0], "1", "MPI rank"));
  for (int a = 0; a < fp->n_axes; a++) {
    const kv_axis_values *v = &fp->axis[a];
    const kv_axis_desc *ad = &fp->family->axes[a];
    if (ad->type == KV_AXIS_STR)
      KV_TRY(small_dataset(g, ad->name, o->t_vstr, o->t_vstr, (hsize_t)v->n, v->strs, 1, &sc[1 + a]));
    else if (ad->type == KV_AXIS_REAL)
      KV_TRY(small_dataset(g, ad->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (hsize_t)v->n, v->reals, 1, &sc[1 + a]));
    else
      KV_TRY(small_dataset(g, ad->name, H5T_STD_I64LE, H5T_NATIVE_LLONG, (hsize_t)v->n, v->ints, 1, &sc[1 + a]));
    KV_TRY(cf_names(o, sc[1 + a], ad->type != KV_AXIS_STR ? "1" : NULL, ad->help));
  }
  double edges[KV_HIST_BINS];
  edges[0] = -INFINITY;
  edges[1] = KV_HIST_LOG10_MIN - 1;
  for (int b = 2; b < KV_HIST_BINS - 1; b++) edges[b] = KV_HIST_LOG10_MIN + (b - 2);
  edges[KV_HIST_BINS - 1] = NAN;
  KV_TRY(small_dataset(g, "hist_bin", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, KV_HIST_BINS, edges, 1, &sc[1 + fp->n_axes]));
  KV_TRY(cf_names(o, sc[1 + fp->n_axes], "1", hist_bin_doc));
  return CHECK_H5(H5DSset_label(sc[1 + fp->n_axes], 0, hist_bin_doc));
}

/* The numeric coordinates the family derives from its axes (kv_coord_desc): 1-D int64
 * datasets along their axis; *names receives their names for the CF coordinates attribute. */
static kv_status derived_coords(kv_output *o, const kv_family_plan *fp, hid_t g, const hid_t *sc, char *names,
                                size_t n_names) {
  names[0] = '\0';
  for (int k = 0; fp->family->coords && fp->family->coords[k].name; k++) {
    const kv_coord_desc *cd = &fp->family->coords[k];
    int a = kv_family_axis_index(fp->family, cd->axis);
    if (a < 0 || fp->family->axes[a].type != KV_AXIS_STR) {
      kv_report(__FILE__, __LINE__, "layout", "coordinate %s of %s: no string axis %s", cd->name, fp->family->name,
                cd->axis);
      return KV_ERR;
    }
    const kv_axis_values *v = &fp->axis[a];
    long long *vals = KV_MALLOC(sizeof *vals * (size_t)(v->n ? v->n : 1));
    if (!vals) return KV_ERR;
    for (int i = 0; i < v->n; i++) vals[i] = cd->value(v->strs[i]);
    hid_t ds = H5I_INVALID_HID;
    const long long fill = -1;
    kv_status st = small_dataset(g, cd->name, H5T_STD_I64LE, H5T_NATIVE_LLONG, (hsize_t)v->n, vals, 0, &ds);
    free(vals);
    if (st == KV_OK) st = CHECK_H5(H5DSattach_scale(ds, sc[1 + a], 0));
    if (st == KV_OK) st = cf_names(o, ds, "1", cd->long_name);
    if (st == KV_OK) st = fill_attribute(ds, H5T_NATIVE_LLONG, &fill);
    kv_h5_close_id(&ds);
    if (st != KV_OK) return KV_ERR;
    size_t len = strlen(names);
    snprintf(names + len, n_names - len, "%s%s", len ? " " : "", cd->name);
  }
  return KV_OK;
}

/* How one dataset is described: units (NULL: none, e.g. flags and strings), the text of
 * description and long_name, the _FillValue (fill of memory type fill_type; NULL: none),
 * the CF coordinates attribute (NULL or "": none), and the scales sc[first..first+n). */
typedef struct {
  const char *units, *doc;
  hid_t fill_type;
  const void *fill;
  const char *coords;
  int first, n;
} dataset_desc;

/* Open dataset `name`, give it the attributes of dd and attach its scales. */
static kv_status describe_dataset(kv_output *o, hid_t g, const char *name, const dataset_desc *dd, const hid_t *sc) {
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
  if (CHECK_H5(ds)) return KV_ERR;
  kv_status st = cf_names(o, ds, dd->units, dd->doc);
  if (st == KV_OK) st = kv_h5_attr_str(ds, o->t_vstr, "description", dd->doc);
  if (st == KV_OK && dd->fill) st = fill_attribute(ds, dd->fill_type, dd->fill);
  if (st == KV_OK && dd->coords && dd->coords[0]) st = kv_h5_attr_str(ds, o->t_vstr, "coordinates", dd->coords);
  for (int i = 0; st == KV_OK && i < dd->n; i++) st = CHECK_H5(H5DSattach_scale(ds, sc[dd->first + i], (unsigned)i));
  kv_h5_close_id(&ds);
  return st;
}

/* CF flag attributes (flag_values int8, flag_meanings) of dataset `name`. */
static kv_status flag_attributes(kv_output *o, hid_t g, const char *name, int n_flags, const char *meanings) {
  signed char values[16];
  for (int s = 0; s < n_flags; s++) values[s] = (signed char)s;
  hsize_t n = (hsize_t)n_flags;
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT), sp = H5I_INVALID_HID, a = H5I_INVALID_HID;
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

/* CF flags of the status enum and of fp_agrees, so tools that do not map HDF5 enums still
 * see the names. */
static kv_status status_flags(kv_output *o, hid_t g) {
  char meanings[256] = "";
  for (int s = 0; s < KV_NSTATUS; s++) {
    size_t len = strlen(meanings);
    snprintf(meanings + len, sizeof meanings - len, "%s%s", s ? " " : "", kv_status_name((kv_case_status)s));
  }
  KV_TRY(flag_attributes(o, g, "status", KV_NSTATUS, meanings));
  return flag_attributes(o, g, "fp_agrees", 3, "disagrees agrees not_comparable");
}

/* Checksum of a skipped row: the reason, every other field its fill value. */
static uint64_t skipped_checksum(const char *message) {
  double dbl[KV_N_DOUBLES + 1];
  int64_t ints[KV_N_INTS + 1];
  uint64_t hist[KV_HIST_BINS] = {0};
  double parts[KV_ROW_PART_VALUES];
  for (int i = 0; i < KV_N_DOUBLES; i++) dbl[i] = NAN;
  for (int i = 0; i < KV_N_INTS; i++) ints[i] = KV_FILL_INT;
  for (int i = 0; i < KV_ROW_PART_VALUES; i++) parts[i] = NAN;
  unsigned char row[KV_ROW_BYTES];
  kv_row_pack(row, KV_SKIPPED, 0, message, dbl, ints, hist, parts);
  return kv_row_checksum(row);
}

/* path [axes...]: the kernel path tags of every cell (kv_family.path, as --dry-run prints
 * them; "" for a cell the plan skips), variable-length UTF-8, the axis scales attached. */
static kv_status path_dataset(kv_output *o, const kv_family_plan *fp, hid_t g, const hid_t *sc) {
  if (!fp->family->path) return KV_OK;
  const size_t n = fp->n_cells;
  char **ptr = KV_CALLOC(n ? n : 1, sizeof *ptr), buf[1024];
  hid_t sp = H5I_INVALID_HID, ds = H5I_INVALID_HID;
  kv_status st = ptr ? KV_OK : KV_ERR;
  for (size_t c = 0; st == KV_OK && c < n; c++) {
    buf[0] = '\0';
    if (!fp->skip_reason || !fp->skip_reason[c]) {
      kv_case kc;
      kv_plan_case_at(fp, c, o->plan->run.seed, &kc);
      fp->family->path(&kc, buf, sizeof buf);
    }
    size_t len = strlen(buf) + 1;
    if (!(ptr[c] = KV_MALLOC(len))) st = KV_ERR;
    else memcpy(ptr[c], buf, len);
  }
  hsize_t dims[KV_MAX_AXES];
  for (int a = 0; a < fp->n_axes; a++) dims[a] = (hsize_t)fp->axis[a].n;
  if (st == KV_OK) st = CHECK_H5(sp = H5Screate_simple(fp->n_axes, dims, NULL));
  if (st == KV_OK) st = CHECK_H5(ds = H5Dcreate2(g, "path", o->t_vstr, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (st == KV_OK && n > 0) st = CHECK_H5(H5Dwrite(ds, o->t_vstr, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptr));
  if (st == KV_OK) st = cf_names(o, ds, NULL, "kernel path tags of the cell (kval --dry-run --verbose; \"\": skipped)");
  for (int a = 0; st == KV_OK && a < fp->n_axes; a++) st = CHECK_H5(H5DSattach_scale(ds, sc[1 + a], (unsigned)a));
  kv_h5_close_id(&ds);
  kv_h5_close_id(&sp);
  for (size_t c = 0; ptr && c < n; c++) free(ptr[c]);
  free(ptr);
  return st;
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

/* The dataset part_stats of a family with parts: its two scales, part (the family's names)
 * and part_stat (KV_PART_STATS), and its description; sc holds the rank and axis scales. */
static kv_status describe_parts(kv_output *o, const kv_family_plan *fp, hid_t g, const hid_t *sc, const char *coords) {
  const int n_parts = kv_family_parts(fp->family), na = fp->n_axes;
  if (n_parts == 0) return KV_OK;
  static const char *const stat_names[] = {
#define KV_X(name, member, doc) #name,
      KV_PART_STATS(KV_X)
#undef KV_X
  };
  hid_t psc[KV_MAX_AXES + 3];
  memcpy(psc, sc, sizeof(hid_t) * (size_t)(na + 1));
  psc[na + 1] = psc[na + 2] = H5I_INVALID_HID;
  kv_status st = small_dataset(g, "part", o->t_vstr, o->t_vstr, (hsize_t)n_parts, fp->family->out_parts, 1, &psc[na + 1]);
  if (st == KV_OK) st = cf_names(o, psc[na + 1], NULL, part_doc);
  if (st == KV_OK)
    st = small_dataset(g, "part_stat", o->t_vstr, o->t_vstr, KV_N_PART_STATS, stat_names, 1, &psc[na + 2]);
  if (st == KV_OK) st = cf_names(o, psc[na + 2], NULL, part_stat_doc);
  const double nan = NAN;
  const dataset_desc dd = {"1", part_stats_doc, H5T_NATIVE_DOUBLE, &nan, coords, 0, na + 3};
  if (st == KV_OK) st = describe_dataset(o, g, "part_stats", &dd, psc);
  kv_h5_close_id(&psc[na + 1]);
  kv_h5_close_id(&psc[na + 2]);
  return st;
}

static kv_status describe_family(kv_output *o, const kv_out_family *of, hid_t file) {
  const kv_family_plan *fp = of->fp;
  int na = fp->n_axes;
  hid_t sc[KV_MAX_AXES + 2];
  for (int i = 0; i < na + 2; i++) sc[i] = H5I_INVALID_HID;
  hid_t g = H5Gopen2(file, fp->name, H5P_DEFAULT);
  if (CHECK_H5(g)) return KV_ERR;
  char coords[256];
  kv_status st = family_attributes(o, fp, g);
  if (st == KV_OK) st = family_scales(o, fp, g, sc);
  if (st == KV_OK) st = derived_coords(o, fp, g, sc, coords, sizeof coords);
  const double nan = NAN;
  const long long fill_int = KV_FILL_INT;
  const unsigned long long fill_u64 = 0;
  const int fill_i32 = 0;
  const signed char fill_status = KV_NOT_RUN, fill_agrees = KV_FILL_AGREES;
#define KV_DESC(name, units, doc, ftype, fill, first, n)                          \
  if (st == KV_OK) {                                                              \
    const dataset_desc dd = {units, doc, ftype, fill, coords, first, n};          \
    st = describe_dataset(o, g, name, &dd, sc);                                   \
  }
  KV_DESC("status", NULL, status_doc, o->t_status, &fill_status, 0, na + 1)
  KV_DESC("fingerprint", NULL, fingerprint_doc, H5T_NATIVE_ULLONG, &fill_u64, 0, na + 1)
  KV_DESC("checksum", NULL, checksum_doc, H5T_NATIVE_ULLONG, &fill_u64, 0, na + 1)
#define KV_X(name, member, unit, doc) KV_DESC(#name, unit, doc, H5T_NATIVE_DOUBLE, &nan, 0, na + 1)
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) KV_DESC(#name, unit, doc, H5T_NATIVE_LLONG, &fill_int, 0, na + 1)
  KV_RESULT_INTS(KV_X)
#undef KV_X
  KV_DESC("message", NULL, message_doc, 0, NULL, 0, na + 1)
  KV_DESC("hist", "1", hist_doc, 0, NULL, 0, na + 2)
  KV_DESC("fp_distinct", "1", fp_distinct_doc, H5T_NATIVE_INT, &fill_i32, 1, na)
  KV_DESC("fp_majority", NULL, fp_majority_doc, H5T_NATIVE_ULLONG, &fill_u64, 1, na)
  KV_DESC("fp_agrees", NULL, fp_agrees_doc, H5T_NATIVE_SCHAR, &fill_agrees, 0, na + 1)
#undef KV_DESC
  if (st == KV_OK) st = describe_parts(o, fp, g, sc, coords);
  if (st == KV_OK) st = status_flags(o, g);
  if (st == KV_OK && fp->n_skipped > 0) st = mark_skipped(o, of, g);
  if (st == KV_OK) st = path_dataset(o, fp, g, sc);
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
    const double part_bytes = 8.0 * kv_family_parts(fp->family) * KV_N_PART_STATS;
    bytes += cells * (o->nranks * (per_row + part_bytes) + 12) + datasets * (16384 + 64.0 * (fp->n_axes + 2)) +
             scale_refs + 65536;
  }
  return bytes;
}
