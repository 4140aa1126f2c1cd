/* decode.c - the decode family (paged-KV decode attention, split-KV "flash-decoding"): axes,
 * parameters, validity, FLOP and byte counts, input tensors, the case dimensions and the
 * block table shared with the emulation (decode_emulate.c), the references (decode_cpu_ref.c)
 * and the CUDA adapter (decode_cuda.cu). What the kernel runs and how it splits the cache is
 * decode_limits.h's rule.
 *
 * The block table is no input tensor (kval's inputs are generated floating-point streams): it
 * is a function of the deck's table_seed and the case key (kv_decode_block_table), which the
 * adapter uploads and the CPU side evaluates again; pages are non-contiguous unless
 * table_seed = 0.
 *
 * Types: q and out in the storage type (fp16 or bf16); the KV cache in the same type or, by the
 * kv_type axis, 8-bit e4m3 or e5m2 (vLLM's fp8 KV cache), which the kernel widens exactly to
 * the storage type: the arithmetic and its tolerance are the precision's. The cache holds
 * K / k_scale and V / v_scale (vLLM's per-tensor scales, params k_scale and v_scale, taken as
 * fp32): attention reads K = k_cache k_scale and V = v_cache v_scale. The kernel folds k_scale
 * into the score scale (scale_f, scale_log2, each rounded once to fp32) and v_scale into the
 * output's final 1 / l; the references multiply the cache's values.
 * Inputs by `dist`: normal / uniform: q, K, V from that base distribution, scale 1.
 * large_logits: q and K normal with scale 4 (near one-hot softmax); V normal, scale 1. The
 * cache's values are those divided by k_scale (v_scale), rounded once to its type (8-bit:
 * saturated to the largest finite value, as vLLM's quantization clamps).
 * Reduction length of the tolerance: red_len = max(headdim, ctx_len). */
#include <math.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/decode/decode.h"
#include "families/decode/decode_limits.h"
#include "numerics/tolerance.h"

#define DECODE_LOG2E 1.4426950408889634074

static const char *const decode_dists[] = {"normal", "uniform", "large_logits", NULL};
static const char *const decode_kv_types[] = {"storage", "e4m3", "e5m2", NULL};

/* The KV cache's type a kv_type value names under precision p: p's storage type for
 * "storage", else the type of that name (kv_dtype_parse). */
static kv_dtype kv_type_named(const char *name, kv_precision p) {
  kv_dtype t;
  return strcmp(name, "storage") != 0 && kv_dtype_parse(name, &t) == 0 ? t : p.storage;
}

static kv_dtype kv_type_of(const kv_case *c) { return kv_type_named(kv_case_str(c, "kv_type"), c->prec); }

