/* plan_values.h - the plan's value parsing, shared by plan.c and plan_values.c (internal to
 * src/input): the one error format of every deck problem, whole-token numbers, single-value
 * keys, and the [run] section's keys, ranges and defaults. */
#ifndef KVAL_PLAN_VALUES_H
#define KVAL_PLAN_VALUES_H

#include <stddef.h>

#include "input/deck.h"
#include "input/plan.h"

/* "FILE:LINE:COL: error: WHAT (got 'TOKEN'; expected VALID)" into err; line 0 drops LINE:COL.
 * Returns -1. */
int kv_plan_err(char *err, size_t errlen, const char *file, int line, int col, const char *got,
                const char *expected, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* kv_plan_err at token t of entry en: "WHAT of SECTION.KEY". */
int kv_plan_tok_err(char *err, size_t errlen, const kv_deck_entry *en, const kv_token *t, const char *expected,
                    const char *what);

/* Appends ", item" (or "item" to an empty buf). */
void kv_plan_list_append(char *buf, size_t len, const char *item);

/* 0 when en has exactly one value, else the error "takes a single value". */
int kv_plan_one_value(const kv_deck_entry *en, const char *expected, char *err, size_t errlen);

/* A whole token as a finite double: 0, or an index into kv_plan_number_problem (1 not a
 * number, 2 overflow, 3 a nonzero value that rounds to zero). */
int kv_plan_to_double(const char *s, double *v);
extern const char *const kv_plan_number_problem[];

/* A whole token as a decimal long long: 0, or -1. */
int kv_plan_to_ll(const char *s, long long *v);

/* Whether key is a [run] key; every [run] key is appended to list (for the message). */
int kv_plan_run_key(const char *key, char *list, size_t len);

/* The [run] settings of the deck over their defaults, each checked against its range;
 * have_seed: --seed replaces the deck's. 0, or -1 with the message in err. */
int kv_plan_run_settings(const kv_deck *d, int have_seed, uint64_t seed, kv_run_settings *rs, char *err,
                         size_t errlen);

#endif
