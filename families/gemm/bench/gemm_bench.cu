/* gemm_bench.cu - the gemm family's bench driver, on the bench harness (bench/harness.h): every
 * row is a kval case run, timed and validated as the job runs it; the peers are cuBLAS inside
 * kval itself (variant cublas, timed the same way).
 *   gemm_bench [bench|ladder|ladder-fp8|all] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * bench   cublas, kval-wgmma and kval-mma through the family's own dispatch on square shapes
 *         256 .. 8192 (nn), the skinny 16 x 8192 x 8192, 8192^3 with layouts tn and nt, in
 *         fp16:fp32, bf16:fp32, fp16:fp16 and bf16:bf16 (cuBLAS has no bf16 accumulation); FP8
 *         (nt, e4m3 beside cuBLASLt, e5m2) on 8192^3, 4096^3, 1024^3 and 16 x 8192 x 8192, never
 *         promoted and promoted every 512 products
 * ladder  the 16-bit rungs of kval-wgmma's configuration ladders (gemm_ladder.h), nn, each on
 *         its precision and shapes, launched on the family's prepared problem (a launch
 *         override): the large-problem steps on bf16:fp32 8192^3, the small-problem tiles on
 *         problems of less than one wave of 128x256 tiles; cuBLAS on each precision and shape
 * ladder-fp8  the FP8 rungs the same way (e4m3, nt, each at its promotion interval; cuBLASLt)
 * all     the three (the default). Exit 0 when every case passed, 1 otherwise, 77 without a GPU. */
#include <stdio.h>
#include <string.h>

#include <new>

#include "bench/harness.h"
#include "families/gemm/bench/gemm_ladder.h"

