/* gemm.c - the gemm family: D = alpha * op(A) op(B) + beta * C. Descriptor (axes, params,
 * validity, FLOP/byte counts, input tensors) and the shape parser. The fp64 CPU reference is
 * in gemm_cpu_ref.c, the CPU emulation of the tensor-core kernels in gemm_emulate.c.
 *
 * Inputs by `dist`: normal / uniform: A, B (and C) from that base distribution, scale 1.
 * near_max: A and B uniform on [0.75 s, 1.25 s) with s = sqrt(65504 / (1.6 K)). Every product
 * then lies in [0.5625, 1.5625] s^2, so each D = sum of K products (alpha = 1, beta = 0) is
 * about 0.625 * 65504 and at most 0.977 * 65504: outputs in the top binade of fp16 without
 * overflow, and every partial sum of the accumulator stays below its final value. C (when
 * beta != 0) is normal with scale 1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/gemm/gemm.h"
#include "families/gemm/gemm_limits.h"

#define GEMM_MAX_DIM (1LL << 30)

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
    {"alpha", KV_AXIS_REAL, "1", NULL, -1e6, 1e6, "scale of op(A) op(B)"},
    {"beta", KV_AXIS_REAL, "0", NULL, -1e6, 1e6, "scale of C (C is an input only when beta != 0)"},
    {"scale_a", KV_AXIS_REAL, "1", NULL, 0x1p-32, 0x1p32, "FP8 per-tensor scale of A (values scale_a * A; 1 otherwise)"},
    {"scale_b", KV_AXIS_REAL, "1", NULL, 0x1p-32, 0x1p32, "FP8 per-tensor scale of B (values scale_b * B; 1 otherwise)"},
    {"promote", KV_AXIS_INT, "0", NULL, 0, 1 << 30,
     "FP8: products the tensor cores accumulate before adding into fp32 registers (0: never)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};


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
  d->alpha = kv_case_real(c, "alpha");
  d->beta = kv_case_real(c, "beta");
  d->has_c = d->beta != 0.0;
  d->scale_a = kv_case_real(c, "scale_a");
  d->scale_b = kv_case_real(c, "scale_b");
  d->promote = kv_case_int(c, "promote");
  d->st = c->prec.storage;
  d->out = kv_precision_output(c->prec);
}

static const char *gemm_invalid(const kv_case *c, const char *backend) {
  long long m, n, k;
  const char *why = kv_precision_invalid_reason(c->prec);
  if (why) return why;
  if (kv_gemm_parse_shape(kv_case_str(c, "shape"), &m, &n, &k) != 0)
    return "shape must be MxNxK with positive integers (e.g. 1024x1024x1024)";
  const int variant = kv_gemm_variant_of(kv_case_str(c, "variant"));
  if (variant == KV_GEMM_CUBLAS && backend && strcmp(backend, "cpu") == 0) return "cublas needs the cuda backend";
  if (!kv_dtype_is_fp8(c->prec.storage) && (kv_case_real(c, "scale_a") != 1.0 || kv_case_real(c, "scale_b") != 1.0))
    return "gemm: scale_a and scale_b apply to FP8 storage only (1 for fp16/bf16)";
  const char *layout = kv_case_str(c, "layout");
  return kv_gemm_unsupported(variant, m, n, k, layout[0] == 't', layout[1] == 't', c->prec, kv_case_int(c, "promote"));
}

static void gemm_cost(const kv_case *c, kv_cost *o) {
  kv_gemm_dims d;
  kv_gemm_dims_of(c, &d);
  double m = (double)d.m, n = (double)d.n, k = (double)d.k;
  const double s_in = (double)kv_dtype_size(d.st), s_out = (double)kv_dtype_size(d.out);
  o->flops = 2.0 * m * n * k;
  o->bytes = (m * k + k * n) * s_in + m * n * (d.has_c ? 2.0 : 1.0) * s_out;
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
  if (d.has_c) kv_spec_in(&t->in[2], "c", d.out, m * n, c_base, 1.0, 0.0);
  kv_spec_out(&t->out[0], "d", d.out, m * n);
}

/* fp32 accumulation of products of both signs: the tensor cores' truncation averages out and the
 * output's rounding must be to nearest. near_max's products all have one sign, and there the
 * truncation of every k-step accumulates into a bias of a fraction of an output ulp at large K
 * (docs/NUMERICS.md): part of the precision model, not judged. */
