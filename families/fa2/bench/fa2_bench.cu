/* fa2_driver.cu - standalone driver of the FlashAttention-2 forward kernels, kval-mma and
 * kval-wgmma (the objects kval links: fa2_d<D>.cu, fa2_wgmma_d<D>.cu, fa2_dispatch.cu,
 * fa2_reference.cu), without kval's case machinery; every command covers both variants
 * (kval-wgmma: head dims 64 and 128, fp32 accumulation):
 *   fa2_driver check      every head dim x precision x causal on tail, cross-attention, fully
 *                         masked and tiny shapes against the GPU fp64 reference (kval's
 *                         tolerance bound, poisoned outputs, guard bands), the GPU reference
 *                         itself against a CPU fp64 evaluation of sampled rows, and the
 *                         reference's time at seqlen 16384 x batch 2 x 16 heads x d 128
 *   fa2_driver sanitize   small shapes, kernel only (for compute-sanitizer)
 *   fa2_driver info       registers, local memory, shared memory, blocks/SM per instantiation
 *   fa2_driver bench [csv]  TFLOP/s per shape (B * L = 32768, 16 heads), CUDA events around
 *                         each launch, L2 flushed by a 256 MB memset before each, median of 25
 *   fa2_driver variants [csv]  the same timing for alternative tile configurations
 *                         (families/fa2/bench/fa2_variants.cu), to choose fa2_blocks.h
 * Exit status 0 when every check passed, 1 otherwise. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "families/fa2/fa2_api.h"
#include "families/fa2/bench/fa2_variants.h"
#include "numerics/rng.h"

#define DRV_CHECK(call)                                                                               \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_),        \
              cudaGetErrorString(e_));                                                                \
      exit(2);                                                                                        \
    }                                                                                                 \
  } while (0)

namespace {

const double kLog2e = 1.4426950408889634;

struct prec {
  const char *name;
  int store, acc;
  double u_out, u_acc;
};
const prec kPrecs[] = {{"fp16:fp32", KV_FA2_FP16, KV_FA2_ACC_F32, 0x1p-11, 0x1p-24},
                       {"fp16:fp16", KV_FA2_FP16, KV_FA2_ACC_F16, 0x1p-11, 0x1p-11},
                       {"bf16:fp32", KV_FA2_BF16, KV_FA2_ACC_F32, 0x1p-8, 0x1p-24},
                       {"bf16:bf16", KV_FA2_BF16, KV_FA2_ACC_BF16, 0x1p-8, 0x1p-8}};

const int kVariants[] = {KV_FA2_VARIANT_MMA, KV_FA2_VARIANT_WGMMA};
const char *variant_name(int v) { return v == KV_FA2_VARIANT_WGMMA ? "kval-wgmma" : "kval-mma"; }
bool variant_has(int v, int d, const prec &p) {
  return kv_fa2_variant_unsupported(v, d, p.store, p.acc) == nullptr;
}

struct shape {
  int d, batch, heads, lq, lk, causal;
  int dist;          /* KV_DIST_NORMAL or KV_DIST_UNIFORM */
  double qk_scale;   /* 4 for large logits */
};

/* ---- inputs ---- */

__global__ void gen_kernel(uint16_t *out, size_t n, uint64_t key, int dist, double scale, int store) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const double v = kv_gen_value(key, i, dist, scale, 0.0);
    out[i] = store == KV_FA2_FP16 ? __half_as_ushort(__double2half(v)) : __bfloat16_as_ushort(__double2bfloat16(v));
  }
}

void generate(uint16_t *d, size_t n, uint64_t key, int dist, double scale, int store) {
  gen_kernel<<<4096, 256>>>(d, n, key, dist, scale, store);
  DRV_CHECK(cudaGetLastError());
}