namespace {

kv_status run(kv_bench *b, const char *variant, const char *prec, const char *layout, const char *shape,
              const char *backend, const kv_cuda_launch_override *ovr, const char *promote = "0") {
  char spec[256];
  snprintf(spec, sizeof spec, "variant=%s precision=%s layout=%s shape=%s promote=%s", variant, prec, layout, shape,
           promote);
  return kv_bench_case(b, "gemm", spec, backend, ovr);
}

kv_status bench(kv_bench *b) {
  static const struct {
    const char *shape, *layout, *prec;
  } rows[] = {{"4096x4096x4096", "nn", "fp16:fp32"}, {"4096x4096x4096", "nn", "bf16:fp32"},
              {"8192x8192x8192", "nn", "fp16:fp32"}, {"8192x8192x8192", "nn", "bf16:fp32"},
              {"4096x4096x4096", "nn", "fp16:fp16"}, {"8192x8192x8192", "nn", "fp16:fp16"},
              {"2048x2048x2048", "nn", "bf16:fp32"}, {"256x256x256", "nn", "bf16:fp32"},
              {"1024x1024x1024", "nn", "fp16:fp16"}, {"4096x4096x4096", "nn", "bf16:bf16"},
              {"8192x8192x8192", "tn", "bf16:fp32"}, {"8192x8192x8192", "nt", "bf16:fp32"},
              {"1024x1024x1024", "nn", "fp16:fp32"}, {"1024x1024x1024", "nn", "bf16:fp32"},
              {"16x8192x8192", "nn", "fp16:fp32"},   {"16x8192x8192", "nn", "bf16:fp32"}};
  /* FP8 (layout nt, bf16 output): cuBLASLt e4m3 beside kval-wgmma e4m3 and e5m2, never
   * promoted (fast accumulation) and promoted every 512 products (cuBLASLt: fast accumulation off) */
  for (const char *shape : {"8192x8192x8192", "4096x4096x4096", "1024x1024x1024", "16x8192x8192"})
    for (const char *promote : {"0", "512"}) {
      KV_TRY(run(b, "cublas", "e4m3:fp32", "nt", shape, nullptr, nullptr, promote));
      KV_TRY(run(b, "kval-wgmma", "e4m3:fp32", "nt", shape, nullptr, nullptr, promote));
      KV_TRY(run(b, "kval-wgmma", "e5m2:fp32", "nt", shape, nullptr, nullptr, promote));
    }
  for (const auto &r : rows)
    for (const char *v : {"cublas", "kval-wgmma", "kval-mma"})
      KV_TRY(run(b, v, r.prec, r.layout, r.shape, nullptr, nullptr));
  return KV_OK;
}

/* ---- the ladders: a rung's configuration on a copy of the family's prepared problem ---- */

kv_status rung_prepare(const void *problem, const void *arg, void **state, const char **why) {
  const kv_gemm_ladder_step *step = static_cast<const kv_gemm_ladder_step *>(arg);
  const kv_gemm_problem *own = static_cast<const kv_gemm_problem *>(problem);
  kv_precision p;
  if (kv_precision_parse(step->precision, &p) != 0 || own->variant != KV_GEMM_WGMMA ||
      own->g.prec.storage != p.storage || own->g.prec.accum != p.accum || own->g.a_t ||
      own->g.b_t != kv_dtype_is_fp8(p.storage)) {
    *why = "gemm ladder: a rung takes a kval-wgmma problem of its own precision, layout nn (FP8: nt)";
    return KV_ERR;
  }
  kv_gemm_problem *pr = new (std::nothrow) kv_gemm_problem(*own); /* kval-wgmma: no cuBLASLt plan to share */
  KV_TRY(CHECK_ALLOC(pr));
  pr->splits = 1; /* a rung runs its configuration on the whole K (the own problem keeps its workspace) */
  pr->partials = nullptr;
  if (step->prepare(pr) != KV_OK) {
    delete pr;
    return KV_ERR;
  }
  *state = pr;
  return KV_OK;
}

kv_status rung_launch(const void *state, void *stream) {
  return kv_gemm_launch(static_cast<const kv_gemm_problem *>(state), static_cast<cudaStream_t>(stream));
}

kv_status rung_resources(const void *state, kv_kernel_resources *r) {
  return kv_gemm_resources(static_cast<const kv_gemm_problem *>(state), r);
}

void rung_release(void *state) { delete static_cast<kv_gemm_problem *>(state); }

/* Every 16-bit rung (fp8: every FP8 rung) on each of its shapes (gemm_ladder.h: the
 * large-problem and small-problem ladders, the FP8 ladder), cuBLAS first on each precision and
 * shape the ladder has not timed it on yet. */
kv_status ladder_of(kv_bench *b, bool fp8) {
  char anchored[64][48];
  int n_anchored = 0;
  for (int i = 0; i < kv_gemm_ladder_count; ++i) {
    const kv_gemm_ladder_step &step = kv_gemm_ladder[i];
    const kv_cuda_launch_override ovr = {rung_prepare, rung_launch, rung_resources, rung_release, &step};
    kv_precision p;
    if (kv_precision_parse(step.precision, &p) != 0) {
      kv_report(__FILE__, __LINE__, "gemm", "ladder step %s: precision '%s' does not parse", step.name, step.precision);
      return KV_ERR;
    }
    const bool step_fp8 = kv_dtype_is_fp8(p.storage);
    if (step_fp8 != fp8) continue;
    const char *layout = step_fp8 ? "nt" : "nn";
    const char *promote = step.promote ? step.promote : "0";
    printf("ladder %s %s promote %s: %s\n", step.name, step.precision, promote, step.what);
    char shapes[256];
    snprintf(shapes, sizeof shapes, "%s", step.shapes);
    char *save = nullptr;
    for (char *shape = strtok_r(shapes, " ", &save); shape; shape = strtok_r(nullptr, " ", &save)) {
      char key[48];
      snprintf(key, sizeof key, "%s %s %s", step.precision, shape, promote);
      int seen = 0;
      for (int j = 0; j < n_anchored && !seen; ++j) seen = strcmp(anchored[j], key) == 0;
      if (!seen && n_anchored < 64) {
        snprintf(anchored[n_anchored++], sizeof anchored[0], "%s", key);
        KV_TRY(run(b, "cublas", step.precision, layout, shape, nullptr, nullptr, promote));
      }
      KV_TRY(run(b, "kval-wgmma", step.precision, layout, shape, step.name, &ovr, promote));
    }
  }
  return KV_OK;
}

kv_status ladder(kv_bench *b) { return ladder_of(b, false); }
kv_status ladder_fp8(kv_bench *b) { return ladder_of(b, true); }

}  // namespace

int main(int argc, char **argv) {
  static const kv_bench_command commands[] = {{"bench", bench}, {"ladder", ladder}, {"ladder-fp8", ladder_fp8}, {nullptr, nullptr}};
  return kv_bench_main("gemm", commands, argc, argv);
}
