/* fa2_emulate.c - the cpu backend's FlashAttention-2 forward: the blocked online-softmax
 * algorithm of the CUDA kernel with its precision model, deterministic and bit-exact to this
 * model. For each (batch, head) and query row i, key blocks of KV_FA2_BLOCK_N(d) keys
 * (KV_FA2_WGMMA_BLOCK_N(d) for the kval-wgmma variant)
 * (fa2_limits.h) are visited in ascending order, blocks wholly beyond the causal limit
 * skipped (the kernel's per-query-block skipping gives the same bits: a fully masked block
 * leaves max, sum and accumulators unchanged). Per block, all in fp32 unless stated:
 *  1. S_j = q . k_j: exact products, fp32 adds over the head dimension in order, rounded
 *     to the accumulator type after every k-step of 16 (fp16/bf16 accumulation);
 *     masked keys (j > i + seqlen_k - seqlen when causal, j >= seqlen_k) get no score.
 *  2. m_new = max(m, max_j S_j) on raw scores; m_cur = m_new, or 0 when m_new = -inf.
 *     alpha = exp2((m - m_cur) * scale_log2); l = l * alpha; o_d = acc(o_d * alpha).
 *  3. p_j = exp2(fma(S_j, scale_log2, -(m_cur * scale_log2))) (exp2 evaluated in double and
 *     rounded to fp32, the fused multiply-add as in FA2's ffma); l = l + p_j in key order
 *     with the unrounded p_j; P_j = p_j rounded to the storage type.
 *  4. o_d += P_j * v_jd over the block's keys in order (exact products, fp32 adds), rounded
 *     to the accumulator type after every 16 keys counted from the block start and at the
 *     block's last visible key.
 * End: o_d * (1 / l) (1 when l is 0 or NaN) rounded to storage; lse = m * scale_f + log(l)
 * (log in double, rounded to fp32) in fp32, or -inf for a fully masked row (l = 0), whose
 * output is 0. scale_f and scale_log2 come from kv_fa2_dims_of(). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/accum.h"
#include "families/fa2/fa2_limits.h"
#include "families/fa2/fa2.h"

typedef struct {
  kv_fa2_dims d;
  kv_dtype st, acc;
  long long bn;      /* keys per block */
  float *kt;         /* K of one (batch, head), transposed: kt[dd * seqlen_k + j] */
  float *vf;         /* V of one (batch, head): vf[j * headdim + dd] */
  float *q, *o, *s, *p;
} fa2_work;

static float fa2_exp2(float x) {
  return (float)exp2((double)x);
}

static kv_status work_alloc(fa2_work *w, const kv_case *c) {
  kv_fa2_dims_of(c, &w->d);
  w->st = c->prec.storage;
  w->acc = c->prec.accum;
  w->bn = w->d.variant == KV_FA2_WGMMA ? KV_FA2_WGMMA_BLOCK_N(w->d.headdim) : KV_FA2_BLOCK_N(w->d.headdim);
  size_t hd = (size_t)w->d.headdim, kv = (size_t)w->d.seqlen_k * hd;
  w->kt = KV_MALLOC(kv * sizeof(float));
  w->vf = KV_MALLOC(kv * sizeof(float));
  w->q = KV_MALLOC((2 * hd + 2 * (size_t)w->bn) * sizeof(float));
  if (CHECK_ALLOC(w->kt) != KV_OK || CHECK_ALLOC(w->vf) != KV_OK || CHECK_ALLOC(w->q) != KV_OK) {
    free(w->kt);
    free(w->vf);
    free(w->q);
    return KV_ERR;
  }
  w->o = w->q + hd;
  w->s = w->o + hd;
  w->p = w->s + w->bn;
  return KV_OK;
}

static void work_free(fa2_work *w) {
  free(w->kt);
  free(w->vf);
  free(w->q);
}

/* Widen K (transposed) and V of batch b, head h; w->q serves as the row buffer. */
static void load_kv(fa2_work *w, const void *k, const void *v, long long b, long long h) {
  size_t hd = (size_t)w->d.headdim, lk = (size_t)w->d.seqlen_k;
  for (size_t j = 0; j < lk; j++) {
    size_t off = (((size_t)b * lk + j) * (size_t)w->d.heads + (size_t)h) * hd;
    kv_to_float(k, w->st, off, hd, w->q);
    for (size_t dd = 0; dd < hd; dd++) w->kt[dd * lk + j] = w->q[dd];
    kv_to_float(v, w->st, off, hd, w->vf + j * hd);
  }
}