static const kv_axis_desc decode_axes[] = {
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0, "storage:accumulator type pair (fp32 accumulation)"},
    {"kv_type", KV_AXIS_STR, "storage", decode_kv_types, 0, 0,
     "the KV cache's type: storage (the precision's), or 8-bit e4m3 or e5m2, widened exactly to the storage type"},
    {"headdim", KV_AXIS_INT, "128", NULL, 64, 128, "head dimension (64 or 128)"},
    {"page_size", KV_AXIS_INT, "16", NULL, 16, 128, "tokens per KV-cache page (16, 32, 64 or 128)"},
    {"ctx_len", KV_AXIS_INT, "4096", NULL, 1, 1048576, "cached tokens per sequence (any length: the last page may be partial)"},
    {"batch", KV_AXIS_INT, "4", NULL, 1, 65535, "sequences"},
    {"q_heads", KV_AXIS_INT, "32", NULL, 1, 1024, "query heads"},
    {"kv_heads", KV_AXIS_INT, "8", NULL, 1, 1024, "key/value heads (GQA ratio q_heads / kv_heads)"},
    {"q_len", KV_AXIS_INT, "1", NULL, 1, 16, "query tokens per sequence, each attending to every cached token"},
    {"dist", KV_AXIS_STR, "normal", decode_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or large_logits (q, k scaled by 4: near one-hot softmax)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const kv_param_desc decode_params[] = {
    {"scale", 0, 0, 1e6, "softmax scale; 0: 1 / sqrt(headdim)"},
    {"table_seed", 1, 0, 4294967295.0, "seed of the shuffled block table (with the case key); 0: contiguous pages"},
    {"sms", 0, 0, 4096, "SM count of the split rule; 0: the GPU's (132 on the cpu backend and in --dry-run)"},
    {"k_scale", 1, 1e-6, 1e6, "the K cache's dequantization scale (fp32): K = k_cache x k_scale"},
    {"v_scale", 1, 1e-6, 1e6, "the V cache's dequantization scale (fp32): V = v_cache x v_scale"},
    {NULL, 0, 0, 0, NULL}};

void kv_decode_dims_of(const kv_case *c, int sms, kv_decode_dims *d) {
  const double scale = kv_case_param(c, "scale");
  const uint64_t seed = (uint64_t)kv_case_param(c, "table_seed");
  const int deck_sms = (int)kv_case_param(c, "sms");
  if (deck_sms > 0) sms = deck_sms;
  if (sms <= 0) sms = KV_DECODE_NOMINAL_SMS;
  d->headdim = kv_case_int(c, "headdim");
  d->page = kv_case_int(c, "page_size");
  d->ctx = kv_case_int(c, "ctx_len");
  d->batch = kv_case_int(c, "batch");
  d->q_heads = kv_case_int(c, "q_heads");
  d->kv_heads = kv_case_int(c, "kv_heads");
  d->q_len = kv_case_int(c, "q_len");
  d->group = d->q_heads / d->kv_heads > 0 ? d->q_heads / d->kv_heads : 1;
  d->rows = d->q_len * d->group;
  d->pages_per_seq = (d->ctx + d->page - 1) / d->page;
  d->num_pages = d->batch * d->pages_per_seq;
  d->kv_type = kv_type_of(c);
  d->io_type = c->prec.storage;
  d->splits = kv_decode_splits(d->ctx, d->page, d->batch * d->kv_heads, sms,
                               kv_decode_blocks_per_sm((int)d->headdim, d->kv_type), &d->split_pages);
  d->scale = scale > 0 ? scale : 1.0 / sqrt((double)d->headdim);
  d->k_scale = (float)kv_case_param(c, "k_scale");
  d->v_scale = (float)kv_case_param(c, "v_scale");
  d->scale_f = (float)(d->scale * d->k_scale);
  d->scale_log2 = (float)(d->scale * d->k_scale * DECODE_LOG2E);
  d->table_key = seed ? kv_mix64(kv_mix64(seed) ^ c->key) : 0;
}

void kv_decode_block_table(const kv_decode_dims *d, int32_t *table) {
  for (long long i = 0; i < d->num_pages; i++) table[i] = (int32_t)i;
  if (!d->table_key) return;
  for (long long i = d->num_pages - 1; i > 0; i--) {
    const long long j = (long long)(kv_mix64(d->table_key ^ kv_mix64((uint64_t)i)) % (uint64_t)(i + 1));
    const int32_t t = table[i];
    table[i] = table[j];
    table[j] = t;
  }
}

/* The tolerance's reduction length: a score sums headdim products, an output ctx_len terms. */
static double red_len_of(const kv_decode_dims *d) { return (double)(d->headdim > d->ctx ? d->headdim : d->ctx); }

double kv_decode_mag_rho(kv_precision prec, const kv_decode_dims *d) { return kv_tolerance_p_rho(prec, red_len_of(d)); }

static const char *decode_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  const char *why = kv_precision_invalid_reason(c->prec);
  if (!why)
    why = kv_decode_unsupported(kv_case_int(c, "headdim"), c->prec, kv_type_of(c), kv_case_int(c, "page_size"),
                                kv_case_int(c, "q_heads"), kv_case_int(c, "kv_heads"), kv_case_int(c, "q_len"));
  if (!why) {
    const long long page = kv_case_int(c, "page_size");
    if ((double)kv_case_int(c, "batch") * (double)((kv_case_int(c, "ctx_len") + page - 1) / page) > 2147483647.0)
      why = "decode: batch x pages per sequence exceeds the block table's int32 range";
  }
  return why;
}

