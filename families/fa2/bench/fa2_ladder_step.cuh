/* fa2_ladder_step.cuh - one rung of the kval-mma tile ladder (fa2_ladder.h) for
 * fa2_ladder_d<D>.cu: the configuration's instantiation for the problem's storage type and
 * mask, with fp32 accumulation. */
#ifndef KVAL_FA2_LADDER_STEP_CUH
#define KVAL_FA2_LADDER_STEP_CUH

#include "families/fa2/bench/fa2_ladder.h"
#include "families/fa2/fa2_mma.cuh"

template <class Tr>
kv_status kv_fa2_ladder_prepare(kv_fa2_problem *pr, const char **why) {
  cudaError_t e;
  if (pr->prec.storage == KV_FP16)
    e = pr->causal ? kv_fa2::prepare<Tr, KV_FP16, KV_FP32, true>(pr, why)
                   : kv_fa2::prepare<Tr, KV_FP16, KV_FP32, false>(pr, why);
  else
    e = pr->causal ? kv_fa2::prepare<Tr, KV_BF16, KV_FP32, true>(pr, why)
                   : kv_fa2::prepare<Tr, KV_BF16, KV_FP32, false>(pr, why);
  if (e == cudaErrorInvalidValue && *why) return KV_ERR; /* the configuration's own refusal */
  return CHECK_CUDA(e);
}

#define KV_FA2_LADDER_STEP(name, D, BM, BN, ST, QR, MINB) \
  { name, D, kv_fa2_ladder_prepare<kv_fa2_config<D, BM, BN, ST, QR, MINB>> }

#endif
