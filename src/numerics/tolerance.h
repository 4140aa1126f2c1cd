/* tolerance.h - the per-element tolerance bound of a case:
 *   bound = c1 * u_out * |ref| + c2 * sqrt(K) * u_acc * mag + abs_floor
 * with u_out the unit roundoff of the output type (kv_precision_output), u_acc of the
 * accumulation (kv_precision_accum_roundoff), K the
 * reduction length and mag the family's magnitude term (|A|^T|B| for GEMM). Defaults per
 * precision and their derivation are in docs/NUMERICS.md; a deck's [run] section may
 * override c1, c2, rel_floor and abs_floor. */
#ifndef KVAL_TOLERANCE_H
#define KVAL_TOLERANCE_H

#include "core/dtype.h"

typedef struct {
  double c1;        /* multiple of the output rounding u_out * |ref| */
  double c2;        /* multiple of the accumulation term sqrt(K) * u_acc * mag */
  double abs_floor; /* absolute floor so exact zeros in the reference never fail on noise */
  double rel_floor; /* floor of |ref| in max relative error */
} kv_tolerance;

/* Bounds of the self-consistency checks of a case (derivations in docs/NUMERICS.md and
 * docs/VALIDATION.md):
 * - the GPU fp64 reference and the CPU one may disagree by at most this, relative to the
 *   magnitude term (fp64 evaluation-order differences are ~K * 2^-53);
 * - a measured rate above this multiple of the start-up ceiling (min(peak, intensity * copy
 *   bandwidth); for 8-bit storage peak is KV_FP8_RATE_FACTOR times the bf16 one) is
 *   impossible: the timing is wrong, not the kernel fast (L2-cold timing only);
 * - a rounding bias fails when a bias mean exceeds the deck's bias_limit and this many
 *   standard errors, over at least this many elements (16-bit storage, fp32 accumulation). */
#define KV_REF_XCHECK_BOUND 1e-9
#define KV_ROOFLINE_LIMIT 1.10
/* The tensor cores' 8-bit product rate as a multiple of the measured bf16 matrix rate (the
 * timing ceiling of FP8 cases): 2 on Hopper, Ada and Blackwell. */
#define KV_FP8_RATE_FACTOR 2.0
#define KV_BIAS_SIGMAS 6.0
#define KV_BIAS_MIN_ELEMENTS 1000

#ifdef __cplusplus
extern "C" {
#endif
kv_tolerance kv_tolerance_default(kv_precision p);
/* The bound's two coefficients: *coef_ref = c1 u_out, *coef_mag = c2 sqrt(K) u_acc. The host and
 * device error statistics take them from here, so their ratios are bit for bit
 * err / kv_tolerance_bound(). */
void kv_tolerance_coefs(const kv_tolerance *t, kv_precision p, double red_len, double *coef_ref, double *coef_mag);
double kv_tolerance_bound(const kv_tolerance *t, kv_precision p, double ref, double mag, double red_len);
/* rho of an attention magnitude term whose P is rounded to the storage type before P V (fa2,
 * decode): u_storage / (u_acc sqrt(K)), that per-term rounding in the units of the bound's
 * c2 sqrt(K) u_acc term: mag = sum_j P_j |V_jd| (1 + scale sum_k |q_k k_jk| + rho). */
double kv_tolerance_p_rho(kv_precision p, double red_len);
#ifdef __cplusplus
}
#endif

#endif
