/* journal.c - the per-rank journal PATH.journal-<rank>: every rank appends each row it
 * finishes (and fdatasyncs it) before the row travels to its writer, so a finished case
 * survives a kill of any rank or of the whole job even when its writer had not got to it
 * (serial HDF5: rank 0 busy with its own case; parallel HDF5: a round waits for the slowest
 * rank). --resume merges the journals into the file first; a run that closes the file
 * cleanly removes them. A record is self-describing and checked: magic, the file's file_id,
 * a hash of the row's field list, the row length, the rank, the family name, the cell, the
 * canonical row (row.c), and an XXH64 of all of it, so a torn last record, a journal of
 * another file at the same path or of a kval with other fields is never merged. */
#include "output/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numerics/fingerprint.h"
#include "output/row.h"

#define MAGIC "KVJOURN1"
#define HEADER 56 /* magic 8, file_id 8, fields 8, row_bytes 4, rank 4, family 16, cell 8 */
#define RECORD (HEADER + KV_ROW_BYTES + 8)

static void put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void kv_journal_path(const char *path, int rank, char *buf, size_t n) { snprintf(buf, n, "%s.journal-%d", path, rank); }

static void disable(kv_output *o, const char *why) {
  kv_output_user_error("warning: rank %d: journal '%s': %s: from now on a finished case of this rank that its "
                       "writer has not written yet is lost if the job is killed", o->rank, o->journal, why);
  if (o->journal_fd >= 0) close(o->journal_fd);
  o->journal_fd = -1;
}

void kv_journal_start(kv_output *o, const char *path) {
  kv_journal_path(path, o->rank, o->journal, sizeof o->journal);
  o->journal_fd = open(o->journal, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
  if (o->journal_fd < 0) disable(o, strerror(errno));
}

void kv_journal_append(kv_output *o, const kv_result *r) {
  if (o->journal_fd < 0) return;
  int f = kv_output_family_slot(o, r->family);
  if (f < 0) return; /* kv_output_write reports a row outside the plan */
  unsigned char rec[RECORD];
  memset(rec, 0, HEADER);
  memcpy(rec, MAGIC, 8);
  put(rec + 8, o->file_id, 8);
  put(rec + 16, kv_row_fields_hash(), 8);
  put(rec + 24, KV_ROW_BYTES, 4);
  put(rec + 28, (uint64_t)(uint32_t)r->rank, 4);
  strncpy((char *)rec + 32, o->fam[f].fp->name, 16);
  put(rec + 48, r->cell, 8);
  kv_row_from_result(r, rec + HEADER);
  put(rec + HEADER + KV_ROW_BYTES, kv_fingerprint(rec, HEADER + KV_ROW_BYTES), 8);
  ssize_t n = write(o->journal_fd, rec, sizeof rec);
  if (n != (ssize_t)sizeof rec) disable(o, n < 0 ? strerror(errno) : "short write (is the disk full?)");
  else if (fdatasync(o->journal_fd) != 0 && errno != EINVAL) disable(o, strerror(errno));
}

/* One record: 1 when it belongs to this file and rank and fits the plan (*r filled). */
static int record_ok(kv_output *o, const unsigned char *rec, kv_result *r) {
  if (memcmp(rec, MAGIC, 8) != 0 || get(rec + 8, 8) != o->file_id || get(rec + 16, 8) != kv_row_fields_hash() ||
      get(rec + 24, 4) != KV_ROW_BYTES || get(rec + 28, 4) != (uint64_t)o->rank ||
      get(rec + HEADER + KV_ROW_BYTES, 8) != kv_fingerprint(rec, HEADER + KV_ROW_BYTES))
    return 0;
  char name[17];
  memcpy(name, rec + 32, 16);
  name[16] = '\0';
  for (int f = 0; f < o->plan->n_fam; f++) {
    if (strcmp(o->fam[f].fp->name, name) != 0) continue;
    uint64_t cell = get(rec + 48, 8);
    if (cell >= o->fam[f].fp->n_cells) return 0;
    kv_result_init(r, o->rank, o->fam[f].fp->slot, cell);
    kv_row_to_result(rec + HEADER, r);
    return r->status > KV_NOT_RUN && r->status < KV_NSTATUS;
  }
  return 0;
}

kv_status kv_journal_read(kv_output *o, const char *path, kv_result **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  char jpath[sizeof o->journal];
  kv_journal_path(path, o->rank, jpath, sizeof jpath);
  FILE *f = fopen(jpath, "rb");
  if (!f) return KV_OK; /* no journal: nothing to merge */
  size_t cap = 0, bad = 0;
  unsigned char rec[RECORD];
  kv_status st = KV_OK;
  for (size_t got; (got = fread(rec, 1, sizeof rec, f)) > 0;) {
    kv_result r;
    if (got < sizeof rec || !record_ok(o, rec, &r)) {
      bad++;
      continue;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      kv_result *grown = realloc(*rows, cap * sizeof *grown);
      if (CHECK_ALLOC(grown)) {
        st = KV_ERR;
        break;
      }
      *rows = grown;
    }
    (*rows)[(*n)++] = r;
  }
  fclose(f);
  if (bad)
    kv_output_user_error("warning: rank %d: journal '%s': %zu record(s) not merged (cut short by a kill, or of "
                         "another file or kval version); those cases run again", o->rank, jpath, bad);
  return st;
}

void kv_journal_finish(kv_output *o, int keep) {
  if (o->journal_fd >= 0) close(o->journal_fd);
  o->journal_fd = -1;
  if (!keep && o->journal[0]) unlink(o->journal);
}

void kv_output_journal(kv_output *o, const kv_result *r) { kv_journal_append(o, r); }
