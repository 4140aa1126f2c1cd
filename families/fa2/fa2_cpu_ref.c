/* fa2_cpu_ref.c - fp64 CPU reference of the fa2 family on the rounded inputs, row by row (row
 * r = (b * seqlen + i) * heads + h), and its double-double twin for the tests.
 *   s_j = scale * sum_k q_k k_jk over the visible keys j <= last(i); m = max s_j;
 *   P_j = exp(s_j - m) / l with l = sum_j exp(s_j - m); o_d = sum_j P_j v_jd;
 *   lse = m + log(l) (natural log); a fully masked row has o = 0, mag = 0, lse = -inf; the
 *   LSE's magnitude term is kv_fa2_lse_mag() (fa2_reference.h).
 * Magnitude term of element d (the tolerance multiplies it by c2 sqrt(K) u_acc):
 *   mag_d = sum_j P_j |v_jd| (1 + scale * sum_k |q_k k_jk| + rho)
 * The first term bounds the accumulation of P V, the second the effect of the score errors
 * (a score error e_j changes P_j by about P_j e_j), and rho = u_storage / (u_acc sqrt(K))
 * (kv_fa2_mag_rho) covers the rounding of P to the storage type before P V, a per-term error
 * of u_storage that does not shrink with the accumulator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/dd.h"
#include "families/fa2/fa2.h"
#include "families/fa2/fa2_reference.h"

typedef struct {
  kv_fa2_dims d;
  kv_dtype st;
  double rho, u_acc;
  double *q, *kr;     /* the query row, one key or value row */
  double *s, *slo, *a; /* per key: score (and its low part in double-double), scale * sum |q k| */
  kv_dd *acc;          /* double-double P V accumulators */
} ref_work;

static kv_status ref_alloc(ref_work *w, const kv_case *c) {
  kv_fa2_dims_of(c, &w->d);
  w->st = c->prec.storage;
  w->rho = kv_fa2_mag_rho(c);
  w->u_acc = kv_dtype_unit_roundoff(c->prec.accum);
  size_t hd = (size_t)w->d.headdim, lk = (size_t)w->d.seqlen_k;
  w->q = KV_MALLOC((2 * hd + 3 * lk) * sizeof(double));
  w->acc = KV_MALLOC(hd * sizeof(kv_dd));
  if (CHECK_ALLOC(w->q) != KV_OK || CHECK_ALLOC(w->acc) != KV_OK) {
    free(w->q);
    free(w->acc);
    return KV_ERR;
  }
  w->kr = w->q + hd;
  w->s = w->kr + hd;
  w->slo = w->s + lk;
  w->a = w->slo + lk;
  return KV_OK;
}

static void ref_free(ref_work *w) {
  free(w->q);
  free(w->acc);
}

/* Offset of row j of a [batch, len, heads, headdim] tensor. */
static size_t row_offset(const kv_fa2_dims *d, long long b, long long len, long long j, long long h) {
  return (((size_t)b * (size_t)len + (size_t)j) * (size_t)d->heads + (size_t)h) * (size_t)d->headdim;
}

static void decode_row(const kv_fa2_dims *d, size_t r, long long *b, long long *i, long long *h) {
  *h = (long long)(r % (size_t)d->heads);
  *i = (long long)((r / (size_t)d->heads) % (size_t)d->seqlen);
  *b = (long long)(r / ((size_t)d->heads * (size_t)d->seqlen));
}

/* Start of row r in either reference: o, mag and the LSE's magnitude term zeroed, the query
 * row in w->q, the row's batch and head; returns the number of visible keys (0: the row is
 * fully masked, its LSE is -inf). */
static long long row_begin(ref_work *w, const void *const *in, size_t r, double *o, double *mag, double *lmag,
                           long long *b, long long *h) {
  const kv_fa2_dims *d = &w->d;
  size_t hd = (size_t)d->headdim;
  long long i;
  decode_row(d, r, b, &i, h);
  long long n = kv_fa2_last_key(d, i) + 1;
  memset(o, 0, hd * sizeof(double));
  memset(mag, 0, hd * sizeof(double));
  *lmag = 0.0;
  if (n <= 0) return 0;
  kv_to_double(in[0], w->st, row_offset(d, *b, d->seqlen, i, *h), hd, w->q);
  return n;
}

