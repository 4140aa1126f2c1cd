/* gemm_driver.cu - standalone check and benchmark of the GEMM family's CUDA side, outside
 * the MPI job: every variant (kval-wgmma, kval-mma, cublas), precision and layout against the
 * fp64 cuBLAS reference of the same inputs, with poisoned (NaN) outputs and tail shapes; and
 * the three variants timed side by side with the same CUDA-event method (L2 flushed before
 * every repetition, median). Built and run by bench/gemm_device_run.sh.
 *   gemm_driver check     all variants x precisions x layouts x shapes (tails), beta 0 and not
 *   gemm_driver sanitize  a few small shapes of every kernel (for compute-sanitizer memcheck)
 *   gemm_driver race      two small shapes of the kval kernels (for racecheck, which is slow)
 *   gemm_driver bench     the timing table (validated once per row)
 * Exit 0 when every check passed, 1 otherwise, 77 without a GPU. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "families/gemm/gemm_api.h"
#include "families/gemm/gemm_wgmma.cuh"
#include "numerics/rng.h"

typedef kv_status (*launcher)(const kv_gemm_problem *p, cudaStream_t s);
static kv_status run_wgmma(const kv_gemm_problem *p, cudaStream_t s) { return kv_gemm_run(KV_GEMM_WGMMA, p, s); }
static kv_status run_mma(const kv_gemm_problem *p, cudaStream_t s) { return kv_gemm_run(KV_GEMM_MMA, p, s); }
static kv_status run_cublas(const kv_gemm_problem *p, cudaStream_t s) { return kv_gemm_run(KV_GEMM_CUBLAS, p, s); }
static const launcher variant_run[] = {run_wgmma, run_mma, run_cublas};
static const char *const variant_names[] = {"kval-wgmma", "kval-mma", "cublas"};

#define DRV(call)                                     \
  do {                                                \
    if ((call) != KV_OK) {                            \
      fprintf(stderr, "driver: %s failed\n", #call);  \
      exit(2);                                        \
    }                                                 \
  } while (0)

/* Uniform values in [-1, 1) from the shared counter-based hash, rounded to T. */
template <class T> __global__ void gen_uniform(T *x, size_t n, uint64_t key) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float v = (float)kv_base_value(key, i, KV_DIST_UNIFORM);
    if constexpr (std::is_same<T, __half>::value)
      x[i] = __float2half_rn(v);
    else
      x[i] = __float2bfloat16_rn(v);
  }
}

static void fill(void *x, size_t n, kv_dtype st, uint64_t key) {
  const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 16384);
  if (st == KV_FP16)
    gen_uniform<__half><<<blocks, 256>>>((__half *)x, n, key);
  else
    gen_uniform<__nv_bfloat16><<<blocks, 256>>>((__nv_bfloat16 *)x, n, key);
  DRV(CHECK_LAUNCH("gen_uniform"));
}

static double to_double(uint16_t bits, kv_dtype st) {
  if (st == KV_FP16) {
    __half_raw r;
    r.x = bits;
    return (double)__half2float(__half(r));
  }
  __nv_bfloat16_raw r;
  r.x = bits;
  return (double)__bfloat162float(__nv_bfloat16(r));
}

/* Device buffers, grown to the largest problem seen. */
struct bufs {
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  double *ref = nullptr, *mag = nullptr;
  size_t cap[6] = {0, 0, 0, 0, 0, 0};
};

static void ensure(void **p, size_t *cap, size_t bytes) {
  if (*cap >= bytes) return;
  if (*p) DRV(CHECK_CUDA(cudaFree(*p)));
  DRV(CHECK_CUDA(cudaMalloc(p, bytes)));
  *cap = bytes;
}

