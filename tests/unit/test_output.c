/* test_output.c - the HDF5 output module under MPI (run with 1, 2 and 4 ranks by
 * tests/system/output_test.sh). Two hand-made families (three axes with a STR axis; two axes),
 * some cells skipped by the plan. Checks: create, rounds of writes with missing cases and
 * the stop flag, fingerprints, close; every value read back; refusal of an existing file,
 * --force; resume (done bitmap with and without retry_errors, then completing the run) and
 * each resume mismatch; a split-mode file; a row that does not fit the plan.
 * Usage: test_output DIR | test_output --die DIR | test_output --check-died DIR NRANKS */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/dtype.h"
#include "output/internal.h"
#include "output/output.h"
#include "tests/unit/test_util.h"

/* --- two test families: descriptors, axis values, skipped cells --- */
static const char *const prec_choices[] = {"fp16:fp32", "bf16:fp32", "fp16:fp16", NULL};
static const kv_axis_desc tfa_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32", prec_choices, 0, 0, "storage:accumulator"},
    {"headdim", KV_AXIS_INT, "64", NULL, 16, 256, "head dimension"},
    {"seqlen", KV_AXIS_INT, "128", NULL, 1, 1 << 20, "sequence length"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};
static const kv_param_desc tfa_params[] = {{"softmax_scale", 1.0, 0.0, 10.0, "scale"}, {NULL, 0, 0, 0, NULL}};
static const kv_axis_desc tnorm_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32", prec_choices, 0, 0, "storage:accumulator"},
    {"rows", KV_AXIS_INT, "1", NULL, 1, 1 << 30, "rows"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};
static const kv_family tfa = {.name = "tfa", .summary = "test attention", .axes = tfa_axes, .params = tfa_params};
static const kv_family tnorm = {.name = "tnorm", .summary = "test norm", .axes = tnorm_axes};
static const kv_family tgemm = {.name = "tgemm", .summary = "not in the file", .axes = tnorm_axes};

static char *tfa_prec[] = {"fp16:fp32", "bf16:fp32", "fp16:fp16"};
static long long tfa_headdim[] = {64, 128, 256};
static long long tfa_seqlen[] = {128, 256, 512};
static char *tnorm_prec[] = {"fp16:fp32", "bf16:fp32"};
static long long tnorm_rows[] = {1, 7, 4096, 65536};
static const char *const deck_text = "[tfa]\nheaddim = 64 128\nseqlen = 128..512 x2\n[tnorm]\nrows = 1 7 4096 65536\n";

#define NF 2

static void set_family(kv_family_plan *fp, const kv_family *f, int index, int n_axes, const int *lens,
                       char **strs, long long *const *ints) {
  memset(fp, 0, sizeof *fp);
  fp->family = f;
  snprintf(fp->name, sizeof fp->name, "%s", f->name);
  fp->family_index = index;
  fp->n_axes = n_axes;
  fp->n_cells = 1;
  for (int a = 0; a < n_axes; a++) {
    fp->axis[a].n = lens[a];
    if (a == 0) fp->axis[a].strs = strs;
    else fp->axis[a].ints = ints[a];
    fp->n_cells *= (size_t)lens[a];
  }
  fp->param[0] = 0.125;
  fp->skip_reason = calloc(fp->n_cells, sizeof *fp->skip_reason);
}

/* tfa: precision x headdim (2 of 3 values unless wide) x seqlen; fp16:fp16 with seqlen 512
 * skipped. tnorm: precision x rows; bf16:fp32 with 1 row skipped. Cases: every valid cell. */