/* One row in plain fp64: fills o[hd], mag[hd] and the LSE's magnitude term, returns lse. */
static double ref_row(ref_work *w, const void *const *in, size_t r, double *o, double *mag, double *lmag) {
  const kv_fa2_dims *d = &w->d;
  size_t hd = (size_t)d->headdim;
  long long b, h, n = row_begin(w, in, r, o, mag, lmag, &b, &h);
  if (n <= 0) return -INFINITY;
  double m = -INFINITY;
  for (long long j = 0; j < n; j++) {
    double dot = 0.0, abs_dot = 0.0;
    kv_to_double(in[1], w->st, row_offset(d, b, d->seqlen_k, j, h), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      double p = w->q[k] * w->kr[k];
      dot += p;
      abs_dot += fabs(p);
    }
    w->s[j] = d->scale * dot;
    w->a[j] = d->scale * abs_dot;
    if (w->s[j] > m) m = w->s[j];
  }
  double l = 0.0, abar = 0.0;
  for (long long j = 0; j < n; j++) {
    double p = exp(w->s[j] - m), pm = p * (1.0 + w->a[j] + w->rho);
    l += p;
    abar += p * w->a[j];
    kv_to_double(in[2], w->st, row_offset(d, b, d->seqlen_k, j, h), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      o[k] += p * w->kr[k];
      mag[k] += pm * fabs(w->kr[k]);
    }
  }
  for (size_t k = 0; k < hd; k++) {
    o[k] /= l;
    mag[k] /= l;
  }
  const double lse = m + log(l);
  *lmag = kv_fa2_lse_mag(abar / l, m, lse, (double)n, (double)hd, w->u_acc);
  return lse;
}

/* The same row with double-double scores, row sum and P V. */
static double ref_row_dd(ref_work *w, const void *const *in, size_t r, double *o, double *mag, double *lmag) {
  const kv_fa2_dims *d = &w->d;
  size_t hd = (size_t)d->headdim;
  long long b, h, n = row_begin(w, in, r, o, mag, lmag, &b, &h);
  if (n <= 0) return -INFINITY;
  double m = -INFINITY;
  for (long long j = 0; j < n; j++) {
    kv_dd dot = kv_dd_zero;
    double abs_dot = 0.0;
    kv_to_double(in[1], w->st, row_offset(d, b, d->seqlen_k, j, h), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      dot = kv_dd_add_prod(dot, w->q[k], w->kr[k]);
      abs_dot += fabs(w->q[k] * w->kr[k]);
    }
    kv_dd s = kv_dd_add_prod(kv_dd_add_prod(kv_dd_zero, dot.hi, d->scale), dot.lo, d->scale);
    w->s[j] = s.hi;
    w->slo[j] = s.lo;
    w->a[j] = d->scale * abs_dot;
    if (s.hi > m) m = s.hi;
  }
  kv_dd l = kv_dd_zero;
  double abar = 0.0;
  for (size_t k = 0; k < hd; k++) w->acc[k] = kv_dd_zero;
  for (long long j = 0; j < n; j++) {
    double p = exp(kv_dd_value(kv_dd_add(kv_dd_two_sum(w->s[j], -m), w->slo[j])));
    double pm = p * (1.0 + w->a[j] + w->rho);
    l = kv_dd_add(l, p);
    abar += p * w->a[j];
    kv_to_double(in[2], w->st, row_offset(d, b, d->seqlen_k, j, h), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      w->acc[k] = kv_dd_add_prod(w->acc[k], p, w->kr[k]);
      mag[k] += pm * fabs(w->kr[k]);
    }
  }
  for (size_t k = 0; k < hd; k++) {
    o[k] = kv_dd_quotient(w->acc[k], l);
    mag[k] /= kv_dd_value(l);
  }
  const double lse = m + log(kv_dd_value(l));
  *lmag = kv_fa2_lse_mag(abar / kv_dd_value(l), m, lse, (double)n, (double)hd, w->u_acc);
  return lse;
}

typedef double (*row_fn)(ref_work *, const void *const *, size_t, double *, double *, double *);

static kv_status run_rows(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                          double *mag, double *aux_ref, double *aux_mag, row_fn fn) {
  ref_work w;
  KV_TRY(ref_alloc(&w, c));
  size_t hd = (size_t)w.d.headdim;
  size_t total = (size_t)w.d.batch * (size_t)w.d.seqlen * (size_t)w.d.heads;
  if (kv_check_rows(rows, n_rows, total, "fa2") != KV_OK) {
    ref_free(&w);
    return KV_ERR;
  }
  for (size_t r = 0; r < n_rows; r++) {
    double lmag;
    const double lse = fn(&w, in, rows[r], ref + r * hd, mag + r * hd, &lmag);
    if (aux_ref) aux_ref[r] = lse;
    if (aux_mag) aux_mag[r] = lmag;
  }
  ref_free(&w);
  return KV_OK;
}

kv_status kv_fa2_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                               double *mag, double *aux_ref, double *aux_mag) {
  return run_rows(c, in, rows, n_rows, ref, mag, aux_ref, aux_mag, ref_row);
}

kv_status kv_fa2_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag) {
  return run_rows(c, in, rows, n_rows, ref, mag, aux_ref, aux_mag, ref_row_dd);
}
