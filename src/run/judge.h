/* judge.h - the verdict of one case from everything its backend measured: the error
 * statistics of the output against its bound, the auxiliary output against its own, the
 * rounding bias, the timing against the measured ceilings, and the backend's own findings
 * (out-of-bounds writes, launches that disagree, a checker that disagrees with itself). */
#ifndef KVAL_JUDGE_H
#define KVAL_JUDGE_H

#include "backends/backend.h"
#include "core/result.h"
#include "input/plan.h"

/* Statistics, timing and verdict of case c into r (status and, where it failed, message).
 * KV_ERR when the statistics cannot be computed (out of memory). */
kv_status kv_judge_case(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, const kv_rank_info *info,
                        kv_case_data *d, kv_result *r);

#endif
