/* fa2bwd_emulate.c - the cpu backend's FlashAttention-2 backward (both variants): the kernels'
 * algorithm and precision model in fp32 (not bit-exact to the GPU: the order of the fp32 sums
 * inside a tensor-core step differs; the tolerance covers it). Per (batch, head):
 *  Forward (the GPU case runs the fa2 forward kernel once instead): S_ij = sum_d q k in fp32
 *   over visible keys, m_i = max S_ij, p = exp2(S * scale_log2 - m * scale_log2), l_i = sum p,
 *   o_i = (sum P v) / l_i with P = p rounded to storage, rounded to storage;
 *   lse_i = m_i * scale_f + log(l_i) in fp32.
 *  D_i = sum_d dout_id o_id in fp32.
 *  Per pair, recomputed by both passes as the kernels do: S_ij and dP_ij = sum_d dout_id v_jd in
 *   fp32; P_ij = exp2(S_ij * scale_log2 - lse_i * log2(e)) in fp32; dS_ij = P_ij (dP_ij - D_i)
 *   in fp32 from the unrounded P.
 *  dV_j = sum_i round(P_ij) dout_i, dK_j = scale_f * sum_i round(dS_ij) q_i (keys pass, query
 *   rows in ascending order); dQ_i = scale_f * sum_j round(dS_ij) k_j (query pass, keys in
 *   ascending order); fp32 sums, each gradient rounded once to the storage type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/halfprec.h"
#include "families/fa2bwd/fa2bwd.h"

#define EMU_LOG2E 1.44269504088896340736f

typedef struct {
  kv_fa2bwd_dims d;
  kv_dtype st;
  float *q, *k, *v, *dout, *o; /* one head, [seqlen, headdim] each */
  float *lse, *dsum, *acc;     /* per query row; headdim accumulators */
} emu_work;

static float dotf(const float *x, const float *y, long long n) {
  float s = 0.0f;
  for (long long k = 0; k < n; k++) s += x[k] * y[k];
  return s;
}

static void load_head(emu_work *w, void *const *in, long long b, long long h) {
  const kv_fa2bwd_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim;
  float *dst[4] = {w->q, w->k, w->v, w->dout};
  for (long long i = 0; i < d->seqlen; i++) {
    const size_t off = (((size_t)b * (size_t)d->seqlen + (size_t)i) * (size_t)d->heads + (size_t)h) * hd;
    for (int t = 0; t < 4; t++) kv_to_float(in[t], w->st, off, hd, dst[t] + (size_t)i * hd);
  }
}

/* The forward's o (rounded to storage) and lse, and D, of every query row of the head. */
static void forward(emu_work *w) {
  const kv_fa2bwd_dims *d = &w->d;
  const long long hd = d->headdim;
  for (long long i = 0; i < d->seqlen; i++) {
    const long long n = kv_fa2bwd_keys(d, i);
    const float *qi = w->q + i * hd;
    float m = -INFINITY, l = 0.0f, *oi = w->o + i * hd;
    for (long long j = 0; j < n; j++) m = fmaxf(m, dotf(qi, w->k + j * hd, hd));
    memset(w->acc, 0, (size_t)hd * sizeof(float));
    for (long long j = 0; j < n; j++) {
      const float p = (float)exp2((double)fmaf(dotf(qi, w->k + j * hd, hd), d->scale_log2, -(m * d->scale_log2)));
      const float pr = kv_round_f32(p, w->st);
      l += p;
      for (long long k = 0; k < hd; k++) w->acc[k] += pr * w->v[j * hd + k];
    }
    for (long long k = 0; k < hd; k++) oi[k] = kv_round_f32(w->acc[k] * (1.0f / l), w->st);
    w->lse[i] = m * d->scale_f + (float)log((double)l);
    w->dsum[i] = dotf(w->dout + i * hd, oi, hd);
  }
}

/* P_ij and dS_ij in fp32. */
static void pair(const emu_work *w, long long i, long long j, float *p, float *ds) {
  const long long hd = w->d.headdim;
  const float s = dotf(w->q + i * hd, w->k + j * hd, hd), dp = dotf(w->dout + i * hd, w->v + j * hd, hd);
  *p = (float)exp2((double)fmaf(s, w->d.scale_log2, -(w->lse[i] * EMU_LOG2E)));
  *ds = *p * (dp - w->dsum[i]);
}

/* Gradient rows of the head into out (dQ, dK, dV parts, fa2bwd.h). */
static void backward(emu_work *w, void *out, long long b, long long h) {
  const kv_fa2bwd_dims *d = &w->d;
  const long long hd = d->headdim;
  const size_t tokens = (size_t)d->batch * (size_t)d->seqlen * (size_t)d->heads;
  float *dv = w->acc + hd;
  for (long long j = 0; j < d->seqlen; j++) {
    memset(w->acc, 0, 2 * (size_t)hd * sizeof(float));
    for (long long i = d->causal ? j : 0; i < d->seqlen; i++) {
      float p, ds;
      pair(w, i, j, &p, &ds);
      const float pr = kv_round_f32(p, w->st), dsr = kv_round_f32(ds, w->st);
      for (long long k = 0; k < hd; k++) {
        dv[k] += pr * w->dout[i * hd + k];
        w->acc[k] += dsr * w->q[i * hd + k];
      }
    }
    const size_t row = ((size_t)b * (size_t)d->seqlen + (size_t)j) * (size_t)d->heads + (size_t)h;
    for (long long k = 0; k < hd; k++) {
      kv_store(out, (tokens + row) * (size_t)hd + (size_t)k, w->st, (double)(w->acc[k] * d->scale_f));
      kv_store(out, (2 * tokens + row) * (size_t)hd + (size_t)k, w->st, (double)dv[k]);
    }
  }
  for (long long i = 0; i < d->seqlen; i++) {
    memset(w->acc, 0, (size_t)hd * sizeof(float));
    for (long long j = 0; j < kv_fa2bwd_keys(d, i); j++) {
      float p, ds;
      pair(w, i, j, &p, &ds);
      const float dsr = kv_round_f32(ds, w->st);
      for (long long k = 0; k < hd; k++) w->acc[k] += dsr * w->k[j * hd + k];
    }
    const size_t row = ((size_t)b * (size_t)d->seqlen + (size_t)i) * (size_t)d->heads + (size_t)h;
    for (long long k = 0; k < hd; k++) kv_store(out, row * (size_t)hd + (size_t)k, w->st, (double)(w->acc[k] * d->scale_f));
  }
}

kv_status kv_fa2bwd_emulate(const kv_case *c, void *const *in, void *const *out) {
  emu_work w;
  kv_fa2bwd_dims_of(c, &w.d);
  w.st = c->prec.storage;
  const size_t l = (size_t)w.d.seqlen, hd = (size_t)w.d.headdim;
  w.q = KV_MALLOC((5 * l * hd + 2 * l + 2 * hd) * sizeof(float));
  KV_TRY(CHECK_ALLOC(w.q));
  w.k = w.q + l * hd;
  w.v = w.k + l * hd;
  w.dout = w.v + l * hd;
  w.o = w.dout + l * hd;
  w.lse = w.o + l * hd;
  w.dsum = w.lse + l;
  w.acc = w.dsum + l;
  for (long long b = 0; b < w.d.batch; b++)
    for (long long h = 0; h < w.d.heads; h++) {
      load_head(&w, in, b, h);
      forward(&w);
      backward(&w, out[0], b, h);
    }
  free(w.q);
  return KV_OK;
}
