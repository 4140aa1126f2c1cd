/* conform.c - the conformance measure (conform.h): the emulation run again on freshly
 * generated inputs, element by element against what the backend handed back. */
#include "run/conform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/kit.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"

int kv_conform_judged(const kv_case *c) {
  const kv_family *f = c->fp->family;
  return kv_precision_accum_roundoff(c->prec) > kv_dtype_unit_roundoff(KV_FP32) && f->emulation_exact && f->emulate &&
         f->emulation_exact(c);
}

/* Element i of two buffers of type t holds the same value: the same bits, or both NaN (the
 * GPU writes the canonical NaN, the host keeps the payload). */
static int same_value(const void *a, const void *b, size_t i, kv_dtype t) {
  const size_t w = kv_dtype_size(t);
  if (memcmp((const char *)a + i * w, (const char *)b + i * w, w) == 0) return 1;
  return isnan(kv_load(a, i, t)) && isnan(kv_load(b, i, t));
}

static double ulp_deviation(double got, double want, kv_dtype t) {
  if (got == want || (isnan(got) && isnan(want))) return 0.0;
  return kv_ulp_distance(got, want, t);
}

static void compare(const kv_tensors *t, void *const *emu, const kv_case_data *d, kv_conformance *m) {
  const kv_dtype type = t->out[0].dtype;
  for (size_t i = 0; i < t->out[0].count; i++) {
    if (same_value(d->out, emu[0], i, type)) continue;
    if (!m->n_differ++) m->first = i;
    const double dev = ulp_deviation(kv_load(d->out, i, type), kv_load(emu[0], i, type), type);
    if (!(dev <= m->max_ulp)) m->max_ulp = dev;
  }
  if (t->n_out < 2 || !d->aux) return;
  for (size_t i = 0; i < t->out[1].count; i++)
    if (!same_value(d->aux, emu[1], i, t->out[1].dtype) && !m->n_differ++) m->first = i;
}

kv_status kv_conform_measure(const kv_case *c, const kv_run_settings *rs, const kv_case_data *d, kv_conformance *m) {
  const kv_family *f = c->fp->family;
  kv_tensors t;
  memset(&t, 0, sizeof t);
  memset(m, 0, sizeof *m);
  f->tensors(c, &t);
  void *in[KV_MAX_TENSORS] = {0}, *out[KV_MAX_TENSORS] = {0};
  kv_status st = d->out && d->out_count == t.out[0].count && d->out_type == t.out[0].dtype ? KV_OK : KV_ERR;
  for (int i = 0; i < t.n_in && st == KV_OK; i++) {
    in[i] = KV_MALLOC(t.in[i].count * kv_dtype_size(t.in[i].dtype));
    st = CHECK_ALLOC(in[i]);
    if (st == KV_OK) st = kv_generate_host(&t.in[i], kv_stream_key(rs->seed, c->key, (uint64_t)i), in[i]);
  }
  for (int i = 0; i < t.n_out && st == KV_OK; i++) {
    out[i] = KV_MALLOC(t.out[i].count * kv_dtype_size(t.out[i].dtype));
    st = CHECK_ALLOC(out[i]);
    if (st == KV_OK) memset(out[i], 0xff, t.out[i].count * kv_dtype_size(t.out[i].dtype)); /* NaN: unwritten */
  }
  if (st == KV_OK) st = f->emulate(c, in, out);
  if (st == KV_OK) compare(&t, out, d, m);
  for (int i = 0; i < KV_MAX_TENSORS; i++) {
    free(in[i]);
    free(out[i]);
  }
  return st;
}
