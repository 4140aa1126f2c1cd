/* test_descriptors.c - what every registered family (families/families.def) must satisfy,
 * without knowing any of them: a complete descriptor (name, summary, a precision axis, every
 * axis and parameter with help, ranges that hold their defaults, valid default tokens, every
 * hook, at most KV_MAX_PARTS named parts of the output), the host generator's bits, and on
 * the cases of the families' test decks (families/<f>/test.deck, cpu backend, small cases
 * only): every family has cases, inputs that are not all zero and differ between tensors,
 * outputs whose rows split into the family's parts, and emulations that are deterministic (the
 * same seed gives the same output bits twice, another seed other bits), references whose rows
 * split over host threads give the same bits as one call, and inputs that pass the backends'
 * check against the generator (and fail it with one element changed); and how many threads a
 * rank takes.
 * A new family is checked here without an edit. Family-specific worked examples live in
 * families/<f>/test_<f>.c. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "families/ref_threads.h"
#include "families/testkit/family_checks.h"
#include "input/deck.h"
#include "input/plan.h"

#define CASE_FLOP_CAP 2e7 /* reference FLOPs of a deck case run here (keeps the test short) */

static void check_family(const kv_family *f) {
  EXPECT(f->name && f->name[0] && f->summary && f->summary[0], "family %d: name and summary", kv_family_count());
  EXPECT(kv_family_axis_index(f, "precision") >= 0, "%s has a precision axis", f->name);
  EXPECT(kv_family_n_axes(f) >= 1 && kv_family_n_axes(f) <= KV_MAX_AXES, "%s: %d axes", f->name, kv_family_n_axes(f));
  for (int a = 0; f->axes[a].name; a++) {
    const kv_axis_desc *ax = &f->axes[a];
    EXPECT(ax->help && ax->help[0], "%s.%s has help", f->name, ax->name);
    EXPECT(defaults_valid(ax), "%s.%s defaults \"%s\" are valid values", f->name, ax->name,
           ax->defaults ? ax->defaults : "(none)");
    if (ax->type != KV_AXIS_STR) EXPECT(ax->min <= ax->max, "%s.%s range", f->name, ax->name);
    for (int b = 0; b < a; b++) EXPECT(strcmp(f->axes[b].name, ax->name) != 0, "%s.%s named once", f->name, ax->name);
  }
  EXPECT(kv_family_n_params(f) <= KV_MAX_PARAMS, "%s: %d params", f->name, kv_family_n_params(f));
  for (int p = 0; f->params && f->params[p].name; p++) {
    const kv_param_desc *pd = &f->params[p];
    EXPECT(pd->help && pd->help[0], "%s.%s has help", f->name, pd->name);
    EXPECT(pd->defaults >= pd->min && pd->defaults <= pd->max, "%s.%s default %g within %g..%g", f->name, pd->name,
           pd->defaults, pd->min, pd->max);
    EXPECT(kv_family_axis_index(f, pd->name) < 0, "%s.%s is not also an axis", f->name, pd->name);
  }
  EXPECT(f->invalid && f->cost && f->tensors && f->emulate && f->reference && f->reference_dd,
         "%s has every hook", f->name);
  EXPECT(kv_family_parts(f) <= KV_MAX_PARTS && kv_family_parts(f) != 1, "%s: %d parts of its output (0 or 2..%d)",
         f->name, kv_family_parts(f), KV_MAX_PARTS);
}

static void test_generation(void) {
  static const kv_dtype types[] = {KV_FP16, KV_BF16, KV_FP32};
  for (int t = 0; t < 3; t++) {
    kv_tensor_spec s;
    kv_spec_in(&s, "x", types[t], 1000, KV_DIST_NORMAL, 3.0, 0.5);
    unsigned char a[4000], b[4000], c[4000];
    EXPECT(kv_generate_host(&s, 42, a) == KV_OK && kv_generate_host(&s, 43, c) == KV_OK, "generate");
    for (size_t i = 0; i < 1000; i++) kv_store(b, i, types[t], kv_gen_value(42, i, KV_DIST_NORMAL, 3.0, 0.5));
    EXPECT(memcmp(a, b, 1000 * kv_dtype_size(types[t])) == 0, "%s: generated elements are kv_store(kv_gen_value(...))",
           kv_dtype_name(types[t]));
    EXPECT(memcmp(a, c, 1000 * kv_dtype_size(types[t])) != 0, "%s: another key, other values", kv_dtype_name(types[t]));
  }
}

