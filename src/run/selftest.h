/* selftest.h - kval's self-test of its checker: known-answer tests of the verdict (tolerance,
 * error statistics, bias, timing, the backends' findings) and of the hashes, run by every rank
 * before the first case of every run and of --dry-run. A checker that fails them cannot be
 * trusted to fail a wrong kernel, so nothing runs (exit 3). */
#ifndef KVAL_SELFTEST_H
#define KVAL_SELFTEST_H

#include <stddef.h>

#include "input/plan.h"

/* The known answers, with the run's input seed (the other [run] settings at their defaults: a
 * deck's own tolerance or bias limit changes what a run judges, not whether the checker
 * works). Returns how many passed, or -1 with the first wrong answer described in `what`. */
int kv_selftest(const kv_run_settings *run, char *what, size_t len);

#endif
