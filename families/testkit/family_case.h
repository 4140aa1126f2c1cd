/* family_case.h - test kit of the family tests: a kv_case of any family built from a short
 * "axis=value param=value" string (no deck, no plan), its inputs generated or filled by
 * hand, the emulation and the references run over all rows, error measures, and the paths of
 * the families' test decks. */
#ifndef KVAL_TEST_FAMILY_CASE_H
#define KVAL_TEST_FAMILY_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "families/kit.h"
#include "input/plan.h"

/* One case with its single-cell family plan; do not copy (the case points into it). */
typedef struct {
  kv_family_plan fp;
  kv_case c;
  long long ints[KV_MAX_AXES];
  double reals[KV_MAX_AXES];
  char *strs[KV_MAX_AXES];
  char text[KV_MAX_AXES][64];
  kv_tensors t;
  kv_cost cost;
  void *in[KV_MAX_TENSORS], *out[KV_MAX_TENSORS];
  size_t n_rows, row_len; /* all rows of output 0 */
  double *ref, *mag, *aux_ref, *aux_mag;
} fcase;

/* Build a case of family f: axes not named take the first token of their default list,
 * params not named their default. Example: "precision=fp16:fp16 headdim=64 seqlen_k=40".
 * Aborts on an unknown key or a bad precision (a broken test). fcase_init builds the case
 * only (it may be invalid); fcase_make also takes its tensors and cost and allocates zeroed
 * inputs, outputs and reference buffers. */
void fcase_init(fcase *f, const kv_family *fam, const char *spec);
void fcase_make(fcase *f, const kv_family *fam, const char *spec);
void fcase_free(fcase *f);

/* Generate every input from the counter-based generator with this seed. */
void fcase_generate(fcase *f, uint64_t seed);
/* Run the family's emulation into f->out. */
void fcase_emulate(fcase *f);
/* Run the fp64 reference (or, compensated = 1, the double-double one) over all rows into
 * f->ref, f->mag, f->aux_ref. */
void fcase_reference(fcase *f, int compensated);

/* Output element i of output 0 as double. */
double fcase_out(const fcase *f, size_t i);
/* Largest |out - ref| / bound under the default tolerance of the case's precision (<= 1
 * passes), from kv_errstats_compute as the runner judges; infinite when an output is not
 * finite where the reference is. */
double fcase_bound_ratio(const fcase *f);
/* Median over elements of |out - ref| / max(|ref|, floor). */
double fcase_median_rel_err(const fcase *f, double floor);
/* Max over elements of |out - ref| / max(|ref|, floor). */
double fcase_max_rel_err(const fcase *f, double floor);

/* The families' test decks, families/<folder>/<kind>.deck under $top_srcdir (kind "test" or
 * "sanitize"; top_srcdir from the environment, "." when unset), sorted; returns how many (at
 * most max). */
int fcase_family_decks(const char *kind, char (*paths)[1024], int max);

/* Median of n values (sorts a copy). */
double median_of(const double *v, int n);

#endif
