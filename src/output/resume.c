/* output_resume.c - kv_output_resume: rank 0 locks the file (refused while another job holds
 * it) and checks that it is a kval file of this layout version written by the same deck,
 * [run] settings, rank count, mode, seed and backend, with exactly the planned families,
 * each of the planned shape, axis values and parameters (every mismatch is reported with
 * both values), that every row it holds is valid and matches its checksum (verify.c), and
 * marks it incomplete again; then the file is opened for writing as after create, the rows
 * of the interrupted run's journals are merged in, the status datasets are read and the
 * per-[rank, case] "done" bitmap is broadcast. kv_output_kept hands each rank the stored
 * status and fingerprint of its kept cases. */
#include "output/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "output/journal.h"
#include "output/verify.h"

/* Report the first line where the file's deck text and this run's differ. */
static void report_deck_diff(const char *path, const char *file_text, const char *run_text) {
  const char *a = file_text, *b = run_text;
  int line = 1;
  while (*a && *a == *b) {
    if (*a == '\n') line++;
    a++, b++;
  }
  while (a > file_text && a[-1] != '\n') a--, b--;
  int la = (int)strcspn(a, "\n"), lb = (int)strcspn(b, "\n");
  kv_output_user_error("--resume %s: the deck differs from the one that wrote the file, first at deck line %d: "
                       "file has '%.*s', this run has '%.*s'",
                       path, line, la > 100 ? 100 : la, a, lb > 100 ? 100 : lb, b);
}

/* Report the first "key=value" of the run_settings lines that differs. */
static void report_settings_diff(const char *path, const char *file_text, const char *run_text) {
  const char *a = file_text, *b = run_text;
  size_t la = strcspn(a, " "), lb = strcspn(b, " ");
  while (la == lb && strncmp(a, b, la) == 0 && a[la] && b[lb]) {
    a += la + 1;
    b += lb + 1;
    la = strcspn(a, " ");
    lb = strcspn(b, " ");
  }
  if (la == lb && strncmp(a, b, la) == 0) { /* one line goes on after the other ends */
    a += la + (a[la] != 0);
    b += lb + (b[lb] != 0);
    la = strcspn(a, " ");
    lb = strcspn(b, " ");
  }
  kv_output_user_error("--resume %s: the [run] settings differ (a different deck or --set): the file has '%.*s', this "
                       "run has '%.*s'", path, la ? (int)la : 9, la ? a : "(nothing)", lb ? (int)lb : 9, lb ? b : "(nothing)");
}

/* Compare a string attribute with this run's value; mismatches are reported. */
static kv_status same_str(kv_output *o, hid_t file, const char *path, const char *name, const char *want) {
  char *have = NULL;
  int found = 0;
  kv_status st = kv_h5_attr_read_str(file, o->t_vstr, name, &have, &found);
  if (st == KV_OK && !found) {
    kv_output_user_error("--resume %s: the file has no '%s' attribute; it was not written by kval", path, name);
    st = KV_ERR;
  } else if (st == KV_OK && strcmp(have, want ? want : "") != 0) {
    if (strcmp(name, "deck_text") == 0)
      report_deck_diff(path, have, want ? want : "");
    else if (strcmp(name, "run_settings") == 0)
      report_settings_diff(path, have, want ? want : "");
    else
      kv_output_user_error("--resume %s: the file was written with %s '%s', this run has %s '%s'", path, name, have,
                           name, want ? want : "");
    st = KV_ERR;
  }
  free(have);
  return st;
}

