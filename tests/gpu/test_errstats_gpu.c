/* test_errstats_gpu.c - kv_cuda_errstats (src/backends/cuda/errstats.cu) against the host's
 * kv_errstats_compute on the same data (make check; exit 77 without a GPU). Every integer
 * field, the maxima, p99_ulp, floor_ratio, worst_index and the histogram must be identical;
 * the GPU's mean_abs and rel_l2 (sums in another order) within 1e-12 relative of accurately
 * (compensated) summed values and within the host's own rounding bound of the host's; two
 * GPU runs bit-identical. Sets, for fp16, bf16, fp32 (and fp64) outputs: hand-made elements of every
 * class (NaN/Inf outputs, NaN/Inf references, references that overflow the storage type,
 * exact zeros, a NaN magnitude term, 0/0 relative errors, ties of the worst ratio), n = 0 and
 * 1, random sets of sizes that are no multiple of any block size, with ties and non-finite
 * values, dense and through sampled index arrays (rows in order and reversed, where the first
 * worst position is not the lowest index), and n = 10^7. Then real cases of every family with
 * a CUDA implementation through the cuda backend, once with host and once with device
 * statistics (the runner's two paths), which must agree the same way, the statistics of each
 * part of an output with parts (fa2bwd's dq, dk, dv) too.
 * Usage: test_errstats_gpu [small|bench]
 *   small: no 10^7 set, the smallest backend cases (for compute-sanitizer);
 *   bench: large gemm / fa2 / layernorm cases, timed: the old path (reference and magnitude
 *          copied to the host, kv_errstats_compute) against the device statistics. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_util.h"
#include "backends/backend.h"
#include "backends/cuda/device.h"
#include "family_cuda.h"
#include "input/deck.h"
#include "numerics/errstats.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"
#include "input/plan.h"
#include "core/result.h"
#include "core/timing.h"
#include "run/parts.h"

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

static int close_rel(double a, double b, double rel) {
  if (same(a, b)) return 1;
  return isfinite(a) && isfinite(b) && fabs(a - b) <= rel * fmax(fabs(a), fabs(b));
}

/* Compensated (Neumaier) running sum: the true sum of the terms to about 2 ulps. */
typedef struct {
  double s, c;
} exact_sum;

static void exact_add(exact_sum *a, double x) {
  const double t = a->s + x;
  a->c += fabs(a->s) >= fabs(x) ? (a->s - t) + x : (x - t) + a->s;
  a->s = t;
}

/* mean_abs and rel_l2 from accurate sums over the ordinary elements (output and reference
 * finite), the same terms both implementations add. */
static void accurate_sums(const void *out, kv_dtype t, const int64_t *index, const double *ref, size_t n,
                          double *mean_abs, double *rel_l2) {
  exact_sum abs = {0, 0}, err2 = {0, 0}, ref2 = {0, 0};
  size_t finite = 0;
  for (size_t i = 0; i < n; i++) {
    const double o = kv_load(out, index ? (size_t)index[i] : i, t), r = ref[i];
    if (!isfinite(o) || !isfinite(r)) continue;
    const double e = fabs(o - r);
    exact_add(&abs, e);
    exact_add(&err2, e * e);
    exact_add(&ref2, r * r);
    finite++;
  }
  const double se = abs.s + abs.c, se2 = err2.s + err2.c, sr2 = ref2.s + ref2.c;
  *mean_abs = finite ? se / (double)finite : 0.0;
  *rel_l2 = se2 == 0.0 ? 0.0 : sqrt(se2) / sqrt(sr2);
}

/* Host h and GPU g statistics of the same n elements. Everything but the sums must be
 * identical. The sums: the GPU's (a tree, error ~ log2(n) ulps) within 1e-12 of the accurate
 * ones; the host's running sums carry up to (n - 1) u relative error (u = 2^-53), measured
 * 9e-12 at n = 10^7, so host and GPU agree within 1e-12 + n u. */