static void build_plan(kv_plan *p, kv_mode mode, int wide) {
  memset(p, 0, sizeof *p);
  int la[3] = {3, wide ? 3 : 2, 3}, lb[2] = {2, 4};
  long long *ia[3] = {NULL, tfa_headdim, tfa_seqlen}, *ib[2] = {NULL, tnorm_rows};
  set_family(&p->fam[0], &tfa, 3, 3, la, tfa_prec, ia);
  set_family(&p->fam[1], &tnorm, 1, 2, lb, tnorm_prec, ib);
  p->fam[0].slot = 0, p->fam[1].slot = 1;
  p->n_fam = NF;
  p->mode = mode;
  p->run.seed = 42;
  p->cases = calloc(p->fam[0].n_cells + p->fam[1].n_cells, sizeof *p->cases);
  for (int f = 0; f < NF; f++) {
    kv_family_plan *fp = &p->fam[f];
    for (size_t c = 0; c < fp->n_cells; c++) {
      int last = fp->axis[fp->n_axes - 1].n;
      int prec = (int)(c / (fp->n_cells / (size_t)fp->axis[0].n));
      if ((f == 0 && prec == 2 && c % (size_t)last == 2) || (f == 1 && prec == 1 && c % (size_t)last == 0))
        fp->skip_reason[c] = f == 0 ? "fp16 accumulation over 512 keys overflows" : "one row: nothing to normalise";
      if (fp->skip_reason[c]) {
        fp->n_skipped++;
        continue;
      }
      fp->n_valid++;
      kv_case *k = &p->cases[p->n_cases++];
      k->fp = fp;
      k->cell = c;
    }
  }
}

static void free_plan(kv_plan *p) {
  for (int f = 0; f < p->n_fam; f++) free(p->fam[f].skip_reason);
  free(p->cases);
}

/* --- expected contents: per family slot, per [rank, cell]: status and value generation --- */
typedef struct {
  signed char *status[NF];
  int *gen[NF]; /* 0: fill values; g > 0: the values of generation g */
  int nranks, fingerprints;
  int unclosed; /* the job died: n_results was never recorded */
} expect;

static void expect_init(expect *e, const kv_plan *p, int nranks) {
  memset(e, 0, sizeof *e);
  e->nranks = nranks;
  for (int f = 0; f < NF; f++) {
    size_t n = (size_t)nranks * p->fam[f].n_cells;
    e->status[f] = calloc(n, 1);
    e->gen[f] = calloc(n, sizeof(int));
    for (size_t i = 0; i < n; i++)
      if (p->fam[f].skip_reason[i % p->fam[f].n_cells]) e->status[f][i] = KV_SKIPPED;
  }
}

static void expect_free(expect *e) {
  for (int f = 0; f < NF; f++) free(e->status[f]), free(e->gen[f]);
}

static int slot_of(const kv_plan *p, const kv_case *k) { return (int)(k->fp - p->fam); }

static double dval(int gen, int rank, int f, uint64_t cell, int j) {
  return gen * 1e6 + rank * 1e4 + f * 1e3 + (double)cell + j / 64.0;
}
/* Distinct per field and cell, and within int32: some result members are ints. */
static int64_t ival(int gen, int rank, int f, uint64_t cell, int j) {
  return gen * 400000000LL + rank * 40000000LL + f * 4000000LL + (int64_t)cell * 100 + j;
}
static uint64_t fpval(int gen, int rank, int f, uint64_t cell) {
  return ((uint64_t)gen << 48) ^ ((uint64_t)rank << 32) ^ ((uint64_t)f << 24) ^ (cell + 1);
}
static int case_status(int gen, size_t i) {
  if (gen > 1) return KV_PASS;
  return i % 6 == 1 ? KV_FAIL_TOLERANCE : i % 11 == 2 ? KV_ERROR : i % 13 == 3 ? KV_SKIPPED : KV_PASS;
}

static void make_result(const kv_plan *p, size_t i, int rank, int gen, kv_result *r) {
  const kv_case *k = &p->cases[i];
  int f = slot_of(p, k), j = 0;
  kv_result_init(r, rank, k->fp->slot, k->cell);
  r->status = case_status(gen, i);
  r->fingerprint = fpval(gen, rank, f, k->cell);
#define KV_X(name, member, unit, doc) r->member = dval(gen, rank, f, k->cell, j++);
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
  j = 0;
#define KV_X(name, member, unit, doc) r->member = ival(gen, rank, f, k->cell, j++);
  KV_RESULT_INTS(KV_X)
#undef KV_X
  for (int b = 0; b < KV_HIST_BINS; b++) r->stats.hist[b] = (uint64_t)(gen * 1000 + rank * 100 + b) + k->cell;
  snprintf(r->message, sizeof r->message, "g%d r%d f%d c%llu", gen, rank, f, (unsigned long long)k->cell);
}