/* The run-level identity of the file: layout version, deck, ranks, mode, seed, backend. */
static kv_status check_identity(kv_output *o, hid_t file, const char *path, const kv_deck *d,
                                const kv_run_meta *m) {
  long long version = 0, nranks = 0;
  unsigned long long seed = 0;
  int found = 0;
  KV_TRY(kv_h5_attr_read_i64(file, "layout_version", &version, &found));
  if (!found) {
    kv_output_user_error("--resume %s: not a kval output file (no 'layout_version' attribute)", path);
    return KV_ERR;
  }
  if (version != KV_LAYOUT_VERSION) {
    kv_output_user_error("--resume %s: the file has layout_version %lld, this kval writes layout_version %d", path,
                         version, KV_LAYOUT_VERSION);
    return KV_ERR;
  }
  kv_status st = same_str(o, file, path, "deck_text", d->text);
  char settings[1024];
  kv_layout_run_settings(&o->plan->run, settings, sizeof settings);
  if (same_str(o, file, path, "run_settings", settings)) st = KV_ERR;
  if (same_str(o, file, path, "mode", kv_output_mode_name(o->plan->mode))) st = KV_ERR;
  if (same_str(o, file, path, "backend", m->backend)) st = KV_ERR;
  if (kv_h5_attr_read_i64(file, "nranks", &nranks, &found) || !found) {
    kv_output_user_error("--resume %s: cannot read the 'nranks' attribute", path);
    st = KV_ERR;
  } else if (nranks != o->nranks) {
    kv_output_user_error("--resume %s: the file was written by %lld ranks, this run has %d", path, nranks, o->nranks);
    st = KV_ERR;
  }
  if (kv_h5_attr_read_u64(file, "seed", &seed, &found) || !found) {
    kv_output_user_error("--resume %s: cannot read the 'seed' attribute", path);
    st = KV_ERR;
  } else if (seed != o->plan->run.seed) {
    kv_output_user_error("--resume %s: the file was written with seed %llu, this run has seed %llu", path, seed,
                         (unsigned long long)o->plan->run.seed);
    st = KV_ERR;
  }
  return st;
}

/* The values of axis a (its dimension scale) are the ones this run plans: a --set that
 * changes them would write results into cells that mean something else. */