static size_t tensor_bytes(const kv_tensor_spec *t) { return t->count * kv_dtype_size(t->dtype); }

/* Inputs of case c under a seed, and the emulation's output bits (all outputs concatenated,
 * outputs poisoned first); caller frees. */
static unsigned char *emulate_bits(const kv_case *c, const kv_tensors *t, uint64_t seed, size_t *nbytes, void **in) {
  void *out[KV_MAX_TENSORS] = {0};
  size_t n = 0;
  for (int i = 0; i < t->n_in; i++) {
    in[i] = malloc(tensor_bytes(&t->in[i]));
    if (!in[i] || kv_generate_host(&t->in[i], kv_stream_key(seed, c->key, (uint64_t)i), in[i]) != KV_OK) return NULL;
  }
  for (int i = 0; i < t->n_out; i++) {
    out[i] = malloc(tensor_bytes(&t->out[i]));
    if (!out[i]) return NULL;
    memset(out[i], 0xff, tensor_bytes(&t->out[i]));
    n += tensor_bytes(&t->out[i]);
  }
  unsigned char *bits = c->fp->family->emulate(c, in, out) == KV_OK ? malloc(n) : NULL;
  for (size_t i = 0, off = 0; i < (size_t)t->n_out; i++) {
    if (bits) memcpy(bits + off, out[i], tensor_bytes(&t->out[i]));
    off += tensor_bytes(&t->out[i]);
    free(out[i]);
  }
  *nbytes = n;
  return bits;
}

static void free_inputs(void **in, int n) {
  for (int i = 0; i < n; i++) {
    free(in[i]);
    in[i] = NULL;
  }
}

/* The reference over every row, in reverse order, called once and split over 2, 3 and 7
 * host threads (the cuda backend's cross-check), and its first rows alone on 7 threads (a
 * reference that splits its own work): the same bits; a row past the end fails. */
static void check_threaded_reference(const kv_case *c, const char *what, void **in) {
  kv_cost cost;
  kv_case_cost(c, &cost);
  const size_t n = cost.rows, len = cost.row_len;
  size_t *rows = malloc((n + 1) * sizeof *rows);
  double *buf = malloc(2 * 2 * (n * len + n) * sizeof *buf);
  EXPECT(rows && buf && n > 0, "%s: reference buffers", what);
  if (!rows || !buf || n == 0) {
    free(rows), free(buf);
    return;
  }
  for (size_t r = 0; r < n; r++) rows[r] = n - 1 - r;
  double *ref = buf, *mag = ref + n * len, *aux = mag + n * len, *amag = aux + n, *t_ref = amag + n;
  double *t_mag = t_ref + n * len, *t_aux = t_mag + n * len, *t_amag = t_aux + n;
  const void *const *cin = (const void *const *)in;
  memset(buf, 0xff, 2 * (n * len + n) * sizeof *buf); /* aux rows of a family without them stay so */
  EXPECT(c->fp->family->reference(c, cin, rows, n, ref, mag, aux, amag) == KV_OK, "%s: reference", what);
  static const int threads[] = {2, 3, 7};
  for (int k = 0; k < 3; k++) {
    memset(t_ref, 0xff, 2 * (n * len + n) * sizeof *buf);
    EXPECT(kv_reference_threaded(c, cin, rows, n, len, t_ref, t_mag, t_aux, t_amag, threads[k]) == KV_OK &&
               memcmp(ref, t_ref, 2 * (n * len + n) * sizeof *buf) == 0,
           "%s: the reference on %d threads gives the same bits", what, threads[k]);
  }
  /* fewer rows than threads (gemm splits its columns over them) */
  for (size_t few = 1; few <= 2 && few <= n; few++) {
    memset(t_ref, 0xff, 2 * (n * len + n) * sizeof *buf);
    EXPECT(kv_reference_threaded(c, cin, rows, few, len, t_ref, t_mag, t_aux, t_amag, 7) == KV_OK &&
               memcmp(ref, t_ref, few * len * sizeof *buf) == 0 && memcmp(mag, t_mag, few * len * sizeof *buf) == 0,
           "%s: %zu row(s) on 7 threads give the same bits", what, few);
  }
  rows[n / 2] = n; /* one row past the end, in some thread's part */
  EXPECT(kv_reference_threaded(c, cin, rows, n, len, t_ref, t_mag, t_aux, t_amag, 3) == KV_ERR,
         "%s: a row past the end fails on threads too", what);
  free(rows);
  free(buf);
}