/* Which (rank, case) pairs a run writes. */
typedef int (*writes_fn)(int rank, size_t i, int nranks, const unsigned char *done, size_t n_cases);
static int first_run(int rank, size_t i, int nranks, const unsigned char *done, size_t n_cases) {
  (void)nranks, (void)done, (void)n_cases;
  return (i * 7 + (size_t)rank) % 5 != 0;
}
static int missing_cases(int rank, size_t i, int nranks, const unsigned char *done, size_t n_cases) {
  (void)nranks;
  return !done[(size_t)rank * n_cases + i];
}
static int split_owner(int rank, size_t i, int nranks, const unsigned char *done, size_t n_cases) {
  (void)done, (void)n_cases;
  return (int)(i % (size_t)nranks) == rank;
}

/* Record in e what a run that writes the pairs `writes` leaves in the file. */
static void expect_writes(expect *e, const kv_plan *p, int gen, writes_fn writes, const unsigned char *done) {
  for (int r = 0; r < e->nranks; r++)
    for (size_t i = 0; i < p->n_cases; i++)
      if (writes(r, i, e->nranks, done, p->n_cases)) {
        int f = slot_of(p, &p->cases[i]);
        size_t at = (size_t)r * p->fam[f].n_cells + p->cases[i].cell;
        e->status[f][at] = (signed char)case_status(gen, i);
        e->gen[f][at] = gen;
      }
}

/* Rounds of kv_output_write: each rank writes its cases, NULL once it has none left; rank
 * nranks-1 asks to stop in round `stop_round`. Updates e for every rank. */
static void write_rounds(kv_output *o, const kv_plan *p, int rank, int nranks, int gen, writes_fn writes,
                         const unsigned char *done, expect *e, int stop_round) {
  size_t mine = 0, rounds = 0;
  for (size_t i = 0; i < p->n_cases; i++) mine += (size_t)writes(rank, i, nranks, done, p->n_cases);
  MPI_Allreduce(&mine, &rounds, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
  size_t next = 0;
  int bad_rc = 0, bad_stop = 0;
  for (size_t k = 0; k < rounds; k++) {
    while (next < p->n_cases && !writes(rank, next, nranks, done, p->n_cases)) next++;
    kv_result r;
    if (next < p->n_cases) make_result(p, next++, rank, gen, &r);
    int ask = (int)k == stop_round && rank == nranks - 1, stop = ask;
    bad_rc += kv_output_write(o, k < mine ? &r : NULL, &stop) != KV_OK;
    int want = strcmp(kv_output_flavour(), "parallel") == 0 ? (int)k == stop_round : ask;
    bad_stop += stop != want;
  }
  EXPECT(bad_rc == 0, "%d of %zu writes failed on rank %d", bad_rc, rounds, rank);
  EXPECT(bad_stop == 0, "%d rounds returned the wrong stop flag on rank %d", bad_stop, rank);
  expect_writes(e, p, gen, writes, done);
}

/* Fingerprint comparison of every tfa case and of the even tnorm cells. */
static int fp_included(int f, uint64_t cell) { return f == 0 || cell % 2 == 0; }

static void write_fingerprints(kv_output *o, const kv_plan *p, int nranks, expect *e) {
  kv_fp_case *fc = calloc(p->n_cases, sizeof *fc);
  unsigned char *agrees = calloc(p->n_cases * (size_t)nranks, 1);
  size_t n = 0;
  for (size_t i = 0; i < p->n_cases; i++) {
    int f = slot_of(p, &p->cases[i]);
    uint64_t c = p->cases[i].cell;
    if (!fp_included(f, c)) continue;
    fc[n] = (kv_fp_case){p->cases[i].fp->slot, c, 1 + (int)(c % 2), c * 3 + 1, agrees + n * (size_t)nranks};
    for (int r = 0; r < nranks; r++) fc[n].agrees[r] = (unsigned char)((r + (int)c) % 3);
    n++;
  }
  EXPECT(kv_output_fingerprints(o, fc, n) == KV_OK, "kv_output_fingerprints");
  e->fingerprints = 1;
  free(fc);
  free(agrees);
}

/* --- reading the file back (rank 0, serial handle, after every rank closed it) --- */
static int read_ds(hid_t g, const char *name, hid_t mt, void *buf) {
  hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
  if (ds < 0) return -1;
  hid_t t = mt >= 0 ? mt : H5Dget_type(ds);
  herr_t rc = H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  if (mt < 0) H5Tclose(t);
  H5Dclose(ds);
  return rc < 0 ? -1 : 0;
}

static long long attr_int(hid_t loc, const char *name) {
  long long v = -999;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a >= 0) H5Aread(a, H5T_NATIVE_LLONG, &v), H5Aclose(a);
  return v;
}

