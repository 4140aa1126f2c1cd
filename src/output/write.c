/* output_write.c - results and fingerprints into the open file. Parallel flavour: one
 * round per kv_output_write call; an MPI_Allreduce agrees on the stop flag and on rank 0's
 * flush decision, then a rank with a result writes its own cell of each dataset of its family
 * with independent MPI-IO (no other rank takes part: with collective writes, every rank joining
 * each of the cell's ~50 dataset writes with an empty selection, four ranks on two loaded cores
 * spent most of their time waiting on descheduled peers). Serial flavour: non-root ranks send
 * their rows to rank 0 (MPI_Isend), which writes its own and drains whatever has arrived. Both
 * flush when the interval passed. */
#include "output/internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dtype.h"
#include "output/row.h"

/* Family slot of a result, or -1 (reported) when the row does not fit the plan. */
static int result_slot(const kv_output *o, const kv_result *r) {
  int f = kv_output_family_slot(o, r->family);
  if (f < 0)
    kv_report(__FILE__, __LINE__, "output", "result of rank %d names family %d, which is not in the plan", r->rank,
              r->family);
  else if (r->rank < 0 || r->rank >= o->nranks)
    kv_report(__FILE__, __LINE__, "output", "result names rank %d of %d", r->rank, o->nranks);
  else if (r->cell >= o->fam[f].fp->n_cells)
    kv_report(__FILE__, __LINE__, "output", "result of rank %d names cell %llu of %s, which has %zu cells", r->rank,
              (unsigned long long)r->cell, o->fam[f].fp->name, o->fam[f].fp->n_cells);
  else if (r->status < 0 || r->status >= KV_NSTATUS)
    kv_report(__FILE__, __LINE__, "output", "result of rank %d has status %d", r->rank, (int)r->status);
  else
    return f;
  return -1;
}