/* The backends' check of the inputs (kv_input_finding) passes the generator's inputs (seed 77)
 * and names an input whose last element changed. */
static void check_input_finding(const kv_case *c, const kv_tensors *t, const char *what, void **in) {
  kv_run_settings rs;
  memset(&rs, 0, sizeof rs);
  rs.seed = 77;
  kv_case_data d;
  kv_case_data_init(&d);
  kv_input_finding(&d, c, &rs, t, (const void *const *)in);
  EXPECT(!d.harness[0], "%s: the generated inputs pass the input check (%s)", what, d.harness);
  for (int k = 0; k < t->n_in; k++) {
    if (t->in[k].count == 0) continue;
    unsigned char *last = (unsigned char *)in[k] + tensor_bytes(&t->in[k]) - 1;
    *last ^= 0x40;
    kv_case_data_init(&d);
    kv_input_finding(&d, c, &rs, t, (const void *const *)in);
    *last ^= 0x40;
    char want[64];
    snprintf(want, sizeof want, "input %s: element %zu ", t->in[k].name, t->in[k].count - 1);
    EXPECT(strstr(d.harness, want) != NULL, "%s: a changed last element of %s is named (%s)", what, t->in[k].name,
           d.harness);
  }
}

static void check_case(const kv_case *c) {
  const kv_family *f = c->fp->family;
  char what[512];
  kv_case_describe(c, what, sizeof what);
  kv_tensors t;
  memset(&t, 0, sizeof t);
  f->tensors(c, &t);
  if (kv_family_parts(f) > 0) {
    kv_cost cost;
    memset(&cost, 0, sizeof cost);
    f->cost(c, &cost);
    EXPECT(cost.rows % (size_t)kv_family_parts(f) == 0 && cost.rows * cost.row_len == t.out[0].count,
           "%s: %zu rows of %zu split into %d equal parts of output 0 (%zu elements)", what, cost.rows, cost.row_len,
           kv_family_parts(f), t.out[0].count);
  }
  void *in[KV_MAX_TENSORS] = {0}, *in2[KV_MAX_TENSORS] = {0}, *in3[KV_MAX_TENSORS] = {0};
  size_t n1 = 0, n2 = 0, n3 = 0;
  unsigned char *a = emulate_bits(c, &t, 77, &n1, in), *b = emulate_bits(c, &t, 77, &n2, in2);
  unsigned char *x = emulate_bits(c, &t, 78, &n3, in3);
  EXPECT(a && b && x, "%s: generation or emulation failed", what);
  if (a && b && x) {
    EXPECT(n1 == n2 && memcmp(a, b, n1) == 0, "%s: same seed, same output bits", what);
    /* an output without information (all NaN, Inf or one value: fp16 sums that overflow) is
     * the same for every seed, and so is the output of a family without inputs (tcprobe's
     * fixed sub-tests) */
    int varies = 0;
    const double first = kv_load(a, 0, t.out[0].dtype);
    for (size_t e = 1; e < t.out[0].count && !varies; e++) {
      const double v = kv_load(a, e, t.out[0].dtype);
      varies = isfinite(v) && v != first;
    }
    EXPECT(!varies || t.n_in == 0 || memcmp(a, x, n1) != 0, "%s: another seed, other output bits", what);
    for (int k = 0; k < t.n_in; k++) {
      double sum_abs = 0.0;
      for (size_t e = 0; e < t.in[k].count; e++) sum_abs += fabs(kv_load(in[k], e, t.in[k].dtype));
      EXPECT(sum_abs > 0.05 * (double)t.in[k].count, "%s: input %s not all zero", what, t.in[k].name);
      size_t cmp = tensor_bytes(&t.in[k]) < tensor_bytes(&t.in[0]) ? tensor_bytes(&t.in[k]) : tensor_bytes(&t.in[0]);
      if (k > 0) EXPECT(memcmp(in[k], in[0], cmp < 64 ? cmp : 64) != 0, "%s: %s differs from %s", what, t.in[k].name,
                        t.in[0].name);
    }
    check_threaded_reference(c, what, in);
    check_input_finding(c, &t, what, in);
  }
  free(a);
  free(b);
  free(x);
  free_inputs(in, t.n_in);
  free_inputs(in2, t.n_in);
  free_inputs(in3, t.n_in);
}