static int attr_str_is(hid_t loc, const char *name, const char *want) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  char *s = NULL;
  int ok = a >= 0 && H5Aread(a, t, &s) >= 0 && s && strcmp(s, want) == 0;
  if (s) H5free_memory(s);
  if (a >= 0) H5Aclose(a);
  H5Tclose(t);
  return ok;
}

#define CHECK_CELLS(what, cond, ...)                                                           \
  do {                                                                                        \
    int bad_ = 0;                                                                             \
    for (size_t at = 0; at < n; at++) {                                                       \
      int r = (int)(at / cells), g = e->gen[f][at];                                           \
      uint64_t c = at % cells;                                                                \
      (void)r, (void)g, (void)c;                                                              \
      if (!(cond) && !bad_++) printf("  %s/%s rank %d cell %llu: ", fam, what, r, (unsigned long long)c), \
                              printf(__VA_ARGS__), printf("\n");                              \
    }                                                                                         \
    EXPECT(bad_ == 0, "%s/%s: %d cells differ", fam, what, bad_);                             \
  } while (0)

static void verify_family(hid_t file, const kv_plan *p, const expect *e, int f) {
  const char *fam = p->fam[f].family->name;
  size_t cells = p->fam[f].n_cells, n = (size_t)e->nranks * cells;
  hid_t grp = H5Gopen2(file, fam, H5P_DEFAULT);
  EXPECT(grp >= 0, "group /%s", fam);
  if (grp < 0) return;
  signed char *s8 = malloc(n);
  double *d = malloc(n * sizeof *d);
  int64_t *i64 = malloc(n * sizeof *i64);
  uint64_t *u64 = malloc(n * KV_HIST_BINS * sizeof *u64);
  char *msg = malloc(n * KV_MESSAGE_LEN);
  EXPECT(read_ds(grp, "status", -1, s8) == 0, "read %s/status", fam);
  CHECK_CELLS("status", s8[at] == e->status[f][at], "%d, expected %d", s8[at], e->status[f][at]);
  int j = 0;
#define KV_X(name, member, unit, doc)                                                          \
  EXPECT(read_ds(grp, #name, H5T_NATIVE_DOUBLE, d) == 0, "read %s/%s", fam, #name);              \
  CHECK_CELLS(#name, g ? d[at] == dval(g, r, f, c, j) : isnan(d[at]), "%g", d[at]);          \
  j++;
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
  j = 0;
#define KV_X(name, member, unit, doc)                                                          \
  EXPECT(read_ds(grp, #name, H5T_NATIVE_INT64, i64) == 0, "read %s/%s", fam, #name);             \
  CHECK_CELLS(#name, i64[at] == (g ? ival(g, r, f, c, j) : -1), "%lld", (long long)i64[at]);  \
  j++;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  EXPECT(read_ds(grp, "fingerprint", H5T_NATIVE_UINT64, u64) == 0, "read %s/fingerprint", fam);
  CHECK_CELLS("fingerprint", u64[at] == (g ? fpval(g, r, f, c) : 0), "%llx", (unsigned long long)u64[at]);
  EXPECT(read_ds(grp, "hist", H5T_NATIVE_UINT64, u64) == 0, "read %s/hist", fam);
  CHECK_CELLS("hist", u64[at * KV_HIST_BINS + 7] == (g ? (uint64_t)(g * 1000 + r * 100 + 7) + c : 0), "bin 7 %llu",
              (unsigned long long)u64[at * KV_HIST_BINS + 7]);
  EXPECT(read_ds(grp, "message", -1, msg) == 0, "read %s/message", fam);
  char want[KV_MESSAGE_LEN + 1];
  CHECK_CELLS("message",
              (snprintf(want, sizeof want, "g%d r%d f%d c%llu", g, r, f, (unsigned long long)c),
               strncmp(msg + at * KV_MESSAGE_LEN, g ? want : p->fam[f].skip_reason[c] ? p->fam[f].skip_reason[c] : "",
                       KV_MESSAGE_LEN) == 0),
              "'%.96s'", msg + at * KV_MESSAGE_LEN);
  EXPECT(read_ds(grp, "fp_agrees", H5T_NATIVE_INT8, s8) == 0, "read %s/fp_agrees", fam);
  int valid_fp = 0;
  CHECK_CELLS("fp_agrees",
              (valid_fp = e->fingerprints && fp_included(f, c) && !p->fam[f].skip_reason[c],
               s8[at] == (valid_fp ? (r + (int)c) % 3 : 2)),
              "%d", s8[at]);
  n = cells;
  EXPECT(read_ds(grp, "fp_distinct", H5T_NATIVE_INT64, i64) == 0, "read %s/fp_distinct", fam);
  CHECK_CELLS("fp_distinct",
              i64[at] == (e->fingerprints && fp_included(f, c) && !p->fam[f].skip_reason[c] ? 1 + (int)(c % 2) : 0),
              "%lld", (long long)i64[at]);
  EXPECT(read_ds(grp, "fp_majority", H5T_NATIVE_UINT64, u64) == 0, "read %s/fp_majority", fam);
  CHECK_CELLS("fp_majority", u64[at] == (e->fingerprints && fp_included(f, c) && !p->fam[f].skip_reason[c] ? c * 3 + 1 : 0),
              "%llu", (unsigned long long)u64[at]);
  long long results = 0;
  for (size_t at = 0; at < (size_t)e->nranks * cells; at++)
    results += e->status[f][at] != KV_NOT_RUN && !p->fam[f].skip_reason[at % cells];
  if (e->unclosed) results = 0;
  EXPECT(attr_int(grp, "n_results") == results, "%s n_results %lld, expected %lld", fam, attr_int(grp, "n_results"),
         results);
  EXPECT(attr_int(grp, "n_skipped") == (long long)p->fam[f].n_skipped, "%s n_skipped", fam);
  free(s8), free(d), free(i64), free(u64), free(msg);
  H5Gclose(grp);
}

static void verify_file(const char *path, const kv_plan *p, const expect *e, int complete) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT(file >= 0, "open %s", path);
  if (file < 0) return;
  EXPECT(attr_int(file, "complete") == complete, "%s: complete %lld, expected %d", path, attr_int(file, "complete"),
         complete);
  EXPECT(attr_int(file, "nranks") == e->nranks, "%s: nranks", path);
  EXPECT(attr_int(file, "layout_version") == KV_LAYOUT_VERSION, "%s: layout_version", path);
  EXPECT(attr_str_is(file, "deck_text", deck_text), "%s: deck_text", path);
  EXPECT(attr_str_is(file, "mode", p->mode == KV_MODE_SPLIT ? "split" : "fleet"), "%s: mode", path);
  EXPECT(attr_str_is(file, "hdf5_flavour", kv_output_flavour()), "%s: hdf5_flavour", path);
  char names[512] = "";
  for (int s = 0; s < KV_NSTATUS; s++) {
    const size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%d=%s", s ? "," : "", s, kv_status_name((kv_case_status)s));
  }
  EXPECT(attr_str_is(file, "status_names", names), "%s: status_names %s", path, names);
  for (int f = 0; f < NF; f++) verify_family(file, p, e, f);
  H5Fclose(file);
}

/* --- the run context shared by the steps --- */
static kv_deck deck;
static kv_run_meta meta;
static kv_rank_info *infos;

static void setup_context(int nranks, const char *deck_path) {
  deck.path = (char *)deck_path;
  deck.text = (char *)deck_text;
  meta = (kv_run_meta){"0.1.0-test", "abc123", "test_output", "2026-11-30T00:00:00Z", "Open MPI", "", "", "", "", "cpu",
                       nranks};
  infos = calloc((size_t)nranks, sizeof *infos);
  for (int r = 0; r < nranks; r++) {
    snprintf(infos[r].host, KV_STR, "node%d", r / 2);
    infos[r].local_rank = r % 2, infos[r].local_size = 2, infos[r].device_index = -1;
    snprintf(infos[r].device_name, KV_STR, "cpu");
    infos[r].sm_count = r, infos[r].memory_bytes = 1e9 * r, infos[r].matrix_tflops = NAN;
    snprintf(infos[r].nvml, KV_STR, "cpu backend");
  }
}

static void path_in(char *buf, const char *dir, const char *name) { snprintf(buf, 1024, "%s/%s", dir, name); }

/* Every resume mismatch is refused on every rank. */
static void resume_mismatches(const char *dir, const char *path, int rank, int nranks) {
  kv_plan q;
  kv_output *o;
  unsigned char *done;
  char other[1024];
#define REFUSED(what, pathx, plan, deckx, metax, comm)                                         \
  EXPECT(kv_output_resume(pathx, plan, deckx, metax, 0, comm, &o, &done) == KV_REFUSED && !o && !done, "resume: %s", what)
  build_plan(&q, KV_MODE_FLEET, 0);
  q.run.seed = 43;
  REFUSED("other seed", path, &q, &deck, &meta, MPI_COMM_WORLD);
  q.run.seed = 42, q.mode = KV_MODE_SPLIT;
  REFUSED("other mode", path, &q, &deck, &meta, MPI_COMM_WORLD);
  q.mode = KV_MODE_FLEET;
  kv_deck d2 = deck;
  d2.text = "[tfa]\nheaddim = 64 256\n";
  REFUSED("other deck", path, &q, &d2, &meta, MPI_COMM_WORLD);
  kv_run_meta m2 = meta;
  m2.backend = "cuda";
  REFUSED("other backend", path, &q, &deck, &m2, MPI_COMM_WORLD);
  q.fam[2] = q.fam[1], q.fam[2].family = &tgemm, q.fam[2].family_index = 5, q.fam[2].slot = 2, q.n_fam = 3;
  snprintf(q.fam[2].name, sizeof q.fam[2].name, "tgemm");
  REFUSED("a family the file lacks", path, &q, &deck, &meta, MPI_COMM_WORLD);
  q.n_fam = 2;
  free_plan(&q);
  build_plan(&q, KV_MODE_FLEET, 1);
  REFUSED("other axis length", path, &q, &deck, &meta, MPI_COMM_WORLD);
  free_plan(&q);
  build_plan(&q, KV_MODE_FLEET, 0);
  path_in(other, dir, "missing.h5");
  REFUSED("missing file", other, &q, &deck, &meta, MPI_COMM_WORLD);
  path_in(other, dir, "text.h5");
  if (rank == 0) {
    FILE *t = fopen(other, "w");
    fputs("not hdf5\n", t);
    fclose(t);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  REFUSED("not an HDF5 file", other, &q, &deck, &meta, MPI_COMM_WORLD);
  path_in(other, dir, "plain.h5");
  if (rank == 0) H5Fclose(H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  MPI_Barrier(MPI_COMM_WORLD);
  REFUSED("not a kval file", other, &q, &deck, &meta, MPI_COMM_WORLD);
  path_in(other, dir, "version.h5");
  EXPECT(kv_output_create(other, 1, &q, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_OK, "create %s", other);
  EXPECT(o && kv_output_close(o) == KV_OK, "close %s", other);
  if (rank == 0) {
    hid_t f = H5Fopen(other, H5F_ACC_RDWR, H5P_DEFAULT), a = H5Aopen(f, "layout_version", H5P_DEFAULT);
    long long v = 99;
    EXPECT(a >= 0 && H5Awrite(a, H5T_NATIVE_LLONG, &v) >= 0, "patch layout_version");
    H5Aclose(a), H5Fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  REFUSED("other layout_version", other, &q, &deck, &meta, MPI_COMM_WORLD);
  if (nranks > 1) { /* rank 0 alone: a rank count the file was not written with */
    MPI_Comm solo;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
    if (rank == 0) REFUSED("other rank count", path, &q, &deck, &meta, solo);
    if (rank == 0) MPI_Comm_free(&solo);
  }
  free_plan(&q);
#undef REFUSED
}

/* Resume with and without retry_errors; the second one completes the run. */
static void resume_and_complete(const char *path, const kv_plan *p, int rank, int nranks, expect *e) {
  for (int retry = 0; retry <= 1; retry++) {
    kv_output *o = NULL;
    unsigned char *done = NULL;
    EXPECT(kv_output_resume(path, p, &deck, &meta, retry, MPI_COMM_WORLD, &o, &done) == KV_OK, "resume retry=%d", retry);
    if (!o) return;
    int bad = 0;
    for (int r = 0; r < nranks; r++)
      for (size_t i = 0; i < p->n_cases; i++) {
        int f = slot_of(p, &p->cases[i]);
        int s = e->status[f][(size_t)r * p->fam[f].n_cells + p->cases[i].cell];
        bad += done[(size_t)r * p->n_cases + i] != (s != KV_NOT_RUN && (s != KV_ERROR || !retry));
      }
    EXPECT(bad == 0, "resume retry=%d: %d entries of the done bitmap differ", retry, bad);
    if (retry) write_rounds(o, p, rank, nranks, 2, missing_cases, done, e, -1);
    EXPECT(kv_output_close(o) == KV_OK, "close after resume retry=%d", retry);
    free(done);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) verify_file(path, p, e, retry);
  }
}

static void full_test(const char *dir, int rank, int nranks) {
  char path[1024], split[1024], fresh[1024];
  path_in(path, dir, "out.h5"), path_in(split, dir, "split.h5"), path_in(fresh, dir, "fresh.h5");
  kv_plan p;
  build_plan(&p, KV_MODE_FLEET, 0);
  p.run.flush_interval = 0; /* flush every round */
  expect e;
  expect_init(&e, &p, nranks);
  kv_output *o = NULL;
  if (rank == 0) TEST("create, write rounds with missing cases and a stop request, fingerprints, close");
  EXPECT(kv_output_create(path, 0, &p, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_OK, "create %s", path);
  if (!o) return;
  write_rounds(o, &p, rank, nranks, 1, first_run, NULL, &e, 1);
  write_fingerprints(o, &p, nranks, &e);
  EXPECT(kv_output_close(o) == KV_OK, "close");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) verify_file(path, &p, &e, 0);

  if (rank == 0) TEST("an existing file is refused and left untouched");
  o = NULL;
  EXPECT(kv_output_create(path, 0, &p, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_REFUSED && !o, "refused");
  if (rank == 0) verify_file(path, &p, &e, 0);

  if (rank == 0) TEST("resume mismatches are refused");
  resume_mismatches(dir, path, rank, nranks);
  if (rank == 0) TEST("resume: done bitmap, retry_errors, completing the run");
  resume_and_complete(path, &p, rank, nranks, &e);

  if (rank == 0) TEST("split mode: each case once; a row outside the plan is refused");
  kv_plan ps;
  build_plan(&ps, KV_MODE_SPLIT, 0);
  ps.run.flush_interval = 1e9;
  expect es;
  expect_init(&es, &ps, nranks);
  EXPECT(kv_output_create(split, 0, &ps, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_OK, "create split");
  if (o) {
    kv_result bad;
    kv_result_init(&bad, rank, ps.fam[1].slot, ps.fam[1].n_cells);
    int stop = 0, parallel = strcmp(kv_output_flavour(), "parallel") == 0;
    kv_status want = rank == 0 || parallel ? KV_ERR : KV_OK;
    EXPECT(kv_output_write(o, rank == 0 ? &bad : NULL, &stop) == want, "cell outside the grid on rank 0");
    write_rounds(o, &ps, rank, nranks, 1, split_owner, NULL, &es, -1);
    EXPECT(kv_output_close(o) == KV_OK, "close split");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) verify_file(split, &ps, &es, 1);

  if (rank == 0) TEST("--force replaces a file holding results");
  expect ef;
  expect_init(&ef, &p, nranks);
  EXPECT(kv_output_create(fresh, 0, &p, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_OK, "create fresh");
  if (o) {
    write_rounds(o, &p, rank, nranks, 1, first_run, NULL, &ef, -1);
    EXPECT(kv_output_close(o) == KV_OK, "close fresh");
  }
  EXPECT(kv_output_create(fresh, 1, &p, &deck, &meta, infos, MPI_COMM_WORLD, &o) == KV_OK, "create with force");
  EXPECT(o && kv_output_close(o) == KV_OK, "close forced");
  expect_free(&ef);
  expect_init(&ef, &p, nranks);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) verify_file(fresh, &p, &ef, 0);
  ssize_t open_ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  EXPECT(open_ids == 0, "%zd HDF5 files or objects left open on rank %d", open_ids, rank);
  expect_free(&ef), expect_free(&es), expect_free(&e);
  free_plan(&ps), free_plan(&p);
}

/* --die: write the first run's cases of round 0 and 1, then die through the fatal path. */
static int died_writes(int rank, size_t i, int nranks, const unsigned char *done, size_t n_cases) {
  (void)nranks, (void)done, (void)n_cases;
  return rank == 0 && i < 3;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  kv_check_init(rank, "test");
  int die = argc == 3 && strcmp(argv[1], "--die") == 0, check = argc == 4 && strcmp(argv[1], "--check-died") == 0;
  if (argc != 2 && !die && !check) {
    if (rank == 0) fprintf(stderr, "usage: test_output DIR | --die DIR | --check-died DIR NRANKS\n");
    MPI_Finalize();
    return 2;
  }
  const char *dir = argv[argc - 1 - check];
  char path[1024];
  path_in(path, dir, "died.h5");
  int file_ranks = check ? atoi(argv[3]) : nranks;
  setup_context(file_ranks, "test.deck");
  kv_plan p;
  build_plan(&p, KV_MODE_FLEET, 0);
  expect e;
  expect_init(&e, &p, file_ranks);
  if (die) {
    kv_output *o = NULL;
    p.run.flush_interval = 1e9; /* only the fatal hook flushes */
    if (kv_output_create(path, 1, &p, &deck, &meta, infos, MPI_COMM_WORLD, &o) != KV_OK) MPI_Abort(MPI_COMM_WORLD, 2);
    kv_set_fatal_hook(kv_output_emergency_flush);
    write_rounds(o, &p, rank, nranks, 1, died_writes, NULL, &e, -1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) KV_FATAL("simulated failure after %d results", 3);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (check) {
    if (rank == 0) TEST("a job killed through the fatal path leaves a readable file with its results");
    expect_writes(&e, &p, 1, died_writes, NULL);
    e.unclosed = 1;
    verify_file(path, &p, &e, 0);
  } else {
    full_test(dir, rank, nranks);
  }
  int failures = 0;
  MPI_Allreduce(&tu_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = failures;
  if (rank == 0) (void)TEST_RETURN();
  expect_free(&e), free_plan(&p), free(infos);
  MPI_Finalize();
  return failures ? 1 : 0;
}
