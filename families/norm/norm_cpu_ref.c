/* norm_cpu_ref.c - fp64 CPU references of layernorm and rmsnorm on the rounded inputs (two
 * passes over each listed row), and their double-double twins for the tests.
 *   layernorm: mean = sum x / n, var = sum (x - mean)^2 / n, rstd = 1 / sqrt(var + eps),
 *              xhat = (x - mean) rstd, y = xhat w + b;
 *              mag_j = |w_j| (|xhat_j| + rstd sum_k |x_k| / n)
 *   rmsnorm:   rstd = 1 / sqrt(sum x^2 / n + eps), xhat = x rstd, y = xhat w;
 *              mag_j = |w_j| |xhat_j|
 * Magnitude terms (multiplied by c2 sqrt(K) u_acc in the tolerance): an accumulated sum of n
 * terms is off by about sqrt(n) u_acc sum |terms|, so the mean is off by sqrt(n) u_acc
 * (sum |x| / n), which moves y_j by |w_j| rstd times that; the relative error of the
 * variance (a sum of positive terms) moves y_j by about |w_j xhat_j| times it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/dd.h"
#include "families/norm/norm.h"

typedef struct {
  kv_norm_dims d;
  kv_dtype st;
  int ln;
  double *w, *b, *x; /* weight, bias (layernorm), one input row */
} norm_ref;

static kv_status ref_open(norm_ref *r, const kv_case *c, const void *const *in, int ln, const size_t *rows,
                          size_t n_rows) {
  kv_norm_dims_of(c, &r->d);
  r->st = c->prec.storage;
  r->ln = ln;
  size_t n = (size_t)r->d.hidden;
  KV_TRY(kv_check_rows(rows, n_rows, (size_t)r->d.rows, ln ? "layernorm" : "rmsnorm"));
  r->w = KV_MALLOC(3 * n * sizeof(double));
  if (CHECK_ALLOC(r->w) != KV_OK) return KV_ERR;
  r->b = r->w + n;
  r->x = r->b + n;
  kv_to_double(in[1], r->st, 0, n, r->w);
  if (ln)
    kv_to_double(in[2], r->st, 0, n, r->b);
  else
    memset(r->b, 0, n * sizeof(double));
  return KV_OK;
}

/* One row in fp64. */
static void row_plain(const norm_ref *r, double *y, double *mag) {
  const size_t n = (size_t)r->d.hidden;
  const double *x = r->x;
  double mean = 0.0, abs_mean = 0.0, var = 0.0;
  if (r->ln) {
    for (size_t j = 0; j < n; j++) {
      mean += x[j];
      abs_mean += fabs(x[j]);
    }
    mean /= (double)n;
    abs_mean /= (double)n;
  }
  for (size_t j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean);
  const double rstd = 1.0 / sqrt(var / (double)n + r->d.eps);
  for (size_t j = 0; j < n; j++) {
    double xhat = (x[j] - mean) * rstd;
    y[j] = xhat * r->w[j] + r->b[j];
    mag[j] = fabs(r->w[j]) * (fabs(xhat) + rstd * abs_mean);
  }
}

/* One row with double-double mean and variance. */
static void row_compensated(const norm_ref *r, double *y, double *mag) {
  const size_t n = (size_t)r->d.hidden;
  const double *x = r->x;
  kv_dd mean = kv_dd_zero, var = kv_dd_zero;
  double abs_mean = 0.0;
  if (r->ln) {
    for (size_t j = 0; j < n; j++) {
      mean = kv_dd_add(mean, x[j]);
      abs_mean += fabs(x[j]);
    }
    mean = kv_dd_div(mean, (double)n);
    abs_mean /= (double)n;
  }
  for (size_t j = 0; j < n; j++) {
    kv_dd dj = kv_dd_add(kv_dd_two_sum(x[j], -mean.hi), -mean.lo);
    var = kv_dd_add_dd(var, kv_dd_sqr(dj));
  }
  var = kv_dd_add(kv_dd_div(var, (double)n), r->d.eps);
  const double rstd = 1.0 / sqrt(kv_dd_value(var));
  for (size_t j = 0; j < n; j++) {
    double xhat = kv_dd_value(kv_dd_add(kv_dd_two_sum(x[j], -mean.hi), -mean.lo)) * rstd;
    y[j] = xhat * r->w[j] + r->b[j];
    mag[j] = fabs(r->w[j]) * (fabs(xhat) + rstd * abs_mean);
  }
}

static kv_status run_rows(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows, double *ref,
                          double *mag, int ln, void (*row)(const norm_ref *, double *, double *)) {
  norm_ref r;
  KV_TRY(ref_open(&r, c, in, ln, rows, n_rows));
  const size_t n = (size_t)r.d.hidden;
  for (size_t i = 0; i < n_rows; i++) {
    kv_to_double(in[0], r.st, rows[i] * n, n, r.x);
    row(&r, ref + i * n, mag + i * n);
  }
  free(r.w);
  return KV_OK;
}

kv_status kv_layernorm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                 double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref, (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 1, row_plain);
}

kv_status kv_rmsnorm_cpu_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                               double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref, (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 0, row_plain);
}

kv_status kv_layernorm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                        double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref, (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 1, row_compensated);
}

kv_status kv_rmsnorm_cpu_reference_dd(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                      double *ref, double *mag, double *aux_ref, double *aux_mag) {
  (void)aux_ref, (void)aux_mag;
  return run_rows(c, in, rows, n_rows, ref, mag, 0, row_compensated);
}