static kv_status check_axis_values(kv_output *o, hid_t g, const char *path, const kv_family_plan *fp, int a) {
  const char *axis = fp->family->axes[a].name;
  const kv_axis_values *v = &fp->axis[a];
  const kv_axis_type type = fp->family->axes[a].type;
  const int is_str = type == KV_AXIS_STR;
  hid_t ds = H5Dopen2(g, axis, H5P_DEFAULT), sp = H5I_INVALID_HID;
  if (CHECK_H5(ds)) return KV_ERR;
  void *buf = KV_CALLOC((size_t)v->n + 1, is_str ? sizeof(char *) : sizeof(long long));
  const hid_t mem = is_str ? o->t_vstr : type == KV_AXIS_REAL ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG;
  kv_status st = buf ? CHECK_H5(sp = H5Dget_space(ds)) : KV_ERR;
  if (st == KV_OK) st = CHECK_H5(H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
  int bad = -1;
  for (int i = 0; st == KV_OK && bad < 0 && i < v->n; i++) {
    const char *have = is_str ? ((char **)buf)[i] : NULL;
    if (is_str ? strcmp(have ? have : "", v->strs[i]) != 0
               : type == KV_AXIS_REAL ? ((double *)buf)[i] != v->reals[i] : ((long long *)buf)[i] != v->ints[i])
      bad = i;
  }
  if (bad >= 0) {
    char have[128], want[128];
    if (is_str) {
      snprintf(have, sizeof have, "'%s'", ((char **)buf)[bad] ? ((char **)buf)[bad] : "");
      snprintf(want, sizeof want, "'%s'", v->strs[bad]);
    } else if (type == KV_AXIS_REAL) {
      snprintf(have, sizeof have, "%.17g", ((double *)buf)[bad]);
      snprintf(want, sizeof want, "%.17g", v->reals[bad]);
    } else {
      snprintf(have, sizeof have, "%lld", ((long long *)buf)[bad]);
      snprintf(want, sizeof want, "%lld", v->ints[bad]);
    }
    kv_output_user_error("--resume %s: value %d of %s.%s is %s in the file, this run has %s (a different deck or "
                         "--set)", path, bad + 1, fp->name, axis, have, want);
    st = KV_ERR;
  }
  if (is_str && sp >= 0 && buf) CHECK_H5(H5Dvlen_reclaim(o->t_vstr, sp, H5P_DEFAULT, buf));
  free(buf);
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  return st;
}

/* Each planned family has a group with the same axes and a status dataset of the plan's shape. */
static kv_status check_family(kv_output *o, hid_t file, const char *path, const kv_out_family *of) {
  const char *name = of->fp->name;
  htri_t ex = H5Lexists(file, name, H5P_DEFAULT);
  if (CHECK_H5(ex)) return KV_ERR;
  if (!ex) {
    kv_output_user_error("--resume %s: the file has no group '/%s' for deck section [%s]", path, name, name);
    return KV_ERR;
  }
  hid_t g = H5Gopen2(file, name, H5P_DEFAULT), ds = H5I_INVALID_HID, sp = H5I_INVALID_HID;
  if (CHECK_H5(g)) return KV_ERR;
  char axes[KV_MAX_AXES * 64] = "";
  for (int a = 0; a < of->fp->n_axes; a++) {
    size_t len = strlen(axes);
    snprintf(axes + len, sizeof axes - len, "%s%s", a ? "," : "", of->fp->family->axes[a].name);
  }
  kv_status st = same_str(o, g, path, "axes", axes);
  hsize_t dims[KV_MAX_AXES + 2];
  int nd = -1;
  if (st == KV_OK) {
    ds = H5Dopen2(g, "status", H5P_DEFAULT);
    if (!CHECK_H5(ds)) sp = H5Dget_space(ds);
    if (ds < 0 || CHECK_H5(sp) || CHECK_H5(nd = H5Sget_simple_extent_ndims(sp))) st = KV_ERR;
    else if (nd > KV_MAX_AXES + 1 || CHECK_H5(H5Sget_simple_extent_dims(sp, dims, NULL))) st = KV_ERR;
  }
  if (st == KV_OK && nd != of->n_dims) {
    kv_output_user_error("--resume %s: /%s/status has %d dimensions, this run's plan needs %d (rank, %s)", path, name,
                         nd, of->n_dims, axes);
    st = KV_ERR;
  }
  for (int i = 0; st == KV_OK && i < of->n_dims; i++)
    if (dims[i] != of->dims[i]) {
      kv_output_user_error("--resume %s: /%s/status has length %llu along %s, this run's plan needs %llu", path, name,
                           (unsigned long long)dims[i], i ? of->fp->family->axes[i - 1].name : "rank",
                           (unsigned long long)of->dims[i]);
      st = KV_ERR;
    }
  for (int a = 0; st == KV_OK && a < of->fp->n_axes; a++) st = check_axis_values(o, g, path, of->fp, a);
  for (int k = 0; st == KV_OK && of->fp->family->params && of->fp->family->params[k].name; k++) {
    const char *pname = of->fp->family->params[k].name;
    double have = 0;
    hid_t at = H5Aopen(g, pname, H5P_DEFAULT);
    if (CHECK_H5(at) || CHECK_H5(H5Aread(at, H5T_NATIVE_DOUBLE, &have))) st = KV_ERR;
    else if (have != of->fp->param[k]) {
      kv_output_user_error("--resume %s: the file was written with %s.%s = %.17g, this run has %.17g (a different "
                           "deck or --set)", path, name, pname, have, of->fp->param[k]);
      st = KV_ERR;
    }
    kv_h5_close_id(&at);
  }
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  kv_h5_close_id(&g);
  return st;
}

/* Every family group in the file (every group but /ranks) is planned by this run (same deck
 * sections, --only). */
static kv_status check_family_set(const kv_plan *p, hid_t file, const char *path) {
  H5G_info_t gi;
  if (CHECK_H5(H5Gget_info(file, &gi))) return KV_ERR;
  for (hsize_t i = 0; i < gi.nlinks; i++) {
    char name[256];
    if (CHECK_H5(H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT)))
      return KV_ERR;
    hid_t obj = H5Oopen(file, name, H5P_DEFAULT);
    if (CHECK_H5(obj)) return KV_ERR;
    const int is_group = H5Iget_type(obj) == H5I_GROUP;
    kv_h5_close_id(&obj);
    int planned = !is_group || strcmp(name, "ranks") == 0;
    for (int f = 0; f < p->n_fam && !planned; f++) planned = strcmp(p->fam[f].name, name) == 0;
    if (!planned) {
      kv_output_user_error("--resume %s: the file holds family /%s, which this run does not plan (a different deck "
                           "or --only)", path, name);
      return KV_ERR;
    }
  }
  return KV_OK;
}

