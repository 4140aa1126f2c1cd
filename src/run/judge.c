/* judge.c - the verdict of one case (judge.h). Checks, each recorded in the row, and the
 * status they give when they fail, the most severe winning:
 *   error                  the checker disagrees with itself: the GPU fp64 reference against
 *                          the CPU one beyond KV_REF_XCHECK_BOUND, the device statistics
 *                          against the host's on a sample (the backend's `harness` finding),
 *                          or part statistics that do not tile the whole output's (parts.h);
 *   fail_out_of_bounds     a guard band around an output, or an input, changed;
 *   fail_nondeterministic  launches of the case wrote different bits;
 *   fail_nonfinite         NaN/Inf where the reference is finite (output or auxiliary output);
 *   fail_tolerance         an element beyond its bound (output or auxiliary output), or a
 *                          probe's outcome that contradicts the precision model (tcprobe);
 *   fail_bias              a rounding bias round to nearest cannot produce;
 *   fail_timing            a rate above KV_ROOFLINE_LIMIT times the measured ceiling;
 *   inaccurate             fail_tolerance or fail_nonfinite, but the outputs equal the cpu
 *                          emulation bit for bit where the precision model is exact
 *                          (conform.h): below every other finding, so any of them still fails.
 * The statistics of each part of an output (kv_family.out_parts) are recorded in the row; a
 * failure's message names the part of its worst or non-finite elements. */
#include "run/judge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/errstats.h"
#include "numerics/tolerance.h"
#include "run/conform.h"
#include "run/parts.h"

/* Severity of a status: a more severe finding replaces the verdict (and its message). */
static int severity(int status) {
  switch (status) {
    case KV_ERROR: return 8;
    case KV_FAIL_OUT_OF_BOUNDS: return 7;
    case KV_FAIL_NONDETERMINISTIC: return 6;
    case KV_FAIL_NONFINITE: return 5;
    case KV_FAIL_TOLERANCE: return 4;
    case KV_FAIL_BIAS: return 3;
    case KV_FAIL_TIMING: return 2;
    case KV_INACCURATE: return 1;
    default: return 0;
  }
}

