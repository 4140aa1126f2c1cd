/* check.c - the CHECK family: error reports with rank, host, file and line; MPI, HDF5 and
 * allocation checks; and the single fatal path that flushes the output and calls MPI_Abort. */
#include "core/check.h"

#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"

static int check_rank = -1;
static char check_host[256] = "?";
static void (*fatal_hook)(void);

void kv_check_init(int rank, const char *host) {
  check_rank = rank;
  snprintf(check_host, sizeof check_host, "%s", host);
}

int kv_check_rank(void) { return check_rank; }
const char *kv_check_host(void) { return check_host; }

static void vreport(const char *file, int line, const char *what, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  kv_escape_inplace(msg, sizeof msg); /* paths and values the user typed are shown escaped */
  fprintf(stderr, "kval[rank %d@%s] %s:%d: %s: %s\n", check_rank, check_host, file, line, what, msg);
  fflush(stderr);
}

void kv_report(const char *file, int line, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(file, line, what, fmt, ap);
  va_end(ap);
}

void kv_set_fatal_hook(void (*hook)(void)) { fatal_hook = hook; }

static char deferred[1024];

void kv_fatal_defer(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(file, line, "fatal (after this case is recorded)", fmt, ap);
  va_end(ap);
  if (deferred[0]) return;
  va_start(ap, fmt);
  vsnprintf(deferred, sizeof deferred, fmt, ap);
  va_end(ap);
}

const char *kv_fatal_pending(void) { return deferred[0] ? deferred : NULL; }

void kv_fatal(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(file, line, "fatal", fmt, ap);
  va_end(ap);
  void (*hook)(void) = fatal_hook;
  fatal_hook = NULL; /* a failure inside the hook must not recurse */
  if (hook) hook();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, KV_EXIT_RUNTIME);
  exit(KV_EXIT_RUNTIME);
}

void *kv_malloc_checked(size_t n, const char *file, int line) {
  void *p = malloc(n ? n : 1);
  if (!p) kv_report(file, line, "alloc", "malloc of %zu bytes failed", n);
  return p;
}

void *kv_calloc_checked(size_t count, size_t size, const char *file, int line) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) kv_report(file, line, "alloc", "calloc of %zu x %zu bytes failed", count, size);
  return p;
}

kv_status kv_check_mpi(int rc, const char *call, const char *file, int line) {
  if (rc == MPI_SUCCESS) return KV_OK;
  char err[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, err, &len) != MPI_SUCCESS) snprintf(err, sizeof err, "MPI error %d", rc);
  kv_report(file, line, "MPI", "%s failed: %s", call, err);
  return KV_ERR;
}

/* H5Ewalk2 callback: keep the system error HDF5 recorded ("errno = 28, error message = 'No
 * space left on device'"), else the description of the innermost frame. */
static herr_t h5_reason(unsigned n, const H5E_error2_t *e, void *data) {
  char *reason = data;
  const char *sys = e->desc ? strstr(e->desc, "error message = '") : NULL;
  if (sys) {
    sys += strlen("error message = '");
    snprintf(reason, 256, "%.*s", (int)strcspn(sys, "'"), sys);
    return 1; /* stop: the system's reason is the one that counts */
  }
  if (e->desc && e->desc[0]) snprintf(reason, 256, "%s", e->desc);
  (void)n;
  return 0;
}

kv_status kv_check_h5(long long rc, const char *call, const char *file, int line) {
  if (rc >= 0) return KV_OK;
  char reason[256] = "no reason recorded";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_reason, reason);
  kv_report(file, line, "HDF5", "%s failed: %s; HDF5 error stack follows", call, reason);
  H5Eprint2(H5E_DEFAULT, stderr);
  return KV_ERR;
}