/* Write every field of r into its cell of family slot f. */
static kv_status write_cell(kv_output *o, int f, const kv_result *r) {
  const kv_out_family *of = &o->fam[f];
  int nd = of->n_dims;
  const int n_parts = kv_family_parts(of->fp->family);
  hsize_t start[KV_MAX_AXES + 3] = {0}, count[KV_MAX_AXES + 3], hdims[KV_MAX_AXES + 2];
  memcpy(hdims, of->dims, sizeof hdims);
  hdims[nd] = KV_HIST_BINS;
  for (int i = 0; i < nd; i++) count[i] = 1;
  count[nd] = KV_HIST_BINS;
  start[0] = (hsize_t)r->rank;
  uint64_t cell = r->cell;
  for (int a = nd - 2; a >= 0; a--) {
    start[1 + a] = cell % of->dims[1 + a];
    cell /= of->dims[1 + a];
  }
  signed char status = (signed char)r->status;
  char message[KV_MESSAGE_LEN];
  strncpy(message, r->message, KV_MESSAGE_LEN);
  unsigned char row[KV_ROW_BYTES];
  kv_row_from_result(r, row);
  const uint64_t checksum = kv_row_checksum(row);

  hid_t fs, ms, hfs, hms;
  KV_TRY(kv_h5_select(nd, of->dims, start, count, 1, &fs, &ms));
  kv_status st = kv_h5_select(nd + 1, hdims, start, count, KV_HIST_BINS, &hfs, &hms);
#define KV_W(ds, type, buf) \
  if (st == KV_OK) st = CHECK_H5(H5Dwrite(ds, type, ms, fs, o->dxpl, buf));
  KV_W(of->fingerprint, H5T_NATIVE_UINT64, &r->fingerprint)
  KV_W(of->message, o->t_message, message)
#define KV_X(name, member, unit, doc) KV_W(of->dbl[KV_DOUBLE_##name], H5T_NATIVE_DOUBLE, &r->member)
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc)                    \
  {                                                      \
    const int64_t v = (int64_t)r->member;              \
    KV_W(of->ints[KV_INT_##name], H5T_NATIVE_INT64, &v) \
  }
  KV_RESULT_INTS(KV_X)
#undef KV_X
  if (st == KV_OK) st = CHECK_H5(H5Dwrite(of->hist, H5T_NATIVE_UINT64, hms, hfs, o->dxpl, r->stats.hist));
  if (st == KV_OK && n_parts > 0) {
    hid_t pfs, pms;
    hsize_t pdims[KV_MAX_AXES + 3], pcount[KV_MAX_AXES + 3];
    memcpy(pdims, of->dims, sizeof of->dims);
    memcpy(pcount, count, sizeof pcount);
    pdims[nd] = pcount[nd] = (hsize_t)n_parts;
    pdims[nd + 1] = pcount[nd + 1] = KV_N_PART_STATS;
    st = kv_h5_select(nd + 2, pdims, start, pcount, (hsize_t)n_parts * KV_N_PART_STATS, &pfs, &pms);
    if (st == KV_OK) st = CHECK_H5(H5Dwrite(of->part_stats, H5T_NATIVE_DOUBLE, pms, pfs, o->dxpl, &r->part_stats[0][0]));
    kv_h5_close_id(&pfs);
    kv_h5_close_id(&pms);
  }
  KV_W(of->checksum, H5T_NATIVE_UINT64, &checksum)
  /* Status last: the writes reach the file at once and in this order (serial: no data
   * sieve, see kv_h5_serial_fapl; parallel: MPI-IO writes), so a process killed mid-cell
   * leaves status not_run and --resume reruns the cell instead of keeping it half-written. */
  KV_W(of->status, o->t_status, &status)
#undef KV_W
  kv_h5_close_id(&fs);
  kv_h5_close_id(&ms);
  kv_h5_close_id(&hfs);
  kv_h5_close_id(&hms);
  if (st != KV_OK)
    kv_report(__FILE__, __LINE__, "output", "cannot write the result of rank %d, %s cell %llu", r->rank,
              of->fp->name, (unsigned long long)r->cell);
  return st;
}

static int flush_due(const kv_output *o) { return MPI_Wtime() - o->last_flush >= o->plan->run.flush_interval; }

static kv_status flush(kv_output *o) {
  o->last_flush = MPI_Wtime();
  return CHECK_H5(H5Fflush(o->file, H5F_SCOPE_GLOBAL));
}

#if KV_HDF5_PARALLEL
kv_status kv_output_write(kv_output *o, const kv_result *r, int *stop) {
  enum { STOP, FLUSH, FAILED, N_AGREED };
  int v[N_AGREED] = {0}, all[N_AGREED], f = -1;
  v[STOP] = *stop != 0;
  v[FLUSH] = o->rank == 0 && flush_due(o);
  if (r && (f = result_slot(o, r)) < 0) v[FAILED] = 1;
  MPI_Request req;
  KV_TRY(CHECK_MPI(MPI_Iallreduce(v, all, N_AGREED, MPI_INT, MPI_MAX, o->comm, &req)));
  KV_TRY(kv_output_wait(o, &req));
  kv_status st = f >= 0 ? write_cell(o, f, r) : KV_OK;
  if (all[FLUSH] && flush(o) != KV_OK) st = KV_ERR;
  *stop = all[STOP];
  st = kv_output_collective(o, st, "writing a round of results");
  return all[FAILED] ? KV_ERR : st; /* a row outside the plan: agreed, nothing written for it */
}
#else
/* Free the buffers of completed sends. */
static kv_status reclaim_sends(kv_output *o) {
  for (int i = 0; i < o->n_sending;) {
    int flag = 0;
    KV_TRY(CHECK_MPI(MPI_Test(&o->send_req[i], &flag, MPI_STATUS_IGNORE)));
    if (!flag) {
      i++;
      continue;
    }
    free(o->sending[i]);
    o->n_sending--;
    o->sending[i] = o->sending[o->n_sending];
    o->send_req[i] = o->send_req[o->n_sending];
  }
  return KV_OK;
}

kv_status kv_output_send(kv_output *o, const kv_result *r) {
  KV_TRY(reclaim_sends(o));
  if (o->n_sending == o->cap_sending) {
    int cap = o->cap_sending ? 2 * o->cap_sending : 16;
    kv_result **s = realloc(o->sending, sizeof *s * (size_t)cap);
    if (CHECK_ALLOC(s)) return KV_ERR;
    o->sending = s;
    MPI_Request *q = realloc(o->send_req, sizeof *q * (size_t)cap);
    if (CHECK_ALLOC(q)) return KV_ERR;
    o->send_req = q;
    o->cap_sending = cap;
  }
  kv_result *copy = NULL;
  if (r) {
    copy = KV_MALLOC(sizeof *copy);
    if (!copy) return KV_ERR;
    *copy = *r;
  }
  int i = o->n_sending;
  if (CHECK_MPI(MPI_Isend(copy, copy ? (int)sizeof *copy : 0, MPI_BYTE, 0, copy ? KV_TAG_RESULT : KV_TAG_DONE,
                          o->comm, &o->send_req[i]))) {
    free(copy);
    return KV_ERR;
  }
  o->sending[i] = copy;
  o->n_sending++;
  return KV_OK;
}

kv_status kv_output_drain(kv_output *o, int until_done) {
  kv_status st = KV_OK;
  for (;;) {
    MPI_Status s;
    int flag = 1;
    KV_TRY(CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, o->comm, &flag, &s)));
    if (!flag && until_done && o->n_done < o->nranks - 1) { /* wait for the others, noticing a stall */
      const struct timespec pause = {0, 1000000};
      if (o->idle) o->idle();
      nanosleep(&pause, NULL);
      continue;
    }
    if (!flag) return st;
    int bytes = 0;
    KV_TRY(CHECK_MPI(MPI_Get_count(&s, MPI_BYTE, &bytes)));
    kv_result r;
    if (s.MPI_TAG != KV_TAG_RESULT || bytes != (int)sizeof r) {
      KV_TRY(CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, o->comm, MPI_STATUS_IGNORE)));
      if (s.MPI_TAG == KV_TAG_DONE && bytes == 0) {
        o->n_done++;
      } else {
        kv_report(__FILE__, __LINE__, "output", "unexpected message from rank %d (tag %d, %d bytes)",
                  s.MPI_SOURCE, s.MPI_TAG, bytes);
        st = KV_ERR;
      }
      continue;
    }
    KV_TRY(CHECK_MPI(MPI_Recv(&r, (int)sizeof r, MPI_BYTE, s.MPI_SOURCE, KV_TAG_RESULT, o->comm, MPI_STATUS_IGNORE)));
    int f = result_slot(o, &r);
    if (f < 0 || r.rank != s.MPI_SOURCE) {
      if (f >= 0) kv_report(__FILE__, __LINE__, "output", "rank %d sent a result of rank %d", s.MPI_SOURCE, r.rank);
      st = KV_ERR;
    } else if (write_cell(o, f, &r) != KV_OK) {
      st = KV_ERR;
    }
  }
}