static int gemm_unbiased(const kv_case *c) {
  return c->prec.accum == KV_FP32 && strcmp(kv_case_str(c, "dist"), "near_max") != 0;
}

/* kval-wgmma's FP8 kernel computes the emulation's model bit for bit (its fused, truncated sums as
 * the probes measure them, fp32 promotion and epilogue), judged where the model itself misses
 * the bound: same-sign sums (near_max), whose truncation bias grows like K. Random-sign FP8 sums
 * stay far inside the bound at any K, so there a miss is a bug, never a finding (and on the cpu
 * backend, whose kernel is the emulation, it still fails). The 16-bit kernels' fp32 sums do
 * not follow the model's order, and cuBLASLt is not kval's. */
static int gemm_emulation_exact(const kv_case *c) {
  return kv_dtype_is_fp8(c->prec.storage) && kv_gemm_variant_of(kv_case_str(c, "variant")) == KV_GEMM_WGMMA &&
         strcmp(kv_case_str(c, "dist"), "near_max") == 0;
}

static long long shape_dim(const char *shape, int which) {
  long long d[3];
  return kv_gemm_parse_shape(shape, &d[0], &d[1], &d[2]) == 0 ? d[which] : -1;
}
static long long shape_m(const char *shape) { return shape_dim(shape, 0); }
static long long shape_n(const char *shape) { return shape_dim(shape, 1); }
static long long shape_k(const char *shape) { return shape_dim(shape, 2); }

/* M, N, K as numeric coordinates along the shape axis of the file. */
static const kv_coord_desc gemm_coords[] = {
    {"M", "shape", "rows M of op(A) and D", shape_m},
    {"N", "shape", "columns N of op(B) and D", shape_n},
    {"K", "shape", "reduction length K (columns of op(A), rows of op(B))", shape_k},
    {NULL, NULL, NULL, NULL}};

/* The kernel path from the rules the dispatcher calls (gemm_limits.h): the instantiation, the
 * wgmma tile (large, mid or small by the tiles a wave of SMs takes; FP8 wide or promoting) and
 * epilogue (K split, TMA store or direct), whether a persistent CTA goes round its tile loop
 * again (more tiles and splits than SMs: the second tile starts on the ring's carried stage and
 * phase and reuses the accumulators and the epilogue's staging), the mma load path, partial
 * tiles in M, N and K of the tile the kernel runs, FP8 promotion or fast accumulation and
 * each scale != 1 (one tag each: a dropped scale shows only where that one is not 1), alpha !=
 * 1, beta != 0, the input distribution. */
