/* decode_emulate.c - the cpu backend's paged-KV decode attention: the split-KV algorithm of the
 * CUDA kernels (decode_kernels.cuh) with their precision model (docs/NUMERICS.md: fp16/bf16
 * storage widened exactly, fp32 arithmetic, P kept in fp32), visiting the same splits, tiles
 * and partial sums (decode_limits.h). Per (batch, kv head, split of whole pages), the rows of
 * the GQA group, and tiles of KV_DECODE_TILE tokens read through the block table:
 *  1. S_j = q . k_j: fp32 fused multiply-adds over the head dimension in order.
 *  2. m_new = max(m, tile max); alpha = exp2((m - m_new) * scale_log2) (0 on the first tile);
 *     p_j = exp2(fma(S_j, scale_log2, -(m_new * scale_log2))) (exp2 in double, rounded);
 *     the tile sum adds p_j + p_{j+32} per lane, then a butterfly over the 32 lanes (offsets
 *     16, 8, 4, 2, 1), as the kernel's warp shuffles do; l = fma(l, alpha, tile sum).
 *  3. each token set's accumulators are scaled by alpha, then o += p_j v_j by fused
 *     multiply-adds over its tokens in order; at the split's end the token sets' partials
 *     are added in set order (kv_decode_pv_layout).
 * One split: out = o * (1 / l) rounded to storage, lse = m * scale_f + log(l) in fp32. Several:
 * the splits' o * (1 / l) and LSEs in fp32, then per row, in split order, M = max lse_s,
 * w_s = exp(lse_s - M), W = sum w_s, acc = fma(w_s, o_s, acc); out = acc * (1 / W),
 * lse = M + log(W). exp and log are evaluated in double and rounded to fp32, so the kernel's
 * fast-math versions differ in the last bits (the emulation is not bit-exact to the GPU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/decode/decode.h"
#include "families/decode/decode_limits.h"
#include "families/kit.h"

typedef struct {
  kv_decode_dims d;
  kv_dtype st;
  int cap, nr, nt;
  int32_t *table;
  float *q;    /* [rows][D] of the group */
  float *kv;   /* one token row */
  float *s;    /* [rows][TILE] scores, then probabilities */
  float *acc;  /* [nt][rows][D] token-set partials */
  float *m, *l;
  float *part; /* several splits: [splits][total rows][D + 1] (o, lse) */
} emu_work;

static float f_exp2(float x) { return (float)exp2((double)x); }

