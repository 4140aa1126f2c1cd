/* norm_bench.cu - the layernorm and rmsnorm families' bench driver, on the bench harness
 * (bench/harness.h): every row is a kval case run, timed and validated as the job runs it.
 *   norm_bench [bench|configs|sweep|all] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * bench    LayerNorm and RMSNorm through the families' own dispatch (backend "kval": the
 *          configuration kv_norm_default_config chooses, printed beside it) at the shapes
 *          PyTorch's peers time (peers.py), fp16, bf16 and fp32 storage, fp32 accumulation
 * configs  at the same shapes every configuration of the KV_NORM_CONFIGS table (norm_limits.h)
 *          that holds the row, and the general path, each launched on the family's prepared
 *          problem (a launch override), named fast.tpr<T>.nv<V>, peeled.tpr<T>.nv<V>, general
 * sweep    the size buckets of kv_norm_choice: both norms, every storage type, rows of N whole
 *          16-byte vectors (N across the buckets' caps, kSweepVectors) with and without end
 *          elements, 128 MiB of input each: the family's choice (backend "kval") and every
 *          register-resident configuration that holds the row, so the table is checked
 *          against the configurations at every bucket (side_by_side.py --best --ratio-to kval)
 * all      every command in turn (the default). Exit 0 when every case passed, 1 otherwise, 77
 *          without a GPU. */
#include <stdio.h>
#include <string.h>

#include <new>

#include "bench/harness.h"
#include "families/norm/norm_api.h"

