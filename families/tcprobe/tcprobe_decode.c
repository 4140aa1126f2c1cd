/* tcprobe_decode.c - the tcprobe decoders: from the outputs of a probe's sub-tests
 * (tcprobe_inputs.c) and their exact values, the hypothesis they show (the outcome codes of
 * tcprobe.h), the outcome in words, and what the precision model (docs/NUMERICS.md) requires of
 * it: products exact, at least fp32's 24 bits kept in the alignment, faithful alignment and
 * final rounding (to nearest or directed: every lost part below one unit of the last kept
 * bit), subnormal inputs and fp32 subnormals kept. Block size,
 * normalisation order and monotonicity are findings the model does not depend on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "families/kit.h"
#include "families/tcprobe/tcprobe.h"

#define ALIGN_N 28
#define ALIGN_MIN_WIDTH 16

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
 * of its exact value; ties to even go toward zero at 0.5 and 2.5 and away at 1.5 and 3.5. */
static int decode_final_round(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int tw[2], aw[2], even = 1;
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
 * of the survivors' positions, 16 when none survives; 0 when the survivors are not exactly its
 * multiples. */
static int decode_block(const kv_tcp_operands *ops, kv_dtype st, const float *d, int n) {
  int g = 0;
  for (int i = 0; i < n; i++)
    if (same(d[i], kv_tcp_exact(&ops[i], st, NULL))) g = gcd(i + 2, g);
  if (g == 0) return KV_TCP_K;
  for (int i = 0; i < n; i++)
    if (same(d[i], kv_tcp_exact(&ops[i], st, NULL)) != ((i + 2) % g == 0)) return 0;
  return g;
}

int kv_tcp_decode(int probe, kv_dtype st, const kv_tcp_operands *ops, const float *d, int n) {
  if (n != kv_tcp_subtests(probe, st)) KV_FATAL("tcprobe: %d outputs for %d sub-tests", n, kv_tcp_subtests(probe, st));
  switch (probe) {
    case KV_TCP_PRODUCTS: return all_exact(ops, st, d, n) ? 0 : 1;
    case KV_TCP_ALIGN_BITS: return ALIGN_MIN_WIDTH + prefix_exact(ops, st, d, n);
    case KV_TCP_ACC_ROUND: return decode_acc_round(ops, st, d, n);
    case KV_TCP_FINAL_ROUND: return decode_final_round(ops, st, d, n);
    case KV_TCP_NORMALISATION: {
      const int raw = prefix_exact(ops, st, d, ALIGN_N), normal = prefix_exact(ops + ALIGN_N, st, d + ALIGN_N, ALIGN_N);
      if (raw == ALIGN_N && normal == ALIGN_N) return 2;
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

const char *kv_tcp_outcome_name(int probe, int o, char *buf, size_t n) {
  static const char *const normal[] = {"normalised before alignment", "raw exponent (normalised after)",
                                       "undetermined (no bit lost)", "other"};
  static const char *const sub[] = {"kept", "flushed", "mixed"};
  switch (probe) {
    case KV_TCP_PRODUCTS: snprintf(buf, n, "%s", o == 0 ? "exact" : "rounded"); break;
    case KV_TCP_ALIGN_BITS:
      if (o <= ALIGN_MIN_WIDTH)
        snprintf(buf, n, "at most %d bits", ALIGN_MIN_WIDTH);
      else if (o >= ALIGN_MIN_WIDTH + ALIGN_N)
        snprintf(buf, n, "at least %d bits (no loss seen)", o);
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

int kv_tcp_model_allows(int probe, int o) {
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

const char *kv_tcp_model_requires(int probe) {
  switch (probe) {
    case KV_TCP_PRODUCTS: return "exact products";
    case KV_TCP_ALIGN_BITS: return "at least 24 bits (fp32's) in the aligned sum";
    case KV_TCP_ACC_ROUND: return "a faithful alignment (to nearest or directed)";
    case KV_TCP_FINAL_ROUND: return "a faithful rounding to fp32 (to nearest or directed)";
    case KV_TCP_SUBNORMAL_IN: return "subnormal inputs kept";
    case KV_TCP_SUBNORMAL_OUT: return "fp32 subnormals kept";
    default: return "nothing (a finding)";
  }
}
