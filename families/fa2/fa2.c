/* fa2.c - the fa2 family (FlashAttention-2 forward): axes, parameters, validity, FLOP and
 * byte counts, input tensors, and the case dimensions shared with the emulation
 * (fa2_emulate.c), the references (fa2_cpu_ref.c) and the CUDA adapter (fa2_cuda.cu). What
 * the kernels can run is fa2_limits.h's rule.
 *
 * Inputs by `dist`: normal / uniform: q, k, v from that base distribution, scale 1.
 * large_logits: q and k normal with scale 4, so the scaled scores q.k / sqrt(d) have a
 * standard deviation of about 16 and the softmax is close to one-hot; v normal, scale 1.
 *
 * Reduction length of the tolerance: red_len = max(headdim, seqlen_k), the longer of the two
 * reductions (S = Q K^T over headdim, O = P V over the keys). */
#include <math.h>
#include <string.h>

#include "family_cuda.h"
#include "families/kit.h"
#include "families/fa2/fa2.h"
#include "families/fa2/fa2_limits.h"
#include "numerics/tolerance.h"

#define FA2_LOG2E 1.4426950408889634074

static const char *const fa2_dists[] = {"normal", "uniform", "large_logits", NULL};
static const char *const fa2_variants[] = {"kval-wgmma", "kval-mma", NULL};

static const kv_axis_desc fa2_axes[] = {
    {"variant", KV_AXIS_STR, "kval-wgmma kval-mma", fa2_variants, 0, 0,
     "kernel: kval-wgmma (Hopper wgmma + TMA; headdim 64/128/256, fp32 accumulation) or kval-mma (mma.sync; all)"},
    {"precision", KV_AXIS_STR, "fp16:fp32 bf16:fp32", NULL, 0, 0, "storage:accumulator type pair"},
    {"headdim", KV_AXIS_INT, "64 128", NULL, 32, 256, "head dimension (kernels: 32, 64, 96, 128, 256)"},
    {"seqlen", KV_AXIS_INT, "512 1024 2048", NULL, 1, 1048576, "query sequence length"},
    {"causal", KV_AXIS_INT, "0 1", NULL, 0, 1, "1: causal mask, bottom-right aligned"},
    {"batch", KV_AXIS_INT, "0", NULL, 0, 65536, "batch size; 0: max(1, tokens / seqlen)"},
    {"heads", KV_AXIS_INT, "16", NULL, 1, 1024, "attention heads"},
    {"seqlen_k", KV_AXIS_INT, "0", NULL, 0, 1048576, "key/value length; 0: same as seqlen (self-attention)"},
    {"dist", KV_AXIS_STR, "normal", fa2_dists, 0, 0,
     "inputs: normal, uniform on [-1,1), or large_logits (q, k scaled by 4: near one-hot softmax)"},
    {NULL, KV_AXIS_INT, NULL, NULL, 0, 0, NULL}};

static const kv_param_desc fa2_params[] = {
    {"tokens", 16384, 1, 2147483648.0, "tokens per batch when the batch axis is 0: batch = max(1, tokens / seqlen)"},
    {"scale", 0, 0, 1e6, "softmax scale; 0: 1 / sqrt(headdim)"},
    {NULL, 0, 0, 0, NULL}};

void kv_fa2_dims_of(const kv_case *c, kv_fa2_dims *d) {
  long long tokens = (long long)kv_case_param(c, "tokens");
  const long long lk = kv_case_int(c, "seqlen_k");
  const double scale = kv_case_param(c, "scale");
  d->variant = kv_fa2_variant_of(kv_case_str(c, "variant"));
  d->headdim = kv_case_int(c, "headdim");
  d->seqlen = kv_case_int(c, "seqlen");
  d->causal = kv_case_int(c, "causal") != 0;
  d->heads = kv_case_int(c, "heads");
  d->batch = kv_case_int(c, "batch");
  if (d->batch == 0) d->batch = tokens / d->seqlen > 1 ? tokens / d->seqlen : 1;
  d->seqlen_k = lk > 0 ? lk : d->seqlen;
  d->scale = scale > 0 ? scale : 1.0 / sqrt((double)d->headdim);
  d->scale_f = (float)d->scale;
  d->scale_log2 = (float)(d->scale * FA2_LOG2E);
}

long long kv_fa2_last_key(const kv_fa2_dims *d, long long i) {
  return d->causal ? i + d->seqlen_k - d->seqlen : d->seqlen_k - 1;
}

