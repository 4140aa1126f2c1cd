/* output_create.c - kv_output_create: rank 0 checks the target (target.c: a regular file, not
 * the deck, not in use; an existing one only with --force), creates PATH.part-XXXXXXXX
 * exclusively with its lock and its space reserved, and the file is laid out there and
 * renamed to PATH once complete (never over a file that appeared meanwhile), so a file at
 * PATH is usable at every moment and two jobs with the same -o never clobber each other.
 * Parallel flavour: every rank creates the family datasets collectively through MPI-IO
 * (contiguous, allocated and filled with their fill values at creation: simple and safe for
 * collective writes, at the price of a file as large as the dense [rank, cell] grid from the
 * start); the file is closed, rank 0 reopens it alone to write attributes, /ranks and the
 * dimension scales (serial-only HDF5 APIs), closes and renames it, and every rank reopens it
 * collectively for writing. A collective step that fails on one rank ends the job through
 * the fatal path (kv_output_collective). Serial flavour: rank 0 does all of it and keeps the
 * file open; other ranks hold no handle. Then every rank starts its journal. */
#include "output/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/journal.h"

kv_status kv_output_check_target(const char *path, int force, int resume, const char *deck_path) {
  return kv_target_check(path, force, resume, deck_path);
}

/* A random 64-bit id for the file (root attribute file_id, stamped into every journal record). */
static uint64_t new_file_id(void) {
  uint64_t id = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &id, sizeof id) != (ssize_t)sizeof id) id = 0;
    close(fd);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  id ^= ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 48);
  return id ? id : 1;
}

static kv_status create_part(const char *part, const char *path, hid_t fapl, hid_t *file) {
  *file = H5Fcreate(part, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (CHECK_H5(*file)) {
    kv_output_user_error("cannot create output file '%s' (as '%s'; HDF5 error above)", path, part);
    return KV_ERR;
  }
  return KV_OK;
}

#if KV_HDF5_PARALLEL
/* Collective: the structure with MPI-IO; then rank 0 describes it through a serial handle
 * and publishes it. */
static kv_status lay_out(kv_output *o, const char *path, int force, const kv_deck *d, const kv_run_meta *m,
                         const kv_rank_info *infos, hid_t *serial_file) {
  *serial_file = H5I_INVALID_HID;
  hid_t fapl, file = H5I_INVALID_HID;
  kv_status st = kv_output_mpio_fapl(o, &fapl);
  if (st == KV_OK) st = create_part(o->part, path, fapl, &file);
  kv_h5_close_id(&fapl);
  st = kv_output_collective(o, st, "creating the file");
  if (o->rank == 0) kv_output_collective(o, kv_target_reserve_again(&o->target), "reserving the file's space");
  st = kv_output_collective(o, kv_layout_structure(o, file), "laying out the datasets");
  if (CHECK_H5(H5Fclose(file))) st = kv_output_collective(o, KV_ERR, "closing the new file");
  if (o->rank == 0) {
    hid_t sf;
    st = kv_output_open_serial(o->part, &sf);
    if (st == KV_OK) {
      st = kv_layout_describe(o, sf, d, m, infos);
      if (CHECK_H5(H5Fclose(sf))) st = KV_ERR;
    }
    if (st == KV_OK) st = kv_target_publish(&o->target, force);
  }
  return kv_output_agree(o, st);
}
#else
/* Rank 0 creates, describes and publishes the file and keeps it open. */
static kv_status lay_out(kv_output *o, const char *path, int force, const kv_deck *d, const kv_run_meta *m,
                         const kv_rank_info *infos, hid_t *serial_file) {
  *serial_file = H5I_INVALID_HID;
  kv_status st = KV_OK;
  if (o->rank == 0) {
    hid_t fapl;
    st = kv_h5_serial_fapl(&fapl);
    if (st == KV_OK) st = create_part(o->part, path, fapl, serial_file);
    kv_h5_close_id(&fapl);
    if (st == KV_OK) st = kv_target_reserve_again(&o->target);
    if (st == KV_OK) st = kv_layout_structure(o, *serial_file);
    if (st == KV_OK) st = kv_layout_describe(o, *serial_file, d, m, infos);
    if (st == KV_OK) st = CHECK_H5(H5Fflush(*serial_file, H5F_SCOPE_GLOBAL));
    if (st == KV_OK) st = kv_target_publish(&o->target, force);
  }
  st = kv_output_agree(o, st);
  if (st != KV_OK) kv_h5_close_id(serial_file);
  return st;
}
#endif

kv_status kv_output_create(const char *path, int force, const kv_plan *p, const kv_deck *d,
                           const kv_run_meta *m, const kv_rank_info *infos, MPI_Comm comm,
                           kv_output **out) {
  *out = NULL;
  kv_output *o;
  KV_TRY(kv_output_new(p, comm, &o));
  hid_t serial_file = H5I_INVALID_HID;
  kv_status st = KV_OK;
  if (o->rank == 0) {
    st = kv_target_check(path, force, 0, d->path);
    if (st == KV_OK) st = kv_target_make_part(&o->target, path, kv_layout_bytes(o, d));
    snprintf(o->part, sizeof o->part, "%s", o->target.part);
    o->file_id = new_file_id();
  }
  st = kv_output_agree(o, st);
  if (st == KV_OK && (CHECK_MPI(MPI_Bcast(o->part, (int)sizeof o->part, MPI_CHAR, 0, o->comm)) ||
                      CHECK_MPI(MPI_Bcast(&o->file_id, 1, MPI_UINT64_T, 0, o->comm))))
    st = KV_ERR;
  if (st == KV_OK) st = lay_out(o, path, force, d, m, infos, &serial_file);
  o->part[0] = '\0'; /* published, or removed with the target below */
  if (st == KV_OK) st = kv_output_open_writing(o, path, serial_file);
  if (st != KV_OK) {
    kv_output_free(o);
    return st;
  }
  kv_journal_start(o, path);
  *out = o;
  return KV_OK;
}
