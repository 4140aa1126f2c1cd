/* test_journal.c - a result row's canonical bytes (src/output/row.c) and the per-rank journal
 * that --resume merges (src/output/journal.c), without a file or MPI:
 * - a row packed and read back is the same row: status, fingerprint, message, every float64
 *   and int64 field, every histogram bin and every part statistic;
 * - the row's checksum changes with any one byte of the row (the `checksum` dataset that
 *   --resume verifies covers the whole row);
 * - the journal gives back every row appended to it, and never a record of another file, a
 *   record whose bytes changed (the records after it are still merged) or a torn last record;
 * - closing it with keep leaves it for --resume, closing it without removes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/internal.h"
#include "output/journal.h"
#include "output/row.h"
#include "tests/unit/test_util.h"

#define CELLS 8

/* A row whose every field holds its own value (k: which row), none the default. */
static void make_row(kv_result *r, uint64_t cell, int k) {
  kv_result_init(r, 0, 0, cell);
  r->status = KV_PASS + k % 3;
  r->fingerprint = 0xF0E1D2C3B4A59687ULL + (uint64_t)k;
  snprintf(r->message, sizeof r->message, "row %d of cell %llu", k, (unsigned long long)cell);
  double v = 0.5 + k;
#define KV_X(name, member, unit, doc) r->member = (v += 1.25);
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
  long long n = 1000LL * (k + 1);
#define KV_X(name, member, unit, doc) r->member = ++n;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  for (int i = 0; i < KV_HIST_BINS; i++) r->stats.hist[i] = ((uint64_t)(i + 1) << 40) + (uint64_t)k;
  for (int p = 0; p < KV_MAX_PARTS; p++)
    for (int s = 0; s < KV_N_PART_STATS; s++) r->part_stats[p][s] = 100.0 * p + s + 0.5 + k;
}

