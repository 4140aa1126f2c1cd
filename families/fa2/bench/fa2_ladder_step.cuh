/* fa2_ladder_step.cuh - one rung of the kval-mma tile ladder (fa2_ladder.h) for
 * fa2_ladder_d<D>.cu: the configuration's instantiation for the problem's storage type and
 * mask, with fp32 accumulation. */
#ifndef KVAL_FA2_LADDER_STEP_CUH
#define KVAL_FA2_LADDER_STEP_CUH

#include "families/fa2/bench/fa2_ladder.h"
#include "families/device/pick.cuh"
#include "families/fa2/fa2_mma.cuh"

template <class Tr>
kv_status kv_fa2_ladder_prepare(kv_fa2_problem *pr, const char **why) {
  auto prepare = [&](auto, auto st, auto ca) {
    return kv_fa2::prepare<Tr, decltype(st)::value, KV_FP32, decltype(ca)::value>(pr, why);
  };
  const cudaError_t e = kv::pick::by_headdim_store_causal<Tr::kHeadDim>(Tr::kHeadDim, pr->prec, pr->causal, prepare);
  return kv::pick::prepare_status(e, *why, why); /* a refusal of the configuration's own */
}

#define KV_FA2_LADDER_STEP(name, D, BM, BN, ST, QR, MINB) \
  { name, "kval-mma", D, kv_fa2_ladder_prepare<kv_fa2_config<D, BM, BN, ST, QR, MINB>> }

#endif
