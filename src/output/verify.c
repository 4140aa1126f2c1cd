/* verify.c - --resume keeps only rows it can vouch for. On rank 0, through the serial handle
 * of the probe, every row of every rank whose status is not not_run is checked: the status
 * is one of this kval's (not a byte overwritten with 7 or 200), a cell the plan skips holds
 * status skipped, and the row's canonical bytes (row.c) hash to the value in its `checksum`
 * cell, so a flipped fingerprint, statistic or message is found. The first damaged row is
 * named with its case and the count of all of them; the file is then refused, unchanged. */
#include "output/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "output/row.h"

/* One rank's row [r, all cells, tail...] of a family dataset into buf (mt: memory type); tail
 * holds the lengths of the n_tail trailing dimensions (hist: the bins; part_stats: parts and
 * statistics). */
static kv_status read_row(hid_t g, const char *name, const kv_out_family *of, int n_tail, const hsize_t *tail, hid_t mt,
                          int r, void *buf) {
  hsize_t dims[KV_MAX_AXES + 3], start[KV_MAX_AXES + 3] = {0}, count[KV_MAX_AXES + 3];
  const int nd = of->n_dims + n_tail;
  hsize_t per_cell = 1;
  memcpy(dims, of->dims, sizeof of->dims);
  for (int i = 0; i < n_tail; i++) dims[of->n_dims + i] = tail[i], per_cell *= tail[i];
  memcpy(count, dims, sizeof count);
  start[0] = (hsize_t)r;
  count[0] = 1;
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT), fs, ms;
  if (CHECK_H5(ds)) {
    kv_output_user_error("dataset /%s/%s cannot be read (it is missing or damaged)", of->fp->name, name);
    return KV_ERR;
  }
  kv_status st = kv_h5_select(nd, dims, start, count, of->fp->n_cells * per_cell, &fs, &ms);
  if (st == KV_OK) {
    st = CHECK_H5(H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf));
    kv_h5_close_id(&fs);
    kv_h5_close_id(&ms);
  }
  kv_h5_close_id(&ds);
  return st;
}

typedef struct {
  size_t n_bad;
  char first[512];
} damage;

/* Count a damaged row; the first one is described (its case and `why`, with `status`). */
static void note(damage *dm, const kv_out_family *of, int r, size_t cell, const char *why, int status) {
  if (dm->n_bad++) return;
  kv_case c;
  char what[256];
  kv_plan_case_at(of->fp, cell, 0, &c);
  kv_case_describe(&c, what, sizeof what);
  snprintf(dm->first, sizeof dm->first, "rank %d, %s (status %d): %s", r, what, status, why);
}

/* The rows of rank r of one family, with all their fields read into the buffers. */
static void check_rows(const kv_out_family *of, int r, const signed char *status, const uint64_t *fp,
                       const uint64_t *sum, const char *msg, double *const *dbl, int64_t *const *ints,
                       const uint64_t *hist, const double *parts, damage *dm) {
  size_t n = of->fp->n_cells;
  const int n_parts = kv_family_parts(of->fp->family);
  for (size_t c = 0; c < n; c++) {
    int s = status[c];
    int plan_skipped = of->fp->skip_reason && of->fp->skip_reason[c];
    if (s == KV_NOT_RUN) continue;
    if (s < 0 || s >= KV_NSTATUS) {
      note(dm, of, r, c, "not a status of this kval (0..5)", s);
      continue;
    }
    if (plan_skipped && s != KV_SKIPPED) {
      note(dm, of, r, c, "the plan skips this cell, so its status must be 4 (skipped)", s);
      continue;
    }
    double d[KV_N_DOUBLES + 1];
    int64_t v[KV_N_INTS + 1];
    for (int i = 0; i < KV_N_DOUBLES; i++) d[i] = dbl[i][c];
    for (int i = 0; i < KV_N_INTS; i++) v[i] = ints[i][c];
    double p[KV_ROW_PART_VALUES];
    const double *cell_parts = parts + c * (size_t)n_parts * KV_N_PART_STATS;
    for (int i = 0; i < KV_ROW_PART_VALUES; i++) p[i] = i < n_parts * KV_N_PART_STATS ? cell_parts[i] : NAN;
    unsigned char row[KV_ROW_BYTES];
    kv_row_pack(row, s, fp[c], msg + c * KV_MESSAGE_LEN, d, v, hist + c * KV_HIST_BINS, p);
    if (kv_row_checksum(row) != sum[c]) note(dm, of, r, c, "its values do not match its checksum", s);
  }
}