static void raise_status(kv_result *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void raise_status(kv_result *r, int status, const char *fmt, ...) {
  if (severity(status) <= severity(r->status)) return;
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

/* Status and message set whatever the severity (the conformance verdict lowers a failure). */
static void set_status(kv_result *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_status(kv_result *r, int status, const char *fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

static kv_tolerance tolerance_of(const kv_case *c, const kv_run_settings *rs) {
  return rs->has_tol_override ? rs->tol_override : kv_tolerance_default(c->prec);
}

/* Error statistics of output 0 on the host (the backend handed back ref and mag). */
static kv_status host_errstats(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, const kv_case_data *d,
                               kv_errstats *es) {
  size_t n = d->n_rows * d->row_len;
  int64_t *index = NULL;
  if (d->rows) {
    index = KV_MALLOC(n * sizeof *index);
    KV_TRY(CHECK_ALLOC(index));
    for (size_t i = 0; i < d->n_rows; i++)
      for (size_t j = 0; j < d->row_len; j++) index[i * d->row_len + j] = (int64_t)(d->rows[i] * d->row_len + j);
  }
  const kv_tolerance tol = tolerance_of(c, rs);
  int rc = kv_errstats_compute(d->out, d->out_type, index, d->ref, d->mag, n, c->prec, &tol, cost->red_len, es);
  free(index);
  return rc == 0 ? KV_OK : KV_ERR;
}

/* The auxiliary output (fa2's fp32 LSE), row by row against its reference: a reference that
 * is not finite (a fully masked row's -inf) must be met exactly, a finite one within
 * c2 * aux_mag (the family's magnitude term of that output). */
static void judge_aux(const kv_case *c, const kv_run_settings *rs, const kv_case_data *d, kv_result *r) {
  if (!d->aux || !d->aux_ref) return;
  const double c2 = tolerance_of(c, rs).c2;
  double worst = 0.0, worst_ratio = 0.0;
  size_t bad = 0, beyond = 0, worst_row = 0;
  for (size_t i = 0; i < d->n_rows; i++) {
    const size_t row = d->rows ? d->rows[i] : i;
    const double got = d->aux[row], want = d->aux_ref[i];
    if (!isfinite(want)) {
      bad += !(got == want || (isnan(got) && isnan(want)));
      continue;
    }
    if (!isfinite(got)) {
      bad++;
      continue;
    }
    const double err = fabs(got - want), ratio = err == 0.0 ? 0.0 : err / (c2 * (d->aux_mag ? d->aux_mag[i] : 0.0));
    if (err > worst) worst = err;
    if (ratio > worst_ratio) worst_ratio = ratio, worst_row = row;
    beyond += ratio > 1.0;
  }
  r->aux_max_abs = worst;
  r->aux_bound_ratio = bad ? INFINITY : worst_ratio;
  if (bad)
    raise_status(r, KV_FAIL_NONFINITE, "auxiliary output: %zu rows non-finite where the reference is not", bad);
  else if (beyond)
    raise_status(r, KV_FAIL_TOLERANCE, "auxiliary output beyond its bound in %zu rows (worst row %zu: %.3g x bound)",
                 beyond, worst_row, worst_ratio);
}

/* A systematic bias in the rounding of the output: judged where the family says the output
 * must be unbiased, the output is a 16-bit type (an fp32 output's rounding is not the last
 * step of a computation in a wider type) and enough elements are in the statistics. The parts
 * of an output are not judged apart: their errors share per-row quantities (fa2bwd: a query
 * row's LSE and D), so their standard error understates the spread of their means. */
static void judge_bias(const kv_case *c, const kv_run_settings *rs, kv_result *r) {
  const kv_errstats *s = &r->stats;
  const kv_family *f = c->fp->family;
  if (rs->bias_limit <= 0.0 || !f->unbiased || !f->unbiased(c) || kv_precision_output(c->prec) == KV_FP32 ||
      s->n_bias < KV_BIAS_MIN_ELEMENTS)
    return;
  const double limit = fmax(rs->bias_limit, KV_BIAS_SIGMAS * s->bias_se);
  if (fabs(s->bias_ulp) > limit)
    raise_status(r, KV_FAIL_BIAS, "rounding bias %+.3g ulp (se %.2g, limit %.2g): directed rounding?", s->bias_ulp,
                 s->bias_se, limit);
  else if (fabs(s->bias_mag_ulp) > limit)
    raise_status(r, KV_FAIL_BIAS, "rounding bias %+.3g ulp %s zero (se %.2g, limit %.2g): truncation?",
                 s->bias_mag_ulp, s->bias_mag_ulp < 0 ? "toward" : "away from", s->bias_se, limit);
}

/* The statistics of each part of the output (kv_family.out_parts): the backend's, else the
 * host's; recorded in the row, and a harness error when they do not tile the whole output's. */
static kv_status judge_parts(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, const kv_case_data *d,
                             kv_result *r) {
  const int n_parts = kv_family_parts(c->fp->family);
  if (n_parts == 0) return KV_OK;
  kv_errstats host[KV_MAX_PARTS];
  const kv_errstats *parts = d->has_part_stats ? d->part_stats : host;
  char why[KV_MESSAGE_LEN] = "";
  if (cost->rows % (size_t)n_parts)
    snprintf(why, sizeof why, "%zu output rows are not %d equal parts", cost->rows, n_parts);
  else if (!d->has_part_stats) {
    const kv_tolerance tol = tolerance_of(c, rs);
    KV_TRY(kv_parts_host_stats(c, cost, &tol, d, host));
  }
  if (!why[0]) kv_parts_consistency(&r->stats, parts, n_parts, why, sizeof why);
  if (why[0]) {
    raise_status(r, KV_ERROR, "harness: parts: %s", why);
    return KV_OK;
  }
  for (int p = 0; p < n_parts; p++) kv_result_part_stats(&parts[p], r->part_stats[p]);
  return KV_OK;
}

/* The message of non-finite outputs: their counts, and the parts that hold them (the part
 * statistics in the row, kv_family.out_parts). */
static void nonfinite_message(const kv_case *c, kv_result *r) {
  const kv_family *f = c->fp->family;
  char where[64] = "";
  for (int p = 0; p < kv_family_parts(f); p++) {
    const double bad = r->part_stats[p][KV_PART_n_nan] + r->part_stats[p][KV_PART_n_inf];
    const size_t len = strlen(where);
    if (bad > 0) snprintf(where + len, sizeof where - len, "%s%s %.0f", len ? ", " : "; in ", f->out_parts[p], bad);
  }
  snprintf(r->message, sizeof r->message, "%lld NaN, %lld Inf outputs where the reference is finite%s",
           (long long)r->stats.n_nan, (long long)r->stats.n_inf, where);
}

/* An accuracy failure (fail_tolerance, fail_nonfinite) of a case whose conformance is judged
 * (conform.h): inaccurate when the outputs equal the emulation, else the failure stays and
 * says how far the outputs are from it. r->emu_max_ulp records the deviation. */
static kv_status judge_conformance(const kv_case *c, const kv_run_settings *rs, const kv_case_data *d, kv_result *r) {
  if ((r->status != KV_FAIL_TOLERANCE && r->status != KV_FAIL_NONFINITE) || !kv_conform_judged(c)) return KV_OK;
  kv_conformance m;
  KV_TRY(kv_conform_measure(c, rs, d, &m));
  r->emu_max_ulp = m.max_ulp;
  char accuracy[KV_MESSAGE_LEN];
  memcpy(accuracy, r->message, sizeof accuracy);
  if (m.n_differ)
    set_status(r, r->status, "not the model: %zu elements differ from the emulation (first %zu, max %.3g ulp)",
               m.n_differ, m.first, m.max_ulp);
  else
    set_status(r, KV_INACCURATE, "equals the emulation; %s", accuracy);
  return KV_OK;
}

/* Timing statistics and throughput; a rate the device cannot reach fails the timing. */
static void judge_timing(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, const kv_rank_info *info,
                         kv_case_data *d, kv_result *r) {
  kv_timing_summarize(d->times, d->n_times, &r->timing);
  const double median = r->timing.median;
  r->tflops = cost->flops / median / 1e12;
  r->gbps = cost->bytes / median / 1e9;
  r->intensity = cost->flops / cost->bytes;
  double ceiling = r->intensity * info->copy_gbps * 1e9; /* FLOP/s the memory system allows */
  /* the matrix rate of the case's storage type: 8-bit tensor-core products run at twice the
   * measured bf16 rate (Hopper: 1979 vs 989 dense TFLOP/s; cuBLASLt e4m3 measured 1540 at 8192^3
   * on the H200 whose bf16 ceiling measured 787) */
  const double matrix = info->matrix_tflops * (kv_dtype_is_fp8(c->prec.storage) ? KV_FP8_RATE_FACTOR : 1.0);
  if (isfinite(matrix) && matrix * 1e12 < ceiling) ceiling = matrix * 1e12;
  r->roofline_frac = cost->flops / median / ceiling;
  /* warm timing may run from caches faster than the copy bandwidth: only cold rates judged */
  if (rs->l2_flush && info->cold_timing && isfinite(r->roofline_frac) && r->roofline_frac > KV_ROOFLINE_LIMIT)
    raise_status(r, KV_FAIL_TIMING, "%.3g x the measured ceiling (limit %.2f): the timing cannot be true",
                 r->roofline_frac, KV_ROOFLINE_LIMIT);
}

/* A probe family's outcome, decoded from the output, in words as the message of a case that
 * passes; a contradiction of the precision model fails the case (the model's tolerance and
 * emulations are then unfounded). */
static void judge_outcome(const kv_case *c, const kv_case_data *d, kv_result *r) {
  const kv_family *f = c->fp->family;
  if (!f->outcome || !d->out) return;
  char words[KV_MESSAGE_LEN] = "";
  int contradicts = 0;
  r->outcome = f->outcome(c, d->out, &contradicts, words, sizeof words);
  if (contradicts)
    raise_status(r, KV_FAIL_TOLERANCE, "%s", words);
  else if (!r->message[0])
    snprintf(r->message, sizeof r->message, "%s", words);
}

kv_status kv_judge_case(const kv_case *c, const kv_cost *cost, const kv_run_settings *rs, const kv_rank_info *info,
                        kv_case_data *d, kv_result *r) {
  if (d->has_stats)
    r->stats = d->stats;
  else
    KV_TRY(host_errstats(c, cost, rs, d, &r->stats));
  r->red_len = cost->red_len;
  r->ref_rows = (int64_t)d->n_rows;
  r->status = kv_errstats_verdict(&r->stats);
  KV_TRY(judge_parts(c, cost, rs, d, r));
  if (r->status == KV_FAIL_NONFINITE)
    nonfinite_message(c, r);
  else if (r->status == KV_FAIL_TOLERANCE) {
    const char *part = kv_parts_name_of(c, cost, r->stats.worst_index);
    snprintf(r->message, sizeof r->message, "output beyond its bound: %.3g x bound at element %lld%s%s%s",
             r->stats.max_bound_ratio, (long long)r->stats.worst_index, part ? " (" : "", part ? part : "",
             part ? ")" : "");
  }
  judge_aux(c, rs, d, r);
  KV_TRY(judge_conformance(c, rs, d, r));
  judge_bias(c, rs, r);
  judge_timing(c, cost, rs, info, d, r);
  judge_outcome(c, d, r);
  r->ref_seconds = d->ref_seconds;
  r->ref_xcheck = d->ref_xcheck;
  r->tel = d->tel;
  r->res = d->res;
  if (d->nondeterministic[0]) raise_status(r, KV_FAIL_NONDETERMINISTIC, "%s", d->nondeterministic);
  if (d->out_of_bounds[0]) raise_status(r, KV_FAIL_OUT_OF_BOUNDS, "%s", d->out_of_bounds);
  /* NaN: not cross-checked; +inf: a reference value non-finite on one side only, or a row unwritten */
  if (!isnan(d->ref_xcheck) && d->ref_xcheck > KV_REF_XCHECK_BOUND)
    raise_status(r, KV_ERROR, "harness: GPU and CPU fp64 references disagree by %.3g (bound %.0e)", d->ref_xcheck,
                 KV_REF_XCHECK_BOUND);
  if (d->harness[0]) raise_status(r, KV_ERROR, "harness: %s", d->harness);
  return KV_OK;
}
