/* metrics.h - `kval --metrics FILE`: node_exporter textfile-collector metrics of a finished
 * run, per GPU, read back from the closed HDF5 file and written atomically. */
#ifndef KVAL_METRICS_H
#define KVAL_METRICS_H

#include "core/check.h"

/* 0 when the directory of `path` exists and is writable (checked before the run, so a bad
 * --metrics path is a usage error); else -1 with a message in err. */
int kv_metrics_check_path(const char *path, char *err, size_t errlen);

/* Read the kval file `h5path` (closed) and write `path` (FILE.tmp.PID, fsync, rename, so the
 * collector never reads half a file): per GPU its verdict, passed, failed and error cases,
 * fingerprint disagreements, median slowdown against the other GPUs of its model, throttle
 * seconds and the time of the run; per run the exit code and completeness. Rank 0 only. */
kv_status kv_metrics_write(const char *h5path, const char *path, int exit_code);

#endif