static void decode_cost(const kv_case *c, kv_cost *o) {
  kv_decode_dims d;
  kv_decode_dims_of(c, 0, &d);
  const double s = (double)kv_dtype_size(d.kv_type), sio = (double)kv_dtype_size(d.io_type), hd = (double)d.headdim;
  const double rows = (double)d.batch * (double)d.q_len * (double)d.q_heads;
  const double kv_used = (double)d.batch * (double)d.ctx * (double)d.kv_heads * hd;
  const double kv_alloc = (double)d.num_pages * (double)d.page * (double)d.kv_heads * hd;
  const double table = 4.0 * (double)d.num_pages;
  o->flops = 4.0 * rows * (double)d.ctx * hd;
  o->bytes = 2.0 * rows * hd * sio + 2.0 * kv_used * s + 4.0 * rows + table;
  o->red_len = red_len_of(&d);
  o->ref_flops = rows * (double)d.ctx * (8.0 * hd + 20.0);
  /* GPU reference (decode_gpu_ref.cu): scores and weights of a chunk of nr rows,
   * nr = min(rows, 2^25 / ctx), and its output runs of 4096 tokens; the kernel's split
   * partials (at most the split rule's cap) and the block table. */
  double nr = floor(33554432.0 / (double)d.ctx);
  if (nr < 1.0) nr = 1.0;
  if (nr > rows) nr = rows;
  double splits = floor((double)d.ctx / KV_DECODE_SPLIT_MIN);
  if (splits > KV_DECODE_MAX_SPLITS) splits = KV_DECODE_MAX_SPLITS;
  if (splits < 1.0) splits = 1.0;
  o->device_bytes = 2.0 * rows * hd * sio + 2.0 * kv_alloc * s + 4.0 * rows + 2.0 * table + 2.0 * sizeof(double) * rows * (hd + 1.0) +
                    sizeof(double) * (2.0 * nr * (double)d.ctx + nr + 2.0 * nr * hd * ceil((double)d.ctx / 4096.0)) + 4.0 * splits * rows * (hd + 1.0) +
                    4.0 * (double)d.batch * (double)d.kv_heads;
  o->rows = (size_t)rows;
  o->row_len = (size_t)d.headdim;
}

static void decode_tensors(const kv_case *c, kv_tensors *t) {
  kv_decode_dims d;
  kv_decode_dims_of(c, 0, &d);
  const char *dist = kv_case_str(c, "dist");
  const int base = strcmp(dist, "uniform") == 0 ? KV_DIST_UNIFORM : KV_DIST_NORMAL;
  const double qk_scale = strcmp(dist, "large_logits") == 0 ? 4.0 : 1.0;
  const size_t rows = (size_t)d.batch * (size_t)d.q_len * (size_t)d.q_heads, hd = (size_t)d.headdim;
  const size_t nkv = (size_t)d.num_pages * (size_t)d.kv_heads * (size_t)d.page * hd;
  memset(t, 0, sizeof *t);
  t->n_in = 3;
  t->n_out = 2;
  kv_spec_in(&t->in[0], "q", d.io_type, rows * hd, base, qk_scale, 0.0);
  kv_spec_in(&t->in[1], "k_cache", d.kv_type, nkv, base, qk_scale / d.k_scale, 0.0);
  kv_spec_in(&t->in[2], "v_cache", d.kv_type, nkv, base, 1.0 / d.v_scale, 0.0);
  kv_spec_out(&t->out[0], "out", d.io_type, rows * hd);
  kv_spec_out(&t->out[1], "lse", KV_FP32, rows);
}

/* fp32 accumulation of mixed-sign sums, rounded to nearest. */
static int decode_unbiased(const kv_case *c) { return c->prec.accum == KV_FP32; }

static const char *const decode_what[] = {"single", "split", "ctx-tail", "slab-tail", "warps-idle", "rows-partial",
                                          "rows-full", "table=contiguous", "table=shuffled", "kv-scale=none",
                                          "kv-scale=single", "kv-scale=combine", "batch=many", "scale=set", NULL};

