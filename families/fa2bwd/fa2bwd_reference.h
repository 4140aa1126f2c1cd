/* fa2bwd_reference.h - the part of the fa2bwd reference's definition that both references
 * evaluate, the CPU one (fa2bwd_cpu_ref.c) and the GPU one (fa2bwd_gpu_ref.cu): the
 * per-pair weights of the gradients' magnitude terms. Plain C, compiled by gcc and nvcc (host
 * and device).
 *
 * Per (batch, head), queries i, keys j <= last(i), features d, s = scale:
 *   S_ij = s sum_d Q_id K_jd, P_ij = exp(S_ij - lse_i), dP_ij = sum_d dO_id V_jd,
 *   D_i = sum_j P_ij dP_ij, dS_ij = P_ij (dP_ij - D_i),
 *   dV_jd = sum_i P_ij dO_id, dK_jd = s sum_i dS_ij Q_id, dQ_id = s sum_j dS_ij K_jd.
 * Magnitudes: a_ij = s sum_d |Q_id K_jd|, b_ij = sum_d |dO_id V_jd|, Dabs_i = sum_j P_ij b_ij
 * (bounds sum_d |dO_id O_id|, the kernel's D), abar_i = sum_j P_ij a_ij, m_i = max_j S_ij,
 * n_i visible keys. The tolerance multiplies a magnitude by c2 sqrt(K) u_acc; rho and eta
 * (kv_fa2bwd_mag_terms) are in those units: rho = u_storage / (u_acc sqrt(K)), eta = half the
 * storage type's subnormal spacing / (u_acc sqrt(K)). */
#ifndef KVAL_FA2BWD_REFERENCE_H
#define KVAL_FA2BWD_REFERENCE_H

#include <math.h>

#ifdef __CUDACC__
#define KV_FA2BWD_REF_FN __host__ __device__ __forceinline__
#else
#define KV_FA2BWD_REF_FN static inline
#endif

/* The relative error of P_ij in units of u_acc, less its pair part a_ij (the score's own
 * accumulation): the forward's LSE (its score errors weighted by P, abar; fp32 arguments |lse|
 * and |m|, the row sum sqrt(n)) and the exponentials of both passes (4 u32 each, ex2.approx,
 * plus one for the fp32 argument of the backward's exponent). */
KV_FA2BWD_REF_FN double kv_fa2bwd_row_factor(double abar, double m, double lse, double n) {
  return abar + fabs(lse) + fabs(m) + sqrt(n) + 9.0;
}

/* dQ and dK weight of pair (i, j): |dS_ij| is at most w = P (b + Dabs); its error is w times
 * (1 + e) (dP and D accumulated, P's relative error e = a_ij + row factor) plus 2 rho w (the
 * storage rounding of O inside D and of dS before dS K and dS^T Q), plus eta: dS rounded into
 * the storage type's subnormal range (fp16 gradients of keys no query attends underflow).
 * mag_dQ_id = s sum_j t_ij |K_jd| + eta, mag_dK_jd = s sum_i t_ij |Q_id| + eta, the final eta
 * the gradient's own rounding. */
KV_FA2BWD_REF_FN double kv_fa2bwd_ds_weight(double p, double b, double dabs, double e, double rho, double eta) {
  return p * (b + dabs) * (1.0 + e + 2.0 * rho) + eta;
}

/* dV weight of pair (i, j): P's relative error e, the accumulation of P^T dO, rho and eta for
 * P rounded to the storage type before it. mag_dV_jd = sum_i v_ij |dO_id| + eta. */
KV_FA2BWD_REF_FN double kv_fa2bwd_p_weight(double p, double e, double rho, double eta) {
  return p * (1.0 + e + rho) + eta;
}

#endif
