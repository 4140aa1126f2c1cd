/* estimate.h - estimated wall time of a case and of a job's start-up (estimate.c). */
#ifndef KVAL_ESTIMATE_H
#define KVAL_ESTIMATE_H

#include <stddef.h>

#include "input/plan.h"

/* Seconds one case takes on one rank: on the cpu backend (gpu 0) or an H200 (gpu 1). */
double kv_estimate_case(const kv_case *c, const kv_run_settings *rs, int gpu);

/* Seconds from launch to the first case: MPI, backend start-up (the GPU ceilings), the file. */
double kv_estimate_startup(int gpu);

/* A duration for people: "4.2 s", "38 s", "12 min 05 s", "3 h 20 min" ("unknown" when not finite). */
const char *kv_format_seconds(double s, char *buf, size_t n);
/* A Slurm --time value of at least s seconds: "HH:MM:SS" or "D-HH:MM:SS". */
const char *kv_slurm_time(double s, char *buf, size_t n);

#endif