/* Every case of the test decks that is valid on the cpu backend and small enough. */
static void test_deck_cases(void) {
  char paths[16][1024];
  int n = fcase_family_decks("test", paths, 16), run[KV_MAX_AXES * 4] = {0};
  EXPECT(n > 0, "families/*/test.deck found (top_srcdir=%s)", getenv("top_srcdir") ? getenv("top_srcdir") : "unset");
  for (int i = 0; i < n; i++) {
    kv_deck d;
    kv_plan p;
    char err[512];
    int ok = kv_deck_parse_file(paths[i], &d, err, sizeof err) == 0 &&
             kv_plan_build(&d, NULL, "cpu", KV_MODE_SPLIT, 0, 0, &p, err, sizeof err) == 0;
    EXPECT(ok, "%s: %s", paths[i], err);
    if (!ok) continue;
    for (size_t k = 0; k < p.n_cases; k++) {
      kv_cost cost;
      kv_case_cost(&p.cases[k], &cost);
      if (cost.ref_flops > CASE_FLOP_CAP) continue;
      check_case(&p.cases[k]);
      run[p.cases[k].fp->family_index]++;
    }
    kv_plan_free(&p);
    kv_deck_free(&d);
  }
  for (int f = 0; kv_families[f]; f++)
    EXPECT(run[f] > 0, "%s: cases in a families/*/test.deck that run on the cpu backend", kv_families[f]->name);
}

/* The threads a rank's references may use: its affinity mask, at most the node's share of a rank. */
static void test_host_threads(void) {
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT(sched_getaffinity(0, sizeof set, &set) == 0 && online > 0, "sched_getaffinity, sysconf");
  const int mask = CPU_COUNT(&set);
  EXPECT(kv_ref_host_threads(1) == (mask < KV_REF_MAX_THREADS ? mask : KV_REF_MAX_THREADS),
         "one rank: the %d CPUs of its mask (got %d)", mask, kv_ref_host_threads(1));
  EXPECT(kv_ref_host_threads((int)online * 2) == 1, "more ranks than CPUs: one thread each (got %d)",
         kv_ref_host_threads((int)online * 2));
  const int two = kv_ref_host_threads(2), share = (int)(online / 2) > 0 ? (int)(online / 2) : 1;
  const int want = mask < share ? mask : share;
  EXPECT(two == (want < KV_REF_MAX_THREADS ? want : KV_REF_MAX_THREADS), "two ranks: min(mask %d, %ld / 2) (got %d)",
         mask, online, two);
  char note[320] = "";
  EXPECT(kv_ref_binding_note((int)online, note, sizeof note) == 0, "a share of one CPU: no binding note (%s)", note);
  if (online < 2) return;
  /* bound to one core, as mpirun binds one or two ranks: the note names the cause */
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &set)) {
      CPU_SET(cpu, &one);
      break;
    }
  EXPECT(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity to one CPU");
  EXPECT(kv_ref_binding_note(1, note, sizeof note) == 1 && strstr(note, "--bind-to none"),
         "one rank bound to one of %ld CPUs: the binding note (%s)", online, note);
  EXPECT(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity back");
  EXPECT(mask < 2 || kv_ref_binding_note(1, note, sizeof note) == 0, "the whole mask again: no note");
}

int main(void) {
  kv_check_init(0, "test");
  TEST("host threads of the CPU references");
  test_host_threads();
  TEST("every registered family's descriptor (%d families)", kv_family_count());
  for (int f = 0; kv_families[f]; f++) check_family(kv_families[f]);
  TEST("host input generation");
  test_generation();
  TEST("the families' test decks: inputs, determinism");
  test_deck_cases();
  return TEST_RETURN();
}
