/* output.c - lifecycle of the HDF5 output shared by create and resume: the kv_output
 * object and its duplicated communicator, opening every family dataset for writing (MPI-IO
 * on every rank in the parallel flavour, rank 0 only in the serial one), reading status
 * rows, the collective close that records n_results and `complete`, and the fatal-path
 * flush. Creation is in output_create.c, resume in output_resume.c, writes in output_write.c. */
#include "output/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/escape.h"
#include "output/journal.h"

/* The open output of this process, for kv_output_emergency_flush. */
static kv_output *current_output;

const char *kv_output_flavour(void) { return KV_HDF5_PARALLEL ? "parallel" : "serial"; }

const char *kv_output_mode_name(kv_mode m) { return m == KV_MODE_SPLIT ? "split" : "fleet"; }

void kv_output_user_error(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kv_escape_inplace(msg, sizeof msg);
  fprintf(stderr, "kval: %s\n", msg); /* one write, so lines of several ranks do not interleave */
  fflush(stderr);
}

kv_status kv_output_wait(kv_output *o, MPI_Request *req) {
  const struct timespec pause = {0, 1000000};
  for (;;) {
    int done = 0;
    KV_TRY(CHECK_MPI(MPI_Test(req, &done, MPI_STATUS_IGNORE)));
    if (done) return KV_OK;
    if (o->idle) o->idle();
    nanosleep(&pause, NULL);
  }
}

kv_status kv_output_agree(kv_output *o, kv_status st) {
  int mine = st == KV_OK ? KV_OK : st == KV_REFUSED ? KV_REFUSED : KV_ERR, worst = KV_ERR;
  MPI_Request req;
  if (CHECK_MPI(MPI_Iallreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, o->comm, &req)) || kv_output_wait(o, &req))
    return KV_ERR;
  return worst;
}

void kv_output_set_idle(kv_output *o, void (*idle)(void)) { o->idle = idle; }

#if KV_HDF5_PARALLEL
/* The fatal path of a failed collective call during create: the part is not left behind. */
static char fatal_part[4096];
static void remove_part(void) {
  if (fatal_part[0]) unlink(fatal_part);
}
#endif

kv_status kv_output_collective(kv_output *o, kv_status st, const char *what) {
#if KV_HDF5_PARALLEL
  if (st != KV_OK) {
    snprintf(fatal_part, sizeof fatal_part, "%s", o->part);
    kv_set_fatal_hook(remove_part);
    KV_FATAL("%s failed on this rank (reason above) inside a step every rank makes together; the other ranks "
             "cannot be told safely, so the job ends here%s", what, o->part[0] ? " and the unfinished file is removed" : "");
  }
#else
  (void)o, (void)what;
#endif
  return st;
}

static void family_handles_invalid(kv_out_family *of) {
  of->group = of->status = of->fingerprint = of->checksum = of->message = of->hist = of->part_stats = H5I_INVALID_HID;
  of->fp_distinct = of->fp_majority = of->fp_agrees = H5I_INVALID_HID;
  for (int i = 0; i < KV_N_DOUBLES; i++) of->dbl[i] = H5I_INVALID_HID;
  for (int i = 0; i < KV_N_INTS; i++) of->ints[i] = H5I_INVALID_HID;
}

static void family_handles_close(kv_out_family *of) {
  kv_h5_close_id(&of->status);
  kv_h5_close_id(&of->fingerprint);
  kv_h5_close_id(&of->checksum);
  kv_h5_close_id(&of->message);
  kv_h5_close_id(&of->hist);
  kv_h5_close_id(&of->part_stats);
  kv_h5_close_id(&of->fp_distinct);
  kv_h5_close_id(&of->fp_majority);
  kv_h5_close_id(&of->fp_agrees);
  for (int i = 0; i < KV_N_DOUBLES; i++) kv_h5_close_id(&of->dbl[i]);
  for (int i = 0; i < KV_N_INTS; i++) kv_h5_close_id(&of->ints[i]);
  kv_h5_close_id(&of->group);
}

kv_status kv_output_new(const kv_plan *p, MPI_Comm comm, kv_output **out) {
  *out = NULL;
  MPI_Comm dup;
  KV_TRY(CHECK_MPI(MPI_Comm_dup(comm, &dup)));
  kv_output *o = KV_CALLOC(1, sizeof *o);
  kv_status st = o ? KV_OK : KV_ERR;
  if (o) {
    o->plan = p;
    o->comm = dup;
    o->file = o->t_status = o->t_message = o->t_vstr = H5I_INVALID_HID;
    o->dxpl = H5P_DEFAULT;
    o->target.fd = o->journal_fd = -1;
    /* Errors are printed once, by CHECK_H5 with their reason first, not also by HDF5. */
    if (CHECK_H5(H5Eset_auto2(H5E_DEFAULT, NULL, NULL))) st = KV_ERR;
    if (CHECK_MPI(MPI_Comm_rank(dup, &o->rank)) || CHECK_MPI(MPI_Comm_size(dup, &o->nranks))) st = KV_ERR;
    for (int f = 0; f < p->n_fam; f++) {
      kv_out_family *of = &o->fam[f];
      family_handles_invalid(of);
      of->fp = &p->fam[f];
      of->n_dims = 1 + p->fam[f].n_axes;
      of->dims[0] = (hsize_t)o->nranks;
      for (int a = 0; a < p->fam[f].n_axes; a++) of->dims[1 + a] = (hsize_t)p->fam[f].axis[a].n;
    }
    if (st == KV_OK) st = kv_h5_make_types(o);
#if KV_HDF5_PARALLEL
    if (st == KV_OK) {
      o->dxpl = H5Pcreate(H5P_DATASET_XFER);
      if (CHECK_H5(o->dxpl) || CHECK_H5(H5Pset_dxpl_mpio(o->dxpl, H5FD_MPIO_INDEPENDENT))) st = KV_ERR;
    }
#endif
  }
  int mine = st != KV_OK, any = 1;
  if (CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, dup))) any = 1;
  if (any) {
    if (o) kv_output_free(o);
    else MPI_Comm_free(&dup);
    return KV_ERR;
  }
  *out = o;
  return KV_OK;
}

