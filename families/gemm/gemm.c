/* gemm.c - the gemm family: D = alpha * op(A) op(B) + beta * C. Descriptor (axes, params,
 * validity, FLOP/byte counts, input tensors), the shape parser, and the fp64 CPU reference
 * with its magnitude term |alpha| |A||B| + |beta| |C| and a double-double twin. The CPU
 * emulation of the tensor-core kernels is in gemm_emulate.c.
 *
 * Inputs by `dist`: normal / uniform: A, B (and C) from that base distribution, scale 1.
 * near_max: A and B uniform on [0.75 s, 1.25 s) with s = sqrt(65504 / (1.6 K)). Every product
 * then lies in [0.5625, 1.5625] s^2, so each D = sum of K products (alpha = 1, beta = 0) is
 * about 0.625 * 65504 and at most 0.977 * 65504: outputs in the top binade of fp16 without
 * overflow, and every partial sum of the accumulator stays below its final value. C (when
 * beta != 0) is normal with scale 1. */
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/families.h"

#define GEMM_MAX_DIM (1LL << 30)
#define GEMM_REF_CHUNK_BYTES (4u << 20)

static const char *const gemm_variants[] = {"kval-wgmma", "kval-mma", "cublas", NULL};
static const char *const gemm_layouts[] = {"nn", "tn", "nt", NULL};
static const char *const gemm_dists[] = {"normal", "uniform", "near_max", NULL};

static const kv_axis_desc gemm_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-mma cublas", gemm_variants, 0, 0,
     "kernel: kval's wgmma (Hopper) or mma.sync GEMM, or cuBLAS as the baseline"},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"layout", KV_AXIS_STR, "nn", gemm_layouts, 0, 0,
     "op(A) op(B): n = row-major as used, t = stored transposed (A as KxM, B as NxK)"},
    {"shape", KV_AXIS_STR, "256x256x256 1024x1024x1024", NULL, 0, 0, "problem size MxNxK"},
    {"dist", KV_AXIS_STR, "normal", gemm_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or near_max (outputs near the fp16 maximum)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const kv_param_desc gemm_params[] = {
    {"alpha", 1.0, -1e6, 1e6, "scale of op(A) op(B)"},
    {"beta", 0.0, -1e6, 1e6, "scale of C (C is an input only when beta != 0)"},
    {NULL, 0, 0, 0, NULL}};

static int parse_dim(const char **p, long long *v) {
  const char *s = *p;
  long long x = 0;
  if (*s < '0' || *s > '9') return -1;
  while (*s >= '0' && *s <= '9') {
    x = x * 10 + (*s - '0');
    if (x > GEMM_MAX_DIM) return -1;
    s++;
  }
  if (x < 1) return -1;
  *v = x;
  *p = s;
  return 0;
}

int kv_gemm_parse_shape(const char *s, long long *m, long long *n, long long *k) {
  long long d[3];
  if (!s) return -1;
  for (int i = 0; i < 3; i++) {
    if (parse_dim(&s, &d[i]) != 0) return -1;
    if (i < 2) {
      if (*s != 'x' && *s != 'X') return -1;
      s++;
    }
  }
  if (*s != '\0') return -1;
  *m = d[0];
  *n = d[1];
  *k = d[2];
  return 0;
}

void kv_gemm_dims_of(const kv_case *c, kv_gemm_dims *d) {
  const char *shape = kv_case_str(c, "shape");
  const char *layout = kv_case_str(c, "layout");
  if (kv_gemm_parse_shape(shape, &d->m, &d->n, &d->k) != 0) KV_FATAL("gemm shape '%s' is not MxNxK", shape);
  d->a_trans = layout[0] == 't';
  d->b_trans = layout[1] == 't';
  d->alpha = kv_case_param(c, "alpha");
  d->beta = kv_case_param(c, "beta");
  d->has_c = d->beta != 0.0;
}

static const char *gemm_invalid(const kv_case *c, const char *backend) {
  long long m, n, k;
  const char *why = kv_precision_invalid_reason(c->prec);
  if (why) return why;
  if (c->prec.storage == KV_FP32) return "fp32 storage not implemented: kval's tensor-core kernels take fp16/bf16";
  if (kv_gemm_parse_shape(kv_case_str(c, "shape"), &m, &n, &k) != 0)
    return "shape must be MxNxK with positive integers (e.g. 1024x1024x1024)";
  if (strcmp(kv_case_str(c, "variant"), "cublas") == 0) {
    if (backend && strcmp(backend, "cpu") == 0) return "cublas needs the cuda backend";
    if (c->prec.accum == KV_BF16) return "cublas has no bf16 accumulation";
  }
  if (strcmp(kv_case_str(c, "variant"), "kval-wgmma") == 0) {
    /* TMA needs 16-byte row strides: the stored row lengths must be multiples of 8. */
    const char *layout = kv_case_str(c, "layout");
    long long a_row = layout[0] == 't' ? m : k, b_row = layout[1] == 't' ? k : n;
    if (a_row % 8 != 0 || b_row % 8 != 0)
      return "kval-wgmma: TMA needs the stored row lengths of A and B (K or M, N or K) to be multiples of 8";
  }
  return NULL;
}

static void gemm_cost(const kv_case *c, kv_cost *o) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  double m = (double)d.m, n = (double)d.n, k = (double)d.k, s = (double)kv_dtype_size(c->prec.storage);
  o->flops = 2.0 * m * n * k;
  o->bytes = (m * k + k * n + m * n * (d.has_c ? 2.0 : 1.0)) * s;
  o->red_len = k;
  o->ref_flops = 4.0 * m * n * k; /* products and sums of both the value and |A||B| */
  /* reference: value and magnitude of D, plus the upcast A and B of the DGEMMs */
  o->device_bytes = o->bytes + 2.0 * sizeof(double) * m * n + sizeof(double) * (m * k + k * n);
  o->rows = (size_t)d.m;
  o->row_len = (size_t)d.n;
}

