/* backend.c - the backend registry (NULL-terminated, IOR aiori style), selection of
 * "auto", the reference-row sampling and the node name shared by backends, kv_case_data
 * cleanup, and the findings of the checks every backend makes: guard bands, launch checksums,
 * and the host's check of the inputs and of the checksum itself. */
#include "backends/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "backends/cuda/device.h"
#include "families/kit.h"
#include "families/ref_threads.h"
#include "numerics/checksum.h"

extern const kv_backend kv_backend_cpu;

const kv_backend *const kv_backends[] = {
#ifdef HAVE_CUDA
    &kv_backend_cuda,
#endif
    &kv_backend_cpu,
    NULL,
};

const kv_backend *kv_backend_find(const char *name) {
  for (int i = 0; kv_backends[i]; i++)
    if (strcmp(kv_backends[i]->name, name) == 0) return kv_backends[i];
  return NULL;
}

const kv_backend *kv_backend_select(const char *name) {
  if (strcmp(name, "auto") != 0) return kv_backend_find(name);
  for (int i = 0; kv_backends[i]; i++)
    if (kv_backends[i]->available()) return kv_backends[i];
  return NULL;
}

size_t kv_reference_rows(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, size_t **rows) {
  (void)c;
  *rows = NULL;
  size_t n = (size_t)rs->sample_rows;
  if (cost->ref_flops <= rs->cpu_ref_budget || cost->rows <= n || n < 2) return cost->rows;
  size_t *r = KV_MALLOC(n * sizeof *r);
  if (!r) return 0;
  /* Evenly spaced rows, first and last included, so leading and trailing tiles (and the
   * causal diagonal at both ends) are always covered. */
  for (size_t i = 0; i < n; i++) r[i] = (size_t)((double)i * (double)(cost->rows - 1) / (double)(n - 1) + 0.5);
  *rows = r;
  return n;
}

size_t kv_xcheck_rows(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, size_t **rows) {
  *rows = NULL;
  size_t n = kv_xcheck_row_count(cost, rs->cpu_ref_budget);
  if (n == 0) return 0;
  if (n == 2 && cost->rows > 2 && cost->n_floor_rows > 0) {
    n = (size_t)cost->n_floor_rows;
    *rows = KV_MALLOC(n * sizeof **rows);
    if (CHECK_ALLOC(*rows) != KV_OK) return 0;
    memcpy(*rows, cost->floor_rows, n * sizeof **rows);
    return n;
  }
  kv_run_settings sample = *rs;
  sample.sample_rows = (int)n;
  sample.cpu_ref_budget = -1.0; /* always sample (all rows only when there are few) */
  n = kv_reference_rows(c, cost, &sample, rows);
  if (n > 0 && !*rows) {
    *rows = KV_MALLOC(n * sizeof **rows);
    if (CHECK_ALLOC(*rows) != KV_OK) return 0;
    for (size_t i = 0; i < n; i++) (*rows)[i] = i;
  }
  return n;
}

void kv_node_name(char *buf, size_t n) {
  const char *slurm = getenv("SLURMD_NODENAME");
  if (slurm && *slurm) snprintf(buf, n, "%s", slurm);
  else if (gethostname(buf, n) != 0 || !*buf) snprintf(buf, n, "unknown");
  buf[n - 1] = '\0';
}

void kv_case_data_init(kv_case_data *d) {
  memset(d, 0, sizeof *d);
  d->ref_xcheck = NAN;
  kv_phases_unknown(&d->phases);
}

void kv_case_data_free(kv_case_data *d) {
  void (*release)(void *) = d->release ? d->release : free;
  void *downloaded[] = {d->out, d->aux, d->ref, d->mag, d->aux_ref, d->aux_mag};
  for (size_t i = 0; i < sizeof downloaded / sizeof downloaded[0]; i++) release(downloaded[i]);
  free(d->rows);
  free(d->times);
  free(d->launch_sums);
  memset(d, 0, sizeof *d);
}

/* First byte of a band that is not its fill byte, or -1. */
static long long first_changed(const unsigned char *band, unsigned char fill) {
  for (size_t i = 0; i < KV_GUARD_BYTES; i++)
    if (band[i] != fill) return (long long)i;
  return -1;
}