void kv_output_free(kv_output *o) {
  if (!o) return;
  if (current_output == o) current_output = NULL;
  for (int f = 0; f < o->plan->n_fam; f++) family_handles_close(&o->fam[f]);
  kv_h5_close_id(&o->file);
  kv_h5_close_id(&o->t_status);
  kv_h5_close_id(&o->t_message);
  kv_h5_close_id(&o->t_vstr);
  if (o->dxpl != H5P_DEFAULT) kv_h5_close_id(&o->dxpl);
  for (int i = 0; i < o->n_sending; i++) free(o->sending[i]);
  free(o->sending);
  free(o->send_req);
  if (o->comm != MPI_COMM_NULL) CHECK_MPI(MPI_Comm_free(&o->comm));
  kv_journal_finish(o, 1);
  kv_target_discard(&o->target);
  free(o);
}

#if KV_HDF5_PARALLEL
kv_status kv_output_mpio_fapl(kv_output *o, hid_t *fapl) {
  *fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (CHECK_H5(*fapl) || CHECK_H5(H5Pset_fapl_mpio(*fapl, o->comm, MPI_INFO_NULL)) ||
      CHECK_H5(H5Pset_all_coll_metadata_ops(*fapl, 1)) || CHECK_H5(H5Pset_coll_metadata_write(*fapl, 1)) ||
      kv_h5_no_file_locking(*fapl)) {
    kv_h5_close_id(fapl);
    return KV_ERR;
  }
  return KV_OK;
}
#endif

kv_status kv_output_open_serial(const char *path, hid_t *file) {
  hid_t fapl;
  *file = H5I_INVALID_HID;
  KV_TRY(kv_h5_serial_fapl(&fapl));
  *file = H5Fopen(path, H5F_ACC_RDWR, fapl);
  kv_h5_close_id(&fapl);
  if (CHECK_H5(*file)) {
    kv_output_user_error("cannot open '%s' for writing (HDF5 error above)", path);
    return KV_ERR;
  }
  return KV_OK;
}

