/* fa2_reference.h - the part of the fa2 reference's definition that both references evaluate
 * per row, the CPU one (fa2_cpu_ref.c) and the GPU one (fa2_gpu_ref.cu): the magnitude term of
 * the log-sum-exp's tolerance. Plain C, compiled by gcc and nvcc (host and device). */
#ifndef KVAL_FA2_REFERENCE_H
#define KVAL_FA2_REFERENCE_H

#include <math.h>

#ifdef __CUDACC__
#define KV_FA2_REF_FN __host__ __device__ __forceinline__
#else
#define KV_FA2_REF_FN static inline
#endif

/* 2^-24: the unit roundoff of the fp32 softmax statistics; 2^-22: the relative error of the
 * exponential (ex2.approx) of each probability. */
#define KV_FA2_U32 5.9604644775390625e-08
#define KV_FA2_EXP_ERR 2.384185791015625e-07

/* The LSE's magnitude term for a row with n visible keys, row maximum m of the scaled scores
 * and lse = m + log(l) (the tolerance bound is c2 times it):
 *   sqrt(headdim) * u_acc * abar   the score errors of S = Q K^T (K = headdim products in the
 *                                  accumulator type), weighted by P as d lse / d s_j = P_j:
 *                                  abar = sum_j P_j scale sum_k |q_k k_jk|;
 *   u32 * (|lse| + |m| + sqrt(n))  the fp32 exponent arguments, row sum and result;
 *   KV_FA2_EXP_ERR                 the exponentials' relative error, which moves log(l). */
KV_FA2_REF_FN double kv_fa2_lse_mag(double abar, double m, double lse, double n, double headdim, double u_acc) {
  return sqrt(headdim) * u_acc * abar + KV_FA2_U32 * (fabs(lse) + fabs(m) + sqrt(n)) + KV_FA2_EXP_ERR;
}

#endif
