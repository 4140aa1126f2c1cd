/* output_create.c - kv_output_create: refuse an existing file unless --force, lay the file
 * out under PATH.part and rename it to PATH once it is complete, so that a file at PATH is
 * usable at every moment (a killed job keeps every finished case and never leaves a
 * half-made file). Parallel flavour: every rank creates the family datasets collectively
 * through MPI-IO (contiguous, allocated and filled with their fill values at creation:
 * simple and safe for collective writes, at the price of a file as large as the dense
 * [rank, cell] grid from the start); the file is closed, rank 0 reopens it alone to write
 * attributes, /ranks and the dimension scales (serial-only HDF5 APIs), closes and renames
 * it, and every rank reopens it collectively for writing. Serial flavour: rank 0 does all
 * of it and keeps the file open; other ranks hold no handle. */
#include "output/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Rank 0: may `path` be created? */
static kv_status check_target(const char *path, int force) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno != ENOENT) {
      kv_output_user_error("cannot use output file '%s': %s", path, strerror(errno));
      return KV_ERR;
    }
    /* The file is made in its directory (as PATH.part, then renamed): it must be writable. */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
    if (access(dir, W_OK | X_OK) != 0) {
      kv_output_user_error("cannot create output file '%s': directory '%s': %s (expected a writable directory)", path,
                           dir, strerror(errno));
      return KV_ERR;
    }
    return KV_OK;
  }
  if (S_ISDIR(sb.st_mode)) {
    kv_output_user_error("output file '%s' is a directory; give a file name with -o", path);
    return KV_ERR;
  }
  if (!force) {
    kv_output_user_error("output file '%s' exists; use --force to overwrite or --resume %s to continue it", path,
                         path);
    return KV_ERR;
  }
  return KV_OK;
}

/* The file is laid out under PATH.part and renamed to PATH only once it is complete, so a
 * job killed while laying it out never leaves a half-made file at PATH (a stale .part of
 * an earlier kill is overwritten). */
static kv_status part_path(const char *path, char *part, size_t n) {
  if ((size_t)snprintf(part, n, "%s.part", path) >= n) {
    kv_output_user_error("output file name '%s' is too long", path);
    return KV_ERR;
  }
  return KV_OK;
}

static kv_status create_part(const char *part, const char *path, hid_t fapl, hid_t *file) {
  *file = H5Fcreate(part, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (CHECK_H5(*file)) {
    kv_output_user_error("cannot create output file '%s' (as '%s'; HDF5 error above)", path, part);
    return KV_ERR;
  }
  return KV_OK;
}

/* Rank 0: move the laid-out file to its final name; without force, PATH must still be
 * free (another job may have created it meanwhile). */
static kv_status publish(const char *part, const char *path, int force) {
  if (!force && access(path, F_OK) == 0) {
    kv_output_user_error("output file '%s' appeared while this run was creating it; use --force to overwrite it",
                         path);
    return KV_ERR;
  }
  if (rename(part, path) != 0) {
    kv_output_user_error("cannot rename '%s' to '%s': %s", part, path, strerror(errno));
    return KV_ERR;
  }
  return KV_OK;
}

#if KV_HDF5_PARALLEL
/* Collective: the structure with MPI-IO; then rank 0 describes it through a serial handle
 * and publishes it. */
static kv_status lay_out(kv_output *o, const char *path, const char *part, int force, const kv_deck *d,
                         const kv_run_meta *m, const kv_rank_info *infos, hid_t *serial_file) {
  *serial_file = H5I_INVALID_HID;
  hid_t fapl, file = H5I_INVALID_HID;
  kv_status st = kv_output_mpio_fapl(o, &fapl);
  if (st == KV_OK) st = create_part(part, path, fapl, &file);
  kv_h5_close_id(&fapl);
  if (kv_output_agree(o, st) != KV_OK) {
    kv_h5_close_id(&file);
    return KV_ERR;
  }
  st = kv_layout_structure(o, file);
  if (CHECK_H5(H5Fclose(file))) st = KV_ERR;
  KV_TRY(kv_output_agree(o, st));
  if (o->rank == 0) {
    hid_t sf;
    st = kv_output_open_serial(part, &sf);
    if (st == KV_OK) {
      st = kv_layout_describe(o, sf, d, m, infos);
      if (CHECK_H5(H5Fclose(sf))) st = KV_ERR;
    }
    if (st == KV_OK) st = publish(part, path, force);
  }
  return kv_output_agree(o, st);
}
#else
/* Rank 0 creates, describes and publishes the file and keeps it open. */
static kv_status lay_out(kv_output *o, const char *path, const char *part, int force, const kv_deck *d,
                         const kv_run_meta *m, const kv_rank_info *infos, hid_t *serial_file) {
  *serial_file = H5I_INVALID_HID;
  kv_status st = KV_OK;
  if (o->rank == 0) {
    hid_t fapl;
    st = kv_h5_serial_fapl(&fapl);
    if (st == KV_OK) st = create_part(part, path, fapl, serial_file);
    kv_h5_close_id(&fapl);
    if (st == KV_OK) st = kv_layout_structure(o, *serial_file);
    if (st == KV_OK) st = kv_layout_describe(o, *serial_file, d, m, infos);
    if (st == KV_OK) st = CHECK_H5(H5Fflush(*serial_file, H5F_SCOPE_GLOBAL));
    if (st == KV_OK) st = publish(part, path, force);
  }
  if (kv_output_agree(o, st) != KV_OK) {
    kv_h5_close_id(serial_file);
    return KV_ERR;
  }
  return KV_OK;
}
#endif

kv_status kv_output_create(const char *path, int force, const kv_plan *p, const kv_deck *d,
                           const kv_run_meta *m, const kv_rank_info *infos, MPI_Comm comm,
                           kv_output **out) {
  *out = NULL;
  kv_output *o;
  KV_TRY(kv_output_new(p, comm, &o));
  hid_t serial_file = H5I_INVALID_HID;
  char part[4096];
  kv_status st = o->rank == 0 ? check_target(path, force) : KV_OK;
  if (st == KV_OK) st = part_path(path, part, sizeof part);
  st = kv_output_agree(o, st);
  if (st == KV_OK) {
    st = lay_out(o, path, part, force, d, m, infos, &serial_file);
    if (st != KV_OK && o->rank == 0) unlink(part);
  }
  if (st == KV_OK) st = kv_output_open_writing(o, path, serial_file);
  if (st != KV_OK) {
    kv_output_free(o);
    return KV_ERR;
  }
  *out = o;
  return KV_OK;
}
