/* decode_cpu_ref.c - fp64 CPU reference of the decode family on the rounded inputs, row by row
 * (row r = (b * q_len + i) * q_heads + hq), reading every cached token through the block
 * table, and its double-double twin for the tests. With kv head h = hq / group, tokens
 * t < ctx_len of sequence b, k_t = k_cache_t k_scale and v_t = v_cache_t v_scale (exact in
 * fp64: an 8-bit or 16-bit value times an fp32 scale):
 *   s_t = scale * sum_k q_k k_tk; m = max s_t; P_t = exp(s_t - m) / l, l = sum_t exp(s_t - m);
 *   o_d = sum_t P_t v_td; lse = m + log(l) (natural log).
 * Magnitude term of element d (the tolerance multiplies it by c2 sqrt(K) u_acc), fa2's:
 *   mag_d = sum_t P_t |v_td| (1 + scale * sum_k |q_k k_tk| + rho)
 * (the accumulation of P V, the effect of the score errors, and rho = kv_decode_mag_rho for
 * the rounding of P to the storage type before P V). The LSE's magnitude term is fa2's
 * (kv_fa2_lse_mag, fa2_reference.h): the same fp32 softmax statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/decode/decode.h"
#include "families/fa2/fa2_reference.h"
#include "families/kit.h"
#include "numerics/dd.h"

typedef struct {
  kv_decode_dims d;
  kv_dtype st, io; /* the KV cache's type; q's */
  double u_acc, rho;
  int32_t *table;
  double *q, *kr, *s, *slo, *a;
  kv_dd *acc;
} ref_work;

static kv_status ref_alloc(ref_work *w, const kv_case *c) {
  kv_decode_dims_of(c, 0, &w->d);
  w->st = w->d.kv_type;
  w->io = w->d.io_type;
  w->u_acc = kv_dtype_unit_roundoff(c->prec.accum);
  w->rho = kv_decode_mag_rho(c->prec, &w->d);
  const size_t hd = (size_t)w->d.headdim, n = (size_t)w->d.ctx;
  w->table = KV_MALLOC((size_t)w->d.num_pages * sizeof(int32_t));
  w->q = KV_MALLOC((2 * hd + 3 * n) * sizeof(double));
  w->acc = KV_MALLOC(hd * sizeof(kv_dd));
  if (CHECK_ALLOC(w->table) != KV_OK || CHECK_ALLOC(w->q) != KV_OK || CHECK_ALLOC(w->acc) != KV_OK) {
    free(w->table);
    free(w->q);
    free(w->acc);
    return KV_ERR;
  }
  kv_decode_block_table(&w->d, w->table);
  w->kr = w->q + hd;
  w->s = w->kr + hd;
  w->slo = w->s + n;
  w->a = w->slo + n;
  return KV_OK;
}

static void ref_free(ref_work *w) {
  free(w->table);
  free(w->q);
  free(w->acc);
}

/* Offset of token t of sequence b, kv head h in the page caches. */
static size_t token_offset(const ref_work *w, long long b, long long h, long long t) {
  const kv_decode_dims *d = &w->d;
  const size_t page = (size_t)w->table[b * d->pages_per_seq + t / d->page];
  return ((page * (size_t)d->kv_heads + (size_t)h) * (size_t)d->page + (size_t)(t % d->page)) * (size_t)d->headdim;
}

/* One row: o[hd], mag[hd], the LSE's magnitude term; returns lse. dd: double-double scores,
 * row sum and P V. */
static double ref_row(ref_work *w, const void *const *in, size_t r, int dd, double *o, double *mag, double *lmag) {
  const kv_decode_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim;
  const long long hq = (long long)(r % (size_t)d->q_heads), b = (long long)(r / ((size_t)d->q_heads * (size_t)d->q_len));
  const long long h = hq / d->group, n = d->ctx;
  kv_to_double(in[0], w->io, r * hd, hd, w->q);
  double m = -INFINITY;
  for (long long t = 0; t < n; t++) {
    kv_dd dot = kv_dd_zero;
    double abs_dot = 0.0;
    kv_to_double(in[1], w->st, token_offset(w, b, h, t), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      w->kr[k] *= d->k_scale;
      if (dd)
        dot = kv_dd_add_prod(dot, w->q[k], w->kr[k]);
      else
        dot.hi += w->q[k] * w->kr[k];
      abs_dot += fabs(w->q[k] * w->kr[k]);
    }
    const kv_dd s = kv_dd_add_prod(kv_dd_add_prod(kv_dd_zero, dot.hi, d->scale), dot.lo, d->scale);
    w->s[t] = dd ? s.hi : d->scale * dot.hi;
    w->slo[t] = dd ? s.lo : 0.0;
    w->a[t] = d->scale * abs_dot;
    if (w->s[t] > m) m = w->s[t];
  }
  kv_dd l = kv_dd_zero;
  double abar = 0.0;
  for (size_t k = 0; k < hd; k++) w->acc[k] = kv_dd_zero;
  memset(mag, 0, hd * sizeof(double));
  for (long long t = 0; t < n; t++) {
    const double p = dd ? exp(kv_dd_value(kv_dd_add(kv_dd_two_sum(w->s[t], -m), w->slo[t]))) : exp(w->s[t] - m);
    const double pm = p * (1.0 + w->a[t] + w->rho);
    l = dd ? kv_dd_add(l, p) : (kv_dd){l.hi + p, 0.0};
    abar += p * w->a[t];
    kv_to_double(in[2], w->st, token_offset(w, b, h, t), hd, w->kr);
    for (size_t k = 0; k < hd; k++) {
      w->kr[k] *= d->v_scale;
      w->acc[k] = dd ? kv_dd_add_prod(w->acc[k], p, w->kr[k]) : (kv_dd){w->acc[k].hi + p * w->kr[k], 0.0};
      mag[k] += pm * fabs(w->kr[k]);
    }
  }
  const double lv = kv_dd_value(l);
  for (size_t k = 0; k < hd; k++) {
    o[k] = dd ? kv_dd_quotient(w->acc[k], l) : w->acc[k].hi / lv;
    mag[k] /= lv;
  }
  const double lse = m + log(lv);
  *lmag = kv_fa2_lse_mag(abar / lv, m, lse, (double)n, (double)hd, w->u_acc);
  return lse;
}

static kv_status run_rows(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                          double *mag, double *aux_ref, double *aux_mag, int dd) {
  ref_work w;
  KV_TRY(ref_alloc(&w, c));
  const size_t hd = (size_t)w.d.headdim, total = (size_t)w.d.batch * (size_t)w.d.q_len * (size_t)w.d.q_heads;
  if (kv_check_rows(rows, n_rows, total, "decode") != KV_OK) {
    ref_free(&w);
    return KV_ERR;
  }
  for (size_t r = 0; r < n_rows; r++) {
    double lmag;
    const double lse = ref_row(&w, in, rows[r], dd, ref + r * hd, mag + r * hd, &lmag);
    if (aux_ref) aux_ref[r] = lse;
    if (aux_mag) aux_mag[r] = lmag;
  }
  ref_free(&w);
  return KV_OK;
}

kv_status kv_decode_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                  double *ref, double *mag, double *aux_ref, double *aux_mag) {
  return run_rows(c, in, rows, n_rows, ref, mag, aux_ref, aux_mag, 0);
}

kv_status kv_decode_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                     double *ref, double *mag, double *aux_ref, double *aux_mag) {
  return run_rows(c, in, rows, n_rows, ref, mag, aux_ref, aux_mag, 1);
}
