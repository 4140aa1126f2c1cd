/* fa2_bench.cu - the fa2 family's bench driver, on the bench harness (bench/harness.h): every
 * row is a kval case run, timed and validated as the job runs it.
 *   fa2_bench [bench|ladder|all] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * bench   both variants through the family's own dispatch: batch x seqlen = 32768 tokens, 16
 *         heads, head dims 64 and 128, seqlen 512 .. 16384, fp16:fp32 and bf16:fp32, causal
 *         and not; kval-mma also fp16:fp16 and bf16:bf16 (d 64, 128) and fp16:fp32 at d 32, 96
 *         and 256, kval-wgmma fp16:fp32 and bf16:fp32 at d 256, at seqlen 4096 (the shapes
 *         PyTorch's peers time: peers.py)
 * ladder  the rungs of kval-mma's and kval-wgmma's tile ladders (fa2_ladder.h), each launched
 *         on the family's prepared problem of its variant (a launch override): d 64 and 128,
 *         fp16:fp32 and bf16:fp32, causal and not, seqlen 2048 and 8192
 * all     both (the default). Exit 0 when every case passed, 1 otherwise, 77 without a GPU. */
#include <stdio.h>

#include <new>

#include "bench/harness.h"
#include "families/fa2/bench/fa2_ladder.h"

namespace {

const int kTokens = 32768, kHeads = 16;

kv_status run(kv_bench *b, const char *variant, const char *prec, int d, int seqlen, int causal, const char *backend,
              const kv_cuda_launch_override *ovr) {
  char spec[256];
  snprintf(spec, sizeof spec, "variant=%s precision=%s headdim=%d seqlen=%d causal=%d batch=%d heads=%d", variant,
           prec, d, seqlen, causal, kTokens / seqlen, kHeads);
  return kv_bench_case(b, "fa2", spec, backend, ovr);
}

kv_status bench(kv_bench *b) {
  static const char *const variants[] = {"kval-wgmma", "kval-mma"}, *const precs[] = {"fp16:fp32", "bf16:fp32"};
  for (const char *v : variants)
    for (int d : {64, 128})
      for (const char *p : precs)
        for (int causal = 0; causal < 2; ++causal)
          for (int seqlen = 512; seqlen <= 16384; seqlen *= 2) KV_TRY(run(b, v, p, d, seqlen, causal, nullptr, nullptr));
  for (int d : {64, 128})
    for (const char *p : {"fp16:fp16", "bf16:bf16"})
      for (int causal = 0; causal < 2; ++causal) KV_TRY(run(b, "kval-mma", p, d, 4096, causal, nullptr, nullptr));
  for (int d : {32, 96, 256})
    for (int causal = 0; causal < 2; ++causal) KV_TRY(run(b, "kval-mma", "fp16:fp32", d, 4096, causal, nullptr, nullptr));
  for (const char *p : {"fp16:fp32", "bf16:fp32"})
    for (int causal = 0; causal < 2; ++causal) KV_TRY(run(b, "kval-wgmma", p, 256, 4096, causal, nullptr, nullptr));
  return KV_OK;
}

/* ---- the ladder: a rung's instantiation on a copy of the family's prepared problem ---- */

kv_status rung_prepare(const void *problem, const void *arg, void **state, const char **why) {
  const kv_fa2_ladder_step *step = static_cast<const kv_fa2_ladder_step *>(arg);
  const kv_fa2_problem &own = static_cast<const kv_fa2_case *>(problem)->kernel;
  if (own.variant != kv_fa2_variant_of(step->variant) || own.headdim != step->headdim || own.prec.accum != KV_FP32) {
    *why = "fa2 ladder: the rung needs a problem of its variant and head dim with fp32 accumulation";
    return KV_ERR;
  }
  kv_fa2_problem *pr = new (std::nothrow) kv_fa2_problem(own);
  KV_TRY(CHECK_ALLOC(pr));
  if (step->prepare(pr, why) != KV_OK) {
    delete pr;
    return KV_ERR;
  }
  *state = pr;
  return KV_OK;
}

kv_status rung_launch(const void *state, void *stream) {
  return kv_fa2_launch(*static_cast<const kv_fa2_problem *>(state), static_cast<cudaStream_t>(stream));
}

kv_status rung_resources(const void *state, kv_kernel_resources *r) {
  return kv_fa2_resources(*static_cast<const kv_fa2_problem *>(state), r);
}

void rung_release(void *state) { delete static_cast<kv_fa2_problem *>(state); }

kv_status ladder(kv_bench *b) {
  const struct {
    const kv_fa2_ladder_step *steps;
    int n;
  } dims[] = {{kv_fa2_ladder_d64, kv_fa2_ladder_d64_count},
               {kv_fa2_ladder_d128, kv_fa2_ladder_d128_count},
               {kv_fa2_wgmma_ladder_d64, kv_fa2_wgmma_ladder_d64_count},
               {kv_fa2_wgmma_ladder_d128, kv_fa2_wgmma_ladder_d128_count}};
  for (const auto &dim : dims)
    for (int i = 0; i < dim.n; ++i) {
      const kv_fa2_ladder_step &step = dim.steps[i];
      const kv_cuda_launch_override ovr = {rung_prepare, rung_launch, rung_resources, rung_release, &step};
      for (const char *p : {"fp16:fp32", "bf16:fp32"})
        for (int causal = 0; causal < 2; ++causal)
          for (int seqlen : {2048, 8192})
            KV_TRY(run(b, step.variant, p, step.headdim, seqlen, causal, step.name, &ovr));
    }
  return KV_OK;
}

}  // namespace

int main(int argc, char **argv) {
  static const kv_bench_command commands[] = {{"bench", bench}, {"ladder", ladder}, {nullptr, nullptr}};
  return kv_bench_main("fa2", commands, argc, argv);
}