static void gemm_path(const kv_case *c, char *b, size_t n) {
  const char *v = kv_case_str(c, "variant"), *layout = kv_case_str(c, "layout");
  const int var = kv_gemm_variant_of(v), a_t = layout[0] == 't', b_t = layout[1] == 't';
  long long m = 0, nn = 0, k = 0;
  kv_gemm_parse_shape(kv_case_str(c, "shape"), &m, &nn, &k);
  b[0] = '\0';
  kv_tag(b, n, "gemm:%s:%s:%s", v, kv_case_str(c, "precision"), layout);
  long long bm = 0, bn = 0, bk = 0;
  const int fp8 = kv_dtype_is_fp8(c->prec.storage);
  const char *tile = fp8 ? "fp8:" : ""; /* FP8 tiles and epilogue are tagged apart */
  if (var == KV_GEMM_WGMMA && fp8) {
    kv_tag(b, n, "gemm:%s:fp8:%s", v, kv_gemm_wgmma_tma_store(nn) ? "tma-store" : "direct-store");
    kv_gemm_fp8_tile(m, nn, kv_case_int(c, "promote"), KV_GEMM_PATH_SMS, &bm, &bn);
    bk = KV_GEMM_FP8_BK;
    kv_tag(b, n, "gemm:%s:fp8:tile%lldx%lld", v, bm, bn);
    if (kv_gemm_tiles(m, nn, bm, bn) > KV_GEMM_PATH_SMS) kv_tag(b, n, "gemm:%s:fp8:tile%lldx%lld:second-tile", v, bm, bn);
  } else if (var == KV_GEMM_WGMMA) {
    long long kb_per;
    const int splits = kv_gemm_wgmma_splits(m, nn, k, c->prec, KV_GEMM_PATH_SMS, &kb_per);
    kv_gemm_wgmma_tile(m, nn, KV_GEMM_PATH_SMS, &bm, &bn);
    kv_tag(b, n, "gemm:%s:tile%lldx%lld", v, bm, bn);
    kv_tag(b, n, "gemm:%s:%s", v, splits > 1 ? "split-k" : kv_gemm_wgmma_tma_store(nn) ? "tma-store" : "direct-store");
    if (kv_gemm_tiles(m, nn, bm, bn) * splits > KV_GEMM_PATH_SMS)
      kv_tag(b, n, "gemm:%s:tile%lldx%lld:second-tile", v, bm, bn);
    bk = KV_GEMM_WGMMA_BK;
  } else if (var == KV_GEMM_MMA) {
    kv_tag(b, n, "gemm:%s:%s", v, kv_gemm_mma_vector_loads(m, nn, k, a_t, b_t) ? "vector-loads" : "scalar-loads");
    bm = KV_GEMM_MMA_BM, bn = KV_GEMM_MMA_BN, bk = KV_GEMM_MMA_BK;
  }
  if (bm && m % bm) kv_tag(b, n, "gemm:%s:%sm-tail", v, tile);
  if (bn && nn % bn) kv_tag(b, n, "gemm:%s:%sn-tail", v, tile);
  if (bk && k % bk) kv_tag(b, n, "gemm:%s:%sk-tail", v, tile);
  if (fp8) {
    kv_tag(b, n, "gemm:%s:fp8:%s", v, kv_case_int(c, "promote") > 0 ? "promoted" : "fast-accum");
    if (kv_case_real(c, "scale_a") != 1.0) kv_tag(b, n, "gemm:%s:fp8:scale-a", v);
    if (kv_case_real(c, "scale_b") != 1.0) kv_tag(b, n, "gemm:%s:fp8:scale-b", v);
  }
  if (kv_case_real(c, "alpha") != 1.0) kv_tag(b, n, "gemm:%s:alpha", v);
  if (kv_case_real(c, "beta") != 0.0) kv_tag(b, n, "gemm:%s:beta", v);
  kv_tag(b, n, "gemm:%s:dist=%s", v, kv_case_str(c, "dist"));
}