static void setup(bufs *B, const kv_gemm_problem &p) {
  const size_t mk = (size_t)p.m * p.k, kn = (size_t)p.k * p.n, mn = (size_t)p.m * p.n;
  ensure(&B->a, &B->cap[0], mk * 2);
  ensure(&B->b, &B->cap[1], kn * 2);
  ensure(&B->c, &B->cap[2], mn * 2);
  ensure(&B->d, &B->cap[3], mn * 2);
  ensure((void **)&B->ref, &B->cap[4], mn * sizeof(double));
  ensure((void **)&B->mag, &B->cap[5], mn * sizeof(double));
}

struct verdict {
  double rel_l2, worst; /* ||d-ref||/||ref||, max |d-ref| / bound */
  size_t nonfinite;
  bool launched, pass;
};

/* Fresh inputs, poisoned D, one launch, fp64 reference, element and norm checks. */
/* p's buffers become B's; they keep the inputs for timing afterwards. */
static verdict validate(launcher run, kv_gemm_problem &p, bufs *B, uint64_t key) {
  setup(B, p);
  const size_t mk = (size_t)p.m * p.k, kn = (size_t)p.k * p.n, mn = (size_t)p.m * p.n;
  fill(B->a, mk, p.prec.storage, kv_mix64(key * 3 + 0));
  fill(B->b, kn, p.prec.storage, kv_mix64(key * 3 + 1));
  fill(B->c, mn, p.prec.storage, kv_mix64(key * 3 + 2));
  p.a = B->a;
  p.b = B->b;
  p.c = p.beta != 0.0 ? B->c : nullptr;
  p.d = B->d;
  DRV(CHECK_CUDA(cudaMemset(B->d, 0xff, mn * 2))); /* NaN in fp16 and bf16 */
  verdict r = {NAN, NAN, mn, false, false};
  if (run(&p, 0) != KV_OK) return r; /* reported; the context is still usable */
  r.launched = true;
  DRV(kv_gemm_reference(&p, B->ref, B->mag, 0));
  DRV(CHECK_CUDA(cudaDeviceSynchronize()));
  std::vector<uint16_t> d(mn);
  std::vector<double> ref(mn), mag(mn);
  DRV(CHECK_CUDA(cudaMemcpy(d.data(), B->d, mn * 2, cudaMemcpyDeviceToHost)));
  DRV(CHECK_CUDA(cudaMemcpy(ref.data(), B->ref, mn * 8, cudaMemcpyDeviceToHost)));
  DRV(CHECK_CUDA(cudaMemcpy(mag.data(), B->mag, mn * 8, cudaMemcpyDeviceToHost)));
  /* Bounds: output rounding 2 u_out |ref|, plus the accumulator: fp32 2 K 2^-23 |A||B| (worst
   * case, truncating adds), fp16/bf16 2 ceil(K/16) u_acc |A||B| (one rounding per k-step).
   * Norm: ||err|| / ||ref|| <= 4 u_out, plus 4 sqrt(ceil(K/16)) u_acc for fp16/bf16 accumulation. */
  const double u_out = kv_dtype_unit_roundoff(p.prec.storage), steps = ceil(p.k / 16.0);
  const double acc_bound = p.prec.accum == KV_FP32 ? 2.0 * p.k * ldexp(1.0, -23)
                                                   : 2.0 * steps * kv_dtype_unit_roundoff(p.prec.accum);
  const double norm_bound =
      4.0 * u_out + (p.prec.accum == KV_FP32 ? 0.0 : 4.0 * sqrt(steps) * kv_dtype_unit_roundoff(p.prec.accum));
  r.worst = 0.0;
  r.nonfinite = 0;
  double e2 = 0.0, r2 = 0.0;
  for (size_t i = 0; i < mn; ++i) {
    const double x = to_double(d[i], p.prec.storage);
    if (!isfinite(x)) {
      r.nonfinite++;
      continue;
    }
    const double err = fabs(x - ref[i]);
    e2 += err * err;
    r2 += ref[i] * ref[i];
    const double bound = 2.0 * u_out * fabs(ref[i]) + acc_bound * mag[i] + 1e-30;
    r.worst = std::max(r.worst, err / bound);
  }
  r.rel_l2 = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
  r.pass = r.nonfinite == 0 && r.worst <= 1.0 && r.rel_l2 <= norm_bound;
  return r;
}