kv_status kv_output_poll(kv_output *o) {
  if (o->rank != 0) return KV_OK;
  kv_status st = kv_output_drain(o, 0);
  if (flush_due(o) && flush(o) != KV_OK) st = KV_ERR;
  return st;
}

kv_status kv_output_write(kv_output *o, const kv_result *r, int *stop) {
  (void)stop; /* serial flavour: each rank keeps its own wish to stop */
  if (o->rank != 0) {
    if (r && result_slot(o, r) < 0) return KV_ERR;
    return r ? kv_output_send(o, r) : reclaim_sends(o);
  }
  kv_status st = KV_OK;
  int f;
  if (r && ((f = result_slot(o, r)) < 0 || write_cell(o, f, r) != KV_OK)) st = KV_ERR;
  if (kv_output_drain(o, 0) != KV_OK) st = KV_ERR;
  if (flush_due(o) && flush(o) != KV_OK) st = KV_ERR;
  return st;
}
#endif

#if KV_HDF5_PARALLEL
kv_status kv_output_poll(kv_output *o) {
  (void)o; /* every write is a collective round */
  return KV_OK;
}
#endif

/* Family slot f of the fingerprint comparison: rank 0 writes whole datasets (cells not in
 * fp keep their fill), other ranks take part with empty selections (parallel flavour). */