/* Rank 0: open and check the file; on success it is marked incomplete and left open. */
static kv_status probe(kv_output *o, const char *path, const kv_deck *d, const kv_run_meta *m, hid_t *file) {
  *file = H5I_INVALID_HID;
  kv_status locked = kv_target_check(path, 0, 1, d->path);
  if (locked == KV_OK) locked = kv_target_lock_existing(&o->target, path);
  if (locked != KV_OK) return locked;
  htri_t is_h5;
#if H5_VERSION_GE(1, 12, 0)
  KV_H5_QUIET(is_h5 = H5Fis_accessible(path, H5P_DEFAULT));
#else
  KV_H5_QUIET(is_h5 = H5Fis_hdf5(path));
#endif
  if (is_h5 <= 0) {
    kv_output_user_error("--resume %s: not an HDF5 file", path);
    return KV_REFUSED;
  }
  if (kv_output_open_serial(path, file)) return KV_REFUSED;
  kv_status st = check_identity(o, *file, path, d, m);
  if (st == KV_OK) st = check_family_set(o->plan, *file, path);
  for (int f = 0; st == KV_OK && f < o->plan->n_fam; f++) st = check_family(o, *file, path, &o->fam[f]);
  for (int f = 0; st == KV_OK && f < o->plan->n_fam; f++) st = kv_verify_family(o, *file, path, &o->fam[f]);
  int found = 0;
  if (st == KV_OK && (kv_h5_attr_read_u64(*file, "file_id", (unsigned long long *)&o->file_id, &found) || !found)) {
    kv_output_user_error("--resume %s: the file has no 'file_id' attribute (written by an older kval)", path);
    st = KV_ERR;
  }
  /* Only now is the file changed: everything above refuses it as it is. */
  if (st == KV_OK) st = kv_h5_attr_set_i64(*file, "complete", 0);
  if (st == KV_OK) st = CHECK_H5(H5Fflush(*file, H5F_SCOPE_GLOBAL));
  if (st != KV_OK) kv_h5_close_id(file);
  return st == KV_OK ? KV_OK : KV_REFUSED;
}

/* Collective: write the rows of every rank's journal of the interrupted run into the file,
 * flush, and start the journals afresh. */
static kv_status merge_journals(kv_output *o, const char *path) {
  kv_result *rows = NULL;
  size_t n = 0;
  kv_status st = kv_output_agree(o, kv_journal_read(o, path, &rows, &n));
  long long mine = (long long)n, most = 0, total = 0;
  if (st == KV_OK && (CHECK_MPI(MPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, o->comm)) ||
                      CHECK_MPI(MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, o->comm))))
    st = KV_ERR;
#if KV_HDF5_PARALLEL
  for (long long k = 0; st == KV_OK && k < most; k++) {
    int stop = 0;
    st = kv_output_agree(o, kv_output_write(o, k < mine ? &rows[k] : NULL, &stop));
  }
  if (st == KV_OK) st = kv_output_collective(o, CHECK_H5(H5Fflush(o->file, H5F_SCOPE_GLOBAL)), "flushing");
