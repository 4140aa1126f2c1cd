/* tcprobe_decode.c - the tcprobe decoders: from the outputs of a probe's sub-tests
 * (tcprobe_inputs.c) and their exact values, the hypothesis they show (the outcome codes of
 * tcprobe.h), the outcome in words, and what the precision model (docs/NUMERICS.md) requires of
 * it: products exact, at least fp32's 24 bits kept in the alignment (FP8: KV_FP8_ACC_BITS = 14,
 * the accumulator kval's FP8 model assumes), faithful alignment and final rounding (to nearest
 * or directed: every lost part below one unit of the last kept bit), subnormal inputs and fp32
 * subnormals kept. Block size, normalisation order and monotonicity are findings the model does
 * not depend on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"
#include "numerics/fp8.h"

#define STRING_(x) #x
#define STRING(x) STRING_(x)

/* The width series (tcprobe_inputs.c) test widths ALIGN_MIN_WIDTH + 1, + 2, ... */
#define ALIGN_MIN_WIDTH 16
#define FP8_ALIGN_MIN_WIDTH 9

static int align_min(kv_dtype st) { return kv_tcp_is_fp8(st) ? FP8_ALIGN_MIN_WIDTH : ALIGN_MIN_WIDTH; }

static int same(float d, double x) { return (double)d == x; }

/* Leading sub-tests whose output is exact (the survivors of an alignment series). */
static int prefix_exact(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int i = 0;
  while (i < n && same(d[i], kv_tcp_exact(&ops[i], st, NULL))) i++;
  return i;
}

static int all_exact(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  return prefix_exact(ops, st, d, n) == n;
}

/* Direction of each inexact output relative to its exact value, counted by the sign of the
 * exact value: toward[s] / away[s] for s = 0 positive, 1 negative. */
static void directions(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n, int toward[2], int away[2]) {
  toward[0] = toward[1] = away[0] = away[1] = 0;
  for (int i = 0; i < n; i++) {
    const double x = kv_tcp_exact(&ops[i], st, NULL), r = d[i];
    if (r == x) continue;
    const int s = x < 0;
    if (fabs(r) < fabs(x))
      toward[s]++;
    else
      away[s]++;
  }
}

static int decode_acc_round(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int tw[2], aw[2];
  directions(ops, st, d, n, tw, aw);
  if (!tw[0] && !tw[1] && !aw[0] && !aw[1]) return KV_TCP_UNSEEN;
  if (!aw[0] && !aw[1]) return KV_TCP_RZ;
  if (!aw[0] && !tw[1]) return KV_TCP_RD;
  if (!tw[0] && !aw[1]) return KV_TCP_RU;
  if (tw[0] && aw[0] && tw[1] && aw[1]) return KV_TCP_RN;
  return KV_TCP_OTHER_ROUNDING;
}

/* Sums 2^16 + (0.5, 1.5, 2.5, 3.5) ulp and their negatives: every output must be a neighbour
 * of its exact value; ties to even go toward zero at 0.5 and 2.5 and away at 1.5 and 3.5. FP8:
 * two more sub-tests, C = +-(2^16 - 2^-8) alone: when neither passes unchanged, the accumulator
 * keeps fewer bits than fp32 and no rounding to fp32 can be seen (UNSEEN); one of them: other. */
static int decode_final_round(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int tw[2], aw[2], even = 1;
  if (kv_tcp_is_fp8(st)) {
    n -= 2;
    const int kept = same(d[n], kv_tcp_exact(&ops[n], st, NULL)) + same(d[n + 1], kv_tcp_exact(&ops[n + 1], st, NULL));
    if (kept == 0) return KV_TCP_UNSEEN;
    if (kept == 1) return KV_TCP_OTHER_ROUNDING;
  }
  for (int i = 0; i < n; i++) {
    const double x = kv_tcp_exact(&ops[i], st, NULL), r = d[i];
    if (r == x || fabs(r - x) > ldexp(1.0, ilogb(x) - 23)) return KV_TCP_OTHER_ROUNDING;
    even &= (fabs(r) > fabs(x)) == (i % 2 == 1);
  }
  directions(ops, st, d, n, tw, aw);
  if (!aw[0] && !aw[1]) return KV_TCP_RZ;
  if (!tw[0] && !tw[1]) return KV_TCP_RNA;
  if (!aw[0] && !tw[1]) return KV_TCP_RD;
  if (!tw[0] && !aw[1]) return KV_TCP_RU;
  return even ? KV_TCP_RNE : KV_TCP_OTHER_ROUNDING;
}

