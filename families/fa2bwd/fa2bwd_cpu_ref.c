/* fa2bwd_cpu_ref.c - fp64 CPU reference of the fa2bwd family on the rounded inputs, row by row
 * (row r: gradient r / T of token row r % T, T = batch seqlen heads; fa2bwd.h), and its
 * double-double twin for the tests. The definition and the magnitude terms are
 * fa2bwd_reference.h's. A dQ row needs its own query row's softmax statistics; a dK or dV row
 * (key j) needs those of every query that sees j, so the rows are taken head by head: the
 * statistics of a (batch, head) are computed once per call, on every thread the call may use
 * (kv_ref_part_threads), and its rows are then spread over those threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "families/ref_threads.h"
#include "numerics/dd.h"
#include "families/fa2bwd/fa2bwd.h"
#include "families/fa2bwd/fa2bwd_reference.h"

/* A query row's statistics: m = max S, l = sum exp(S - m), D = sum P dP, Dabs = sum P B,
 * c = kv_fa2bwd_row_factor. */
typedef struct {
  double m, l, d, dabs, c;
} row_stats;

/* What every thread reads: the case, the loaded head and the statistics of the heads done. */
typedef struct {
  kv_fa2bwd_dims d;
  kv_dtype st;
  int dd;                       /* double-double sums */
  double rho, eta;
  double *q, *k, *v, *dout;     /* the loaded head: [seqlen, headdim] each, fp64 */
  row_stats *stats;             /* the loaded head's query rows */
} ref_head;

/* One thread's scratch: a query row against every key (S, A, dP, B) and headdim accumulators. */
typedef struct {
  const ref_head *h;
  double *s, *a, *dp, *bm;
  kv_dd *acc;
} ref_work;

static void head_free(ref_head *h) {
  free(h->q);
  free(h->stats);
}

static kv_status head_alloc(ref_head *h, const kv_case *c, int dd) {
  memset(h, 0, sizeof *h);
  kv_fa2bwd_dims_of(c, &h->d);
  h->st = c->prec.storage;
  h->dd = dd;
  kv_fa2bwd_mag_terms(c, &h->rho, &h->eta);
  const size_t l = (size_t)h->d.seqlen, hd = (size_t)h->d.headdim;
  h->q = KV_MALLOC(4 * l * hd * sizeof(double));
  h->stats = KV_MALLOC(l * sizeof(row_stats));
  if (CHECK_ALLOC(h->q) != KV_OK || CHECK_ALLOC(h->stats) != KV_OK) {
    head_free(h);
    return KV_ERR;
  }
  h->k = h->q + l * hd;
  h->v = h->k + l * hd;
  h->dout = h->v + l * hd;
  return KV_OK;
}

static void work_free(ref_work *w) {
  free(w->s);
  free(w->acc);
}

static kv_status work_alloc(ref_work *w, const ref_head *h) {
  const size_t l = (size_t)h->d.seqlen;
  w->h = h;
  w->s = KV_MALLOC(4 * l * sizeof(double));
  w->acc = KV_MALLOC((size_t)h->d.headdim * sizeof(kv_dd));
  if (CHECK_ALLOC(w->s) != KV_OK || CHECK_ALLOC(w->acc) != KV_OK) {
    work_free(w);
    return KV_ERR;
  }
  w->a = w->s + l;
  w->dp = w->a + l;
  w->bm = w->dp + l;
  return KV_OK;
}

/* The four inputs of head h of batch b, widened to fp64. */
static void load_head(ref_head *w, const void *const *in, long long b, long long h) {
  const kv_fa2bwd_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim;
  double *dst[4] = {w->q, w->k, w->v, w->dout};
  for (long long i = 0; i < d->seqlen; i++) {
    const size_t off = (((size_t)b * (size_t)d->seqlen + (size_t)i) * (size_t)d->heads + (size_t)h) * hd;
    for (int t = 0; t < 4; t++) kv_to_double(in[t], w->st, off, hd, dst[t] + (size_t)i * hd);
  }
}

/* sum_k x_k y_k in fp64 or double-double, and sum_k |x_k y_k|. */
static double dot(const ref_head *h, const double *x, const double *y, double *abs_sum) {
  const size_t hd = (size_t)h->d.headdim;
  kv_dd s = kv_dd_zero;
  double plain = 0.0, a = 0.0;
  for (size_t k = 0; k < hd; k++) {
    if (h->dd) s = kv_dd_add_prod(s, x[k], y[k]);
    else plain += x[k] * y[k];
    a += fabs(x[k] * y[k]);
  }
  *abs_sum = a;
  return h->dd ? kv_dd_value(s) : plain;
}