static void compare_stats(const char *what, const kv_errstats *h, const kv_errstats *g, const void *out, kv_dtype t,
                          const int64_t *index, const double *ref, size_t n) {
#define SAME(f) EXPECT(same(h->f, g->f), "%s: " #f " host %.17g gpu %.17g", what, h->f, g->f)
#define SAME_INT(f) EXPECT(h->f == g->f, "%s: " #f " host %lld gpu %lld", what, (long long)h->f, (long long)g->f)
  SAME(max_abs);
  SAME(max_rel);
  SAME(max_ulp);
  SAME(p99_ulp);
  SAME(max_bound_ratio);
  SAME(floor_ratio);
  SAME_INT(n_nan);
  SAME_INT(n_inf);
  SAME_INT(n_checked);
  SAME_INT(worst_index);
  for (int b = 0; b < KV_HIST_BINS; b++)
    EXPECT(h->hist[b] == g->hist[b], "%s: hist[%d] host %llu gpu %llu", what, b, (unsigned long long)h->hist[b],
           (unsigned long long)g->hist[b]);
  double mean_abs, rel_l2;
  accurate_sums(out, t, index, ref, n, &mean_abs, &rel_l2);
  EXPECT(close_rel(g->mean_abs, mean_abs, 1e-12), "%s: mean_abs gpu %.17g accurate %.17g", what, g->mean_abs, mean_abs);
  EXPECT(close_rel(g->rel_l2, rel_l2, 1e-12), "%s: rel_l2 gpu %.17g accurate %.17g", what, g->rel_l2, rel_l2);
  const double host_rel = 1e-12 + (double)n * 0x1p-53;
  EXPECT(close_rel(h->mean_abs, g->mean_abs, host_rel), "%s: mean_abs host %.17g gpu %.17g", what, h->mean_abs,
         g->mean_abs);
  EXPECT(close_rel(h->rel_l2, g->rel_l2, host_rel), "%s: rel_l2 host %.17g gpu %.17g", what, h->rel_l2, g->rel_l2);
#undef SAME
#undef SAME_INT
}