/* 0 all kept, 1 all flushed to zero, 2 anything else. */
static int decode_subnormal(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int kept = 0, flushed = 0;
  for (int i = 0; i < n; i++) {
    kept += same(d[i], kv_tcp_exact(&ops[i], st, NULL));
    flushed += d[i] == 0.0f;
  }
  return kept == n ? 0 : flushed == n ? 1 : 2;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* q at k = j + 1 (sub-test j - 1) survives iff a block starts there: the block size is the gcd
 * of the survivors' positions, k (16 or 32) when none survives; 0 when the survivors are not
 * exactly its multiples. */
static int decode_block(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int g = 0;
  for (int i = 0; i < n; i++)
    if (same(d[i], kv_tcp_exact(&ops[i], st, NULL))) g = gcd(i + 2, g);
  if (g == 0) return kv_tcp_k(st);
  for (int i = 0; i < n; i++)
    if (same(d[i], kv_tcp_exact(&ops[i], st, NULL)) != ((i + 2) % g == 0)) return 0;
  return g;
}

/* Leading exact outputs of a width series; -1 when an exact one follows an inexact one (a
 * narrower term kept where a wider one was lost: no width does that). */
static int series_width(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  const int p = prefix_exact(ops, st, d, n);
  for (int i = p; i < n; i++)
    if (same(d[i], kv_tcp_exact(&ops[i], st, NULL))) return -1;
  return p;
}

/* The alignment series' width. FP8: 0 when a series is inconsistent, and the result series'
 * (P + q) width instead when it is the narrower and below fp32's 24 bits (the truncation of an
 * accumulator narrower than fp32, after the sum). */
static int decode_align(const kv_tcp_operands *ops, kv_dtype st, const float *d) {
  const int na = kv_tcp_align_n(st), lo = align_min(st);
  if (!kv_tcp_is_fp8(st)) return lo + prefix_exact(ops, st, d, na);
  const int aligned = series_width(ops, st, d, na);
  const int result = series_width(ops + na, st, d + na, kv_tcp_subtests(KV_TCP_ALIGN_BITS, st) - na);
  if (aligned < 0 || result < 0) return 0;
  return lo + result < 24 && result < aligned ? lo + result : lo + aligned;
}

int kv_tcp_decode(int probe, kv_dtype st, const kv_tcp_operands *ops, const float *d, int n) {
  if (n != kv_tcp_subtests(probe, st)) KV_FATAL("tcprobe: %d outputs for %d sub-tests", n, kv_tcp_subtests(probe, st));
  const int na = kv_tcp_align_n(st);
  switch (probe) {
    case KV_TCP_PRODUCTS: return all_exact(ops, st, d, n) ? 0 : 1;
    case KV_TCP_ALIGN_BITS: return decode_align(ops, st, d);
    case KV_TCP_ACC_ROUND: return decode_acc_round(ops, st, d, n);
    case KV_TCP_FINAL_ROUND: return decode_final_round(ops, st, d, n);
    case KV_TCP_NORMALISATION: {
      const int raw = prefix_exact(ops, st, d, na), normal = prefix_exact(ops + na, st, d + na, na);
      if (raw == na && normal == na) return 2;
      return raw == normal ? 0 : raw == normal + 1 ? 1 : 3;
    }
    case KV_TCP_SUBNORMAL_IN:
    case KV_TCP_SUBNORMAL_OUT: return decode_subnormal(ops, st, d, n);
    case KV_TCP_BLOCK: return decode_block(ops, st, d, n);
    case KV_TCP_MONOTONE:
      for (int i = 0; i + 1 < n; i += 2)
        if (d[i + 1] < d[i]) return 1;
      return 0;
    default: KV_FATAL("tcprobe: unknown probe %d", probe);
  }
}

static const char *rounding_name(int r) {
  static const char *const names[] = {"no rounding seen",      "truncation (toward zero)", "to nearest",
                                      "to nearest, ties even", "to nearest, ties away",    "down",
                                      "up",                    "other"};
  return r >= 0 && r <= KV_TCP_OTHER_ROUNDING ? names[r] : "invalid";
}

const char *kv_tcp_outcome_name(int probe, kv_dtype st, int o, char *buf, size_t n) {
  static const char *const normal[] = {"normalised before alignment", "raw exponent (normalised after)",
                                       "undetermined (no bit lost)", "other"};
  static const char *const sub[] = {"kept", "flushed", "mixed"};
  switch (probe) {
    case KV_TCP_PRODUCTS: snprintf(buf, n, "%s", o == 0 ? "exact" : "rounded"); break;
    case KV_TCP_ALIGN_BITS:
      if (o == 0)
        snprintf(buf, n, "inconsistent (a smaller term kept, a larger one lost)");
      else if (o <= align_min(st))
        snprintf(buf, n, "at most %d bits", align_min(st));
      else if (o >= align_min(st) + kv_tcp_align_n(st))
        snprintf(buf, n, "at least %d bits (no loss seen)", o);
      else if (kv_tcp_is_fp8(st))
        snprintf(buf, n, "%d bits", o);
      else
        snprintf(buf, n, "%d bits (%+d extra)", o, o - 24);
      break;
    case KV_TCP_ACC_ROUND:
    case KV_TCP_FINAL_ROUND: snprintf(buf, n, "%s", rounding_name(o)); break;
    case KV_TCP_NORMALISATION: snprintf(buf, n, "%s", o >= 0 && o <= 3 ? normal[o] : "invalid"); break;
    case KV_TCP_SUBNORMAL_IN:
    case KV_TCP_SUBNORMAL_OUT: snprintf(buf, n, "%s", o >= 0 && o <= 2 ? sub[o] : "invalid"); break;
    case KV_TCP_BLOCK:
      if (o == 0)
        snprintf(buf, n, "inconsistent");
      else
        snprintf(buf, n, "%d product%s per rounding", o, o == 1 ? "" : "s");
      break;
    case KV_TCP_MONOTONE: snprintf(buf, n, "%s", o == 0 ? "monotone" : "not monotone"); break;
    default: snprintf(buf, n, "unknown probe");
  }
  return buf;
}

int kv_tcp_model_allows(int probe, kv_dtype st, int o) {
  if (kv_tcp_is_fp8(st) && probe == KV_TCP_ALIGN_BITS) return o >= KV_FP8_ACC_BITS;
  switch (probe) {
    case KV_TCP_PRODUCTS: return o == 0;
    case KV_TCP_ALIGN_BITS: return o >= 24;
    case KV_TCP_ACC_ROUND:
    case KV_TCP_FINAL_ROUND: return o != KV_TCP_OTHER_ROUNDING;
    case KV_TCP_SUBNORMAL_IN:
    case KV_TCP_SUBNORMAL_OUT: return o == 0;
    default: return 1;
  }
}

const char *kv_tcp_model_requires(int probe, kv_dtype st) {
  switch (probe) {
    case KV_TCP_PRODUCTS: return "exact products";
    case KV_TCP_ALIGN_BITS:
      return kv_tcp_is_fp8(st) ? "at least " STRING(KV_FP8_ACC_BITS) " bits (KV_FP8_ACC_BITS) in the FP8 sum"
                               : "at least 24 bits (fp32's) in the aligned sum";
    case KV_TCP_ACC_ROUND: return "a faithful alignment (to nearest or directed)";
    case KV_TCP_FINAL_ROUND: return "a faithful rounding to fp32 (to nearest or directed)";
    case KV_TCP_SUBNORMAL_IN: return "subnormal inputs kept";
    case KV_TCP_SUBNORMAL_OUT:
      return kv_tcp_is_fp8(st) ? "fp32 subnormals on the " STRING(KV_FP8_ACC_BITS) "-bit accumulator's grid kept"
                               : "fp32 subnormals kept";
    default: return "nothing (a finding)";
  }
}