static void acc_zero(ref_work *w) {
  for (long long k = 0; k < w->h->d.headdim; k++) w->acc[k] = kv_dd_zero;
}

static void acc_add(ref_work *w, double p, const double *x) {
  for (long long k = 0; k < w->h->d.headdim; k++) {
    if (w->h->dd) w->acc[k] = kv_dd_add_prod(w->acc[k], p, x[k]);
    else w->acc[k].hi += p * x[k];
  }
}

static double acc_value(const ref_work *w, long long k) {
  return w->h->dd ? kv_dd_value(w->acc[k]) : w->acc[k].hi;
}

/* Query row i of the loaded head against its n visible keys: S, A, dP and B into the work
 * rows, and the row's statistics. */
static row_stats query_row(ref_work *w, long long i, long long n) {
  const ref_head *h = w->h;
  const size_t hd = (size_t)h->d.headdim;
  const double *qi = h->q + (size_t)i * hd, *doi = h->dout + (size_t)i * hd;
  row_stats r = {-INFINITY, 0.0, 0.0, 0.0, 0.0};
  for (long long j = 0; j < n; j++) {
    w->s[j] = h->d.scale * dot(h, qi, h->k + (size_t)j * hd, &w->a[j]);
    w->a[j] *= h->d.scale;
    w->dp[j] = dot(h, doi, h->v + (size_t)j * hd, &w->bm[j]);
    if (w->s[j] > r.m) r.m = w->s[j];
  }
  kv_dd l = kv_dd_zero, dsum = kv_dd_zero;
  for (long long j = 0; j < n; j++) {
    const double e = exp(w->s[j] - r.m);
    l = h->dd ? kv_dd_add(l, e) : (kv_dd){l.hi + e, 0.0};
  }
  r.l = kv_dd_value(l);
  double abar = 0.0;
  for (long long j = 0; j < n; j++) {
    const double p = exp(w->s[j] - r.m) / r.l;
    dsum = h->dd ? kv_dd_add_prod(dsum, p, w->dp[j]) : (kv_dd){dsum.hi + p * w->dp[j], 0.0};
    r.dabs += p * w->bm[j];
    abar += p * w->a[j];
  }
  r.d = kv_dd_value(dsum);
  r.c = kv_fa2bwd_row_factor(abar, r.m, r.m + log(r.l), (double)n);
  return r;
}

/* dQ of query row i: s sum_j dS_ij K_j, magnitude s sum_j T_ij |K_j|. */
static void dq_row(ref_work *w, long long i, double *out, double *mag) {
  const ref_head *h = w->h;
  const size_t hd = (size_t)h->d.headdim;
  const long long n = kv_fa2bwd_keys(&h->d, i);
  const row_stats r = query_row(w, i, n);
  acc_zero(w);
  memset(mag, 0, hd * sizeof(double));
  for (long long j = 0; j < n; j++) {
    const double p = exp(w->s[j] - r.m) / r.l, *kj = h->k + (size_t)j * hd;
    const double t = kv_fa2bwd_ds_weight(p, w->bm[j], r.dabs, w->a[j] + r.c, h->rho, h->eta);
    acc_add(w, p * (w->dp[j] - r.d), kj);
    for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(kj[k]);
  }
  for (size_t k = 0; k < hd; k++) {
    out[k] = h->d.scale * acc_value(w, (long long)k);
    mag[k] = mag[k] * h->d.scale + h->eta;
  }
}

/* dK (want_dk) or dV of key row j, over the queries that see it (the loaded head's stats). */
static void dkv_row(ref_work *w, long long j, int want_dk, double *out, double *mag) {
  const ref_head *h = w->h;
  const size_t hd = (size_t)h->d.headdim;
  const double *kj = h->k + (size_t)j * hd, *vj = h->v + (size_t)j * hd;
  const row_stats *st = h->stats;
  acc_zero(w);
  memset(mag, 0, hd * sizeof(double));
  for (long long i = h->d.causal ? j : 0; i < h->d.seqlen; i++) {
    const double *qi = h->q + (size_t)i * hd, *doi = h->dout + (size_t)i * hd;
    double a, bm;
    const double s = h->d.scale * dot(h, qi, kj, &a), dp = dot(h, doi, vj, &bm);
    const double p = exp(s - st[i].m) / st[i].l, e = h->d.scale * a + st[i].c;
    if (want_dk) {
      const double t = kv_fa2bwd_ds_weight(p, bm, st[i].dabs, e, h->rho, h->eta);
      acc_add(w, p * (dp - st[i].d), qi);
      for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(qi[k]);
    } else {
      const double t = kv_fa2bwd_p_weight(p, e, h->rho, h->eta);
      acc_add(w, p, doi);
      for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(doi[k]);
    }
  }
  const double f = want_dk ? h->d.scale : 1.0;
  for (size_t k = 0; k < hd; k++) {
    out[k] = f * acc_value(w, (long long)k);
    mag[k] = mag[k] * f + h->eta;
  }
}

