/* fa2_wgmma_ladder_step.cuh - one rung of the kval-wgmma tile ladder (fa2_ladder.h) for
 * fa2_wgmma_ladder_d<D>.cu: the configuration's instantiation for the problem's storage type
 * and mask (kval-wgmma accumulates in fp32 only). */
#ifndef KVAL_FA2_WGMMA_LADDER_STEP_CUH
#define KVAL_FA2_WGMMA_LADDER_STEP_CUH

#include "families/fa2/bench/fa2_ladder.h"
#include "families/device/pick.cuh"
#include "families/fa2/fa2_wgmma.cuh"

template <class Tr>
kv_status kv_fa2_wgmma_ladder_prepare(kv_fa2_problem *pr, const char **why) {
  auto prepare = [&](auto, auto st, auto ca) {
    return kv_fa2_wgmma::prepare<Tr, decltype(st)::value, decltype(ca)::value>(pr, why);
  };
  const cudaError_t e = kv::pick::by_headdim_store_causal<Tr::kHeadDim>(Tr::kHeadDim, pr->prec, pr->causal, prepare);
  return kv::pick::prepare_status(e, *why, why); /* a refusal of the configuration's own */
}

/* BM = 64 x CONSUMERS query rows; PREGS / CREGS: the producer's and each consumer's registers */
#define KV_FA2_WGMMA_LADDER_STEP(name, D, BN, ST, CONSUMERS, PINGPONG, PREGS, CREGS) \
  { name, "kval-wgmma", D,                                                             \
    kv_fa2_wgmma_ladder_prepare<kv_fa2_wgmma_config<D, BN, ST, CONSUMERS, PINGPONG, PREGS, CREGS>> }

#endif