void kv_guard_finding(kv_case_data *d, const char *tensor, int input, const unsigned char *before,
                      const unsigned char *after) {
  if (d->out_of_bounds[0]) return;
  const unsigned char fill = input ? KV_INPUT_GUARD_BYTE : KV_GUARD_BYTE;
  const char *role = input ? "input" : "output";
  const long long b = first_changed(before, fill), a = first_changed(after, fill);
  if (b >= 0)
    snprintf(d->out_of_bounds, sizeof d->out_of_bounds, "%s %s: written before its start (at byte %lld)", role, tensor,
             b - KV_GUARD_BYTES);
  else if (a >= 0)
    snprintf(d->out_of_bounds, sizeof d->out_of_bounds, "%s %s: written past its end (at byte +%lld)", role, tensor, a);
}

void kv_launch_finding(kv_case_data *d, uint64_t verification_sum) {
  if (!d->launch_sums) {
    snprintf(d->harness, sizeof d->harness, "the backend kept no launch checksums");
    return;
  }
  const uint64_t first = d->launch_sums[0];
  int differ = 0, first_differ = 0;
  for (int i = 1; i <= d->n_times; i++)
    if (d->launch_sums[i] != first && !differ++) first_differ = i;
  if (differ)
    snprintf(d->nondeterministic, sizeof d->nondeterministic,
             "timed repetition %d of %d wrote other bits than the first launch (%d differ)", first_differ, d->n_times,
             differ);
  else if (verification_sum != first)
    snprintf(d->nondeterministic, sizeof d->nondeterministic,
             "the first launch and the verification launch (outputs poisoned again) wrote different bits");
}

void kv_input_finding(kv_case_data *d, const kv_case *c, const kv_run_settings *rs, const kv_tensors *t,
                      const void *const *in) {
  for (int i = 0; i < t->n_in && !d->harness[0]; i++) {
    const kv_tensor_spec *s = &t->in[i];
    const uint64_t key = kv_stream_key(rs->seed, c->key, (uint64_t)i);
    const long long e = kv_generate_verify(s, key, in[i]);
    if (e < 0) continue;
    unsigned char want[sizeof(double)];
    kv_generate_element(s, key, (size_t)e, want);
    snprintf(d->harness, sizeof d->harness, "input %s: element %lld is %.6g, not the generator's %.6g", s->name, e,
             kv_load(in[i], (size_t)e, s->dtype), kv_load(want, 0, s->dtype));
  }
}

typedef struct {
  const void *buf;
  size_t bytes, words;
  unsigned salt;
  int parts;
  uint64_t sum[KV_REF_MAX_THREADS];
} checksum_split;

static kv_status checksum_part(int i, void *arg) {
  checksum_split *s = arg;
  s->sum[i] = kv_checksum_words(s->buf, s->bytes, s->words * (size_t)i / (size_t)s->parts,
                                s->words * (size_t)(i + 1) / (size_t)s->parts, s->salt);
  return KV_OK;
}

uint64_t kv_checksum_threaded(const void *buf, size_t n, unsigned salt, int threads, size_t part_bytes) {
  checksum_split s = {.buf = buf, .bytes = n, .words = (n + 7) / 8, .salt = salt};
  const size_t most = threads < 1 ? 1 : (size_t)threads;
  size_t parts = part_bytes ? n / part_bytes : most; /* every part at least part_bytes long */
  if (parts > most) parts = most;
  s.parts = parts < 1 ? 1 : parts > KV_REF_MAX_THREADS ? KV_REF_MAX_THREADS : (int)parts;
  if (s.parts == 1 || kv_parallel_for(s.parts, s.parts, checksum_part, &s) != KV_OK)
    return kv_checksum_bytes(buf, n, salt); /* one thread (a failed thread start was reported) */
  uint64_t sum = 0;
  for (int i = 0; i < s.parts; i++) sum += s.sum[i];
  return sum;
}

void kv_checksum_finding(kv_case_data *d, const kv_tensors *t, uint64_t verification_sum, int threads) {
  if (d->harness[0]) return;
  const size_t out_bytes = t->out[0].count * kv_dtype_size(t->out[0].dtype);
  uint64_t host = kv_checksum_threaded(d->out, out_bytes, 0, threads, KV_CHECKSUM_PART_BYTES);
  if (t->n_out > 1) {
    const size_t aux_bytes = t->out[1].count * kv_dtype_size(t->out[1].dtype);
    host += kv_checksum_threaded(d->aux, aux_bytes, 1, threads, KV_CHECKSUM_PART_BYTES);
  }
  if (host != verification_sum)
    snprintf(d->harness, sizeof d->harness, "outputs' launch checksum %016llx, recomputed on the host %016llx",
             (unsigned long long)verification_sum, (unsigned long long)host);
}