/* Step 1: w->s[0..nb) = q . k_j for keys n0 .. n0 + nb. */
static void block_scores(fa2_work *w, size_t n0, size_t nb) {
  size_t hd = (size_t)w->d.headdim, lk = (size_t)w->d.seqlen_k;
  float *restrict s = w->s;
  memset(s, 0, nb * sizeof(float));
  for (size_t dd = 0; dd < hd; dd++) {
    const float qd = w->q[dd];
    const float *restrict kr = w->kt + dd * lk + n0;
    for (size_t jj = 0; jj < nb; jj++) s[jj] += qd * kr[jj];
    if ((dd + 1) % KV_KSTEP == 0 || dd + 1 == hd) kv_acc_round_array(s, nb, w->acc);
  }
}

/* Step 4: w->o += P V over keys n0 .. n0 + nb. */
static void block_pv(fa2_work *w, size_t n0, size_t nb) {
  size_t hd = (size_t)w->d.headdim;
  float *restrict o = w->o;
  for (size_t jj = 0; jj < nb; jj++) {
    const float pj = w->p[jj];
    const float *restrict vr = w->vf + (n0 + jj) * hd;
    for (size_t dd = 0; dd < hd; dd++) o[dd] += pj * vr[dd];
    if ((jj + 1) % KV_KSTEP == 0 || jj + 1 == nb) kv_acc_round_array(o, hd, w->acc);
  }
}

/* One query row (w->q loaded): leaves the unnormalised accumulators in w->o and returns the
 * row max m and row sum l. */
static void attend_row(fa2_work *w, long long i, float *m_out, float *l_out) {
  size_t hd = (size_t)w->d.headdim;
  const float sl2 = w->d.scale_log2;
  long long last = kv_fa2_last_key(&w->d, i);
  float m = -INFINITY, l = 0.0f;
  memset(w->o, 0, hd * sizeof(float));
  for (long long n0 = 0; n0 <= last; n0 += w->bn) {
    size_t nb = (size_t)(last + 1 - n0 < w->bn ? last + 1 - n0 : w->bn);
    block_scores(w, (size_t)n0, nb);
    float mb = -INFINITY;
    for (size_t jj = 0; jj < nb; jj++)
      if (w->s[jj] > mb) mb = w->s[jj];
    const float m_new = m > mb ? m : mb;
    const float m_cur = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = fa2_exp2((m - m_cur) * sl2), m_scaled = m_cur * sl2;
    l = l * alpha;
    for (size_t dd = 0; dd < hd; dd++) w->o[dd] = w->o[dd] * alpha;
    kv_acc_round_array(w->o, hd, w->acc);
    for (size_t jj = 0; jj < nb; jj++) {
      const float p = fa2_exp2(fmaf(w->s[jj], sl2, -m_scaled));
      l = l + p;
      w->p[jj] = kv_round_f32(p, w->st);
    }
    block_pv(w, (size_t)n0, nb);
    m = m_new;
  }
  *m_out = m;
  *l_out = l;
}

kv_status kv_fa2_emulate(const kv_case *c, void *const *in, void *const *out) {
  fa2_work w;
  KV_TRY(work_alloc(&w, c));
  const size_t hd = (size_t)w.d.headdim, lq = (size_t)w.d.seqlen, heads = (size_t)w.d.heads;
  float *lse = (float *)out[1];
  for (long long b = 0; b < w.d.batch; b++)
    for (long long h = 0; h < w.d.heads; h++) {
      load_kv(&w, in[1], in[2], b, h);
      for (size_t i = 0; i < lq; i++) {
        const size_t row = ((size_t)b * lq + i) * heads + (size_t)h;
        float m, l;
        kv_to_float(in[0], w.st, row * hd, hd, w.q);
        attend_row(&w, (long long)i, &m, &l);
        const float inv = (l == 0.0f || l != l) ? 1.0f : 1.0f / l;
        for (size_t dd = 0; dd < hd; dd++) kv_store(out[0], row * hd + dd, w.st, w.o[dd] * inv);
        lse[row] = l == 0.0f ? -INFINITY : m * w.d.scale_f + (float)log((double)l);
      }
    }
  work_free(&w);
  return KV_OK;
}