kv_status kv_verify_family(kv_output *o, hid_t file, const char *path, const kv_out_family *of) {
  const char *name = of->fp->name;
  size_t n = of->fp->n_cells;
  hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
  if (CHECK_H5(g)) return KV_ERR;
  htri_t has = H5Lexists(g, "checksum", H5P_DEFAULT);
  if (has <= 0) {
    kv_h5_close_id(&g);
    kv_output_user_error("--resume %s: /%s has no 'checksum' dataset (written by a kval without row checksums), so "
                         "the rows it holds cannot be verified; finish the job with that kval or start afresh", path,
                         name);
    return KV_ERR;
  }
  signed char *status = KV_MALLOC(n);
  uint64_t *fp = KV_MALLOC(n * 8), *sum = KV_MALLOC(n * 8), *hist = KV_MALLOC(n * 8 * KV_HIST_BINS);
  const int n_parts = kv_family_parts(of->fp->family);
  const hsize_t hist_tail[] = {KV_HIST_BINS}, part_tail[] = {(hsize_t)n_parts, KV_N_PART_STATS};
  double *parts = KV_MALLOC(n_parts ? n * 8 * (size_t)n_parts * KV_N_PART_STATS : 8);
  char *msg = KV_MALLOC(n * KV_MESSAGE_LEN);
  double *dbl[KV_N_DOUBLES + 1] = {0};
  int64_t *ints[KV_N_INTS + 1] = {0};
  kv_status st = status && fp && sum && hist && parts && msg ? KV_OK : KV_ERR;
  for (int i = 0; st == KV_OK && i < KV_N_DOUBLES; i++) st = (dbl[i] = KV_MALLOC(n * 8)) ? KV_OK : KV_ERR;
  for (int i = 0; st == KV_OK && i < KV_N_INTS; i++) st = (ints[i] = KV_MALLOC(n * 8)) ? KV_OK : KV_ERR;
  damage dm = {0, ""};
  for (int r = 0; st == KV_OK && r < o->nranks; r++) {
    st = read_row(g, "status", of, 0, NULL, o->t_status, r, status);
    if (st == KV_OK) st = read_row(g, "fingerprint", of, 0, NULL, H5T_NATIVE_UINT64, r, fp);
    if (st == KV_OK) st = read_row(g, "checksum", of, 0, NULL, H5T_NATIVE_UINT64, r, sum);
    if (st == KV_OK) st = read_row(g, "message", of, 0, NULL, o->t_message, r, msg);
    if (st == KV_OK) st = read_row(g, "hist", of, 1, hist_tail, H5T_NATIVE_UINT64, r, hist);
    if (st == KV_OK && n_parts) st = read_row(g, "part_stats", of, 2, part_tail, H5T_NATIVE_DOUBLE, r, parts);
#define KV_X(field, member, unit, doc) \
    if (st == KV_OK) st = read_row(g, #field, of, 0, NULL, H5T_NATIVE_DOUBLE, r, dbl[KV_DOUBLE_##field]);
    KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(field, member, unit, doc) \
    if (st == KV_OK) st = read_row(g, #field, of, 0, NULL, H5T_NATIVE_INT64, r, ints[KV_INT_##field]);
    KV_RESULT_INTS(KV_X)
#undef KV_X
    if (st == KV_OK) check_rows(of, r, status, fp, sum, msg, dbl, ints, hist, parts, &dm);
  }
  if (st == KV_OK && dm.n_bad) {
    kv_output_user_error("--resume %s: /%s holds %zu damaged row(s), first %s; the file is refused and left as it "
                         "is (set such a row's status to 0, not_run, to have it run again)", path, name, dm.n_bad,
                         dm.first);
    st = KV_ERR;
  }
  for (int i = 0; i < KV_N_DOUBLES; i++) free(dbl[i]);
  for (int i = 0; i < KV_N_INTS; i++) free(ints[i]);
  free(status), free(fp), free(sum), free(hist), free(parts), free(msg);
  kv_h5_close_id(&g);
  return st;
}
