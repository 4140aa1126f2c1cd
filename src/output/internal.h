/* output_internal.h - private state and helpers of the HDF5 output module (output*.c): the
 * kv_output struct with its open dataset handles, the HDF5 type and attribute helpers, the
 * two layout phases (collective structure, rank-0 description) and the shared open/agree
 * steps of create and resume. Not for use outside src/output*.c. */
#ifndef KVAL_OUTPUT_INTERNAL_H
#define KVAL_OUTPUT_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <hdf5.h>
#include <hdf5_hl.h>
#include <mpi.h>

#include "core/check.h"
#include "output/output.h"
#include "output/target.h"

#ifndef KV_HDF5_PARALLEL
#error "KV_HDF5_PARALLEL must be defined to 1 (parallel HDF5) or 0 (serial HDF5)"
#endif
#if KV_HDF5_PARALLEL && !defined(H5_HAVE_PARALLEL)
#error "KV_HDF5_PARALLEL is 1 but these HDF5 headers are the serial flavour"
#endif

#define KV_LAYOUT_VERSION 3

/* Counts of the result fields from the X-macro lists of result.h. */
enum {
#define KV_X(name, member, unit, doc) KV_DOUBLE_##name,
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
  KV_N_DOUBLES
};
enum {
#define KV_X(name, member, unit, doc) KV_INT_##name,
  KV_RESULT_INTS(KV_X)
#undef KV_X
  KV_N_INTS
};

/* Message tags of the serial flavour (on the module's own duplicated communicator). */
enum { KV_TAG_RESULT = 1, KV_TAG_DONE = 2 };

/* Fill values of the family datasets. */
#define KV_FILL_INT (-1)
#define KV_FILL_AGREES 2

/* Open handles of one family group; dims = [nranks, axis lengths...]. */
typedef struct {
  const kv_family_plan *fp;
  int n_dims; /* 1 + number of axes */
  hsize_t dims[KV_MAX_AXES + 2];
  hid_t group, status, fingerprint, checksum, message, hist;
  hid_t part_stats; /* [rank, axes..., part, part_stat] of a family with parts, else invalid */
  hid_t dbl[KV_N_DOUBLES], ints[KV_N_INTS];
  hid_t fp_distinct, fp_majority, fp_agrees;
} kv_out_family;

struct kv_output {
  const kv_plan *plan;
  MPI_Comm comm; /* duplicate of the caller's communicator */
  int rank, nranks;
  hid_t file;    /* H5I_INVALID_HID on ranks that hold no file handle */
  hid_t dxpl;    /* independent MPI-IO transfer (parallel) or H5P_DEFAULT */
  hid_t t_status, t_message, t_vstr; /* enum int8, 96-byte string, variable UTF-8 string */
  kv_out_family fam[KV_MAX_FAMILIES];
  double last_flush; /* MPI_Wtime of the last flush */
  uint64_t file_id;  /* root attribute file_id: ties the journals to this file */
  char part[4096];   /* the part being laid out (create), "" once published */
  kv_target target;  /* rank 0: the lock on the file, the part while it is laid out */
  int journal_fd;    /* this rank's journal (journal.c), -1 when none */
  char journal[4160];
  void (*idle)(void); /* called while this rank waits for others (stall detection) */
  /* serial flavour, non-root ranks: results in flight to rank 0 */
  kv_result **sending;
  MPI_Request *send_req;
  int n_sending, cap_sending;
  int n_done; /* serial flavour, rank 0: "done" messages received */
};

/* --- output_h5.c: types, attributes, selections --- */
kv_status kv_h5_make_types(kv_output *o);
/* File access list of the serial (sec2) handles: no data sieve buffer, so every H5Dwrite of
 * a result reaches the operating system at once and in program order, and a killed process
 * keeps every result it wrote without waiting for a flush. */
kv_status kv_h5_serial_fapl(hid_t *fapl);
/* HDF5's own file lock off: kval's lock (target.c) is the one, on every file system and in
 * both flavours (HDF5's flock is emulated as a whole-file POSIX lock on NFS and would
 * collide with it). */
kv_status kv_h5_no_file_locking(hid_t fapl);
void kv_h5_close_id(hid_t *id); /* close any kind of handle, then set it invalid */
kv_status kv_h5_attr_str(hid_t loc, hid_t t_vstr, const char *name, const char *value);
kv_status kv_h5_attr_i64(hid_t loc, const char *name, long long value);
kv_status kv_h5_attr_u64(hid_t loc, const char *name, unsigned long long value);
kv_status kv_h5_attr_f64(hid_t loc, const char *name, double value);
/* Overwrite an existing integer attribute (collective in the parallel flavour). */
kv_status kv_h5_attr_set_i64(hid_t loc, const char *name, long long value);
/* Read attributes; *found = 0 (no error printed) when absent. A string is malloc'ed. */
kv_status kv_h5_attr_read_str(hid_t loc, hid_t t_vstr, const char *name, char **value, int *found);
kv_status kv_h5_attr_read_i64(hid_t loc, const char *name, long long *value, int *found);
kv_status kv_h5_attr_read_u64(hid_t loc, const char *name, unsigned long long *value, int *found);
/* Dataset of file type `t` with the fill value `fill` (of memory type fill_type; NULL: zeros),
 * contiguous, allocated and filled at creation. */