static kv_status open_family(kv_output *o, kv_out_family *of) {
  hid_t g = of->group = H5Gopen2(o->file, of->fp->name, H5P_DEFAULT);
  if (CHECK_H5(g)) return KV_ERR;
#define KV_OPEN(slot, name) \
  if (CHECK_H5(slot = H5Dopen2(g, name, H5P_DEFAULT))) return KV_ERR;
  KV_OPEN(of->status, "status")
  KV_OPEN(of->fingerprint, "fingerprint")
  KV_OPEN(of->checksum, "checksum")
  KV_OPEN(of->message, "message")
  KV_OPEN(of->hist, "hist")
  if (kv_family_parts(of->fp->family) > 0) {
    KV_OPEN(of->part_stats, "part_stats")
  }
  KV_OPEN(of->fp_distinct, "fp_distinct")
  KV_OPEN(of->fp_majority, "fp_majority")
  KV_OPEN(of->fp_agrees, "fp_agrees")
#define KV_X(name, member, unit, doc) KV_OPEN(of->dbl[KV_DOUBLE_##name], #name)
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) KV_OPEN(of->ints[KV_INT_##name], #name)
  KV_RESULT_INTS(KV_X)
#undef KV_X
#undef KV_OPEN
  return KV_OK;
}

kv_status kv_output_open_writing(kv_output *o, const char *path, hid_t serial_file) {
  kv_status st = KV_OK;
#if KV_HDF5_PARALLEL
  (void)serial_file;
  hid_t fapl;
  st = kv_output_mpio_fapl(o, &fapl);
  if (st == KV_OK) {
    o->file = H5Fopen(path, H5F_ACC_RDWR, fapl);
    if (CHECK_H5(o->file)) {
      kv_output_user_error("cannot open '%s' collectively for writing (HDF5 error above)", path);
      st = KV_ERR;
    }
    kv_h5_close_id(&fapl);
  }
#else
  (void)path;
  o->file = serial_file;
#endif
  for (int f = 0; st == KV_OK && o->file >= 0 && f < o->plan->n_fam; f++) st = open_family(o, &o->fam[f]);
  st = kv_output_agree(o, kv_output_collective(o, st, "opening the file for writing"));
  o->last_flush = MPI_Wtime();
  if (st == KV_OK && o->file >= 0) current_output = o;
  return st;
}

int kv_output_family_slot(const kv_output *o, int slot) {
  return slot >= 0 && slot < o->plan->n_fam ? slot : -1;
}

kv_status kv_output_read_status(kv_output *o, int f, hsize_t row0, hsize_t n_rows, signed char *buf) {
  kv_out_family *of = &o->fam[f];
  hsize_t start[KV_MAX_AXES + 1] = {0}, count[KV_MAX_AXES + 1];
  memcpy(count, of->dims, sizeof count);
  start[0] = row0;
  count[0] = n_rows;
  hid_t fs, ms;
  signed char dummy;
  KV_TRY(kv_h5_select(of->n_dims, of->dims, start, n_rows ? count : NULL,
                      n_rows ? n_rows * of->fp->n_cells : 1, &fs, &ms));
  kv_status st = CHECK_H5(H5Dread(of->status, o->t_status, ms, fs, o->dxpl, n_rows ? buf : &dummy));
  kv_h5_close_id(&fs);
  kv_h5_close_id(&ms);
  return st;
}

/* Rank 0: count the (rank, valid cell) pairs holding a result per family and decide
 * whether every case of the plan has one (fleet: on every rank; split: on one rank). */
static kv_status count_results(kv_output *o, long long *n_results, long long *complete) {
  *complete = 1;
  for (int f = 0; f < o->plan->n_fam; f++) {
    const kv_family_plan *fp = o->fam[f].fp;
    hsize_t rows = o->rank == 0 ? (hsize_t)o->nranks : 0;
    signed char *status = KV_MALLOC(rows * fp->n_cells);
    if (!status || kv_output_read_status(o, f, 0, rows, status)) {
      free(status);
      return KV_ERR;
    }
    n_results[f] = 0;
    for (size_t c = 0; rows && c < fp->n_cells; c++) {
      if (fp->skip_reason && fp->skip_reason[c]) continue;
      int have = 0;
      for (int r = 0; r < o->nranks; r++) have += status[(size_t)r * fp->n_cells + c] != KV_NOT_RUN;
      n_results[f] += have;
      if (o->plan->mode == KV_MODE_FLEET ? have < o->nranks : have == 0) *complete = 0;
    }
    free(status);
  }
  return KV_OK;
}

/* Record n_results per family and `complete` (collective in the parallel flavour). */
static kv_status finish_attributes(kv_output *o) {
  long long v[2 + KV_MAX_FAMILIES] = {KV_OK, 0}; /* status, complete, n_results... */
  if (o->file >= 0) v[0] = count_results(o, v + 2, &v[1]);
#if KV_HDF5_PARALLEL
  KV_TRY(CHECK_MPI(MPI_Bcast(v, 2 + o->plan->n_fam, MPI_LONG_LONG, 0, o->comm)));
#endif
  if (v[0] != KV_OK || o->file < 0) return (kv_status)v[0];
  for (int f = 0; f < o->plan->n_fam; f++) KV_TRY(kv_h5_attr_set_i64(o->fam[f].group, "n_results", v[2 + f]));
  return kv_h5_attr_set_i64(o->file, "complete", v[1]);
}

kv_status kv_output_close(kv_output *o) {
  kv_status st = KV_OK;
#if !KV_HDF5_PARALLEL
  if (o->rank == 0) {
    st = kv_output_drain(o, 1);
  } else {
    st = kv_output_send(o, NULL);
    if (st == KV_OK && o->n_sending > 0)
      st = CHECK_MPI(MPI_Waitall(o->n_sending, o->send_req, MPI_STATUSES_IGNORE));
  }
#endif
  if (kv_output_agree(o, st) == KV_OK) st = kv_output_collective(o, finish_attributes(o), "recording n_results");
  if (st == KV_OK && o->file >= 0)
    st = kv_output_collective(o, CHECK_H5(H5Fflush(o->file, H5F_SCOPE_GLOBAL)), "flushing the file");
  for (int f = 0; f < o->plan->n_fam; f++) family_handles_close(&o->fam[f]);
  if (o->file >= 0 && CHECK_H5(H5Fclose(o->file))) st = kv_output_collective(o, KV_ERR, "closing the file");
  o->file = H5I_INVALID_HID;
  if (o->rank == 0) kv_target_trim(&o->target);
  st = kv_output_agree(o, st);
  /* Every row of every rank is in the closed file now: the journals are no longer needed. */
  if (st == KV_OK) kv_journal_finish(o, 0);
  kv_output_free(o);
  return st;
}

void kv_output_emergency_flush(void) {
#if !KV_HDF5_PARALLEL
  kv_output *o = current_output;
  if (!o || o->file < 0) return;
  kv_output_drain(o, 0);
  CHECK_H5(H5Fflush(o->file, H5F_SCOPE_GLOBAL));
#endif
}