static kv_gemm_problem problem(int m, int n, int k, const char *layout, kv_precision prec, double alpha,
                               double beta) {
  kv_gemm_problem p;
  memset(&p, 0, sizeof p);
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_t = layout[0] == 't';
  p.b_t = layout[1] == 't';
  p.prec = prec;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

static const kv_precision precisions[] = {{KV_FP16, KV_FP32}, {KV_BF16, KV_FP32}, {KV_FP16, KV_FP16},
                                          {KV_BF16, KV_BF16}};
static const char *const layouts[] = {"nn", "tn", "nt"};

static int n_pass, n_fail, n_skip;

static void check_one(kv_gemm_variant v, kv_gemm_problem p, bufs *B, uint64_t key) {
  char prec[32];
  kv_precision_format(p.prec, prec, sizeof prec);
  if (kv_gemm_unsupported(v, &p)) {
    n_skip++;
    return;
  }
  const verdict r = validate(variant_run[v], p, B, key);
  (r.pass ? n_pass : n_fail)++;
  printf("%-4s %-10s %-9s %s %5dx%5dx%5d a=%g b=%g  rel_l2 %.2e  worst/bound %.3f  nonfinite %zu\n",
         r.pass ? "ok" : (r.launched ? "FAIL" : "FAIL launch"), variant_names[v], prec, p.a_t ? (p.b_t ? "tt" : "tn") : (p.b_t ? "nt" : "nn"), p.m,
         p.n, p.k, p.alpha, p.beta, r.rel_l2, r.worst, r.nonfinite);
  fflush(stdout);
}

/* For racecheck: the hand-written kernels only, the pipelined and the serialised paths. */
static int run_race(void) {
  static const int shapes[][3] = {{127, 129, 65}, {264, 392, 136}, {200, 251, 72}};
  const kv_precision precs[] = {{KV_FP16, KV_FP32}, {KV_BF16, KV_BF16}};
  bufs B;
  uint64_t key = 500;
  for (const auto &s : shapes)
    for (const kv_precision &prec : precs)
      for (const char *lay : layouts)
        for (int v = 0; v < 2; ++v)
          check_one((kv_gemm_variant)v, problem(s[0], s[1], s[2], lay, prec, 1.0, 0.0), &B, key++);
  printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
  return n_fail == 0 ? 0 : 1;
}

static int run_checks(bool small) {
  /* tails in every dimension; 200x251x72: N odd (kval-wgmma nt stores from registers);
   * 2056x4104x520: more than one wave of kval-wgmma's large tiles, with tails */
  static const int shapes_full[][3] = {{1, 1, 1},       {8, 8, 8},          {127, 129, 65},   {256, 256, 256},
                                       {264, 392, 136}, {200, 251, 72},     {1000, 1000, 1000}, {777, 555, 333},
                                       {130, 520, 4104}, {16, 4096, 1024}, {2048, 2048, 2048}, {2056, 4104, 520}};
  static const int shapes_small[][3] = {{8, 8, 8}, {127, 129, 65}, {264, 392, 136}, {200, 251, 72}};
  const int (*shapes)[3] = small ? shapes_small : shapes_full;
  const int n_shapes = small ? 4 : 12;
  bufs B;
  uint64_t key = 1;
  for (int s = 0; s < n_shapes; ++s)
    for (const kv_precision &prec : precisions)
      for (const char *lay : layouts)
        for (int v = 0; v < 3; ++v) {
          check_one((kv_gemm_variant)v, problem(shapes[s][0], shapes[s][1], shapes[s][2], lay, prec, 1.0, 0.0), &B,
                    key++);
          if (!small || s == 2)
            check_one((kv_gemm_variant)v,
                      problem(shapes[s][0], shapes[s][1], shapes[s][2], lay, prec, 0.75, -1.25), &B, key++);
        }
  /* resources of the kernel each variant launches (large and small-problem configurations) */
  for (const kv_precision &prec : precisions)
    for (int size : {4096, 256})
      for (int v = 0; v < 3; ++v) {
        const kv_gemm_problem p = problem(size, size, size, "nn", prec, 1.0, 0.0);
        kv_kernel_resources r;
        if (kv_gemm_unsupported((kv_gemm_variant)v, &p)) continue;
        char name[32];
        kv_precision_format(prec, name, sizeof name);
        if (kv_gemm_resources((kv_gemm_variant)v, &p, &r) != KV_OK) {
          n_fail++;
          printf("FAIL resources %s %s %d^3\n", variant_names[v], name, size);
          continue;
        }
        printf("resources %-10s %-9s %4d^3: %d registers, %d B shared, %d B local, %d blocks/SM\n", variant_names[v],
               name, size, r.registers, r.smem_bytes, r.local_bytes, r.occupancy);
      }
  printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
  return n_fail == 0 ? 0 : 1;
}

/* Median of `reps` event-timed launches, each after an L2 flush (a 256 MiB memset). */
static double time_ms(launcher run, const kv_gemm_problem &p, int reps, void *flush, size_t flush_bytes) {
  cudaEvent_t e0, e1;
  DRV(CHECK_CUDA(cudaEventCreate(&e0)));
  DRV(CHECK_CUDA(cudaEventCreate(&e1)));
  for (int i = 0; i < 3; ++i) DRV(run(&p, 0));
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    DRV(CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0)));
    DRV(CHECK_CUDA(cudaEventRecord(e0, 0)));
    DRV(run(&p, 0));
    DRV(CHECK_CUDA(cudaEventRecord(e1, 0)));
    DRV(CHECK_CUDA(cudaEventSynchronize(e1)));
    float ms;
    DRV(CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1)));
    t.push_back(ms);
  }
  DRV(CHECK_CUDA(cudaEventDestroy(e0)));
  DRV(CHECK_CUDA(cudaEventDestroy(e1)));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct bench_row {
  int m, n, k;
  const char *layout;
  kv_precision prec;
};

