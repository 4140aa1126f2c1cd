/* gemm_cpu_ref.c - the gemm family's fp64 CPU reference of the listed output rows:
 * ref = alpha op(A) op(B) + beta C and the magnitude term mag = |alpha| |op(A)| |op(B)| + |beta| |C|
 * of the tolerance (FP8: alpha scale_a scale_b in place of alpha, C of the output type),
 * k ascending in fp64 (B converted chunk by chunk so memory stays bounded
 * whatever N and K; the columns split over the host threads a threaded call passes on), and
 * its double-double twin (kv_gemm_cpu_reference_dd), which the tests use
 * to judge the fp64 one on ill-conditioned inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/gemm/gemm.h"
#include "families/kit.h"
#include "families/ref_threads.h"
#include "numerics/dd.h"

#define GEMM_REF_CHUNK_BYTES (4u << 20)

/* The output columns [j0, j1) of one pass of the reference. */
typedef struct {
  size_t j0, j1;
} col_range;

/* B(k0 .. k0 + kc, j0 .. j1) into bc[kk * w + (j - j0)] as doubles (w = j1 - j0). */
static void load_b_chunk(const void *b, kv_dtype st, const kv_gemm_dims *d, long long k0, long long kc, col_range cr,
                         double *bc, double *tmp) {
  size_t n = (size_t)d->n, K = (size_t)d->k, w = cr.j1 - cr.j0;
  if (!d->b_trans) {
    for (long long kk = 0; kk < kc; kk++) kv_to_double(b, st, (size_t)(k0 + kk) * n + cr.j0, w, bc + (size_t)kk * w);
    return;
  }
  for (size_t j = cr.j0; j < cr.j1; j++) {
    kv_to_double(b, st, j * K + (size_t)k0, (size_t)kc, tmp);
    for (long long kk = 0; kk < kc; kk++) bc[(size_t)kk * w + (j - cr.j0)] = tmp[kk];
  }
}

/* A(i, k0 .. k0 + kc) into a[] as doubles. */
static void load_a_part(const void *a, kv_dtype st, const kv_gemm_dims *d, size_t i, long long k0, long long kc,
                        double *out) {
  if (!d->a_trans) {
    kv_to_double(a, st, i * (size_t)d->k + (size_t)k0, (size_t)kc, out);
    return;
  }
  for (long long kk = 0; kk < kc; kk++) out[kk] = kv_load(a, (size_t)(k0 + kk) * (size_t)d->m + i, st);
}

/* alpha times the per-tensor scales (1 unless FP8), in double: the reference's multiplier of A B. */
static double ref_alpha(const kv_gemm_dims *d) { return d->alpha * d->scale_a * d->scale_b; }

/* ref = alpha' * acc + beta * C, mag = |alpha'| mag + |beta| |C| over the listed rows' columns cr
 * (alpha' = ref_alpha; C of the output type). */
static void apply_epilogue(const void *cbuf, const kv_gemm_dims *d, const size_t *rows, size_t n_rows,
                           col_range cr, double *ref, double *mag) {
  size_t n = (size_t)d->n;
  const double alpha = ref_alpha(d), aa = fabs(alpha), ab = fabs(d->beta);
  for (size_t r = 0; r < n_rows; r++)
    for (size_t j = cr.j0; j < cr.j1; j++) {
      double cv = d->has_c ? kv_load(cbuf, rows[r] * n + j, d->out) : 0.0;
      ref[r * n + j] = alpha * ref[r * n + j] + d->beta * cv;
      mag[r * n + j] = aa * mag[r * n + j] + ab * fabs(cv);
    }
}

/* One reference pass: columns cr of the listed rows, k ascending, B converted chunk by chunk
 * so memory stays bounded (GEMM_REF_CHUNK_BYTES) whatever N and K. */
typedef struct {
  const kv_gemm_dims *d;
  kv_dtype st;
  const void *const *in;
  const size_t *rows;
  size_t n_rows;
  double *ref, *mag;
  int parts;
} ref_pass;