kv_status kv_h5_create_dataset(hid_t loc, const char *name, hid_t t, int rank, const hsize_t *dims,
                               hid_t fill_type, const void *fill, hid_t *ds);
/* File space of `dims` with the block [start, start+count) selected, or nothing when
 * count == NULL; the matching memory space of `n_mem` elements (none selected likewise). */
kv_status kv_h5_select(int rank, const hsize_t *dims, const hsize_t *start, const hsize_t *count,
                       hsize_t n_mem, hid_t *fspace, hid_t *mspace);
/* Run `call` with HDF5's automatic error printing off (expected failures only). */
#define KV_H5_QUIET(call)                                                                      \
  do {                                                                                        \
    H5E_auto2_t kv_q_fn;                                                                      \
    void *kv_q_data;                                                                          \
    CHECK_H5(H5Eget_auto2(H5E_DEFAULT, &kv_q_fn, &kv_q_data));                                \
    CHECK_H5(H5Eset_auto2(H5E_DEFAULT, NULL, NULL));                                          \
    call;                                                                                     \
    CHECK_H5(H5Eset_auto2(H5E_DEFAULT, kv_q_fn, kv_q_data));                                  \
  } while (0)

/* --- output_layout.c: the two phases that lay the file out --- */
/* Phase 1 (collective in the parallel flavour): the family groups and their per-cell
 * datasets with fill values, allocated and filled at creation. */
kv_status kv_layout_structure(kv_output *o, hid_t file);
/* Phase 2 (rank 0, serial handle): root attributes, /ranks, family attributes, dimension
 * scales with their values, attached; skipped cells marked on every rank. */
kv_status kv_layout_describe(kv_output *o, hid_t file, const kv_deck *d, const kv_run_meta *m,
                             const kv_rank_info *infos);

/* The [run] settings that shape results, other than the seed (compared on its own), as one
 * line ("warmup=2 min_reps=5 ..."): the root attribute run_settings, compared by --resume. */
void kv_layout_run_settings(const kv_run_settings *rs, char *buf, size_t n);

/* Bytes the file will take (datasets allocated at creation, attributes, metadata), with a
 * margin: what create reserves before HDF5 writes anything. */
double kv_layout_bytes(const kv_output *o, const kv_deck *d);

/* --- output.c: lifecycle shared by create and resume --- */
/* A user-facing error: "kval: <message>" on stderr. */
void kv_output_user_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
kv_status kv_output_new(const kv_plan *p, MPI_Comm comm, kv_output **o);
void kv_output_free(kv_output *o); /* closes every handle, frees the communicator */
/* MPI_Allreduce(MAX) of a status (KV_OK < KV_ERR < KV_REFUSED) so every rank takes the
 * same branch; waits through kv_output_wait. */
kv_status kv_output_agree(kv_output *o, kv_status st);
/* Wait for a request, calling o->idle meanwhile (a rank that stopped is noticed). */
kv_status kv_output_wait(kv_output *o, MPI_Request *req);
/* After an HDF5 call that every rank makes together (parallel flavour): if it failed here,
 * the other ranks may wait inside HDF5 for a step this rank never takes, so no agreement is
 * possible: report `what` and end the job through the fatal path (exit 3), which first
 * removes an unpublished part. Serial flavour, or success: returns st. */
kv_status kv_output_collective(kv_output *o, kv_status st, const char *what);
/* Make `o` ready for kv_output_write. Parallel: every rank opens `path` with MPI-IO (file
 * must be closed everywhere). Serial: rank 0 adopts `serial_file` (others pass
 * H5I_INVALID_HID). Opens every family dataset. Collective. */
kv_status kv_output_open_writing(kv_output *o, const char *path, hid_t serial_file);
#if KV_HDF5_PARALLEL
/* File access list for collective MPI-IO with collective metadata reads and writes. */
kv_status kv_output_mpio_fapl(kv_output *o, hid_t *fapl);
#endif
/* Open a file with the sec2 driver (rank 0 phases of the parallel flavour, resume). */
kv_status kv_output_open_serial(const char *path, hid_t *file);
/* The family slot of `o` a kv_result names (kv_family_plan.slot), or -1 when it names none. */
int kv_output_family_slot(const kv_output *o, int slot);
/* Read the status rows [row0, row0 + n_rows) of family slot f into buf (n_rows * cells
 * int8); collective in the parallel flavour (n_rows may be 0 on some ranks). */
kv_status kv_output_read_status(kv_output *o, int f, hsize_t row0, hsize_t n_rows, signed char *buf);
const char *kv_output_mode_name(kv_mode m);

/* --- output_write.c --- */
#if !KV_HDF5_PARALLEL
/* Serial flavour, rank 0: receive and write every result that has arrived (blocking until
 * `until_done` done messages when nonzero). */
kv_status kv_output_drain(kv_output *o, int until_done);
/* Serial flavour, non-root ranks: send r to rank 0 (NULL: the final "done" message)
 * without blocking; completed sends are reclaimed. */
kv_status kv_output_send(kv_output *o, const kv_result *r);
#endif

#endif
