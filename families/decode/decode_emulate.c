/* decode_emulate.c - the cpu backend's paged-KV decode attention: the split-KV algorithm of the
 * CUDA kernels (decode_kernels.cuh) with their precision model (docs/NUMERICS.md: q in the
 * storage type, fp16 or bf16, and the KV cache in it or in e4m3 / e5m2, widened exactly; fp32
 * accumulation; P rounded to the storage type before P V as in fa2), visiting the same
 * splits, slabs and warps (decode_limits.h). Per (batch, kv head, split of whole pages), the
 * rows of the GQA group; the split's slabs of KV_DECODE_SLAB tokens, slab i to warp
 * i % KV_DECODE_WARPS, each warp with its own m, l and o, its slabs in order:
 *  1. S_j = q . k_j: fp32 fused multiply-adds over the head dimension in order (the model of
 *     the tensor cores' fp32 accumulation) of the cache's values; tokens past the split get no
 *     score. k_scale is in scale_log2 and scale_f (decode.c), v_scale in the output's 1 / l.
 *  2. m_new = max(m, slab max); alpha = exp2((m - m_new) * scale_log2) (0 on the first slab);
 *     p_j = exp2(fma(S_j, scale_log2, -(m_new * scale_log2))) (exp2 in double, rounded);
 *     the slab sum as the kernel's quad: lane t adds (p_2t + p_2t+1) + (p_8+2t + p_9+2t), then
 *     the lanes (l0 + l1) + (l2 + l3); l = fma(l, alpha, slab sum).
 *  3. o = o * alpha, then o += P_j v_j by fused multiply-adds over the slab's tokens in order,
 *     P_j = p_j rounded to the storage type.
 * Split end: the warps merged in warp order: M = max m_w, f_w = exp2((m_w - M) * scale_log2),
 * l = fma(f_w, l_w, l), o = fma(f_w, o_w, o) (a warp without slabs has m = -inf: f = 0).
 * One split: out = o * (v_scale / l) rounded to storage, lse = M * scale_f + log(l) in fp32.
 * Several: the splits' o * (1 / l) and LSEs in fp32, then per row, in split order,
 * M = max lse_s, w_s = exp(lse_s - M), W = sum w_s, acc = fma(w_s, o_s, acc);
 * out = acc * (v_scale / W), lse = M + log(W). exp and log are evaluated in double and rounded to
 * fp32, so the kernel's fast-math versions differ in the last bits, and the tensor cores add
 * in their own order (the emulation is not bit-exact to the GPU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/decode/decode.h"
#include "families/decode/decode_limits.h"
#include "families/kit.h"
#include "numerics/halfprec.h"

#define NW KV_DECODE_WARPS
#define SLAB KV_DECODE_SLAB

typedef struct {
  kv_decode_dims d;
  kv_dtype st, io; /* the KV cache's type; the storage type (q, out and P) */
  int32_t *table;
  float *q;    /* [rows][D] of the group */
  float *kv;   /* one token row */
  float *s;    /* [rows][SLAB] scores, then probabilities */
  float *o;    /* [NW][rows][D] each warp's unnormalised output, then the merged one in warp 0's */
  float *m, *l; /* [NW][rows] */
  float *part; /* several splits: [splits][total rows][D + 1] (o, lse) */
} emu_work;

static float f_exp2(float x) { return (float)exp2((double)x); }

static kv_status work_alloc(emu_work *w, const kv_case *c) {
  memset(w, 0, sizeof *w);
  kv_decode_dims_of(c, 0, &w->d);
  w->st = w->d.kv_type;
  w->io = w->d.io_type;
  const size_t hd = (size_t)w->d.headdim, r = (size_t)w->d.rows;
  const size_t total = (size_t)w->d.batch * (size_t)w->d.q_len * (size_t)w->d.q_heads;
  w->table = KV_MALLOC((size_t)w->d.num_pages * sizeof(int32_t));
  w->q = KV_MALLOC((r * hd + hd + r * SLAB + NW * r * hd + 2 * NW * r) * sizeof(float));
  if (w->d.splits > 1) w->part = KV_MALLOC((size_t)w->d.splits * total * (hd + 1) * sizeof(float));
  if (CHECK_ALLOC(w->table) != KV_OK || CHECK_ALLOC(w->q) != KV_OK || (w->d.splits > 1 && CHECK_ALLOC(w->part) != KV_OK)) {
    free(w->table);
    free(w->q);
    free(w->part);
    return KV_ERR;
  }
  kv_decode_block_table(&w->d, w->table);
  w->kv = w->q + r * hd;
  w->s = w->kv + hd;
  w->o = w->s + r * SLAB;
  w->m = w->o + NW * r * hd;
  w->l = w->m + NW * r;
  return KV_OK;
}

