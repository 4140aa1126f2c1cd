/* ref_threads.c - CPU references on several host threads (see ref_threads.h). */
#define _GNU_SOURCE
#include "families/ref_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "input/plan.h"

static _Thread_local int part_threads = 1; /* kv_ref_part_threads() of a reference that splits its own work */

int kv_ref_host_threads(int local_size) {
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)(online > 0 ? online : 1);
  /* a mask that several ranks share (unbound, or bound to a socket) is theirs together */
  if (online > 0 && local_size > 1 && n > online / local_size) n = (int)(online / local_size);
  if (n < 1) n = 1;
  return n < KV_REF_MAX_THREADS ? n : KV_REF_MAX_THREADS;
}

int kv_ref_binding_note(int local_size, char *buf, size_t n) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const long share = online > 0 ? online / (local_size > 0 ? local_size : 1) : 1;
  if (kv_ref_host_threads(local_size) > 1 || share < 2) return 0;
  snprintf(buf, n,
           "the CPU mask of this rank holds one of the node's %ld CPUs (its share: %ld), so the cross-check's "
           "CPU reference runs on one thread: Open MPI binds each of 1-2 ranks to one core by default "
           "(mpirun --bind-to none); under Slurm, srun --cpus-per-task",
           online, share);
  return 1;
}

int kv_ref_part_threads(void) { return part_threads; }

typedef struct {
  kv_status (*task)(int i, void *arg);
  void *arg;
  int first, step, n; /* tasks first, first + step, ... below n */
  kv_status st;
} worker;

static void *run_worker(void *p) {
  worker *w = p;
  for (int i = w->first; i < w->n && w->st == KV_OK; i += w->step) w->st = w->task(i, w->arg);
  return NULL;
}

kv_status kv_parallel_for(int n, int threads, kv_status (*task)(int i, void *arg), void *arg) {
  if (threads > n) threads = n;
  if (threads > KV_REF_MAX_THREADS) threads = KV_REF_MAX_THREADS;
  if (threads < 1) threads = 1;
  worker w[KV_REF_MAX_THREADS];
  pthread_t tid[KV_REF_MAX_THREADS];
  int started = 1; /* worker 0 runs on this thread */
  kv_status st = KV_OK;
  for (int t = 0; t < threads; t++) w[t] = (worker){task, arg, t, threads, n, KV_OK};
  for (; started < threads; started++) {
    int e = pthread_create(&tid[started], NULL, run_worker, &w[started]);
    if (e != 0) {
      kv_report(__FILE__, __LINE__, "pthread", "pthread_create failed (error %d) starting host thread %d of %d", e,
                started, threads);
      st = KV_ERR;
      break;
    }
  }
  if (st == KV_OK) run_worker(&w[0]);
  for (int t = 1; t < started; t++) pthread_join(tid[t], NULL);
  for (int t = 0; t < started && st == KV_OK; t++) st = w[t].st;
  return st;
}

typedef struct {
  kv_reference_fn fn;
  const kv_case *c;
  const void *const *in;
  const size_t *rows;
  size_t n_rows, row_len;
  double *ref, *mag, *aux_ref, *aux_mag;
  int parts;
} split;

/* Part i of the rows. */
static kv_status run_part(int i, void *arg) {
  const split *s = arg;
  size_t lo = s->n_rows * (size_t)i / (size_t)s->parts, hi = s->n_rows * (size_t)(i + 1) / (size_t)s->parts;
  return s->fn(s->c, s->in, s->rows + lo, hi - lo, s->ref + lo * s->row_len, s->mag + lo * s->row_len,
               s->aux_ref ? s->aux_ref + lo : NULL, s->aux_mag ? s->aux_mag + lo : NULL);
}

kv_status kv_reference_threaded(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                size_t row_len, double *ref, double *mag, double *aux_ref, double *aux_mag,
                                int threads) {
  if (threads > KV_REF_MAX_THREADS) threads = KV_REF_MAX_THREADS;
  if (threads < 1) threads = 1;
  const kv_family *f = c->fp->family;
  if (f->ref_splits_within) { /* one call, which splits its work over every thread */
    part_threads = threads;
    const kv_status st = f->reference(c, in, rows, n_rows, ref, mag, aux_ref, aux_mag);
    part_threads = 1;
    return st;
  }
  split s = {f->reference, c, in, rows, n_rows, row_len, ref, mag, aux_ref, aux_mag, 1};
  if (n_rows > 1) s.parts = (size_t)threads < n_rows ? threads : (int)n_rows; /* every part has a row */
  return kv_parallel_for(s.parts, s.parts, run_part, &s);
}
