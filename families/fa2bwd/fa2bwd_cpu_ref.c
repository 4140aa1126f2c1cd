/* fa2bwd_cpu_ref.c - fp64 CPU reference of the fa2bwd family on the rounded inputs, row by row
 * (row r: gradient r / T of token row r % T, T = batch seqlen heads; fa2bwd.h), and its
 * double-double twin for the tests. The definition and the magnitude terms are
 * fa2bwd_reference.h's. A dQ row needs its own query row's softmax statistics; a dK or dV row
 * (key j) needs those of every query that sees j, so the statistics of a (batch, head) are
 * computed once per call, when its first key row is asked for, and kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/dd.h"
#include "families/fa2bwd/fa2bwd.h"
#include "families/fa2bwd/fa2bwd_reference.h"

/* A query row's statistics: m = max S, l = sum exp(S - m), D = sum P dP, Dabs = sum P B,
 * c = kv_fa2bwd_row_factor. */
typedef struct {
  double m, l, d, dabs, c;
} row_stats;

typedef struct {
  kv_fa2bwd_dims d;
  kv_dtype st;
  int dd;                       /* double-double sums */
  double rho, eta;
  double *q, *k, *v, *dout;     /* the loaded head: [seqlen, headdim] each, fp64 */
  long long head;               /* b * heads + h of the loaded head, -1: none */
  double *s, *a, *dp, *bm;      /* one query row against every key: S, A, dP, B */
  kv_dd *acc;                   /* headdim accumulators */
  row_stats *stats;             /* [batch * heads * seqlen] */
  unsigned char *ready;         /* [batch * heads]: stats computed */
} ref_work;

static void ref_free(ref_work *w) {
  free(w->q);
  free(w->s);
  free(w->acc);
  free(w->stats);
  free(w->ready);
}

static kv_status ref_alloc(ref_work *w, const kv_case *c, int dd) {
  memset(w, 0, sizeof *w);
  kv_fa2bwd_dims_of(c, &w->d);
  w->st = c->prec.storage;
  w->dd = dd;
  kv_fa2bwd_mag_terms(c, &w->rho, &w->eta);
  w->head = -1;
  const size_t l = (size_t)w->d.seqlen, hd = (size_t)w->d.headdim, heads = (size_t)(w->d.batch * w->d.heads);
  w->q = KV_MALLOC(4 * l * hd * sizeof(double));
  w->s = KV_MALLOC(4 * l * sizeof(double));
  w->acc = KV_MALLOC(hd * sizeof(kv_dd));
  w->stats = KV_MALLOC(heads * l * sizeof(row_stats));
  w->ready = calloc(heads, 1);
  if (CHECK_ALLOC(w->q) != KV_OK || CHECK_ALLOC(w->s) != KV_OK || CHECK_ALLOC(w->acc) != KV_OK ||
      CHECK_ALLOC(w->stats) != KV_OK || CHECK_ALLOC(w->ready) != KV_OK) {
    ref_free(w);
    return KV_ERR;
  }
  w->k = w->q + l * hd;
  w->v = w->k + l * hd;
  w->dout = w->v + l * hd;
  w->a = w->s + l;
  w->dp = w->a + l;
  w->bm = w->dp + l;
  return KV_OK;
}

/* The four inputs of head h of batch b, widened to fp64. */
static void load_head(ref_work *w, const void *const *in, long long b, long long h) {
  const kv_fa2bwd_dims *d = &w->d;
  if (w->head == b * d->heads + h) return;
  const size_t hd = (size_t)d->headdim;
  double *dst[4] = {w->q, w->k, w->v, w->dout};
  for (long long i = 0; i < d->seqlen; i++) {
    const size_t off = (((size_t)b * (size_t)d->seqlen + (size_t)i) * (size_t)d->heads + (size_t)h) * hd;
    for (int t = 0; t < 4; t++) kv_to_double(in[t], w->st, off, hd, dst[t] + (size_t)i * hd);
  }
  w->head = b * d->heads + h;
}

/* sum_k x_k y_k in fp64 or double-double, and sum_k |x_k y_k|. */
static double dot(const ref_work *w, const double *x, const double *y, double *abs_sum) {
  const size_t hd = (size_t)w->d.headdim;
  kv_dd s = kv_dd_zero;
  double plain = 0.0, a = 0.0;
  for (size_t k = 0; k < hd; k++) {
    if (w->dd) s = kv_dd_add_prod(s, x[k], y[k]);
    else plain += x[k] * y[k];
    a += fabs(x[k] * y[k]);
  }
  *abs_sum = a;
  return w->dd ? kv_dd_value(s) : plain;
}

static void acc_zero(ref_work *w) {
  for (long long k = 0; k < w->d.headdim; k++) w->acc[k] = kv_dd_zero;
}

static void acc_add(ref_work *w, double p, const double *x) {
  for (long long k = 0; k < w->d.headdim; k++) {
    if (w->dd) w->acc[k] = kv_dd_add_prod(w->acc[k], p, x[k]);
    else w->acc[k].hi += p * x[k];
  }
}

static double acc_value(const ref_work *w, long long k) { return w->dd ? kv_dd_value(w->acc[k]) : w->acc[k].hi; }

/* Query row i of the loaded head against its n visible keys: S, A, dP and B into the work
 * rows, and the row's statistics. */