static void gemm_tensors(const kv_case *c, kv_tensors *t) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  kv_dtype st = c->prec.storage;
  const char *dist = kv_case_str(c, "dist");
  size_t m = (size_t)d.m, n = (size_t)d.n, k = (size_t)d.k;
  int near_max = strcmp(dist, "near_max") == 0;
  int base = strcmp(dist, "normal") == 0 ? KV_DIST_NORMAL : KV_DIST_UNIFORM;
  int c_base = near_max ? KV_DIST_NORMAL : base;
  double scale = 1.0, offset = 0.0;
  if (near_max) {
    double s = sqrt(kv_dtype_max(KV_FP16) / (1.6 * (double)d.k));
    scale = 0.25 * s;
    offset = s;
  }
  memset(t, 0, sizeof *t);
  t->n_in = d.has_c ? 3 : 2;
  t->n_out = 1;
  kv_spec_in(&t->in[0], "a", st, m * k, base, scale, offset);
  kv_spec_in(&t->in[1], "b", st, k * n, base, scale, offset);
  if (d.has_c) kv_spec_in(&t->in[2], "c", st, m * n, c_base, 1.0, 0.0);
  kv_spec_out(&t->out[0], "d", st, m * n);
}

/* B(k0 .. k0 + kc, all j) into bc[kk * n + j] as doubles. */
static void load_b_chunk(const void *b, kv_dtype st, const kv_gemm_dims *d, long long k0, long long kc, double *bc,
                         double *tmp) {
  size_t n = (size_t)d->n, K = (size_t)d->k;
  if (!d->b_trans) {
    kv_to_double(b, st, (size_t)k0 * n, (size_t)kc * n, bc);
    return;
  }
  for (size_t j = 0; j < n; j++) {
    kv_to_double(b, st, j * K + (size_t)k0, (size_t)kc, tmp);
    for (long long kk = 0; kk < kc; kk++) bc[(size_t)kk * n + j] = tmp[kk];
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

/* ref = alpha * acc + beta * C, mag = |alpha| mag + |beta| |C| over the listed rows. */
static void apply_epilogue(const void *cbuf, kv_dtype st, const kv_gemm_dims *d, const size_t *rows, size_t n_rows,
                           double *ref, double *mag) {
  size_t n = (size_t)d->n;
  double aa = fabs(d->alpha), ab = fabs(d->beta);
  for (size_t r = 0; r < n_rows; r++)
    for (size_t j = 0; j < n; j++) {
      double cv = d->has_c ? kv_load(cbuf, rows[r] * n + j, st) : 0.0;
      ref[r * n + j] = d->alpha * ref[r * n + j] + d->beta * cv;
      mag[r * n + j] = aa * mag[r * n + j] + ab * fabs(cv);
    }
}

/* fp64 reference of the listed rows, k ascending, B converted chunk by chunk so memory stays
 * bounded (GEMM_REF_CHUNK_BYTES) whatever N and K. */
static kv_status gemm_reference(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                double *ref, double *mag, double *aux_ref) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  (void)aux_ref;
  kv_dtype st = c->prec.storage;
  size_t n = (size_t)d.n;
  KV_TRY(kv_check_rows(rows, n_rows, (size_t)d.m, "gemm"));
  long long kc_max = (long long)(GEMM_REF_CHUNK_BYTES / (sizeof(double) * n));
  if (kc_max < 1) kc_max = 1;
  if (kc_max > d.k) kc_max = d.k;
  double *bc = KV_MALLOC((size_t)kc_max * n * sizeof(double));
  double *tmp = KV_MALLOC((size_t)kc_max * sizeof(double));
  if (CHECK_ALLOC(bc) != KV_OK || CHECK_ALLOC(tmp) != KV_OK) {
    free(bc);
    free(tmp);
    return KV_ERR;
  }
  memset(ref, 0, n_rows * n * sizeof(double));
  memset(mag, 0, n_rows * n * sizeof(double));
  for (long long k0 = 0; k0 < d.k; k0 += kc_max) {
    long long kc = d.k - k0 < kc_max ? d.k - k0 : kc_max;
    load_b_chunk(in[1], st, &d, k0, kc, bc, tmp);
    for (size_t r = 0; r < n_rows; r++) {
      double *rr = ref + r * n, *mr = mag + r * n;
      load_a_part(in[0], st, &d, rows[r], k0, kc, tmp);
      for (long long kk = 0; kk < kc; kk++) {
        const double a = tmp[kk], aa = fabs(a), *br = bc + (size_t)kk * n;
        for (size_t j = 0; j < n; j++) {
          rr[j] += a * br[j];
          mr[j] += aa * fabs(br[j]);
        }
      }
    }
  }
  apply_epilogue(d.has_c ? in[2] : NULL, st, &d, rows, n_rows, ref, mag);
  free(bc);
  free(tmp);
  return KV_OK;
}

kv_status kv_gemm_reference_compensated(const kv_case *c, const void *const *in, const size_t *rows,
                                        size_t n_rows, double *ref, double *mag, double *aux_ref) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  (void)aux_ref;
  kv_dtype st = c->prec.storage;
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
      double cv = d.has_c ? kv_load(in[2], rows[r] * n + j, st) : 0.0;
      kv_dd v = kv_dd_add_prod(kv_dd_zero, s.hi, d.alpha);
      v = kv_dd_add_prod(v, s.lo, d.alpha);
      v = kv_dd_add_prod(v, cv, d.beta);
      ref[r * n + j] = kv_dd_value(v);
      mag[r * n + j] = fabs(d.alpha) * kv_dd_value(m) + fabs(d.beta) * fabs(cv);
    }
  }
  free(a);
  free(bt);
  return KV_OK;
}

const kv_family kv_family_gemm = {
    .name = "gemm",
    .summary = "GEMM D = alpha op(A) op(B) + beta C on tensor cores (wgmma, mma.sync) and cuBLAS",
    .axes = gemm_axes,
    .params = gemm_params,
    .invalid = gemm_invalid,
    .cost = gemm_cost,
    .tensors = gemm_tensors,
    .emulate = kv_gemm_emulate,
    .reference = gemm_reference,
    .cuda = KV_CUDA_FAMILY(kv_cuda_gemm),
};