/* Query-key pairs the mask leaves visible in one (batch, head): query i sees keys
 * 0 .. i + seqlen_k - seqlen, i.e. t = i + off + 1 keys for t from max(1, off + 1) to seqlen_k. */
static double visible_pairs(const kv_fa2_dims *d) {
  double lq = (double)d->seqlen, lk = (double)d->seqlen_k;
  if (!d->causal) return lq * lk;
  double t0 = d->seqlen_k - d->seqlen + 1 > 1 ? (double)(d->seqlen_k - d->seqlen + 1) : 1.0;
  return lk * (lk + 1.0) / 2.0 - (t0 - 1.0) * t0 / 2.0;
}

double kv_fa2_mag_rho(const kv_case *c) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  return kv_tolerance_p_rho(c->prec, (double)(d.headdim > d.seqlen_k ? d.headdim : d.seqlen_k));
}

static const char *fa2_invalid(const kv_case *c, const char *backend) {
  (void)backend;
  const char *why = kv_precision_invalid_reason(c->prec);
  if (!why) why = kv_fa2_unsupported(kv_fa2_variant_of(kv_case_str(c, "variant")), kv_case_int(c, "headdim"), c->prec);
  return why;
}

static void fa2_cost(const kv_case *c, kv_cost *o) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  double bh = (double)d.batch * (double)d.heads, hd = (double)d.headdim;
  double s = (double)kv_dtype_size(c->prec.storage);
  double q_elems = bh * (double)d.seqlen * hd, kv_elems = bh * (double)d.seqlen_k * hd;
  double rows = bh * (double)d.seqlen, pairs = visible_pairs(&d);
  /* FA2 convention: causal self-attention counts half the pairs; cross-attention with a
   * causal mask counts the pairs it really computes. */
  if (d.causal && d.seqlen == d.seqlen_k) pairs = (double)d.seqlen * (double)d.seqlen_k / 2.0;
  o->flops = 4.0 * bh * pairs * hd;
  o->bytes = (2.0 * q_elems + 2.0 * kv_elems) * s + 4.0 * rows;
  o->red_len = (double)(d.headdim > d.seqlen_k ? d.headdim : d.seqlen_k);
  /* per visible pair: q.k and |q||k| (4d), P V and its magnitude (4d), one exp */
  o->ref_flops = bh * visible_pairs(&d) * (8.0 * hd + 20.0);
  /* GPU reference workspace (families/fa2/fa2_gpu_ref.cu): fp64 K, |K|, V, |V| of one head and
   * a chunk of nr query rows (scores, probabilities, outputs), nr = min(seqlen, 2^25 / seqlen_k). */
  double lk = d.seqlen_k > 0 ? (double)d.seqlen_k : 1.0, nr = floor(33554432.0 / lk);
  if (nr < 1.0) nr = 1.0;
  if (nr > (double)d.seqlen) nr = (double)d.seqlen;
  double ref_work = sizeof(double) * (4.0 * lk * hd + 2.0 * nr * hd + 2.0 * nr * lk + nr);
  o->device_bytes = o->bytes + 2.0 * sizeof(double) * q_elems + sizeof(double) * rows + ref_work;
  o->rows = (size_t)rows;
  o->row_len = (size_t)d.headdim;
}

static void fa2_tensors(const kv_case *c, kv_tensors *t) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  kv_dtype st = c->prec.storage;
  const char *dist = kv_case_str(c, "dist");
  int base = strcmp(dist, "uniform") == 0 ? KV_DIST_UNIFORM : KV_DIST_NORMAL;
  double qk_scale = strcmp(dist, "large_logits") == 0 ? 4.0 : 1.0;
  size_t bh = (size_t)d.batch * (size_t)d.heads, hd = (size_t)d.headdim;
  size_t nq = bh * (size_t)d.seqlen * hd, nk = bh * (size_t)d.seqlen_k * hd;
  memset(t, 0, sizeof *t);
  t->n_in = 3;
  t->n_out = 2;
  kv_spec_in(&t->in[0], "q", st, nq, base, qk_scale, 0.0);
  kv_spec_in(&t->in[1], "k", st, nk, base, qk_scale, 0.0);
  kv_spec_in(&t->in[2], "v", st, nk, base, 1.0, 0.0);
  kv_spec_out(&t->out[0], "o", st, nq);
  kv_spec_out(&t->out[1], "lse", KV_FP32, bh * (size_t)d.seqlen);
}