#else
  int *counts = NULL, *displs = NULL;
  kv_result *all = NULL;
  if (st == KV_OK && (double)total * sizeof *rows > (double)INT_MAX) {
    kv_report(__FILE__, __LINE__, "output", "%lld journal rows exceed one gather", total);
    st = KV_ERR;
  }
  st = kv_output_agree(o, st);
  if (st == KV_OK && o->rank == 0) {
    counts = KV_CALLOC((size_t)o->nranks, sizeof *counts);
    displs = KV_CALLOC((size_t)o->nranks, sizeof *displs);
    all = KV_MALLOC((size_t)total * sizeof *all + 1);
    if (!counts || !displs || !all) st = KV_ERR;
  }
  int bytes = (int)(n * sizeof *rows);
  if (kv_output_agree(o, st) == KV_OK)
    st = CHECK_MPI(MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, o->comm));
  for (int r = 1; st == KV_OK && o->rank == 0 && r < o->nranks; r++) displs[r] = displs[r - 1] + counts[r - 1];
  if (st == KV_OK)
    st = CHECK_MPI(MPI_Gatherv(rows, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, o->comm));
  for (long long k = 0; st == KV_OK && o->rank == 0 && k < total; k++) {
    int stop = 0;
    st = kv_output_write(o, &all[k], &stop);
  }
  if (st == KV_OK && o->rank == 0) st = CHECK_H5(H5Fflush(o->file, H5F_SCOPE_GLOBAL));
  free(counts), free(displs), free(all);
  (void)most;
#endif
  free(rows);
  st = kv_output_agree(o, st);
  if (st == KV_OK && o->rank == 0 && total > 0)
    kv_output_user_error("--resume: %lld finished row(s) of the interrupted run recovered from its journals", total);
  if (st == KV_OK) kv_journal_start(o, path);
  return st;
}

/* Rank 0: done[rank * n_cases + i] from the status datasets; collective read. */
static kv_status read_done(kv_output *o, int retry_errors, unsigned char *done) {
  const kv_plan *p = o->plan;
  for (int f = 0; f < p->n_fam; f++) {
    size_t cells = o->fam[f].fp->n_cells;
    hsize_t rows = o->rank == 0 ? (hsize_t)o->nranks : 0;
    signed char *status = KV_MALLOC(rows * cells);
    if (!status || kv_output_read_status(o, f, 0, rows, status)) {
      free(status);
      return KV_ERR;
    }
    for (size_t i = 0; rows && i < p->n_cases; i++) {
      if (p->cases[i].fp != &p->fam[f]) continue;
      for (int r = 0; r < o->nranks; r++) {
        signed char s = status[(size_t)r * cells + p->cases[i].cell];
        done[(size_t)r * p->n_cases + i] = s != KV_NOT_RUN && (s != KV_ERROR || !retry_errors);
      }
    }
    free(status);
  }
  return KV_OK;
}

kv_status kv_output_resume(const char *path, const kv_plan *p, const kv_deck *d, const kv_run_meta *m,
                           int retry_errors, MPI_Comm comm, kv_output **out, unsigned char **done) {
  *out = NULL;
  *done = NULL;
  kv_output *o;
  KV_TRY(kv_output_new(p, comm, &o));
  hid_t serial_file = H5I_INVALID_HID;
  size_t n = (size_t)o->nranks * p->n_cases;
  unsigned char *bits = KV_CALLOC(n, 1);
  kv_status st = bits ? KV_OK : KV_ERR;
  if (n > INT_MAX) {
    kv_report(__FILE__, __LINE__, "output", "%zu ranks x cases exceed one broadcast", n);
    st = KV_ERR;
  }
  if (st == KV_OK && o->rank == 0) st = probe(o, path, d, m, &serial_file);
  st = kv_output_agree(o, st);
  if (st == KV_OK) st = CHECK_MPI(MPI_Bcast(&o->file_id, 1, MPI_UINT64_T, 0, o->comm));
#if KV_HDF5_PARALLEL
  if (serial_file >= 0 && CHECK_H5(H5Fclose(serial_file))) st = KV_ERR;
  serial_file = H5I_INVALID_HID;
  st = kv_output_agree(o, st);
#endif
  if (st == KV_OK) st = kv_output_open_writing(o, path, serial_file);
  else kv_h5_close_id(&serial_file);
  if (st == KV_OK) st = merge_journals(o, path);
  if (st == KV_OK && o->file >= 0) st = kv_output_collective(o, read_done(o, retry_errors, bits), "reading status");
  if ((st = kv_output_agree(o, st)) == KV_OK) st = CHECK_MPI(MPI_Bcast(bits, (int)n, MPI_UNSIGNED_CHAR, 0, o->comm));
  if (st != KV_OK) {
    free(bits);
    kv_output_free(o);
    return st;
  }
  *out = o;
  *done = bits;
  return KV_OK;
}