static void *to_device(const void *host, size_t bytes) {
  void *dev = NULL;
  int ok = cudaMalloc(&dev, bytes ? bytes : 1) == cudaSuccess &&
           (!bytes || cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  EXPECT(ok, "device copy of %zu bytes", bytes);
  return ok ? dev : NULL;
}

static void device_free(void *p) {
  if (p) EXPECT(cudaFree(p) == cudaSuccess, "cudaFree");
}

/* One set through both implementations: m output elements of type t, n compared ones. */
static void check_set(const char *what, const void *out, size_t m, kv_dtype t, const int64_t *index, const double *ref,
                      const double *mag, size_t n, kv_precision prec, const kv_tolerance *tol, double red_len) {
  kv_errstats h, g, g2;
  EXPECT(kv_errstats_compute(out, t, index, ref, mag, n, prec, tol, red_len, &h) == 0, "%s: host", what);
  void *d_out = to_device(out, m * kv_dtype_size(t)), *d_ref = to_device(ref, n * sizeof *ref);
  void *d_mag = to_device(mag, n * sizeof *mag), *d_index = index ? to_device(index, n * sizeof *index) : NULL;
  if (d_out && d_ref && d_mag && (!index || d_index)) {
    EXPECT(kv_cuda_errstats(d_out, t, d_index, d_ref, d_mag, n, prec, tol, red_len, 60.0, &g, NULL) == KV_OK, "%s: gpu", what);
    EXPECT(kv_cuda_errstats(d_out, t, d_index, d_ref, d_mag, n, prec, tol, red_len, 60.0, &g2, NULL) == KV_OK, "%s: gpu", what);
    compare_stats(what, &h, &g, out, t, index, ref, n);
    EXPECT(memcmp(&g, &g2, sizeof g) == 0, "%s: two GPU runs differ", what);
  }
  device_free(d_out);
  device_free(d_ref);
  device_free(d_mag);
  device_free(d_index);
}

static kv_precision prec_of(kv_dtype t) {
  kv_precision p = {t, t == KV_FP64 ? KV_FP64 : KV_FP32};
  return p;
}

/* Every class of element, twice the worst ratio (positions 2 and 6), NaN magnitude, 0/0. */
static void crafted(kv_dtype t) {
  const double big = 2.0 * kv_dtype_max(t); /* overflows the storage type: rounds to inf */
  const double o[] = {1.0,  0.0,  3.0, NAN,      INFINITY, INFINITY, 3.0, NAN, 5.0,  -INFINITY, 0x1p-20, 0.0, 2.0,
                      -7.5, 1e-3, 0.0, INFINITY, 2.5,      NAN,      1.0, 0.0, -2.0, 4.0};
  const double r[] = {1.0,  0.0,  3.25, 2.0,  1.0,  big,  3.25, NAN, NAN,      INFINITY, 0x1p-21, 1e-30, 2.001,
                      -7.0, 1e-3, -0.0, -big, 2.5,  -1.0, 1.0,  1.0, -2.0 + 1e-6, 4.0};
  _Static_assert(sizeof o == sizeof r, "one reference per output");
  const double m[] = {1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, NAN,
                      2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  _Static_assert(sizeof o == sizeof m, "one magnitude term per output");
  const size_t n = sizeof o / sizeof o[0];
  unsigned char out[sizeof o / sizeof o[0] * 8];
  for (size_t i = 0; i < n; i++) kv_store(out, i, t, o[i]);
  char what[96];
  for (int variant = 0; variant < 4; variant++) {
    /* 0: default tolerance; 1: no floors (0/0 relative errors, zero bounds); 2: each element
     * alone, and none; 3: elements 6 and 2 first (equal finite ratios, the largest of the
     * subset: the worst is the first position, index 6, not the lower index 2) */
    kv_tolerance tol = kv_tolerance_default(prec_of(t));
    if (variant == 1) tol.abs_floor = tol.rel_floor = 0.0;
    snprintf(what, sizeof what, "crafted %s variant %d", kv_dtype_name(t), variant);
    if (variant < 2) {
      check_set(what, out, n, t, NULL, r, m, n, prec_of(t), &tol, 64.0);
      continue;
    }
    if (variant == 3) {
      const int64_t idx[] = {6, 2, 0, 1, 13};
      double rs[5], ms[5];
      for (int k = 0; k < 5; k++) rs[k] = r[idx[k]], ms[k] = m[idx[k]];
      check_set(what, out, n, t, idx, rs, ms, 5, prec_of(t), &tol, 64.0);
      continue;
    }
    for (size_t k = 0; k < n; k++) {
      snprintf(what, sizeof what, "crafted %s n=1 element %zu", kv_dtype_name(t), k);
      const int64_t idx = (int64_t)k;
      check_set(what, out, n, t, &idx, &r[k], &m[k], 1, prec_of(t), &tol, 64.0);
    }
    check_set("n=0", out, n, t, NULL, r, m, 0, prec_of(t), &tol, 64.0);
  }
}

/* Uniform in [0, 1) from a counter. */
static double uniform(uint64_t key, uint64_t i) { return (double)(kv_mix64(key ^ kv_mix64(i)) >> 11) * 0x1p-53; }

/* Random references of many magnitudes (5% exact zeros), outputs off by a few ulps of the
 * storage (so ULP errors tie a lot), 1% of elements beyond the tolerance; with `specials`,
 * 0.2% NaN/Inf outputs and non-finite references. out holds m elements, the compared ones
 * at index[i] (or i). */
static void random_set(kv_dtype t, uint64_t key, size_t n, const int64_t *index, int specials, void *out, double *ref,
                       double *mag) {
  const double u = kv_dtype_unit_roundoff(t);
  for (size_t i = 0; i < n; i++) {
    const size_t j = index ? (size_t)index[i] : i;
    const double a = uniform(key, 4 * i), b = uniform(key, 4 * i + 1), c = uniform(key, 4 * i + 2);
    const double s = uniform(key, 4 * i + 3);
    double r = a < 0.05 ? 0.0 : (b < 0.5 ? -1.0 : 1.0) * ldexp(1.0 + c, (int)(s * 40.0) - 30);
    double o = kv_round_f64(r, t) * (1.0 + u * floor(4.0 * (b - 0.5) * 2.0));
    if (a > 0.99) o = r * (1.0 + 0.1 * c); /* beyond the tolerance */
    mag[i] = fabs(r) * (1.0 + 8.0 * c);
    if (specials && a > 0.05 && a < 0.052) {
      const int k = (int)(s * 5.0);
      if (k == 0) o = NAN;
      if (k == 1) o = b < 0.5 ? INFINITY : -INFINITY;
      if (k == 2) r = NAN;
      if (k == 3) r = INFINITY, o = b < 0.5 ? INFINITY : 1.0;
      if (k == 4) r = 4.0 * kv_dtype_max(t), o = INFINITY;
    }
    ref[i] = r;
    kv_store(out, j, t, o);
  }
}

static void random_sets(kv_dtype t, int small) {
  static const size_t sizes[] = {2, 255, 256, 257, 1000, 65537, 262145, 1000003};
  char what[128];
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const size_t n = sizes[s];
    if (small && n > 70000) continue;
    void *out = malloc(n * 8);
    double *ref = malloc(n * sizeof *ref), *mag = malloc(n * sizeof *mag);
    EXPECT(out && ref && mag, "alloc");
    if (!out || !ref || !mag) return;
    const kv_tolerance tol = kv_tolerance_default(prec_of(t));
    for (int specials = 0; specials < 2; specials++) {
      random_set(t, 1000 * s + (uint64_t)specials, n, NULL, specials, out, ref, mag);
      snprintf(what, sizeof what, "random %s n=%zu specials=%d", kv_dtype_name(t), n, specials);
      check_set(what, out, n, t, NULL, ref, mag, n, prec_of(t), &tol, 4096.0);
    }
    free(out);
    free(ref);
    free(mag);
  }
}

/* Sampled rows as the runner makes them (rows in order), and the same rows reversed. */
static void sampled_sets(kv_dtype t) {
  const size_t rows = 3100, len = 129, pick = 301, n = pick * len; /* rows i*10 + i%7 < 3100 */
  void *out = calloc(rows * len, 8);
  int64_t *index = malloc(n * sizeof *index);
  double *ref = malloc(n * sizeof *ref), *mag = malloc(n * sizeof *mag);
  EXPECT(out && index && ref && mag, "alloc");
  if (out && index && ref && mag) {
    for (size_t i = 0; i < pick; i++)
      for (size_t j = 0; j < len; j++) index[i * len + j] = (int64_t)((i * 10 + (i % 7)) * len + j);
    const kv_tolerance tol = kv_tolerance_default(prec_of(t));
    char what[96];
    for (int reversed = 0; reversed < 2; reversed++) {
      if (reversed)
        for (size_t i = 0; i < n / 2; i++) {
          const int64_t x = index[i];
          index[i] = index[n - 1 - i];
          index[n - 1 - i] = x;
        }
      random_set(t, 77 + (uint64_t)reversed, n, index, 1, out, ref, mag);
      snprintf(what, sizeof what, "sampled %s rows %s", kv_dtype_name(t), reversed ? "reversed" : "in order");
      check_set(what, out, rows * len, t, index, ref, mag, n, prec_of(t), &tol, 100.0);
    }
  }
  free(out);
  free(index);
  free(ref);
  free(mag);
}

/* Every element the same (all ratios tie: worst_index is the first) and 10^7 elements. */
static void uniform_and_large(int small) {
  const size_t n = 1000;
  uint16_t out[1000];
  double ref[1000], mag[1000];
  for (size_t i = 0; i < n; i++) out[i] = kv_f64_to_f16(1.5), ref[i] = 1.5 + 1e-4, mag[i] = 1.0;
  const kv_tolerance tol = kv_tolerance_default(prec_of(KV_FP16));
  check_set("fp16 all elements equal", out, n, KV_FP16, NULL, ref, mag, n, prec_of(KV_FP16), &tol, 16.0);
  if (small) return;
  const size_t big = 10000019;
  void *bo = malloc(big * 2);
  double *br = malloc(big * sizeof *br), *bm = malloc(big * sizeof *bm);
  EXPECT(bo && br && bm, "alloc");
  if (bo && br && bm) {
    random_set(KV_FP16, 4242, big, NULL, 1, bo, br, bm);
    check_set("fp16 n=10000019", bo, big, KV_FP16, NULL, br, bm, big, prec_of(KV_FP16), &tol, 8192.0);
    random_set(KV_BF16, 4243, big, NULL, 0, bo, br, bm);
    check_set("bf16 n=10000019", bo, big, KV_BF16, NULL, br, bm, big, prec_of(KV_BF16), &tol, 8192.0);
  }
  free(bo);
  free(br);
  free(bm);
}

static const char *const small_deck =
    "[run]\nwarmup = 1\nmin_reps = 1\nmax_reps = 2\ntime_cap = 0.01\n"
    "[layernorm]\nprecision = fp16:fp32 bf16:bf16\nrows = 3 300\nhidden = 1000\ndist = normal offset\n"
    "[rmsnorm]\nprecision = fp32:fp32 fp16:fp16\nrows = 7\nhidden = 4096\n"
    "[gemm]\nvariant = kval-wgmma cublas\nprecision = fp16:fp32 bf16:bf16\nshape = 200x136x72\n"
    "[fa2]\nprecision = fp16:fp32 bf16:fp32\nheaddim = 64\nseqlen = 200\ncausal = 1\nbatch = 1\nheads = 2\n"
    "[fa2bwd]\nprecision = bf16:fp32\nheaddim = 64\nseqlen = 130\ncausal = 1\nbatch = 1\nheads = 2\n";

static const char *const bench_deck =
    "[run]\nwarmup = 1\nmin_reps = 2\nmax_reps = 3\ntime_cap = 0.05\n"
    "[gemm]\nvariant = kval-wgmma\nprecision = fp16:fp32\nshape = 8192x8192x8192\n"
    "[fa2]\nvariant = kval-wgmma\nprecision = fp16:fp32\nheaddim = 128\nseqlen = 4096\ncausal = 0\nbatch = 8\nheads = 16\n"
    "[layernorm]\nprecision = bf16:fp32\nrows = 8192\nhidden = 8192\n";

/* A family whose output has parts (kv_family.out_parts): the device statistics of each part
 * (b, the backend's device path) against the host's of the same part (a's reference on the
 * host, kv_parts_host_stats as the judge computes them), worst indices of the whole output. */
static void compare_parts(const kv_case *c, const kv_cost *cost, const kv_tolerance *tol, const kv_case_data *a,
                          const kv_case_data *b, const char *what) {
  const int n_parts = kv_family_parts(c->fp->family);
  if (n_parts == 0) return;
  EXPECT(b->has_part_stats, "%s: device part statistics handed back", what);
  kv_errstats h[KV_MAX_PARTS];
  EXPECT(kv_parts_host_stats(c, cost, tol, a, h) == KV_OK, "%s: host part statistics", what);
  for (int p = 0; p < n_parts && b->has_part_stats; p++) {
    char part[300];
    snprintf(part, sizeof part, "%s, part %s", what, c->fp->family->out_parts[p]);
    const size_t first = kv_part_first_row(cost->rows, n_parts, p) * cost->row_len;
    const size_t end = kv_part_first_row(cost->rows, n_parts, p + 1) * cost->row_len;
    const kv_errstats *g = &b->part_stats[p];
    EXPECT(g->worst_index >= (int64_t)first && g->worst_index < (int64_t)end, "%s: worst index %lld outside [%zu, %zu)",
           part, (long long)g->worst_index, first, end);
    compare_stats(part, &h[p], g, (const char *)a->out + first * kv_dtype_size(a->out_type), a->out_type, NULL,
                  a->ref + first, end - first);
  }
}

/* Each case twice through the cuda backend: host statistics (the whole reference on the
 * host, kv_errstats_compute as the runner did) and device statistics. */
static void backend_cases(const char *text, int timed) {
  const kv_backend *be = &kv_backend_cuda;
  char only[256] = "", err[512];
  for (int i = 0; kv_families[i]; i++) { /* the deck's families that have a CUDA implementation */
    char section[64];
    snprintf(section, sizeof section, "[%s]", kv_families[i]->name);
    if (kv_families[i]->cuda && strstr(text, section)) {
      if (only[0]) strncat(only, ",", sizeof only - strlen(only) - 1);
      strncat(only, kv_families[i]->name, sizeof only - strlen(only) - 1);
    }
  }
  kv_deck deck;
  kv_plan p;
  if (kv_deck_parse_string("test_errstats_gpu", text, &deck, err, sizeof err) != 0 ||
      kv_plan_build(&deck, only, "cuda", KV_MODE_SPLIT, 0, 0, &p, err, sizeof err) != 0) {
    EXPECT(0, "deck/plan: %s", err);
    return;
  }
  if (timed) printf("   %-44s %10s %9s %9s %9s %9s\n", "case", "elements", "old s", "host st s", "new s", "gpu st s");
  for (size_t ci = 0; ci < p.n_cases; ci++) {
    const kv_case *c = &p.cases[ci];
    char what[256], msg[KV_MESSAGE_LEN] = "";
    kv_case_describe(c, what, sizeof what);
    kv_cost cost;
    kv_case_cost(c, &cost);
    kv_case_data a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    b.device_stats = 1;
    const double t0 = kv_wtime();
    const int ok_a = be->run_case(c, &p.run, &a, msg, sizeof msg) == KV_OK;
    const double t1 = kv_wtime();
    const int ok_b = ok_a && be->run_case(c, &p.run, &b, msg, sizeof msg) == KV_OK;
    const double t2 = kv_wtime();
    EXPECT(ok_a && ok_b, "%s: run_case: %s", what, msg);
    EXPECT(!ok_a || (a.ref && a.mag && !a.has_stats), "%s: host statistics asked, no reference on the host", what);
    EXPECT(!ok_b || (b.has_stats && !b.ref && !b.mag), "%s: device statistics asked, not handed back", what);
    if (ok_a && ok_b && a.ref && b.has_stats) {
      const size_t n = a.n_rows * a.row_len, bytes = a.out_count * kv_dtype_size(a.out_type);
      EXPECT(memcmp(a.out, b.out, bytes) == 0, "%s: the kernel output differs between two runs", what);
      const kv_tolerance tol = p.run.has_tol_override ? p.run.tol_override : kv_tolerance_default(c->prec);
      kv_errstats h;
      const double t3 = kv_wtime();
      EXPECT(kv_errstats_compute(a.out, a.out_type, NULL, a.ref, a.mag, n, c->prec, &tol, cost.red_len, &h) == 0,
             "%s: host statistics", what);
      const double t4 = kv_wtime();
      compare_stats(what, &h, &b.stats, a.out, a.out_type, NULL, a.ref, n);
      EXPECT(b.ref_xcheck <= 1e-9, "%s: cross-check on the device path %g", what, b.ref_xcheck);
      compare_parts(c, &cost, &tol, &a, &b, what);
      if (timed) {
        /* the device statistics alone, on the same buffers */
        void *d_out = to_device(a.out, bytes), *d_ref = to_device(a.ref, n * 8), *d_mag = to_device(a.mag, n * 8);
        kv_errstats g;
        const double t5 = kv_wtime();
        EXPECT(kv_cuda_errstats(d_out, a.out_type, NULL, d_ref, d_mag, n, c->prec, &tol, cost.red_len, 60.0, &g, NULL) == KV_OK,
               "%s: gpu statistics", what);
        const double t6 = kv_wtime();
        compare_stats(what, &h, &g, a.out, a.out_type, NULL, a.ref, n);
        device_free(d_out);
        device_free(d_ref);
        device_free(d_mag);
        printf("   %-44.44s %10zu %9.3f %9.3f %9.3f %9.4f\n", what, n, t1 - t0 + t4 - t3, t4 - t3, t2 - t1, t6 - t5);
      }
    }
    kv_case_data_free(&a);
    kv_case_data_free(&b);
  }
  kv_plan_free(&p);
  kv_deck_free(&deck);
}

int main(int argc, char **argv) {
  const int small = argc > 1 && !strcmp(argv[1], "small"), bench = argc > 1 && !strcmp(argv[1], "bench");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("test_errstats_gpu: no GPU, skipped\n");
    return 77;
  }
  kv_check_init(0, "test");
  const kv_dtype types[] = {KV_FP16, KV_BF16, KV_FP32, KV_FP64};
  for (int k = 0; k < 4; k++) {
    TEST("%s: crafted elements, n = 0 and 1, random sets, sampled rows", kv_dtype_name(types[k]));
    crafted(types[k]);
    random_sets(types[k], small);
    sampled_sets(types[k]);
  }
  TEST("ties everywhere%s", small ? "" : "; n = 10^7");
  uniform_and_large(small);
  TEST("cases through the cuda backend: host vs device statistics");
  kv_run_settings rs; /* init reads no run setting */
  memset(&rs, 0, sizeof rs);
  kv_rank_info info;
  const int up = kv_backend_cuda.init(0, 1, &rs, &info) == KV_OK;
  EXPECT(up, "cuda backend init");
  if (up) backend_cases(small_deck, 0);
  if (up && bench) {
    TEST("large cases, timed: old = run_case with the reference copied back + host statistics; new = device statistics");
    backend_cases(bench_deck, 1);
  }
  if (up) kv_backend_cuda.finalize();
  return TEST_RETURN();
}