/* The Hopper ladder (REFERENCES.md) on bf16 8192^3 nn, fp32 accumulation: configurations of
 * the same kernel, each one step short of the shipped kv_wgmma_traits. */
template <class Tr> static kv_status ladder(const kv_gemm_problem *p, cudaStream_t s) {
  return kv_wgmma_launch<Tr, __nv_bfloat16, KV_GEMM_ACC_F32, 0, 0>(p, s);
}

static int run_ladder(bufs *B, void *flush, size_t flush_bytes) {
  struct step {
    const char *what;
    launcher run;
  };
  const step steps[] = {
      {"1 consumer wg (64x256), CTA per tile, register stores", ladder<kv_wgmma_config<1, 4, 16, 0, 0>>},
      {"2 consumer wg (128x256), CTA per tile, register stores", ladder<kv_wgmma_config<2, 4, 16, 0, 0>>},
      {"+ persistent, row-major tile order", ladder<kv_wgmma_config<2, 4, 1, 1, 0>>},
      {"+ grouped tile order", ladder<kv_wgmma_config<2, 4, 16, 1, 0>>},
      {"+ TMA-store epilogue, 3 stages (shipped)", ladder<kv_wgmma_traits>},
      {"1 consumer wg, persistent, TMA store (small-problem config)", ladder<kv_wgmma_small_traits>},
  };
  kv_gemm_problem p = problem(8192, 8192, 8192, "nn", kv_precision{KV_BF16, KV_FP32}, 1.0, 0.0);
  int fails = 0;
  printf("\n| ladder step (bf16 8192^3 nn) | median ms | TFLOP/s | rel_l2 | check |\n|---|---|---|---|---|\n");
  for (const step &st : steps) {
    const verdict vd = validate(st.run, p, B, 7777);
    fails += !vd.pass;
    if (!vd.launched) continue;
    const double ms = time_ms(st.run, p, 20, flush, flush_bytes);
    printf("| %s | %.4f | %.1f | %.1e | %s |\n", st.what, ms, 2.0 * 8192.0 * 8192.0 * 8192.0 / (ms * 1e-3) / 1e12,
           vd.rel_l2, vd.pass ? "ok" : "FAIL");
    fflush(stdout);
  }
  return fails;
}