static void work_free(emu_work *w) {
  free(w->table);
  free(w->q);
  free(w->part);
}

/* Global row of group row rr of (batch b, kv head h). */
static size_t row_of(const kv_decode_dims *d, long long b, long long h, long long rr) {
  return ((size_t)b * (size_t)d->q_len + (size_t)(rr / d->group)) * (size_t)d->q_heads + (size_t)(h * d->group + rr % d->group);
}

/* Widen token t of (b, h) from cache `buf` into w->kv. */
static void load_token(emu_work *w, const void *buf, long long b, long long h, long long t) {
  const kv_decode_dims *d = &w->d;
  const size_t page = (size_t)w->table[b * d->pages_per_seq + t / d->page];
  const size_t off = ((page * (size_t)d->kv_heads + (size_t)h) * (size_t)d->page + (size_t)(t % d->page)) * (size_t)d->headdim;
  kv_to_float(buf, w->st, off, (size_t)d->headdim, w->kv);
}

/* Step 2 for row rr of warp wp over the slab's n valid scores: p in place, m and l updated;
 * returns alpha. */
static float softmax_slab(emu_work *w, int wp, long long rr, long long n) {
  float *s = w->s + rr * SLAB, lane[4];
  float *m = w->m + (size_t)wp * (size_t)w->d.rows + (size_t)rr, *l = w->l + (size_t)wp * (size_t)w->d.rows + (size_t)rr;
  const float sl2 = w->d.scale_log2;
  float mt = -INFINITY;
  for (long long j = 0; j < n; j++) mt = s[j] > mt ? s[j] : mt;
  const float m_new = *m > mt ? *m : mt, alpha = f_exp2((*m - m_new) * sl2), ms = m_new * sl2;
  for (long long j = 0; j < SLAB; j++) s[j] = j < n ? f_exp2(fmaf(s[j], sl2, -ms)) : 0.0f;
  for (int t = 0; t < 4; t++) lane[t] = (s[2 * t] + s[2 * t + 1]) + (s[8 + 2 * t] + s[9 + 2 * t]);
  *l = fmaf(*l, alpha, (lane[0] + lane[1]) + (lane[2] + lane[3]));
  *m = m_new;
  return alpha;
}

/* One slab of warp wp: tokens [ts, ts + n) of (b, h) into the warp's m, l and o. */
static void attend_slab(emu_work *w, const void *const *in, int wp, long long b, long long h, long long ts, long long n) {
  const kv_decode_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim, r = (size_t)d->rows;
  float *o = w->o + (size_t)wp * r * hd;
  for (long long j = 0; j < n; j++) {
    load_token(w, in[1], b, h, ts + j);
    for (size_t rr = 0; rr < r; rr++) {
      float a = 0.0f;
      for (size_t k = 0; k < hd; k++) a = fmaf(w->q[rr * hd + k], w->kv[k], a);
      w->s[rr * SLAB + j] = a;
    }
  }
  for (size_t rr = 0; rr < r; rr++) {
    const float alpha = softmax_slab(w, wp, (long long)rr, n);
    for (size_t k = 0; k < hd; k++) o[rr * hd + k] *= alpha;
    for (long long j = 0; j < n; j++) w->s[rr * SLAB + j] = kv_round_f32(w->s[rr * SLAB + j], w->io);
  }
  for (long long j = 0; j < n; j++) {
    load_token(w, in[2], b, h, ts + j);
    for (size_t rr = 0; rr < r; rr++) {
      const float p = w->s[rr * SLAB + j];
      for (size_t k = 0; k < hd; k++) o[rr * hd + k] = fmaf(p, w->kv[k], o[rr * hd + k]);
    }
  }
}

/* One (b, h, split): every warp's slabs, then the warps merged in warp order into warp 0's
 * o (unnormalised), w->m and w->l (the merged M and l of each row). */