static kv_status write_fp_family(kv_output *o, int f, const kv_fp_case *fp, size_t n) {
  const kv_out_family *of = &o->fam[f];
  size_t cells = o->rank == 0 ? of->fp->n_cells : 0, nr = (size_t)o->nranks;
  int32_t *distinct = KV_CALLOC(cells, sizeof *distinct);
  uint64_t *majority = KV_CALLOC(cells, sizeof *majority);
  signed char *agrees = KV_MALLOC(cells * nr);
  if (!distinct || !majority || !agrees) {
    free(distinct);
    free(majority);
    free(agrees);
    return KV_ERR;
  }
  memset(agrees, KV_FILL_AGREES, cells * nr);
  for (size_t i = 0; cells && i < n; i++) {
    if (kv_output_family_slot(o, fp[i].family) != f) continue;
    distinct[fp[i].cell] = fp[i].n_distinct;
    majority[fp[i].cell] = fp[i].majority;
    for (size_t r = 0; r < nr; r++) agrees[r * cells + fp[i].cell] = (signed char)fp[i].agrees[r];
  }
  hsize_t start[KV_MAX_AXES + 1] = {0};
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  int nd = of->n_dims;
  kv_status st = kv_h5_select(nd - 1, of->dims + 1, start, cells ? of->dims + 1 : NULL, cells ? cells : 1, &fs, &ms);
  if (st == KV_OK) st = CHECK_H5(H5Dwrite(of->fp_distinct, H5T_NATIVE_INT32, ms, fs, o->dxpl, distinct));
  if (st == KV_OK) st = CHECK_H5(H5Dwrite(of->fp_majority, H5T_NATIVE_UINT64, ms, fs, o->dxpl, majority));
  kv_h5_close_id(&fs);
  kv_h5_close_id(&ms);
  if (st == KV_OK) st = kv_h5_select(nd, of->dims, start, cells ? of->dims : NULL, cells ? cells * nr : 1, &fs, &ms);
  if (st == KV_OK) st = CHECK_H5(H5Dwrite(of->fp_agrees, H5T_NATIVE_INT8, ms, fs, o->dxpl, agrees));
  kv_h5_close_id(&fs);
  kv_h5_close_id(&ms);
  free(distinct);
  free(majority);
  free(agrees);
  return st;
}

kv_status kv_output_fingerprints(kv_output *o, const kv_fp_case *fp, size_t n) {
  kv_status st = KV_OK;
  for (size_t i = 0; o->rank == 0 && i < n; i++) {
    int f = kv_output_family_slot(o, fp[i].family);
    if (f < 0 || fp[i].cell >= o->fam[f].fp->n_cells || !fp[i].agrees) {
      kv_report(__FILE__, __LINE__, "output", "fingerprint comparison %zu names family %d cell %llu, not in the plan",
                i, fp[i].family, (unsigned long long)fp[i].cell);
      st = KV_ERR;
    }
  }
  KV_TRY(kv_output_agree(o, st));
  for (int f = 0; st == KV_OK && o->file >= 0 && f < o->plan->n_fam; f++) st = write_fp_family(o, f, fp, n);
  if (st == KV_OK && o->file >= 0) st = flush(o);
  return kv_output_agree(o, kv_output_collective(o, st, "writing the fingerprint comparison"));
}
