/* output_resume.c - kv_output_resume: rank 0 checks that the file is a kval file of this
 * layout version written by the same deck, rank count, mode, seed and backend, with a group
 * of the planned shape per family (every mismatch is reported with both values), and marks
 * it incomplete again; then the file is opened for writing as after create, the status
 * datasets are read and the per-[rank, case] "done" bitmap is broadcast. */
#include "output_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"

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

/* Each planned family has a group with the same axes and a status dataset of the plan's shape. */
static kv_status check_family(kv_output *o, hid_t file, const char *path, const kv_out_family *of) {
  const char *name = of->fp->family->name;
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
  kv_h5_close_id(&sp);
  kv_h5_close_id(&ds);
  kv_h5_close_id(&g);
  return st;
}

/* Rank 0: open and check the file; on success it is marked incomplete and left open. */
static kv_status probe(kv_output *o, const char *path, const kv_deck *d, const kv_run_meta *m, hid_t *file) {
  *file = H5I_INVALID_HID;
  if (access(path, F_OK) != 0) {
    kv_output_user_error("--resume %s: %s", path, strerror(errno));
    return KV_ERR;
  }
  if (access(path, R_OK | W_OK) != 0) {
    kv_output_user_error("--resume %s: cannot open for reading and writing: %s", path, strerror(errno));
    return KV_ERR;
  }
  htri_t is_h5;
#if H5_VERSION_GE(1, 12, 0)
  KV_H5_QUIET(is_h5 = H5Fis_accessible(path, H5P_DEFAULT));
#else
  KV_H5_QUIET(is_h5 = H5Fis_hdf5(path));
#endif
  if (is_h5 <= 0) {
    kv_output_user_error("--resume %s: not an HDF5 file", path);
    return KV_ERR;
  }
  KV_TRY(kv_output_open_serial(path, file));
  kv_status st = check_identity(o, *file, path, d, m);
  for (int f = 0; st == KV_OK && f < o->plan->n_fam; f++) st = check_family(o, *file, path, &o->fam[f]);
  if (st == KV_OK) st = kv_h5_attr_set_i64(*file, "complete", 0);
  if (st == KV_OK) st = CHECK_H5(H5Fflush(*file, H5F_SCOPE_GLOBAL));
  if (st != KV_OK) kv_h5_close_id(file);
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
#if KV_HDF5_PARALLEL
  if (serial_file >= 0 && CHECK_H5(H5Fclose(serial_file))) st = KV_ERR;
  serial_file = H5I_INVALID_HID;
  st = kv_output_agree(o, st);
#endif
  if (st == KV_OK) st = kv_output_open_writing(o, path, serial_file);
  else kv_h5_close_id(&serial_file);
  if (st == KV_OK && o->file >= 0) st = read_done(o, retry_errors, bits);
  if (kv_output_agree(o, st) == KV_OK) st = CHECK_MPI(MPI_Bcast(bits, (int)n, MPI_UNSIGNED_CHAR, 0, o->comm));
  else st = KV_ERR;
  if (st != KV_OK) {
    free(bits);
    kv_output_free(o);
    return KV_ERR;
  }
  *out = o;
  *done = bits;
  return KV_OK;
}