/* b * heads + h of token row t (t = (b seqlen + i) heads + h). */
static size_t head_of(const kv_fa2bwd_dims *d, size_t t) {
  return t / ((size_t)d->heads * (size_t)d->seqlen) * (size_t)d->heads + t % (size_t)d->heads;
}

/* The rows of one head, shared by the threads: thread t takes every threads-th item from t. */
typedef struct {
  ref_head *h;
  ref_work *work;               /* one per thread */
  int threads;
  const size_t *rows, *picked;  /* picked: indices into rows of this head's rows */
  size_t n_picked, tokens;
  double *ref, *mag;
} head_job;

static kv_status stats_task(int t, void *arg) {
  const head_job *j = arg;
  for (long long i = t; i < j->h->d.seqlen; i += j->threads)
    j->h->stats[i] = query_row(&j->work[t], i, kv_fa2bwd_keys(&j->h->d, i));
  return KV_OK;
}

static kv_status rows_task(int t, void *arg) {
  const head_job *j = arg;
  const size_t hd = (size_t)j->h->d.headdim;
  for (size_t p = (size_t)t; p < j->n_picked; p += (size_t)j->threads) {
    const size_t r = j->picked[p], part = j->rows[r] / j->tokens;
    const long long i = (long long)((j->rows[r] % j->tokens / (size_t)j->h->d.heads) % (size_t)j->h->d.seqlen);
    if (part == 0) dq_row(&j->work[t], i, j->ref + r * hd, j->mag + r * hd);
    else dkv_row(&j->work[t], i, part == 1, j->ref + r * hd, j->mag + r * hd);
  }
  return KV_OK;
}

/* Every asked-for row, head by head in the order the rows name them: the head is loaded once,
 * its statistics computed (over all threads) when a key row needs them, its rows spread over
 * the threads. Each value's operations are those of one thread. */
static kv_status run_rows(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                          double *mag, int dd) {
  ref_head h;
  KV_TRY(head_alloc(&h, c, dd));
  const kv_fa2bwd_dims *d = &h.d;
  const size_t tokens = (size_t)d->batch * (size_t)d->seqlen * (size_t)d->heads;
  int threads = kv_ref_part_threads();
  ref_work work[KV_REF_MAX_THREADS];
  size_t *picked = KV_MALLOC((n_rows ? n_rows : 1) * sizeof *picked);
  unsigned char *done = calloc(n_rows ? n_rows : 1, 1);
  kv_status st = CHECK_ALLOC(picked) == KV_OK && CHECK_ALLOC(done) == KV_OK ? KV_OK : KV_ERR;
  if (st == KV_OK) st = kv_check_rows(rows, n_rows, 3 * tokens, "fa2bwd");
  int made = 0;
  for (; st == KV_OK && made < threads; made++) st = work_alloc(&work[made], &h);
  for (size_t first = 0; st == KV_OK && first < n_rows; first++) {
    if (done[first]) continue;
    const size_t head = head_of(d, rows[first] % tokens);
    head_job job = {&h, work, threads, rows, picked, 0, tokens, ref, mag};
    int keys = 0;
    for (size_t r = first; r < n_rows; r++) {
      if (done[r] || head_of(d, rows[r] % tokens) != head) continue;
      done[r] = 1;
      picked[job.n_picked++] = r;
      keys |= rows[r] >= tokens;
    }
    load_head(&h, in, (long long)(head / (size_t)d->heads), (long long)(head % (size_t)d->heads));
    if (keys) st = kv_parallel_for(threads, threads, stats_task, &job);
    if (st == KV_OK) st = kv_parallel_for(threads, threads, rows_task, &job);
  }
  for (int t = 0; t < made; t++) work_free(&work[t]);
  free(picked);
  free(done);
  head_free(&h);
  return st;
}

kv_status kv_fa2bwd_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref;
  (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 0);
}

kv_status kv_fa2bwd_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                     double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref;
  (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 1);
}