static kv_status ref_columns(const ref_pass *p, col_range cr) {
  const kv_gemm_dims *d = p->d;
  size_t n = (size_t)d->n, w = cr.j1 - cr.j0;
  long long kc_max = (long long)(GEMM_REF_CHUNK_BYTES / (sizeof(double) * w));
  if (kc_max < 1) kc_max = 1;
  if (kc_max > d->k) kc_max = d->k;
  double *bc = KV_MALLOC((size_t)kc_max * w * sizeof(double));
  double *tmp = KV_MALLOC((size_t)kc_max * sizeof(double));
  if (CHECK_ALLOC(bc) != KV_OK || CHECK_ALLOC(tmp) != KV_OK) {
    free(bc);
    free(tmp);
    return KV_ERR;
  }
  for (size_t r = 0; r < p->n_rows; r++) {
    memset(p->ref + r * n + cr.j0, 0, w * sizeof(double));
    memset(p->mag + r * n + cr.j0, 0, w * sizeof(double));
  }
  for (long long k0 = 0; k0 < d->k; k0 += kc_max) {
    long long kc = d->k - k0 < kc_max ? d->k - k0 : kc_max;
    load_b_chunk(p->in[1], p->st, d, k0, kc, cr, bc, tmp);
    for (size_t r = 0; r < p->n_rows; r++) {
      double *rr = p->ref + r * n + cr.j0, *mr = p->mag + r * n + cr.j0;
      load_a_part(p->in[0], p->st, d, p->rows[r], k0, kc, tmp);
      for (long long kk = 0; kk < kc; kk++) {
        const double a = tmp[kk], aa = fabs(a), *restrict br = bc + (size_t)kk * w;
        double *restrict rw = rr, *restrict mw = mr; /* no aliasing: the loop vectorises */
        for (size_t j = 0; j < w; j++) {
          rw[j] += a * br[j];
          mw[j] += aa * fabs(br[j]);
        }
      }
    }
  }
  apply_epilogue(d->has_c ? p->in[2] : NULL, d, p->rows, p->n_rows, cr, p->ref, p->mag);
  free(bc);
  free(tmp);
  return KV_OK;
}

/* Column block i of p->parts (multiples of 8 columns, the last one takes the rest). */
static kv_status ref_column_block(int i, void *arg) {
  const ref_pass *p = arg;
  size_t n = (size_t)p->d->n, blocks = (n + 7) / 8;
  col_range cr = {8 * (blocks * (size_t)i / (size_t)p->parts), 8 * (blocks * (size_t)(i + 1) / (size_t)p->parts)};
  if (cr.j1 > n) cr.j1 = n;
  return cr.j0 < cr.j1 ? ref_columns(p, cr) : KV_OK;
}

/* fp64 reference of the listed rows; with the host threads kv_reference_threaded gives it
 * (kv_ref_part_threads: the cross-check's few long rows) the columns are split among them,
 * each column's sum in the same order. */
kv_status kv_gemm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                                double *mag, double *aux_ref, double *aux_mag) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  (void)aux_ref, (void)aux_mag;
  KV_TRY(kv_check_rows(rows, n_rows, (size_t)d.m, "gemm"));
  ref_pass p = {&d, c->prec.storage, in, rows, n_rows, ref, mag, kv_ref_part_threads()};
  if (p.parts <= 1) return ref_columns(&p, (col_range){0, (size_t)d.n});
  return kv_parallel_for(p.parts, p.parts, ref_column_block, &p);
}

kv_status kv_gemm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                   double *ref, double *mag, double *aux_ref, double *aux_mag) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  (void)aux_ref, (void)aux_mag;
  const kv_dtype st = d.st;
  const double alpha = ref_alpha(&d);
  size_t n = (size_t)d.n, K = (size_t)d.k;
  KV_TRY(kv_check_rows(rows, n_rows, (size_t)d.m, "gemm"));
  double *a = KV_MALLOC(K * sizeof(double));
  double *bt = KV_MALLOC(K * n * sizeof(double)); /* B(k, j) at bt[j * K + k] */
  if (CHECK_ALLOC(a) != KV_OK || CHECK_ALLOC(bt) != KV_OK) {
    free(a);
    free(bt);
    return KV_ERR;
  }
  for (size_t k = 0; k < K; k++)
    for (size_t j = 0; j < n; j++) bt[j * K + k] = kv_load(in[1], d.b_trans ? j * K + k : k * n + j, st);
  for (size_t r = 0; r < n_rows; r++) {
    load_a_part(in[0], st, &d, rows[r], 0, d.k, a);
    for (size_t j = 0; j < n; j++) {
      kv_dd s = kv_dd_zero, m = kv_dd_zero;
      for (size_t k = 0; k < K; k++) {
        s = kv_dd_add_prod(s, a[k], bt[j * K + k]);
        m = kv_dd_add_prod(m, fabs(a[k]), fabs(bt[j * K + k]));
      }
      double cv = d.has_c ? kv_load(in[2], rows[r] * n + j, d.out) : 0.0;
      kv_dd v = kv_dd_add_prod(kv_dd_zero, s.hi, alpha);
      v = kv_dd_add_prod(v, s.lo, alpha);
      v = kv_dd_add_prod(v, cv, d.beta);
      ref[r * n + j] = kv_dd_value(v);
      mag[r * n + j] = fabs(alpha) * kv_dd_value(m) + fabs(d.beta) * fabs(cv);
    }
  }
  free(a);
  free(bt);
  return KV_OK;
}