/* Every instantiation kv_gemm_unsupported allows, then each variant's branches. */
static int gemm_path_tag(int i, char *b, size_t n) {
  static const char *const wgmma[] = {"split-k", "tma-store", "direct-store", "m-tail", "n-tail", "k-tail", NULL};
  static const char *const mma[] = {"vector-loads", "scalar-loads", "m-tail", "n-tail", "k-tail", NULL};
  static const char *const none[] = {NULL};
  static const char *const fp8[] = {"promoted", "fast-accum", "scale-a", "scale-b", NULL};
  static const char *const wgmma_fp8[] = {"tma-store", "direct-store", "m-tail", "n-tail", "k-tail", NULL};
  for (int v = 0; gemm_variants[v]; v++) {
    const int var = kv_gemm_variant_of(gemm_variants[v]);
    for (int p = 0; kv_precision_pairs[p]; p++)
      for (int l = 0; gemm_layouts[l]; l++) {
        kv_precision prec;
        if (kv_precision_parse(kv_precision_pairs[p], &prec) != 0 ||
            kv_gemm_unsupported(var, 256, 256, 256, gemm_layouts[l][0] == 't', gemm_layouts[l][1] == 't', prec, 0))
          continue;
        if (kv_tag_at(&i, b, n, "gemm:%s:%s:%s", gemm_variants[v], kv_precision_pairs[p], gemm_layouts[l])) return 1;
      }
    if (var == KV_GEMM_WGMMA)
      for (int t = KV_GEMM_TILE_LARGE; t <= KV_GEMM_TILE_SMALL; t++) {
        long long bm, bn;
        kv_gemm_wgmma_tile_dims(t, &bm, &bn);
        if (kv_tag_at(&i, b, n, "gemm:%s:tile%lldx%lld", gemm_variants[v], bm, bn) ||
            kv_tag_at(&i, b, n, "gemm:%s:tile%lldx%lld:second-tile", gemm_variants[v], bm, bn))
          return 1;
      }
    const char *const *what = var == KV_GEMM_WGMMA ? wgmma : var == KV_GEMM_MMA ? mma : none;
    for (int w = 0; what[w]; w++)
      if (kv_tag_at(&i, b, n, "gemm:%s:%s", gemm_variants[v], what[w])) return 1;
    if (var != KV_GEMM_MMA)
      for (int w = 0; fp8[w]; w++)
        if (kv_tag_at(&i, b, n, "gemm:%s:fp8:%s", gemm_variants[v], fp8[w])) return 1;
    if (var == KV_GEMM_WGMMA) {
      for (int w = 0; wgmma_fp8[w]; w++)
        if (kv_tag_at(&i, b, n, "gemm:%s:fp8:%s", gemm_variants[v], wgmma_fp8[w])) return 1;
      for (int t = KV_GEMM_FP8_TILE_WIDE; t <= KV_GEMM_FP8_TILE_SKINNY; t++) {
        long long bm, bn;
        kv_gemm_fp8_tile_dims(t, &bm, &bn);
        if (kv_tag_at(&i, b, n, "gemm:%s:fp8:tile%lldx%lld", gemm_variants[v], bm, bn) ||
            kv_tag_at(&i, b, n, "gemm:%s:fp8:tile%lldx%lld:second-tile", gemm_variants[v], bm, bn))
          return 1;
      }
    }
    if (kv_tag_at(&i, b, n, "gemm:%s:alpha", gemm_variants[v]) || kv_tag_at(&i, b, n, "gemm:%s:beta", gemm_variants[v])) return 1;
    for (int d = 0; gemm_dists[d]; d++)
      if (kv_tag_at(&i, b, n, "gemm:%s:dist=%s", gemm_variants[v], gemm_dists[d])) return 1;
  }
  return 0;
}

const kv_family kv_family_gemm = {
    .name = "gemm",
    .summary = "GEMM D = alpha op(A) op(B) + beta C on tensor cores (wgmma, mma.sync) and cuBLAS",
    .axes = gemm_axes,
    .invalid = gemm_invalid,
    .cost = gemm_cost,
    .tensors = gemm_tensors,
    .emulate = kv_gemm_emulate,
    .emulation_exact = gemm_emulation_exact,
    .unbiased = gemm_unbiased,
    .reference = kv_gemm_cpu_reference,
    .reference_dd = kv_gemm_cpu_reference_dd,
    .ref_splits_within = 1,
    .cuda = KV_CUDA_FAMILY(kv_cuda_gemm),
    .coords = gemm_coords,
    .path = gemm_path,
    .path_tag = gemm_path_tag,
};