/* Every field that a row carries is equal in a and b (what names the comparison). */
static void expect_same_row(const kv_result *a, const kv_result *b, const char *what) {
  EXPECT(a->status == b->status, "%s: status %d, expected %d", what, b->status, a->status);
  EXPECT(a->fingerprint == b->fingerprint, "%s: fingerprint %016llx, expected %016llx", what,
         (unsigned long long)b->fingerprint, (unsigned long long)a->fingerprint);
  EXPECT(strcmp(a->message, b->message) == 0, "%s: message \"%s\", expected \"%s\"", what, b->message, a->message);
#define KV_X(name, member, unit, doc) \
  EXPECT(a->member == b->member, "%s: " #name " %.17g, expected %.17g", what, (double)b->member, (double)a->member);
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) \
  EXPECT(a->member == b->member, "%s: " #name " %lld, expected %lld", what, (long long)b->member, (long long)a->member);
  KV_RESULT_INTS(KV_X)
#undef KV_X
  for (int i = 0; i < KV_HIST_BINS; i++)
    EXPECT(a->stats.hist[i] == b->stats.hist[i], "%s: hist[%d] %llu, expected %llu", what, i,
           (unsigned long long)b->stats.hist[i], (unsigned long long)a->stats.hist[i]);
  for (int p = 0; p < KV_MAX_PARTS; p++)
    for (int s = 0; s < KV_N_PART_STATS; s++)
      EXPECT(a->part_stats[p][s] == b->part_stats[p][s], "%s: part_stats[%d][%d] %g, expected %g", what, p, s,
             b->part_stats[p][s], a->part_stats[p][s]);
}

static void test_row(void) {
  TEST("a row packed and read back is the same row; its checksum changes with any byte");
  static unsigned char buf[KV_ROW_BYTES];
  kv_result r, back;
  make_row(&r, 3, 1);
  kv_row_from_result(&r, buf);
  kv_result_init(&back, 0, 0, 3);
  kv_row_to_result(buf, &back);
  expect_same_row(&r, &back, "read back");
  const uint64_t sum = kv_row_checksum(buf);
  int blind = 0;
  for (size_t k = 0; k < KV_ROW_BYTES; k++) {
    buf[k] ^= 0x10;
    if (kv_row_checksum(buf) == sum) blind++;
    buf[k] ^= 0x10;
  }
  EXPECT(blind == 0, "%d of the row's %d bytes changed without changing its checksum", blind, (int)KV_ROW_BYTES);
}

/* The journal's rows for o at path, compared with want[0..n). */
static void expect_journal(kv_output *o, const char *path, const kv_result *want, size_t n, const char *what) {
  kv_result *rows = NULL;
  size_t got = 0;
  EXPECT(kv_journal_read(o, path, &rows, &got) == KV_OK, "%s: the journal read failed", what);
  EXPECT(got == n, "%s: %zu rows merged, expected %zu", what, got, n);
  for (size_t i = 0; i < got && i < n; i++) {
    EXPECT(rows[i].cell == want[i].cell && rows[i].family == want[i].family, "%s: row %zu is cell %llu, expected %llu",
           what, i, (unsigned long long)rows[i].cell, (unsigned long long)want[i].cell);
    expect_same_row(&want[i], &rows[i], what);
  }
  free(rows);
}

/* Change one byte at offset of the file. */
static void poke(const char *file, long offset) {
  FILE *f = fopen(file, "r+b");
  EXPECT(f != NULL, "cannot open %s", file);
  if (!f) return;
  fseek(f, offset, SEEK_SET);
  int c = fgetc(f);
  fseek(f, offset, SEEK_SET);
  fputc(c ^ 0x40, f);
  fclose(f);
}

static long file_size(const char *file) {
  struct stat st;
  return stat(file, &st) == 0 ? (long)st.st_size : -1;
}

static void test_journal(const char *dir) {
  kv_plan *plan = calloc(1, sizeof *plan);
  kv_output *o = calloc(1, sizeof *o);
  if (!plan || !o) exit(99);
  snprintf(plan->fam[0].name, sizeof plan->fam[0].name, "tfam");
  plan->fam[0].n_cells = CELLS;
  plan->n_fam = 1;
  o->plan = plan;
  o->fam[0].fp = &plan->fam[0];
  o->file_id = 0x1234567890ABCDEFULL;
  o->journal_fd = -1;
  char path[1024];
  snprintf(path, sizeof path, "%s/run.h5", dir);

  TEST("the journal gives back every row appended, never another file's record");
  kv_result rows[4];
  const uint64_t cells[4] = {1, 5, 2, CELLS - 1};
  for (int k = 0; k < 4; k++) make_row(&rows[k], cells[k], k);
  kv_journal_start(o, path);
  EXPECT(o->journal_fd >= 0, "journal %s not opened", o->journal);
  kv_journal_append(o, &rows[0]);
  o->file_id ^= 1; /* a journal of another file at the same path */
  kv_journal_append(o, &rows[1]);
  o->file_id ^= 1;
  kv_journal_append(o, &rows[2]);
  kv_journal_append(o, &rows[3]);
  const kv_result mine[3] = {rows[0], rows[2], rows[3]};
  expect_journal(o, path, mine, 3, "three rows of this file, one of another");

  TEST("a record whose bytes changed and a torn last record are not merged; the others are");
  const long record = file_size(o->journal) / 4;
  poke(o->journal, 2 * record + 60); /* the status and fingerprint of rows[2] */
  const kv_result intact[2] = {rows[0], rows[3]};
  expect_journal(o, path, intact, 2, "a changed record");
  EXPECT(truncate(o->journal, 3 * record + record / 2) == 0, "truncate %s", o->journal);
  expect_journal(o, path, intact, 1, "a changed and a torn record");

  TEST("closed with keep, the journal stays for --resume; closed without, it is removed");
  kv_journal_finish(o, 1);
  EXPECT(access(o->journal, F_OK) == 0, "journal %s removed when kept", o->journal);
  kv_journal_finish(o, 0);
  EXPECT(access(o->journal, F_OK) != 0, "journal %s left behind after a clean close", o->journal);
  free(o);
  free(plan);
}

int main(void) {
  char dir[] = "/tmp/kval_journal.XXXXXX";
  if (!mkdtemp(dir)) return 99;
  test_row();
  test_journal(dir);
  char journal[1100];
  snprintf(journal, sizeof journal, "%s/run.h5.journal-0", dir);
  unlink(journal); /* left by a failed check */
  rmdir(dir);
  return TEST_RETURN();
}
