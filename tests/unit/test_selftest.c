/* test_selftest.c - kval's self-test of its checker (src/run/selftest.c) must fail, with the
 * wrong answer named, whenever the checker would pass a wrong kernel. The program is linked
 * with -Wl,--wrap for kv_judge_case and kv_fleet_compare_case (Makefile.am), so each check
 * below runs the self-test against the real checker with one planted bug of its own:
 *   a tolerance failure reported as a pass, a bound 1.5 times too loose (c1 and c2), the
 *   rounding-bias or the timing verdict switched off, a tie of two fingerprints taken as a
 *   majority.
 * The real checker passes every answer; each broken one makes kv_selftest return -1 with the
 * answer it failed in `what`. */
#include <string.h>

#include "input/plan.h"
#include "run/fleet.h"
#include "run/judge.h"
#include "run/selftest.h"
#include "tests/unit/test_util.h"

typedef enum { NONE, TOLERANCE_PASSES, LOOSE_BOUND, BIAS_OFF, TIMING_OFF, TIE_MAJORITY } planted_bug;
static planted_bug bug;

kv_status __real_kv_judge_case(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs,
                               const kv_rank_info *info, kv_case_data *d, kv_result *r);
int __real_kv_fleet_compare_case(const int *members, int m, const signed char *status, const uint64_t *fingerprint,
                                 size_t n_cases, size_t ci, unsigned char *agrees);
kv_status __wrap_kv_judge_case(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs,
                               const kv_rank_info *info, kv_case_data *d, kv_result *r);
int __wrap_kv_fleet_compare_case(const int *members, int m, const signed char *status, const uint64_t *fingerprint,
                                 size_t n_cases, size_t ci, unsigned char *agrees);

/* The checker with the planted bug: the real verdict, then the bug's effect on it. */
kv_status __wrap_kv_judge_case(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs,
                               const kv_rank_info *info, kv_case_data *d, kv_result *r) {
  kv_run_settings loose = *rs;
  if (bug == LOOSE_BOUND) {
    loose.tol_override = rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
    loose.has_tol_override = 1;
    loose.tol_override.c1 *= 1.5;
    loose.tol_override.c2 *= 1.5;
  }
  const kv_status st = __real_kv_judge_case(c, cost, &loose, info, d, r);
  const int hidden = (bug == TOLERANCE_PASSES && r->status == KV_FAIL_TOLERANCE) ||
                     (bug == BIAS_OFF && r->status == KV_FAIL_BIAS) || (bug == TIMING_OFF && r->status == KV_FAIL_TIMING);
  if (hidden) {
    r->status = KV_PASS;
    r->message[0] = '\0';
  }
  return st;
}

/* The fleet comparison with the planted bug: a tie (no fingerprint held by more ranks than
 * another) is taken as agreement, so two GPUs that disagree are both called right. */
int __wrap_kv_fleet_compare_case(const int *members, int m, const signed char *status, const uint64_t *fingerprint,
                                 size_t n_cases, size_t ci, unsigned char *agrees) {
  const int distinct = __real_kv_fleet_compare_case(members, m, status, fingerprint, n_cases, ci, agrees);
  if (bug == TIE_MAJORITY && distinct == m)
    for (int k = 0; k < m; k++) agrees[members[k]] = 1;
  return distinct;
}

/* The self-test against the checker with `planted`: fails (-1) naming `answer`. */
static void caught(const kv_run_settings *rs, planted_bug planted, const char *name, const char *answer) {
  char what[512] = "";
  bug = planted;
  const int got = kv_selftest(rs, what, sizeof what);
  bug = NONE;
  EXPECT(got == -1, "a checker with %s: the self-test returned %d (\"%s\"), expected -1", name, got, what);
  EXPECT(strstr(what, answer) != NULL, "a checker with %s: the self-test said \"%s\", expected it to name \"%s\"", name,
         what, answer);
}

int main(void) {
  kv_run_settings rs;
  kv_plan_run_defaults(&rs);
  char what[512] = "";
  TEST("the real checker passes every known answer");
  const int passed = kv_selftest(&rs, what, sizeof what);
  EXPECT(passed > 0, "the self-test returned %d (\"%s\")", passed, what);

  TEST("a broken checker fails the self-test, naming the answer it got wrong");
  caught(&rs, TOLERANCE_PASSES, "tolerance failures passed", "3 ulps off");
  caught(&rs, LOOSE_BOUND, "a bound 1.5 times too loose", "ratio");
  caught(&rs, BIAS_OFF, "the bias verdict off", "truncated toward zero");
  caught(&rs, TIMING_OFF, "the timing verdict off", "twice the ceiling");
  caught(&rs, TIE_MAJORITY, "a tie taken as a majority", "fingerprints A B");
  return TEST_RETURN();
}