/* The kernel path: the instantiation (head dim, precision, the KV cache's type), the page size,
 * one split or several (the splits' combine), a partial last page, a partial last slab, a split
 * with fewer slabs than warps (a warp's state empty at the merge: the last split is the
 * shortest), fewer rows than the mma's 16 or all 16, the table, the cache's scales (none, or
 * v_scale in the one split's output or in the combine), several sequences (the block table's
 * rows, the per-sequence arrival counts: a bug there is right at batch 1), a softmax scale the
 * deck sets (the kernel must use the one it is given, not 1/sqrt(headdim)), the input
 * distribution. The
 * split count assumes the deck's sms (or 132). */
static void decode_path(const kv_case *c, char *b, size_t n) {
  kv_decode_dims d;
  kv_decode_dims_of(c, 0, &d);
  const long long last = d.ctx - (long long)(d.splits - 1) * d.split_pages * d.page;
  b[0] = '\0';
  kv_tag(b, n, "decode:d%lld:%s:kv=%s", d.headdim, kv_case_str(c, "precision"), kv_case_str(c, "kv_type"));
  kv_tag(b, n, "decode:page%lld", d.page);
  kv_tag(b, n, "decode:%s", decode_what[d.splits > 1 ? 1 : 0]);
  if (d.ctx % d.page) kv_tag(b, n, "decode:%s", decode_what[2]);
  if (d.ctx % KV_DECODE_SLAB) kv_tag(b, n, "decode:%s", decode_what[3]);
  if ((last + KV_DECODE_SLAB - 1) / KV_DECODE_SLAB < KV_DECODE_WARPS) kv_tag(b, n, "decode:%s", decode_what[4]);
  kv_tag(b, n, "decode:%s", decode_what[d.rows < KV_DECODE_MAX_ROWS ? 5 : 6]);
  kv_tag(b, n, "decode:%s", decode_what[d.table_key ? 8 : 7]);
  kv_tag(b, n, "decode:%s", decode_what[d.k_scale == 1.0f && d.v_scale == 1.0f ? 9 : d.splits > 1 ? 11 : 10]);
  if (d.batch > 1) kv_tag(b, n, "decode:%s", decode_what[12]);
  if (kv_case_param(c, "scale") > 0) kv_tag(b, n, "decode:%s", decode_what[13]);
  kv_tag(b, n, "decode:dist=%s", kv_case_str(c, "dist"));
}

/* Every instantiation kv_decode_unsupported allows (head dim x precision x KV cache type), the
 * page sizes, then the branches. */
static int decode_path_tag(int i, char *b, size_t n) {
  static const int dims[] = {64, 128}, pages[] = {16, 32, 64, 128};
  for (int k = 0; k < 2; k++)
    for (int p = 0; kv_precision_pairs[p]; p++) {
      kv_precision prec;
      if (kv_precision_parse(kv_precision_pairs[p], &prec) != 0) continue;
      for (int kv = 0; decode_kv_types[kv]; kv++)
        if (!kv_decode_unsupported(dims[k], prec, kv_type_named(decode_kv_types[kv], prec), 16, 1, 1, 1) &&
            kv_tag_at(&i, b, n, "decode:d%d:%s:kv=%s", dims[k], kv_precision_pairs[p], decode_kv_types[kv]))
          return 1;
    }
  for (int p = 0; p < 4; p++)
    if (kv_tag_at(&i, b, n, "decode:page%d", pages[p])) return 1;
  for (int w = 0; decode_what[w]; w++)
    if (kv_tag_at(&i, b, n, "decode:%s", decode_what[w])) return 1;
  for (int dd = 0; decode_dists[dd]; dd++)
    if (kv_tag_at(&i, b, n, "decode:dist=%s", decode_dists[dd])) return 1;
  return 0;
}

const kv_family kv_family_decode = {
    .name = "decode",
    .summary = "paged-KV decode attention (split-KV flash-decoding over a shuffled block table), output and row LSE",
    .axes = decode_axes,
    .params = decode_params,
    .invalid = decode_invalid,
    .cost = decode_cost,
    .tensors = decode_tensors,
    .emulate = kv_decode_emulate,
    .unbiased = decode_unbiased,
    .reference = kv_decode_cpu_reference,
    .reference_dd = kv_decode_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_decode),
    .path = decode_path,
    .path_tag = decode_path_tag,
};
