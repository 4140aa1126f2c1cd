/* target.h - the output file as a file-system object (target.c): what may be written, the
 * exclusive PATH.part-XXXXXXXX a run lays the file out in, the lock a run holds on its file
 * for its lifetime, and publishing the part as PATH. Rank 0 only, no MPI, no HDF5. */
#ifndef KVAL_OUTPUT_TARGET_H
#define KVAL_OUTPUT_TARGET_H

#include "core/check.h"

typedef struct {
  char path[4096], part[4096];
  int fd;        /* holds this run's lock on the file (part, then published file); -1 none */
  int published; /* the file is at path (never unlink it) */
  double need;   /* bytes reserved for the file */
} kv_target;

/* May `path` be written (create; force: replace an existing one) or continued (resume)?
 * KV_OK; KV_REFUSED (reported; exit 2): it exists without force, is not a regular file, is
 * the deck, or another kval job holds it; KV_ERR (reported; exit 3): its directory is not
 * writable or it cannot be examined. */
kv_status kv_target_check(const char *path, int force, int resume, const char *deck_path);

/* Create PATH.part-XXXXXXXX exclusively, lock it and reserve `need` bytes for it (a full
 * disk is KV_ERR with "No space left on device" and what is needed and free). Stale parts
 * of killed jobs are removed first. */
kv_status kv_target_make_part(kv_target *t, const char *path, double need);
/* Reserve the space again (truncating the part, as HDF5's create does, releases it). */
kv_status kv_target_reserve_again(kv_target *t);

/* Rename the part to its path: without force, never over a file that exists by now (an
 * earlier check may be stale); with force, only over a regular file no job is writing. */
kv_status kv_target_publish(kv_target *t, int force);

/* --resume: open and lock an existing file; KV_REFUSED when another job holds it. */
kv_status kv_target_lock_existing(kv_target *t, const char *path);

/* After the file is closed: give back the reserved space it did not use (the reservation
 * keeps blocks past the end of the file until it is truncated). */
void kv_target_trim(kv_target *t);

/* Release the lock; an unpublished part is removed. */
void kv_target_discard(kv_target *t);

#endif