double to_double(uint16_t bits, int store) {
  if (store == KV_FA2_FP16) {
    __half_raw r;
    r.x = bits;
    return (double)__half2float(__half(r));
  }
  uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* NaN of the storage type: an element the kernel does not write stays NaN and fails. */
uint16_t nan_bits(int store) { return store == KV_FA2_FP16 ? 0x7e00 : 0x7fc0; }

struct buffers {
  uint16_t *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *lse = nullptr;
  double *ref = nullptr, *mag = nullptr, *lse_ref = nullptr;
  size_t nq = 0, nk = 0, rows = 0;
  static constexpr size_t kGuard = 4096;
  void alloc(const shape &s, bool with_ref) {
    nq = (size_t)s.batch * s.lq * s.heads * s.d;
    nk = (size_t)s.batch * s.lk * s.heads * s.d;
    rows = (size_t)s.batch * s.lq * s.heads;
    DRV_CHECK(cudaMalloc(&q, 2 * std::max<size_t>(nq, 1)));
    DRV_CHECK(cudaMalloc(&k, 2 * std::max<size_t>(nk, 1)));
    DRV_CHECK(cudaMalloc(&v, 2 * std::max<size_t>(nk, 1)));
    DRV_CHECK(cudaMalloc(&o, 2 * (nq + kGuard)));
    DRV_CHECK(cudaMalloc(&lse, 4 * (rows + kGuard)));
    if (with_ref) {
      DRV_CHECK(cudaMalloc(&ref, 8 * std::max<size_t>(nq, 1)));
      DRV_CHECK(cudaMalloc(&mag, 8 * std::max<size_t>(nq, 1)));
      DRV_CHECK(cudaMalloc(&lse_ref, 8 * std::max<size_t>(rows, 1)));
    }
  }
  ~buffers() {
    void *all[] = {q, k, v, o, lse, ref, mag, lse_ref};
    for (void *p : all)
      if (p) cudaFree(p);
  }
};

kv_fa2_args args_of(const shape &s, const buffers &b) {
  kv_fa2_args a;
  a.q = b.q;
  a.k = b.k;
  a.v = b.v;
  a.o = b.o;
  a.lse = b.lse;
  a.batch = s.batch;
  a.heads = s.heads;
  a.seqlen_q = s.lq;
  a.seqlen_k = s.lk;
  const double scale = 1.0 / sqrt((double)s.d);
  a.scale = (float)scale;
  a.scale_log2 = (float)(scale * kLog2e);
  return a;
}

/* rho of families/fa2.c (kv_fa2_mag_rho): u_storage / (u_acc sqrt(max(d, seqlen_k))) */
double rho_of(const shape &s, const prec &p) {
  return p.u_out / (p.u_acc * sqrt((double)std::max(s.d, s.lk)));
}

/* ---- the CPU fp64 definition (families/fa2_ref.c) of one row, to check the GPU reference ---- */
double cpu_row(const shape &s, const prec &p, const std::vector<uint16_t> &q, const std::vector<uint16_t> &k,
               const std::vector<uint16_t> &v, size_t r, double *o, double *mag) {
  const long long h = r % s.heads, i = (r / s.heads) % s.lq, b = r / ((size_t)s.heads * s.lq);
  const long long last = s.causal ? i + s.lk - s.lq : s.lk - 1, n = std::min<long long>(last + 1, s.lk);
  const double scale = 1.0 / sqrt((double)s.d), rho = rho_of(s, p);
  for (int d = 0; d < s.d; ++d) o[d] = mag[d] = 0.0;
  if (n <= 0) return -INFINITY;
  auto at = [&](const std::vector<uint16_t> &t, long long len, long long row, int d) {
    return to_double(t[(((size_t)b * len + row) * s.heads + h) * s.d + d], p.store);
  };
  std::vector<double> sc(n), ab(n);
  double m = -INFINITY;
  for (long long j = 0; j < n; ++j) {
    double dot = 0.0, adot = 0.0;
    for (int d = 0; d < s.d; ++d) {
      const double x = at(q, s.lq, i, d) * at(k, s.lk, j, d);
      dot += x;
      adot += fabs(x);
    }
    sc[j] = scale * dot;
    ab[j] = scale * adot;
    m = std::max(m, sc[j]);
  }
  double l = 0.0;
  for (long long j = 0; j < n; ++j) {
    const double e = exp(sc[j] - m), pm = e * (1.0 + ab[j] + rho);
    l += e;
    for (int d = 0; d < s.d; ++d) {
      o[d] += e * at(v, s.lk, j, d);
      mag[d] += pm * fabs(at(v, s.lk, j, d));
    }
  }
  for (int d = 0; d < s.d; ++d) o[d] /= l, mag[d] /= l;
  return m + log(l);
}

/* ---- one correctness case ---- */
struct outcome {
  double ratio = 0, rel_l2 = 0, lse_err = 0, ref_xcheck = 0, ref_ms = 0;
  size_t bad = 0;
  bool pass = false;
};

outcome run_case(int variant, const shape &s, const prec &p, uint64_t seed, bool xcheck) {
  outcome res;
  buffers b;
  b.alloc(s, true);
  const uint64_t key = kv_mix64(seed);
  generate(b.q, b.nq, kv_stream_key(key, 1, 0), s.dist, s.qk_scale, p.store);
  generate(b.k, b.nk, kv_stream_key(key, 1, 1), s.dist, s.qk_scale, p.store);
  generate(b.v, b.nk, kv_stream_key(key, 1, 2), s.dist, 1.0, p.store);
  std::vector<uint16_t> o(b.nq + b.kGuard, nan_bits(p.store));
  std::vector<float> lse(b.rows + b.kGuard, NAN);
  DRV_CHECK(cudaMemcpy(b.o, o.data(), 2 * o.size(), cudaMemcpyHostToDevice));
  DRV_CHECK(cudaMemcpy(b.lse, lse.data(), 4 * lse.size(), cudaMemcpyHostToDevice));
  const kv_fa2_args a = args_of(s, b);
  const char *why = nullptr;
  cudaError_t e = kv_fa2_variant_forward(variant, a, s.d, p.store, p.acc, s.causal, 0, &why);
  if (e != cudaSuccess) {
    fprintf(stderr, "launch: %s %s\n", cudaGetErrorName(e), why ? why : "");
    exit(2);
  }
  DRV_CHECK(cudaDeviceSynchronize());
  kv_fa2_ref_args r;
  r.q = b.q;
  r.k = b.k;
  r.v = b.v;
  r.store = p.store;
  r.batch = s.batch;
  r.heads = s.heads;
  r.seqlen_q = s.lq;
  r.seqlen_k = s.lk;
  r.headdim = s.d;
  r.causal = s.causal;
  r.scale = 1.0 / sqrt((double)s.d);
  r.rho = rho_of(s, p);
  r.ref = b.ref;
  r.mag = b.mag;
  r.lse = b.lse_ref;
  char err[512];
  const auto t0 = std::chrono::steady_clock::now();
  if (kv_fa2_reference_run(r, 0, err, sizeof err) != 0) {
    fprintf(stderr, "reference: %s\n", err);
    exit(2);
  }
  res.ref_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> ref(b.nq), mag(b.nq), lref(b.rows);
  DRV_CHECK(cudaMemcpy(o.data(), b.o, 2 * o.size(), cudaMemcpyDeviceToHost));
  DRV_CHECK(cudaMemcpy(lse.data(), b.lse, 4 * lse.size(), cudaMemcpyDeviceToHost));
  DRV_CHECK(cudaMemcpy(ref.data(), b.ref, 8 * b.nq, cudaMemcpyDeviceToHost));
  DRV_CHECK(cudaMemcpy(mag.data(), b.mag, 8 * b.nq, cudaMemcpyDeviceToHost));
  DRV_CHECK(cudaMemcpy(lref.data(), b.lse_ref, 8 * b.rows, cudaMemcpyDeviceToHost));

  /* kval's bound: 2 u_out |ref| + 2 sqrt(K) u_acc mag + smallest subnormal */
  const double K = std::max(s.d, s.lk);
  const double floor_abs = 2.0 * p.u_out * (p.store == KV_FA2_FP16 ? 0x1p-14 : 0x1p-126);
  double num = 0, den = 0;
  for (size_t i = 0; i < b.nq; ++i) {
    const double x = to_double(o[i], p.store), err_i = fabs(x - ref[i]);
    const double bound = 2.0 * p.u_out * fabs(ref[i]) + 2.0 * sqrt(K) * p.u_acc * mag[i] + floor_abs;
    if (!(err_i <= bound)) ++res.bad;
    if (std::isfinite(err_i)) res.ratio = std::max(res.ratio, err_i / bound);
    else res.ratio = INFINITY;
    num += (x - ref[i]) * (x - ref[i]);
    den += ref[i] * ref[i];
  }
  res.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
  for (size_t i = b.nq; i < o.size(); ++i)
    if (o[i] != nan_bits(p.store)) ++res.bad; /* written past the end */
  /* LSE: fp32 sum over seqlen_k terms and the score error of the accumulator */
  const double a_max = (1.0 / sqrt((double)s.d)) * s.d * s.qk_scale * s.qk_scale * 3.5 * 3.5;
  const double lse_tol = 4.0 * sqrt((double)s.d) * p.u_acc * a_max + 8.0 * sqrt((double)s.lk) * 0x1p-24 + 1e-5;
  for (size_t i = 0; i < b.rows; ++i) {
    const double d = (std::isinf(lref[i]) && lse[i] == (float)lref[i]) ? 0.0 : fabs((double)lse[i] - lref[i]);
    if (!(d <= lse_tol * (1.0 + fabs(lref[i])))) ++res.bad;
    res.lse_err = std::isfinite(d) ? std::max(res.lse_err, d) : INFINITY;
  }
  for (size_t i = b.rows; i < lse.size(); ++i)
    if (!std::isnan(lse[i])) ++res.bad;

  if (xcheck) { /* the GPU reference against the CPU definition on sampled rows */
    std::vector<uint16_t> hq(b.nq), hk(b.nk), hv(b.nk);
    DRV_CHECK(cudaMemcpy(hq.data(), b.q, 2 * b.nq, cudaMemcpyDeviceToHost));
    DRV_CHECK(cudaMemcpy(hk.data(), b.k, 2 * b.nk, cudaMemcpyDeviceToHost));
    DRV_CHECK(cudaMemcpy(hv.data(), b.v, 2 * b.nk, cudaMemcpyDeviceToHost));
    std::vector<double> co(s.d), cm(s.d);
    const size_t picks[] = {0, b.rows / 3, b.rows / 2, b.rows - 1};
    for (size_t r0 : picks) {
      const double cl = cpu_row(s, p, hq, hk, hv, r0, co.data(), cm.data());
      for (int d = 0; d < s.d; ++d) {
        const size_t i = r0 * s.d + d;
        /* relative to the magnitude term, which bounds the cancellation in o */
        res.ref_xcheck = std::max(res.ref_xcheck, fabs(co[d] - ref[i]) / (fabs(co[d]) + cm[d] + 1e-300));
        res.ref_xcheck = std::max(res.ref_xcheck, fabs(cm[d] - mag[i]) / (cm[d] + 1e-300));
      }
      if (!(std::isinf(cl) && std::isinf(lref[r0]) && cl == lref[r0]))
        res.ref_xcheck = std::max(res.ref_xcheck, fabs(cl - lref[r0]) / (fabs(cl) + 1.0));
    }
    if (!(res.ref_xcheck <= 1e-9)) ++res.bad;
  }
  res.pass = res.bad == 0;
  return res;
}

int cmd_check() {
  std::vector<shape> shapes;
  const int dims[] = {32, 64, 96, 128, 256};
  for (int d : dims)
    for (int c = 0; c < 2; ++c) {
      shapes.push_back({d, 2, 3, 257, 257, c, KV_DIST_NORMAL, 1.0});  /* tails in both */
      shapes.push_back({d, 1, 2, 256, 384, c, KV_DIST_NORMAL, 1.0});  /* whole tiles, cross */
      shapes.push_back({d, 1, 2, 100, 333, c, KV_DIST_UNIFORM, 1.0}); /* seqlen_k > seqlen */
      shapes.push_back({d, 2, 1, 333, 100, c, KV_DIST_NORMAL, 1.0});  /* fully masked rows */
      shapes.push_back({d, 1, 1, 1, 1, c, KV_DIST_NORMAL, 1.0});
      shapes.push_back({d, 1, 2, 1, 1000, c, KV_DIST_NORMAL, 1.0});
      shapes.push_back({d, 1, 2, 700, 1, c, KV_DIST_NORMAL, 1.0});
      shapes.push_back({d, 1, 2, 300, 300, c, KV_DIST_NORMAL, 4.0}); /* large logits */
      shapes.push_back({d, 2, 2, 1000, 1100, c, KV_DIST_NORMAL, 1.0}); /* many tiles: rings wrap */
    }
  int failed = 0, n = 0;
  uint64_t seed = 1;
  printf("%-10s %-4s %-10s %-6s %-22s %-9s %-10s %-10s %-10s %s\n", "variant", "d", "precision", "causal", "BxHxLqxLk",
         "max/bnd", "relL2", "lse_err", "ref_xchk", "verdict");
  for (int v : kVariants)
    for (const shape &s : shapes)
      for (const prec &p : kPrecs) {
        if (!variant_has(v, s.d, p)) continue;
        const bool xcheck = (size_t)s.lq * s.lk * s.d <= 40000000 && &p == &kPrecs[0] && v == KV_FA2_VARIANT_MMA;
        const outcome r = run_case(v, s, p, seed++, xcheck);
        ++n;
        failed += !r.pass;
        char dims_s[64];
        snprintf(dims_s, sizeof dims_s, "%dx%dx%dx%d%s", s.batch, s.heads, s.lq, s.lk, s.qk_scale > 1 ? "L" : "");
        printf("%-10s %-4d %-10s %-6d %-22s %-9.3f %-10.2e %-10.2e %-10.1e %s\n", variant_name(v), s.d, p.name,
               s.causal, dims_s, r.ratio, r.rel_l2, r.lse_err, xcheck ? r.ref_xcheck : 0.0, r.pass ? "pass" : "FAIL");
      }
  /* the reference at the size kval needs it fast */
  for (int c = 0; c < 2; ++c) {
    const shape big = {128, 2, 16, 16384, 16384, c, KV_DIST_NORMAL, 1.0};
    const outcome r = run_case(KV_FA2_VARIANT_MMA, big, kPrecs[0], seed++, false);
    ++n;
    failed += !r.pass;
    printf("%-4d %-10s %-6d %-22s %-9.3f %-10.2e %-10.2e reference %.0f ms %s\n", big.d, kPrecs[0].name, c,
           "2x16x16384x16384", r.ratio, r.rel_l2, r.lse_err, r.ref_ms, r.pass ? "pass" : "FAIL");
  }
  printf("check: %d of %d cases passed\n", n - failed, n);
  return failed ? 1 : 0;
}

/* Small shapes, every head dim and precision, kernel only: for compute-sanitizer. */
int cmd_sanitize() {
  const shape shapes[] = {{64, 1, 2, 130, 200, 0, KV_DIST_NORMAL, 1.0}, {64, 1, 2, 130, 200, 1, KV_DIST_NORMAL, 1.0},
                          {128, 2, 1, 300, 77, 1, KV_DIST_NORMAL, 1.0}, {128, 1, 1, 77, 300, 0, KV_DIST_NORMAL, 1.0},
                          {32, 1, 1, 129, 129, 1, KV_DIST_NORMAL, 1.0}, {96, 1, 1, 129, 50, 0, KV_DIST_NORMAL, 1.0},
                          {256, 1, 1, 65, 100, 1, KV_DIST_NORMAL, 1.0}, {256, 1, 1, 65, 33, 0, KV_DIST_NORMAL, 1.0}};
  uint64_t seed = 1000;
  int launched = 0;
  for (int v : kVariants)
    for (const shape &s : shapes)
      for (const prec &p : kPrecs) {
        if (!variant_has(v, s.d, p)) continue;
        buffers b;
        b.alloc(s, false);
        generate(b.q, b.nq, kv_stream_key(seed, 1, 0), s.dist, s.qk_scale, p.store);
        generate(b.k, b.nk, kv_stream_key(seed, 1, 1), s.dist, s.qk_scale, p.store);
        generate(b.v, b.nk, kv_stream_key(seed++, 1, 2), s.dist, 1.0, p.store);
        const char *why = nullptr;
        DRV_CHECK(kv_fa2_variant_forward(v, args_of(s, b), s.d, p.store, p.acc, s.causal, 0, &why));
        DRV_CHECK(cudaDeviceSynchronize());
        ++launched;
      }
  printf("sanitize: %d launches (both variants, every head dim and precision they have)\n", launched);
  return 0;
}

int cmd_info() {
  int dev;
  cudaDeviceProp prop;
  DRV_CHECK(cudaGetDevice(&dev));
  DRV_CHECK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s, %d SMs, %d KB shared/SM\n", prop.name, prop.multiProcessorCount,
         (int)(prop.sharedMemPerMultiprocessor / 1024));
  printf("%-10s %-4s %-10s %-6s %-8s %-5s %-6s %-9s %-8s %s\n", "variant", "d", "precision", "causal", "BMxBN", "regs",
         "local", "smem", "blk/SM", "warps/SM");
  const int dims[] = {32, 64, 96, 128, 256};
  int bad = 0;
  for (int v : kVariants)
    for (int d : dims)
      for (const prec &p : kPrecs)
        for (int c = 0; c < 2; ++c) {
          if (!variant_has(v, d, p)) continue;
          kv_fa2_kernel_info in;
          DRV_CHECK(kv_fa2_variant_resources(v, d, p.store, p.acc, c, &in, nullptr));
          char t[16];
          snprintf(t, sizeof t, "%dx%d", in.block_m, in.block_n);
          printf("%-10s %-4d %-10s %-6d %-8s %-5d %-6d %-9d %-8d %d\n", variant_name(v), d, p.name, c, t, in.registers,
                 in.local_bytes, in.smem_bytes, in.blocks_per_sm, in.blocks_per_sm * in.threads / 32);
          bad += in.local_bytes != 0;
        }
  return bad ? 1 : 0;
}

