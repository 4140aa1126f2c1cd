/* hostpool.c - the page-locked host buffers of the cuda backend, kept from case to case: every
 * download (outputs, the reference where the host computes the statistics, the inputs of the
 * cross-checks) lands in memory that is pinned and already mapped, so it runs at the link's
 * speed. Downloads into fresh pageable memory ran at about 1.1 GB/s on the H200 (page faults
 * and the driver's staging copy) and were half of default.deck's wall time. A buffer is taken
 * from the smallest free slot that holds it, else the largest free slot is regrown, else a new
 * slot is added; past KV_HOST_POOL_SHARE of the node's memory per local rank (or when pinning
 * fails) the buffer comes from malloc instead. Giving back a buffer makes no CUDA call, so it
 * is safe after a fatal device error. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/cuda/context.h"
#include "core/cuda_check.cuh"

#define KV_HOST_SLOTS 16
#define KV_HOST_POOL_SHARE 0.25  /* of the node's physical memory, divided among its ranks */
#define KV_HOST_GRAIN (64u << 20) /* capacities are multiples of 64 MiB (fewer regrows) */

typedef struct {
  void *p;
  size_t cap;
  int busy;
} slot;

static slot pool[KV_HOST_SLOTS];
static size_t pinned_bytes, pinned_limit;

void kv_cuda_host_init(int local_size) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double node = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
  pinned_limit = (size_t)(KV_HOST_POOL_SHARE * node / (local_size > 0 ? local_size : 1));
}

static slot *find(const void *p) {
  for (int i = 0; i < KV_HOST_SLOTS; i++)
    if (pool[i].p && pool[i].p == p) return &pool[i];
  return NULL;
}

/* The free slot to use for `bytes`: the smallest that holds it, else the largest free one
 * (to regrow), else an empty one; NULL when every slot is busy. */
static slot *choose(size_t bytes) {
  slot *fit = NULL, *largest = NULL, *empty = NULL;
  for (int i = 0; i < KV_HOST_SLOTS; i++) {
    slot *s = &pool[i];
    if (s->busy) continue;
    if (!s->p) {
      if (!empty) empty = s;
      continue;
    }
    if (s->cap >= bytes && (!fit || s->cap < fit->cap)) fit = s;
    if (!largest || s->cap > largest->cap) largest = s;
  }
  return fit ? fit : largest ? largest : empty;
}

kv_status kv_cuda_host_get(size_t bytes, void **p) {
  *p = NULL;
  if (bytes == 0) bytes = 1;
  slot *s = choose(bytes);
  if (s && s->cap < bytes) {
    const size_t cap = (bytes + KV_HOST_GRAIN - 1) / KV_HOST_GRAIN * KV_HOST_GRAIN;
    if (pinned_bytes - s->cap + cap <= pinned_limit) {
      if (s->p) KV_TRY(CHECK_CUDA(cudaFreeHost(s->p)));
      pinned_bytes -= s->cap;
      s->p = NULL;
      s->cap = 0;
      if (cudaMallocHost(&s->p, cap) == cudaSuccess) {
        s->cap = cap;
        pinned_bytes += cap;
      } else {
        (void)cudaGetLastError(); /* out of pinnable memory: this buffer comes from malloc */
        s->p = NULL;
      }
    }
  }
  if (s && s->cap >= bytes) {
    s->busy = 1;
    *p = s->p;
    return KV_OK;
  }
  *p = KV_MALLOC(bytes);
  return CHECK_ALLOC(*p);
}

void kv_cuda_host_put(void *p) {
  if (!p) return;
  slot *s = find(p);
  if (s)
    s->busy = 0;
  else
    free(p);
}

void kv_cuda_host_release(void) {
  for (int i = 0; i < KV_HOST_SLOTS; i++) {
    if (pool[i].p && !kv_fatal_pending()) (void)CHECK_CUDA(cudaFreeHost(pool[i].p));
    pool[i] = (slot){NULL, 0, 0};
  }
  pinned_bytes = 0;
}
