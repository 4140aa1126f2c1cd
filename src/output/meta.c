/* meta.c - run metadata: command line (shell-quoted), creation time, versions, Slurm. */
#include "output/meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "kval_git.h"

#if KVAL_RACE_DELAYS
const char *kv_meta_version(void) { return PACKAGE_VERSION "+race-delays"; }
#else
const char *kv_meta_version(void) { return PACKAGE_VERSION; }
#endif
const char *kv_meta_git_commit(void) { return KVAL_GIT_COMMIT; }

static void append_quoted(char *buf, size_t n, const char *arg) {
  size_t used = strlen(buf);
  int plain = *arg != '\0';
  for (const char *c = arg; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+%", *c)) plain = 0;
  if (used && used + 1 < n) buf[used++] = ' ', buf[used] = '\0';
  if (plain) {
    snprintf(buf + used, n - used, "%s", arg);
    return;
  }
  if (used + 1 < n) buf[used++] = '\'', buf[used] = '\0';
  for (const char *c = arg; *c && used + 5 < n; c++) {
    if (*c == '\'') {
      memcpy(buf + used, "'\\''", 4);
      used += 4;
    } else {
      buf[used++] = *c;
    }
  }
  if (used + 1 < n) buf[used++] = '\'';
  buf[used < n ? used : n - 1] = '\0';
}

static void env_copy(char *dst, size_t n, const char *name) {
  const char *v = getenv(name);
  snprintf(dst, n, "%s", v ? v : "");
}

kv_status kv_meta_collect(int argc, char **argv, const kv_rank_info *info0, MPI_Comm comm, kv_meta_strings *s) {
  int rank;
  KV_TRY(CHECK_MPI(MPI_Comm_rank(comm, &rank)));
  memset(s, 0, sizeof *s);
  if (rank == 0) {
    for (int i = 0; i < argc; i++) append_quoted(s->command_line, sizeof s->command_line, argv[i]);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(s->creation_time, sizeof s->creation_time, "%Y-%m-%dT%H:%M:%SZ", &tm);
    strftime(s->stamp, sizeof s->stamp, "%Y%m%d-%H%M%S", &tm);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
      lib[strcspn(lib, "\n,")] = '\0';
      snprintf(s->mpi_version, sizeof s->mpi_version, "%s", lib);
    }
    if (info0->runtime_version > 0) {
      snprintf(s->cuda_runtime, sizeof s->cuda_runtime, "%d.%d", info0->runtime_version / 1000,
               info0->runtime_version % 1000 / 10);
      snprintf(s->cuda_driver, sizeof s->cuda_driver, "%d.%d", info0->driver_version / 1000,
               info0->driver_version % 1000 / 10);
    }
    env_copy(s->slurm_job_id, sizeof s->slurm_job_id, "SLURM_JOB_ID");
    env_copy(s->slurm_nodes, sizeof s->slurm_nodes, "SLURM_JOB_NODELIST");
  }
  return CHECK_MPI(MPI_Bcast(s, (int)sizeof *s, MPI_BYTE, 0, comm));
}

void kv_meta_fill(const kv_meta_strings *s, const char *backend, int nranks, kv_run_meta *m) {
  m->version = kv_meta_version();
  m->git_commit = kv_meta_git_commit();
  m->command_line = s->command_line;
  m->creation_time = s->creation_time;
  m->mpi_version = s->mpi_version;
  m->cuda_runtime = s->cuda_runtime;
  m->cuda_driver = s->cuda_driver;
  m->slurm_job_id = s->slurm_job_id;
  m->slurm_nodes = s->slurm_nodes;
  m->backend = backend;
  m->nranks = nranks;
}

void kv_meta_default_output(const kv_meta_strings *s, char *buf, size_t n) {
  if (s->slurm_job_id[0])
    snprintf(buf, n, "kval-%s.h5", s->slurm_job_id);
  else
    snprintf(buf, n, "kval-%s.h5", s->stamp);
}