/* ---- timing ---- */

struct timer {
  void *flush = nullptr;
  size_t flush_bytes = 256u << 20;
  cudaEvent_t e0, e1;
  timer() {
    DRV_CHECK(cudaMalloc(&flush, flush_bytes));
    DRV_CHECK(cudaEventCreate(&e0));
    DRV_CHECK(cudaEventCreate(&e1));
  }
  ~timer() {
    cudaFree(flush);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  /* median milliseconds of `reps` launches, each after an L2 flush */
  template <class F>
  double median_ms(F &&launch, int reps) {
    for (int i = 0; i < 3; ++i) launch();
    std::vector<float> t(reps);
    for (int i = 0; i < reps; ++i) {
      DRV_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
      DRV_CHECK(cudaEventRecord(e0));
      launch();
      DRV_CHECK(cudaEventRecord(e1));
      DRV_CHECK(cudaEventSynchronize(e1));
      DRV_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
    }
    std::sort(t.begin(), t.end());
    return t[reps / 2];
  }
};

struct bench_case {
  int variant, d, lq, causal;
  const prec *p;
};

double flops_of(const shape &s) {
  const double f = 4.0 * s.batch * s.heads * (double)s.lq * s.lk * s.d;
  return s.causal ? f / 2 : f;
}

FILE *open_csv(const char *path) {
  if (!path) return nullptr;
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  fprintf(f, "backend,precision,headdim,seqlen,batch,heads,causal,ms,tflops\n");
  return f;
}

int cmd_bench(const char *csv_path) {
  std::vector<bench_case> cases;
  const int lens[] = {512, 1024, 2048, 4096, 8192, 16384};
  for (int v : kVariants)
    for (int d : {64, 128})
      for (int pi : {0, 2})
        for (int c = 0; c < 2; ++c)
          for (int l : lens) cases.push_back({v, d, l, c, &kPrecs[pi]});
  for (int d : {64, 128})
    for (int pi : {1, 3})
      for (int c = 0; c < 2; ++c) cases.push_back({KV_FA2_VARIANT_MMA, d, 4096, c, &kPrecs[pi]});
  for (int d : {32, 96, 256})
    for (int c = 0; c < 2; ++c) cases.push_back({KV_FA2_VARIANT_MMA, d, 4096, c, &kPrecs[0]});
  FILE *csv = open_csv(csv_path);
  timer tm;
  printf("%-10s %-10s %-4s %-6s %-6s %-6s %-9s %s\n", "backend", "precision", "d", "L", "B", "causal", "ms",
         "TFLOP/s");
  for (const bench_case &bc : cases) {
    const shape s = {bc.d, 32768 / bc.lq, 16, bc.lq, bc.lq, bc.causal, KV_DIST_NORMAL, 1.0};
    buffers b;
    b.alloc(s, false);
    generate(b.q, b.nq, kv_stream_key(7, bc.lq, 0), s.dist, 1.0, bc.p->store);
    generate(b.k, b.nk, kv_stream_key(7, bc.lq, 1), s.dist, 1.0, bc.p->store);
    generate(b.v, b.nk, kv_stream_key(7, bc.lq, 2), s.dist, 1.0, bc.p->store);
    const kv_fa2_args a = args_of(s, b);
    const double ms = tm.median_ms(
        [&] {
          DRV_CHECK(kv_fa2_variant_forward(bc.variant, a, s.d, bc.p->store, bc.p->acc, s.causal, 0, nullptr));
        },
        25);
    const double tf = flops_of(s) / (ms * 1e-3) / 1e12;
    const char *name = variant_name(bc.variant);
    printf("%-10s %-10s %-4d %-6d %-6d %-6d %-9.4f %.1f\n", name, bc.p->name, s.d, s.lq, s.batch, s.causal, ms, tf);
    if (csv)
      fprintf(csv, "%s,%s,%d,%d,%d,%d,%d,%.5f,%.2f\n", name, bc.p->name, s.d, s.lq, s.batch, s.heads, s.causal, ms,
              tf);
  }
  if (csv) fclose(csv);
  return 0;
}

int cmd_variants(const char *csv_path) {
  FILE *csv = open_csv(csv_path);
  timer tm;
  printf("%-22s %-10s %-4s %-6s %-6s %-9s %-8s %s\n", "variant", "precision", "d", "L", "causal", "ms", "TFLOP/s",
         "regs/local/blk");
  for (int vi = 0; vi < fa2_variant_count(); ++vi) {
    const fa2_variant &var = fa2_variants()[vi];
    for (int pi : {0, 2})
      for (int c = 0; c < 2; ++c)
        for (int l : {2048, 8192}) {
          const prec &p = kPrecs[pi];
          const shape s = {var.d, 32768 / l, 16, l, l, c, KV_DIST_NORMAL, 1.0};
          buffers b;
          b.alloc(s, false);
          generate(b.q, b.nq, kv_stream_key(9, l, 0), s.dist, 1.0, p.store);
          generate(b.k, b.nk, kv_stream_key(9, l, 1), s.dist, 1.0, p.store);
          generate(b.v, b.nk, kv_stream_key(9, l, 2), s.dist, 1.0, p.store);
          const kv_fa2_args a = args_of(s, b);
          kv_fa2_kernel_info in;
          DRV_CHECK(var.info(p.store, c, &in));
          const double ms = tm.median_ms([&] { DRV_CHECK(var.run(a, p.store, c, 0)); }, 25);
          const double tf = flops_of(s) / (ms * 1e-3) / 1e12;
          printf("%-22s %-10s %-4d %-6d %-6d %-9.4f %-8.1f %d/%d/%d\n", var.name, p.name, s.d, l, c, ms, tf,
                 in.registers, in.local_bytes, in.blocks_per_sm);
          if (csv)
            fprintf(csv, "%s,%s,%d,%d,%d,%d,%d,%.5f,%.2f\n", var.name, p.name, s.d, l, s.batch, s.heads, c, ms, tf);
        }
  }
  if (csv) fclose(csv);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  const char *arg = argc > 2 ? argv[2] : nullptr;
  if (cmd == "check") return cmd_check();
  if (cmd == "sanitize") return cmd_sanitize();
  if (cmd == "info") return cmd_info();
  if (cmd == "bench") return cmd_bench(arg);
  if (cmd == "variants") return cmd_variants(arg);
  fprintf(stderr, "usage: %s check | sanitize | info | bench [csv] | variants [csv]\n", argv[0]);
  return 2;
}