static kv_status work_alloc(emu_work *w, const kv_case *c) {
  memset(w, 0, sizeof *w);
  kv_decode_dims_of(c, 0, &w->d);
  w->st = c->prec.storage;
  w->cap = kv_decode_rows_cap(w->d.rows);
  kv_decode_pv_layout((int)w->d.headdim, w->cap, &w->nr, &w->nt);
  const size_t hd = (size_t)w->d.headdim, r = (size_t)w->d.rows;
  const size_t total = (size_t)w->d.batch * (size_t)w->d.q_len * (size_t)w->d.q_heads;
  w->table = KV_MALLOC((size_t)w->d.num_pages * sizeof(int32_t));
  w->q = KV_MALLOC((r * hd + hd + r * KV_DECODE_TILE + (size_t)w->nt * r * hd + 2 * r) * sizeof(float));
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
  w->acc = w->s + r * KV_DECODE_TILE;
  w->m = w->acc + (size_t)w->nt * r * hd;
  w->l = w->m + r;
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

/* Step 2 for row rr over the tile's nt valid scores: p in place, m and l updated; returns alpha. */
static float softmax_tile(emu_work *w, long long rr, long long n) {
  float *s = w->s + rr * KV_DECODE_TILE, lane[32];
  const float sl2 = w->d.scale_log2;
  float mt = -INFINITY;
  for (long long j = 0; j < n; j++) mt = s[j] > mt ? s[j] : mt;
  const float m_new = w->m[rr] > mt ? w->m[rr] : mt, alpha = f_exp2((w->m[rr] - m_new) * sl2), ms = m_new * sl2;
  for (long long j = 0; j < KV_DECODE_TILE; j++) s[j] = j < n ? f_exp2(fmaf(s[j], sl2, -ms)) : 0.0f;
  for (int i = 0; i < 32; i++) lane[i] = s[i] + s[i + 32];
  for (int o = 16; o > 0; o >>= 1)
    for (int i = 0; i < o; i++) lane[i] = lane[i] + lane[i + o];
  w->l[rr] = fmaf(w->l[rr], alpha, lane[0]);
  w->m[rr] = m_new;
  return alpha;
}

/* One (b, h, split): the group's unnormalised o summed over token sets into w->acc (set 0). */
static void attend_split(emu_work *w, const void *const *in, long long b, long long h, long long t0, long long t1) {
  const kv_decode_dims *d = &w->d;
  const size_t hd = (size_t)d->headdim, r = (size_t)d->rows;
  for (size_t rr = 0; rr < r; rr++) {
    w->m[rr] = -INFINITY;
    w->l[rr] = 0.0f;
  }
  memset(w->acc, 0, (size_t)w->nt * r * hd * sizeof(float));
  for (long long tt = t0; tt < t1; tt += KV_DECODE_TILE) {
    const long long n = t1 - tt < KV_DECODE_TILE ? t1 - tt : KV_DECODE_TILE;
    for (long long j = 0; j < n; j++) {
      load_token(w, in[1], b, h, tt + j);
      for (size_t rr = 0; rr < r; rr++) {
        float a = 0.0f;
        for (size_t k = 0; k < hd; k++) a = fmaf(w->q[rr * hd + k], w->kv[k], a);
        w->s[rr * KV_DECODE_TILE + j] = a;
      }
    }
    for (size_t rr = 0; rr < r; rr++) {
      const float alpha = softmax_tile(w, (long long)rr, n);
      for (int ts = 0; ts < w->nt; ts++)
        for (size_t k = 0; k < hd; k++) w->acc[(ts * r + rr) * hd + k] *= alpha;
    }
    for (long long j = 0; j < n; j++) {
      load_token(w, in[2], b, h, tt + j);
      float *a = w->acc + (size_t)(j % w->nt) * r * hd;
      for (size_t rr = 0; rr < r; rr++) {
        const float p = w->s[rr * KV_DECODE_TILE + j];
        for (size_t k = 0; k < hd; k++) a[rr * hd + k] = fmaf(p, w->kv[k], a[rr * hd + k]);
      }
    }
  }
  for (int ts = 1; ts < w->nt; ts++)
    for (size_t i = 0; i < r * hd; i++) w->acc[i] = w->acc[i] + w->acc[(size_t)ts * r * hd + i];
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
    const float inv = 1.0f / sw;
    for (size_t k = 0; k < hd; k++) kv_store(out, row * hd + k, w->st, w->kv[k] * inv);
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
      for (long long rr = 0; rr < d->rows; rr++) kv_to_float(in[0], w.st, row_of(d, b, h, rr) * hd, hd, w.q + rr * hd);
      for (int s = 0; s < d->splits; s++) {
        const long long t0 = s * span, t1 = t0 + span < d->ctx ? t0 + span : d->ctx;
        attend_split(&w, (const void *const *)in, b, h, t0, t1);
        for (long long rr = 0; rr < d->rows; rr++) {
          const size_t row = row_of(d, b, h, rr);
          const float inv = 1.0f / w.l[rr], ls = w.m[rr] * d->scale_f + (float)log((double)w.l[rr]);
          float *p = d->splits > 1 ? w.part + ((size_t)s * total + row) * (hd + 1) : NULL;
          for (size_t k = 0; k < hd; k++) {
            const float v = w.acc[rr * hd + k] * inv;
            if (p)
              p[k] = v;
            else
              kv_store(out[0], row * hd + k, w.st, v);
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