namespace {

const struct {
  long long rows;
  int hidden;
  const char *prec;
} kShapes[] = {{16384, 4096, "fp16:fp32"}, {16384, 4096, "bf16:fp32"}, {16384, 4096, "fp32:fp32"},
               {65536, 1024, "fp16:fp32"}, {65536, 1024, "bf16:fp32"}, {32768, 128, "fp16:fp32"},
               {4096, 16384, "fp16:fp32"}, {4096, 16384, "bf16:fp32"}, {262144, 256, "fp16:fp32"},
               {8192, 8192, "bf16:fp32"},  {16384, 4100, "fp16:fp32"}, {16384, 4100, "bf16:fp32"},
               {16384, 4097, "fp16:fp32"}, {16384, 4097, "bf16:fp32"}, {16384, 11009, "fp16:fp32"},
               {16384, 11009, "bf16:fp32"}, {16384, 4099, "fp32:fp32"}, {65536, 1025, "fp16:fp32"},
               {32768, 2047, "bf16:fp32"}, {16384, 6145, "fp16:fp32"}, {8192, 14337, "bf16:fp32"},
               {16384, 2051, "fp32:fp32"}, {8192, 8195, "fp32:fp32"}};
const char *const kNorms[] = {"layernorm", "rmsnorm"};
/* sweep: whole vectors per row, around and at the caps of kv_norm_choice's buckets */
const int kSweepVectors[] = {48, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024, 1280, 1536, 1792, 2048, 3072, 4096};
const char *const kSweepPrecisions[] = {"fp16:fp32", "bf16:fp32", "fp32:fp32"};

/* Every configuration index of the table, and -1 (the general path), as launch arguments. */
struct config_ids {
  int id[KV_NORM_N_CONFIGS + 1];
  config_ids() {
    for (int c = 0; c < KV_NORM_N_CONFIGS; ++c) id[c] = c;
    id[KV_NORM_N_CONFIGS] = -1;
  }
};
const config_ids kConfigs;

/* A problem of the shape without tensors (cudaMalloc'd tensors are 16-byte aligned), to ask
 * which configurations hold its rows. */
kv_norm_problem shape_problem(const char *norm, int hidden, const char *prec) {
  kv_norm_problem pr = kv_norm_problem();
  kv_precision p;
  kv_precision_parse(prec, &p);
  pr.p.hidden = hidden;
  pr.layernorm = strcmp(norm, "layernorm") == 0;
  pr.storage = p.storage;
  pr.accum = p.accum;
  return pr;
}

void config_name(int config, char *buf, size_t n) {
  const kv_norm_config c = kv_norm_config_at(config);
  if (config < 0) snprintf(buf, n, "general");
  else snprintf(buf, n, "%s.tpr%d.nv%d", c.kind == KV_NORM_PEELED ? "peeled" : "fast", c.tpr, c.nv);
}

kv_status run_shape(kv_bench *b, const char *norm, const char *prec, long long rows, int hidden, const char *backend,
                    const kv_cuda_launch_override *ovr) {
  char spec[128];
  snprintf(spec, sizeof spec, "precision=%s rows=%lld hidden=%d", prec, rows, hidden);
  return kv_bench_case(b, norm, spec, backend, ovr);
}

kv_status run(kv_bench *b, const char *norm, int shape, const char *backend, const kv_cuda_launch_override *ovr) {
  return run_shape(b, norm, kShapes[shape].prec, kShapes[shape].rows, kShapes[shape].hidden, backend, ovr);
}

kv_status bench(kv_bench *b) {
  for (int s = 0; s < (int)(sizeof kShapes / sizeof kShapes[0]); ++s)
    for (const char *norm : kNorms) {
      const kv_norm_problem pr = shape_problem(norm, kShapes[s].hidden, kShapes[s].prec);
      char name[32];
      config_name(kv_norm_default_config(&pr), name, sizeof name);
      printf("%s %s %lldx%d: the family runs %s\n", norm, kShapes[s].prec, kShapes[s].rows, kShapes[s].hidden, name);
      KV_TRY(run(b, norm, s, nullptr, nullptr));
    }
  return KV_OK;
}

/* ---- every configuration: the family's problem prepared again for it ---- */

kv_status config_prepare(const void *problem, const void *arg, void **state, const char **why) {
  kv_norm_problem *pr = new (std::nothrow) kv_norm_problem(*static_cast<const kv_norm_problem *>(problem));
  KV_TRY(CHECK_ALLOC(pr));
  if (kv_norm_prepare(pr, *static_cast<const int *>(arg), why) != KV_OK) {
    delete pr;
    return KV_ERR;
  }
  *state = pr;
  return KV_OK;
}

kv_status config_launch(const void *state, void *stream) {
  return kv_norm_launch(static_cast<const kv_norm_problem *>(state), static_cast<cudaStream_t>(stream));
}

kv_status config_resources(const void *state, kv_kernel_resources *r) {
  return kv_norm_resources(static_cast<const kv_norm_problem *>(state), r);
}

void config_release(void *state) { delete static_cast<kv_norm_problem *>(state); }

/* Every configuration that holds the shape's rows, the general path too when `general`. */
kv_status every_config(kv_bench *b, const char *norm, const char *prec, long long rows, int hidden, bool general) {
  const kv_norm_problem pr = shape_problem(norm, hidden, prec);
  for (const int &config : kConfigs.id) {
    if (config >= 0 ? !kv_norm_config_fits(&pr, config) : !general) continue;
    const kv_cuda_launch_override ovr = {config_prepare, config_launch, config_resources, config_release, &config};
    char name[32];
    config_name(config, name, sizeof name);
    KV_TRY(run_shape(b, norm, prec, rows, hidden, name, &ovr));
  }
  return KV_OK;
}

kv_status configs(kv_bench *b) {
  for (int s = 0; s < (int)(sizeof kShapes / sizeof kShapes[0]); ++s)
    for (const char *norm : kNorms)
      KV_TRY(every_config(b, norm, kShapes[s].prec, kShapes[s].rows, kShapes[s].hidden, true));
  return KV_OK;
}

kv_status sweep(kv_bench *b) {
  for (const char *prec : kSweepPrecisions)
    for (const int nvec : kSweepVectors)
      for (const int ends : {0, 1})
        for (const char *norm : kNorms) {
          const kv_norm_problem probe = shape_problem(norm, 1, prec);
          const int vec = kv_norm_vec_of(probe.storage), hidden = nvec * vec + ends;
          const long long rows = (128LL << 20) / ((long long)hidden * kv_dtype_size(probe.storage));
          KV_TRY(run_shape(b, norm, prec, rows, hidden, nullptr, nullptr));
          KV_TRY(every_config(b, norm, prec, rows, hidden, false));
        }
  return KV_OK;
}

}  // namespace

int main(int argc, char **argv) {
  static const kv_bench_command commands[] = {{"bench", bench}, {"configs", configs}, {"sweep", sweep}, {nullptr, nullptr}};
  return kv_bench_main("layernorm", commands, argc, argv);
}