/* Rank 0 reads every rank's fingerprints of family slot f (others take part with empty
 * selections in the parallel flavour). */
static kv_status read_fingerprints(kv_output *o, int f, hsize_t rows, uint64_t *buf) {
  kv_out_family *of = &o->fam[f];
  hsize_t start[KV_MAX_AXES + 1] = {0};
  hid_t fs, ms;
  uint64_t dummy;
  KV_TRY(kv_h5_select(of->n_dims, of->dims, start, rows ? of->dims : NULL, rows ? rows * of->fp->n_cells : 1, &fs,
                      &ms));
  kv_status st = CHECK_H5(H5Dread(of->fingerprint, H5T_NATIVE_UINT64, ms, fs, o->dxpl, rows ? buf : &dummy));
  kv_h5_close_id(&fs);
  kv_h5_close_id(&ms);
  return st;
}

kv_status kv_output_kept(kv_output *o, const unsigned char *done, signed char *status, uint64_t *fingerprint) {
  const kv_plan *p = o->plan;
  size_t n = p->n_cases, all = o->rank == 0 ? (size_t)o->nranks * n : 0;
  signed char *st_all = KV_MALLOC(all + 1);
  uint64_t *fp_all = KV_MALLOC((all + 1) * sizeof *fp_all);
  signed char *my_st = KV_MALLOC(n + 1);
  uint64_t *my_fp = KV_MALLOC((n + 1) * sizeof *my_fp);
  kv_status st = st_all && fp_all && my_st && my_fp ? KV_OK : KV_ERR;
  if (n > INT_MAX) {
    kv_report(__FILE__, __LINE__, "output", "%zu cases exceed one scatter", n);
    st = KV_ERR;
  }
  st = kv_output_agree(o, st);
  for (int f = 0; st == KV_OK && o->file >= 0 && f < p->n_fam; f++) {
    size_t cells = o->fam[f].fp->n_cells;
    hsize_t rows = o->rank == 0 ? (hsize_t)o->nranks : 0;
    signed char *s = KV_MALLOC(rows * cells + 1);
    uint64_t *fp = KV_MALLOC((rows * cells + 1) * sizeof *fp);
    if (!s || !fp || kv_output_read_status(o, f, 0, rows, s) || read_fingerprints(o, f, rows, fp)) st = KV_ERR;
    for (size_t i = 0; st == KV_OK && rows && i < n; i++) {
      if (p->cases[i].fp != &p->fam[f]) continue;
      for (int r = 0; r < o->nranks; r++) {
        st_all[(size_t)r * n + i] = s[(size_t)r * cells + p->cases[i].cell];
        fp_all[(size_t)r * n + i] = fp[(size_t)r * cells + p->cases[i].cell];
      }
    }
    free(s);
    free(fp);
  }
  st = kv_output_agree(o, st);
  if (st == KV_OK)
    st = CHECK_MPI(MPI_Scatter(st_all, (int)n, MPI_SIGNED_CHAR, my_st, (int)n, MPI_SIGNED_CHAR, 0, o->comm));
  if (st == KV_OK)
    st = CHECK_MPI(MPI_Scatter(fp_all, (int)n, MPI_UINT64_T, my_fp, (int)n, MPI_UINT64_T, 0, o->comm));
  for (size_t i = 0; st == KV_OK && i < n; i++) {
    if (!done[(size_t)o->rank * n + i]) continue;
    status[i] = my_st[i];
    fingerprint[i] = my_fp[i];
  }
  free(st_all);
  free(fp_all);
  free(my_st);
  free(my_fp);
  return kv_output_agree(o, st);
}
