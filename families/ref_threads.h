/* ref_threads.h - a family's CPU reference run on several host threads (ref_threads.c): the
 * cuda backend's cross-check computes the CPU fp64 reference of sampled rows while its GPU
 * waits, and the host cores its rank may use would otherwise idle. The rows are split into
 * parts, one per thread, or a family's reference takes every thread in one call and splits
 * its own work (gemm, by output columns: every row reads all of B, converted once that way).
 * Every split keeps each value's own order of operations: the same bits as one thread. */
#ifndef KVAL_FAMILIES_REF_THREADS_H
#define KVAL_FAMILIES_REF_THREADS_H

#include <stddef.h>

#include "family.h"

#define KV_REF_MAX_THREADS 64

/* Host threads this rank's CPU references may use: the CPUs of its affinity mask, but no
 * more than the node's share of one of its local_size ranks (a mask the ranks share: not
 * bound, or bound to a socket); at least 1, at most KV_REF_MAX_THREADS. */
int kv_ref_host_threads(int local_size);

/* 1, with the note in buf (n bytes), when this rank's CPU mask leaves its CPU references one
 * thread although its share of the node (online CPUs / local_size) is at least two: a rank
 * bound to one core, as Open MPI's mpirun does with one or two ranks. 0 otherwise. */
int kv_ref_binding_note(int local_size, char *buf, size_t n);

/* task(i, arg) for every i in [0, n) on up to `threads` threads (this one included); KV_ERR
 * when a task failed or a thread could not start. */
kv_status kv_parallel_for(int n, int threads, kv_status (*task)(int i, void *arg), void *arg);

/* The case's family reference over rows[0..n_rows) on up to `threads` threads, each on a
 * contiguous part of the rows, or all of them in one part that the reference splits itself
 * (kv_family.ref_splits_within); ref and mag rows of row_len values, aux_ref and aux_mag one
 * value per row, either may be NULL: the same values, bit for bit, as one call. KV_ERR when
 * any part failed. */
kv_status kv_reference_threaded(const kv_case *c, const void *const *in, const size_t *rows, size_t n_rows,
                                size_t row_len, double *ref, double *mag, double *aux_ref, double *aux_mag,
                                int threads);

/* Within a reference that splits its own work (kv_family.ref_splits_within), run by
 * kv_reference_threaded: the threads it may use (1 in any other call). */
int kv_ref_part_threads(void);

#endif