static void attend_split(emu_work *w, const void *const *in, long long b, long long h, long long t0, long long t1) {
  const kv_decode_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim, r = (size_t)d->rows;
  for (size_t i = 0; i < NW * r; i++) {
    w->m[i] = -INFINITY;
    w->l[i] = 0.0f;
  }
  memset(w->o, 0, NW * r * hd * sizeof(float));
  for (long long ts = t0, i = 0; ts < t1; ts += SLAB, i++)
    attend_slab(w, in, (int)(i % NW), b, h, ts, t1 - ts < SLAB ? t1 - ts : SLAB);
  for (size_t rr = 0; rr < r; rr++) {
    float mx = -INFINITY, sw = 0.0f, f[NW];
    for (int wp = 0; wp < NW; wp++) mx = w->m[wp * r + rr] > mx ? w->m[wp * r + rr] : mx;
    for (int wp = 0; wp < NW; wp++) {
      f[wp] = f_exp2((w->m[wp * r + rr] - mx) * d->scale_log2);
      sw = fmaf(f[wp], w->l[wp * r + rr], sw);
    }
    for (size_t k = 0; k < hd; k++) {
      float acc = 0.0f;
      for (int wp = 0; wp < NW; wp++) acc = fmaf(f[wp], w->o[(wp * r + rr) * hd + k], acc);
      w->o[rr * hd + k] = acc;
    }
    w->m[rr] = mx;
    w->l[rr] = sw;
  }
}

/* The splits' partials of every row combined in split order (several splits). */
static void combine(emu_work *w, void *out, float *lse, size_t total) {
  const size_t hd = (size_t)w->d.headdim, stride = total * (hd + 1);
  for (size_t row = 0; row < total; row++) {
    float mx = -INFINITY, sw = 0.0f;
    for (int s = 0; s < w->d.splits; s++) {
      const float v = w->part[s * stride + row * (hd + 1) + hd];
      mx = v > mx ? v : mx;
    }
    memset(w->kv, 0, hd * sizeof(float));
    for (int s = 0; s < w->d.splits; s++) {
      const float *p = w->part + s * stride + row * (hd + 1);
      const float wt = (float)exp((double)(p[hd] - mx));
      sw = sw + wt;
      for (size_t k = 0; k < hd; k++) w->kv[k] = fmaf(wt, p[k], w->kv[k]);
    }
    const float inv = w->d.v_scale / sw;
    for (size_t k = 0; k < hd; k++) kv_store(out, row * hd + k, w->io, w->kv[k] * inv);
    lse[row] = mx + (float)log((double)sw);
  }
}

kv_status kv_decode_emulate(const kv_case *c, void *const *in, void *const *out) {
  emu_work w;
  KV_TRY(work_alloc(&w, c));
  const kv_decode_dims *d = &w.d;
  const size_t hd = (size_t)d->headdim, total = (size_t)d->batch * (size_t)d->q_len * (size_t)d->q_heads;
  const long long span = d->split_pages * d->page;
  float *lse = (float *)out[1];
  for (long long b = 0; b < d->batch; b++)
    for (long long h = 0; h < d->kv_heads; h++) {
      for (long long rr = 0; rr < d->rows; rr++) kv_to_float(in[0], w.io, row_of(d, b, h, rr) * hd, hd, w.q + rr * hd);
      for (int s = 0; s < d->splits; s++) {
        const long long t0 = s * span, t1 = t0 + span < d->ctx ? t0 + span : d->ctx;
        attend_split(&w, (const void *const *)in, b, h, t0, t1);
        for (long long rr = 0; rr < d->rows; rr++) {
          const size_t row = row_of(d, b, h, rr);
          const float inv = (d->splits > 1 ? 1.0f : d->v_scale) / w.l[rr];
          const float ls = w.m[rr] * d->scale_f + (float)log((double)w.l[rr]);
          float *p = d->splits > 1 ? w.part + ((size_t)s * total + row) * (hd + 1) : NULL;
          for (size_t k = 0; k < hd; k++) {
            const float v = w.o[rr * hd + k] * inv;
            if (p)
              p[k] = v;
            else
              kv_store(out[0], row * hd + k, w.io, v);
          }
          if (p)
            p[hd] = ls;
          else
            lse[row] = ls;
        }
      }
    }
  if (d->splits > 1) combine(&w, out[0], lse, total);
  work_free(&w);
  return KV_OK;
}