static int run_bench(void) {
  const kv_precision f16 = {KV_FP16, KV_FP32}, bf16 = {KV_BF16, KV_FP32}, h16 = {KV_FP16, KV_FP16},
                     b16 = {KV_BF16, KV_BF16};
  const bench_row rows[] = {
      {4096, 4096, 4096, "nn", f16},  {4096, 4096, 4096, "nn", bf16}, {8192, 8192, 8192, "nn", f16},
      {8192, 8192, 8192, "nn", bf16}, {4096, 4096, 4096, "nn", h16},  {8192, 8192, 8192, "nn", h16},
      {2048, 2048, 2048, "nn", bf16}, {256, 256, 256, "nn", bf16},    {1024, 1024, 1024, "nn", h16},
      {4096, 4096, 4096, "nn", b16},  {8192, 8192, 8192, "tn", bf16}, {8192, 8192, 8192, "nt", bf16},
      {1024, 1024, 1024, "nn", f16},  {1024, 1024, 1024, "nn", bf16}, {16, 8192, 8192, "nn", f16},
      {16, 8192, 8192, "nn", bf16}};
  const size_t flush_bytes = (size_t)256 << 20;
  void *flush;
  DRV(CHECK_CUDA(cudaMalloc(&flush, flush_bytes)));
  bufs B;
  char line[256];
  uint64_t key = 1000;
  int fails = 0;
  printf("\n| shape | layout | precision | variant | median ms | TFLOP/s | vs cuBLAS | rel_l2 | check |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  for (const bench_row &r : rows) {
    double cublas_tf = NAN;
    for (int v = 2; v >= 0; --v) { /* cublas first: the ratio's denominator */
      kv_gemm_problem p = problem(r.m, r.n, r.k, r.layout, r.prec, 1.0, 0.0);
      char prec[32];
      kv_precision_format(r.prec, prec, sizeof prec);
      if (kv_gemm_unsupported((kv_gemm_variant)v, &p)) continue;
      const verdict vd = validate(variant_run[v], p, &B, key++);
      fails += !vd.pass;
      if (!vd.launched) continue;
      const double flops = 2.0 * r.m * (double)r.n * r.k;
      const int reps = flops > 1e11 ? 20 : 50;
      const double ms = time_ms(variant_run[v], p, reps, flush, flush_bytes);
      const double tf = flops / (ms * 1e-3) / 1e12;
      if (v == 2) cublas_tf = tf;
      snprintf(line, sizeof line, "| %dx%dx%d | %s | %s | %s | %.4f | %.1f | %.2f | %.1e | %s |\n", r.m, r.n, r.k,
               r.layout, prec, variant_names[v], ms, tf, tf / cublas_tf, vd.rel_l2, vd.pass ? "ok" : "FAIL");
      fputs(line, stdout);
      fflush(stdout);
    }
  }
  fails += run_ladder(&B, flush, flush_bytes);
  DRV(CHECK_CUDA(cudaFree(flush)));
  printf("%d validation failures in the benchmark rows\n", fails);
  return fails == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    fprintf(stderr, "gemm_driver: no GPU\n");
    return 77;
  }
  const char *mode = argc > 1 ? argv[1] : "check";
  if (strcmp(mode, "check") == 0) return run_checks(false);
  if (strcmp(mode, "sanitize") == 0) return run_checks(true);
  if (strcmp(mode, "race") == 0) return run_race();
  if (strcmp(mode, "bench") == 0) return run_bench();
  fprintf(stderr, "gemm_driver: mode '%s' is not check, sanitize, race or bench\n", mode);
  return 2;
}