/* fp32 accumulation, P rounded to nearest: the output's errors have no systematic sign. */
static int fa2_unbiased(const kv_case *c) { return c->prec.accum == KV_FP32; }

/* The kernel path (fa2_limits.h's tiles, as the kernels use them): the instantiation, partial
 * query and key blocks, several key blocks (the online-softmax rescale), cross-attention, a
 * softmax scale the deck sets (the kernels must use the one they are given, not
 * 1/sqrt(headdim)), several sequences of another number of heads (a sequence's stride
 * written with the batch count where the head count belongs is right when batch is 1 or
 * equals heads), the input distribution. */
static void fa2_path(const kv_case *c, char *b, size_t n) {
  const char *v = kv_case_str(c, "variant");
  const int wg = kv_fa2_variant_of(v) == KV_FA2_WGMMA;
  const long long d = kv_case_int(c, "headdim"), lq = kv_case_int(c, "seqlen");
  const long long lk = kv_case_int(c, "seqlen_k") ? kv_case_int(c, "seqlen_k") : lq;
  const int causal = kv_case_int(c, "causal") != 0;
  const long long bm = wg ? KV_FA2_WGMMA_BLOCK_M(d, causal) : KV_FA2_BLOCK_M(d);
  const long long bn = wg ? KV_FA2_WGMMA_BLOCK_N(d) : KV_FA2_BLOCK_N(d);
  b[0] = '\0';
  kv_tag(b, n, "fa2:%s:d%lld:%s:%s", v, d, kv_case_str(c, "precision"), causal ? "causal" : "full");
  if (lq % bm) kv_tag(b, n, "fa2:%s:q-tail", v);
  if (lk % bn) kv_tag(b, n, "fa2:%s:k-tail", v);
  if (lk > bn) kv_tag(b, n, "fa2:%s:k-blocks", v);
  if (lk != lq) kv_tag(b, n, "fa2:%s:cross", v);
  if (kv_case_param(c, "scale") > 0) kv_tag(b, n, "fa2:%s:scale=set", v);
  kv_fa2_dims dims;
  kv_fa2_dims_of(c, &dims);
  if (kv_batch_stride_path(dims.batch, dims.heads)) kv_tag(b, n, "fa2:%s:batch-stride", v);
  kv_tag(b, n, "fa2:%s:dist=%s", v, kv_case_str(c, "dist"));
}


/* Every instantiation kv_fa2_unsupported allows, then each variant's branches. */
static int fa2_path_tag(int i, char *b, size_t n) {
  static const int dims[] = {32, 64, 96, 128, 256};
  static const char *const what[] = {"q-tail", "k-tail", "k-blocks", "cross", "scale=set", "batch-stride", NULL};
  for (int v = 0; fa2_variants[v]; v++) {
    for (int k = 0; k < 5; k++)
      for (int p = 0; kv_precision_pairs[p]; p++) {
        kv_precision prec;
        if (kv_precision_parse(kv_precision_pairs[p], &prec) != 0 ||
            kv_fa2_unsupported(kv_fa2_variant_of(fa2_variants[v]), dims[k], prec))
          continue;
        for (int causal = 0; causal < 2; causal++)
          if (kv_tag_at(&i, b, n, "fa2:%s:d%d:%s:%s", fa2_variants[v], dims[k], kv_precision_pairs[p], causal ? "causal" : "full"))
            return 1;
      }
    for (int w = 0; what[w]; w++)
      if (kv_tag_at(&i, b, n, "fa2:%s:%s", fa2_variants[v], what[w])) return 1;
    for (int d = 0; fa2_dists[d]; d++)
      if (kv_tag_at(&i, b, n, "fa2:%s:dist=%s", fa2_variants[v], fa2_dists[d])) return 1;
  }
  return 0;
}

const kv_family kv_family_fa2 = {
    .name = "fa2",
    .summary = "FlashAttention-2 forward (blocked online softmax on tensor cores), output and row LSE",
    .axes = fa2_axes,
    .params = fa2_params,
    .invalid = fa2_invalid,
    .cost = fa2_cost,
    .tensors = fa2_tensors,
    .emulate = kv_fa2_emulate,
    .unbiased = fa2_unbiased,
    .reference = kv_fa2_cpu_reference,
    .reference_dd = kv_fa2_cpu_reference_dd,
    .cuda = KV_CUDA_FAMILY(kv_cuda_fa2),
    .path = fa2_path,
    .path_tag = fa2_path_tag,
};