static row_stats query_row(ref_work *w, long long i, long long n) {
  const size_t hd = (size_t)w->d.headdim;
  const double *qi = w->q + (size_t)i * hd, *doi = w->dout + (size_t)i * hd;
  row_stats r = {-INFINITY, 0.0, 0.0, 0.0, 0.0};
  for (long long j = 0; j < n; j++) {
    w->s[j] = w->d.scale * dot(w, qi, w->k + (size_t)j * hd, &w->a[j]);
    w->a[j] *= w->d.scale;
    w->dp[j] = dot(w, doi, w->v + (size_t)j * hd, &w->bm[j]);
    if (w->s[j] > r.m) r.m = w->s[j];
  }
  kv_dd l = kv_dd_zero, dsum = kv_dd_zero;
  for (long long j = 0; j < n; j++) {
    const double e = exp(w->s[j] - r.m);
    l = w->dd ? kv_dd_add(l, e) : (kv_dd){l.hi + e, 0.0};
  }
  r.l = kv_dd_value(l);
  double abar = 0.0;
  for (long long j = 0; j < n; j++) {
    const double p = exp(w->s[j] - r.m) / r.l;
    dsum = w->dd ? kv_dd_add_prod(dsum, p, w->dp[j]) : (kv_dd){dsum.hi + p * w->dp[j], 0.0};
    r.dabs += p * w->bm[j];
    abar += p * w->a[j];
  }
  r.d = kv_dd_value(dsum);
  r.c = kv_fa2bwd_row_factor(abar, r.m, r.m + log(r.l), (double)n);
  return r;
}

/* The statistics of every query row of head (b, h), once per call. */
static void head_stats(ref_work *w, const void *const *in, long long b, long long h) {
  const long long head = b * w->d.heads + h;
  load_head(w, in, b, h);
  if (w->ready[head]) return;
  for (long long i = 0; i < w->d.seqlen; i++)
    w->stats[(size_t)head * (size_t)w->d.seqlen + (size_t)i] = query_row(w, i, kv_fa2bwd_keys(&w->d, i));
  w->ready[head] = 1;
}

/* dQ of query row i: s sum_j dS_ij K_j, magnitude s sum_j T_ij |K_j|. */
static void dq_row(ref_work *w, long long i, double *out, double *mag) {
  const size_t hd = (size_t)w->d.headdim;
  const long long n = kv_fa2bwd_keys(&w->d, i);
  const row_stats r = query_row(w, i, n);
  acc_zero(w);
  memset(mag, 0, hd * sizeof(double));
  for (long long j = 0; j < n; j++) {
    const double p = exp(w->s[j] - r.m) / r.l, *kj = w->k + (size_t)j * hd;
    const double t = kv_fa2bwd_ds_weight(p, w->bm[j], r.dabs, w->a[j] + r.c, w->rho, w->eta);
    acc_add(w, p * (w->dp[j] - r.d), kj);
    for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(kj[k]);
  }
  for (size_t k = 0; k < hd; k++) {
    out[k] = w->d.scale * acc_value(w, (long long)k);
    mag[k] = mag[k] * w->d.scale + w->eta;
  }
}

/* dK (want_dk) or dV of key row j, over the queries that see it. */
static void dkv_row(ref_work *w, long long head, long long j, int want_dk, double *out, double *mag) {
  const size_t hd = (size_t)w->d.headdim;
  const double *kj = w->k + (size_t)j * hd, *vj = w->v + (size_t)j * hd;
  const row_stats *st = w->stats + (size_t)head * (size_t)w->d.seqlen;
  acc_zero(w);
  memset(mag, 0, hd * sizeof(double));
  for (long long i = w->d.causal ? j : 0; i < w->d.seqlen; i++) {
    const double *qi = w->q + (size_t)i * hd, *doi = w->dout + (size_t)i * hd;
    double a, bm;
    const double s = w->d.scale * dot(w, qi, kj, &a), dp = dot(w, doi, vj, &bm);
    const double p = exp(s - st[i].m) / st[i].l, e = w->d.scale * a + st[i].c;
    if (want_dk) {
      const double t = kv_fa2bwd_ds_weight(p, bm, st[i].dabs, e, w->rho, w->eta);
      acc_add(w, p * (dp - st[i].d), qi);
      for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(qi[k]);
    } else {
      const double t = kv_fa2bwd_p_weight(p, e, w->rho, w->eta);
      acc_add(w, p, doi);
      for (size_t k = 0; k < hd; k++) mag[k] += t * fabs(doi[k]);
    }
  }
  const double f = want_dk ? w->d.scale : 1.0;
  for (size_t k = 0; k < hd; k++) {
    out[k] = f * acc_value(w, (long long)k);
    mag[k] = mag[k] * f + w->eta;
  }
}

static kv_status run_rows(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                          double *mag, int dd) {
  ref_work w;
  KV_TRY(ref_alloc(&w, c, dd));
  const kv_fa2bwd_dims *d = &w.d;
  const size_t hd = (size_t)d->headdim, tokens = (size_t)d->batch * (size_t)d->seqlen * (size_t)d->heads;
  if (kv_check_rows(rows, n_rows, 3 * tokens, "fa2bwd") != KV_OK) {
    ref_free(&w);
    return KV_ERR;
  }
  for (size_t r = 0; r < n_rows; r++) {
    const size_t part = rows[r] / tokens, t = rows[r] % tokens;
    const long long h = (long long)(t % (size_t)d->heads), i = (long long)((t / (size_t)d->heads) % (size_t)d->seqlen);
    const long long b = (long long)(t / ((size_t)d->heads * (size_t)d->seqlen));
    if (part == 0) {
      load_head(&w, in, b, h);
      dq_row(&w, i, ref + r * hd, mag + r * hd);
    } else {
      head_stats(&w, in, b, h);
      dkv_row(&w, b * d->heads + h, i, part == 1, ref + r * hd, mag + r * hd);
    }
  }
  ref_free(&w);
  return KV_OK;
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
