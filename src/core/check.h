/* check.h - the one CHECK family of kval: every CUDA, MPI, HDF5 and allocation call goes
 * through these macros, which report rank, host, file and line, and return a status the
 * caller propagates. Fatal errors go through kv_fatal(), the only path that calls MPI_Abort. */
#ifndef KVAL_CHECK_H
#define KVAL_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

/* Exit codes of kval (documented in README and --help). */
enum {
  KV_EXIT_PASS = 0,     /* every case passed */
  KV_EXIT_FAIL = 1,     /* some case failed validation (or fingerprints disagreed) */
  KV_EXIT_USAGE = 2,    /* usage or input error */
  KV_EXIT_RUNTIME = 3,  /* runtime error */
  KV_EXIT_SIGINT = 130, /* interrupted by SIGINT, file flushed and resumable */
  KV_EXIT_SIGTERM = 143 /* interrupted by SIGTERM, file flushed and resumable */
};

/* Status of a library call as seen by kval: 0 is success, anything else an error that has
 * already been reported. */
typedef int kv_status;
#define KV_OK 0
#define KV_ERR 1

/* Identity used in every message; set once by kv_check_init() after MPI_Init. */
void kv_check_init(int rank, const char *host);
int kv_check_rank(void);
const char *kv_check_host(void);

/* Print "kval[rank@host] file:line: what: detail" to stderr. */
void kv_report(const char *file, int line, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The single fatal path: report, run the registered flush hook (so finished results reach
 * the file), then MPI_Abort with KV_EXIT_RUNTIME (or exit() when MPI is not running). */
void kv_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
#define KV_FATAL(...) kv_fatal(__FILE__, __LINE__, __VA_ARGS__)

/* A failure inside a case that leaves the device unusable (a sticky CUDA error): report it
 * and remember it; the caller returns KV_ERR, the runner records the case as error, writes
 * its row, and then ends the rank through kv_fatal. The first message is kept. */
void kv_fatal_defer(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The deferred fatal message, or NULL when none is pending. */
const char *kv_fatal_pending(void);

/* A hook run by kv_fatal before aborting (the output module flushes and closes the file). */
void kv_set_fatal_hook(void (*hook)(void));

/* Allocation that reports and returns NULL on failure. */
void *kv_malloc_checked(size_t n, const char *file, int line);
void *kv_calloc_checked(size_t count, size_t size, const char *file, int line);
#define KV_MALLOC(n) kv_malloc_checked((n), __FILE__, __LINE__)
#define KV_CALLOC(c, s) kv_calloc_checked((c), (s), __FILE__, __LINE__)

/* MPI: evaluates the call, reports the MPI error string on failure, returns KV_ERR. */
kv_status kv_check_mpi(int rc, const char *call, const char *file, int line);
#define CHECK_MPI(call) kv_check_mpi((call), #call, __FILE__, __LINE__)

/* HDF5: negative return values are errors; the HDF5 error stack is printed. */
kv_status kv_check_h5(long long rc, const char *call, const char *file, int line);
#define CHECK_H5(call) kv_check_h5((long long)(call), #call, __FILE__, __LINE__)

/* Allocation result: NULL is an error. */
#define CHECK_ALLOC(ptr) ((ptr) ? KV_OK : (kv_report(__FILE__, __LINE__, "alloc", "%s failed", #ptr), KV_ERR))

/* Propagate: `KV_TRY(expr);` returns KV_ERR from the enclosing function when expr fails. */
#define KV_TRY(expr)                                                                          \
  do {                                                                                        \
    if ((expr) != KV_OK) return KV_ERR;                                                       \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
