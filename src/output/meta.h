/* meta.h - run metadata for the file's root attributes (version, commit, command line,
 * time, MPI/CUDA versions, Slurm job) and the default output file name. */
#ifndef KVAL_META_H
#define KVAL_META_H

#include <mpi.h>
#include <stddef.h>

#include "backends/backend.h"
#include "output/output.h"

typedef struct {
  char command_line[4096];
  char creation_time[64];
  char stamp[32]; /* creation time as YYYYmmdd-HHMMSS for file names */
  char mpi_version[256];
  char cuda_runtime[32], cuda_driver[32];
  char slurm_job_id[64], slurm_nodes[512];
} kv_meta_strings;

/* Collective: rank 0's clock and environment, broadcast so every rank agrees. */
kv_status kv_meta_collect(int argc, char **argv, const kv_rank_info *info0, MPI_Comm comm, kv_meta_strings *s);

/* Fill the file attributes from the strings (pointers into s). */
void kv_meta_fill(const kv_meta_strings *s, const char *backend, int nranks, kv_run_meta *m);

/* kval-<Slurm job id>.h5, or kval-<timestamp>.h5 outside Slurm. */
void kv_meta_default_output(const kv_meta_strings *s, char *buf, size_t n);

/* The kval version and the git commit it was built from. */
const char *kv_meta_version(void);
const char *kv_meta_git_commit(void);

#endif
