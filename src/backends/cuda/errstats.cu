/* errstats_gpu.cu - kv_cuda_errstats: the statistics of kv_errstats_compute (numerics/errstats.c,
 * docs/NUMERICS.md section 3) computed on the device from the device-resident output, fp64
 * reference and magnitude term, so the reference never crosses PCIe. Every element is
 * classified exactly as on the host: the same bound (separately rounded products and sums,
 * no FMA contraction), ULP distance, storage rounding (the integer narrowing of halfprec.c)
 * and histogram bins (decade table made on the host with errstats.c's expressions). Hence
 * every maximum, count, bin and worst_index (first element with the largest bound ratio:
 * (ratio, position) pairs, ties to the lower position) equals the host's; the three sums use
 * a fixed two-level reduction (grid-stride loop, per-block tree, then one block over the
 * block partials in order): deterministic, but not the host's summation order. p99_ulp is
 * exact: a radix select of the k-th largest ULP error on the bits of the non-negative doubles
 * (monotone as unsigned integers), 8 bits per pass. */
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.cuh"
#include "backends/cuda/device.h"
#include "backends/cuda/watchdog.h"
#include "numerics/narrow.h"
#include "numerics/ulp.h"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1024;
constexpr int kRadixBits = 8, kRadixBins = 1 << kRadixBits;
constexpr int kHistExpMin = -40, kHistExpMax = 13; /* as errstats.c: 2^-40 < 1e-12, 2^13 < 1e4 < 2^14 */

/* errstats.c's histogram table: floor(log10(2^e)) and 1e-12 .. 1e5 */
struct hist_table {
  int decade_of_exp[kHistExpMax - kHistExpMin + 1];
  double pow10[KV_HIST_BINS - 2];
};

/* Accumulators of a set of elements; combine() is associative for everything but the sums. */
struct partial {
  double sum_abs, sum_err2, sum_ref2, sum_e, sum_s, sum_e2; /* the last three: the bias sums */
  double max_abs, max_rel, max_ulp, max_round;
  double worst_ratio;            /* -1 before the first element (every ratio is >= 0) */
  unsigned long long worst_pos;  /* position i of the worst element in the compared sequence */
  unsigned long long n_finite, n_nan, n_inf, n_bias;
};

/* The device scratch of one call: the results, and the radix select's state. */
struct scratch {
  hist_table tab;
  partial total;
  long long worst_index;
  unsigned long long hist[KV_HIST_BINS];
  unsigned long long radix_count[kRadixBins];
  unsigned long long prefix; /* bits of the k-th largest ULP error chosen so far */
  unsigned long long k;      /* rank still wanted among the elements matching the prefix */
};

struct params {
  const void *out;
  const int64_t *index;
  const double *ref, *mag;
  size_t n;
  double coef_ref, coef_mag, abs_floor, rel_floor;
  double bias_min; /* elements whose |ref| reaches it enter the bias sums (errstats.c) */
  const hist_table *tab;
};

__device__ __forceinline__ double half_bits_to_f64(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ double bf16_bits_to_f64(uint16_t h) { return __uint_as_float((unsigned)h << 16); }

/* Element j of an output of type T, widened exactly (kv_load). */
template <kv_dtype T>
__device__ __forceinline__ double load(const void *out, size_t j) {
  if (T == KV_FP16) return half_bits_to_f64(static_cast<const uint16_t *>(out)[j]);
  if (T == KV_BF16) return bf16_bits_to_f64(static_cast<const uint16_t *>(out)[j]);
  if (T == KV_FP32) return static_cast<const float *>(out)[j];
  return static_cast<const double *>(out)[j];
}

/* x rounded to T to nearest even and widened again (kv_round_f64). */
template <kv_dtype T>
__device__ __forceinline__ double round_to(double x) {
  const uint64_t u = (uint64_t)__double_as_longlong(x), mag = u & 0x7fffffffffffffffULL;
  if (T == KV_FP16) return half_bits_to_f64((uint16_t)(((u >> 48) & 0x8000u) | kv_narrow_bits(mag, 52, 1023, 10, 15)));
  if (T == KV_BF16) return bf16_bits_to_f64((uint16_t)(((u >> 48) & 0x8000u) | kv_narrow_bits(mag, 52, 1023, 7, 127)));
  if (T == KV_FP32)
    return __uint_as_float((unsigned)((u >> 32) & 0x80000000u) | (unsigned)kv_narrow_bits(mag, 52, 1023, 23, 127));
  return x;
}

/* kv_ulp_distance for finite a, b: |a - b| in ulps of T at b's magnitude. */
template <kv_dtype T>
__device__ __forceinline__ double ulp_distance(double a, double b) {
  return fabs(a - b) / kv_ulp_at(b, T);
}

/* errstats.c's hist_bin of a finite error. */
__device__ __forceinline__ int hist_bin(const hist_table *t, double err) {
  if (err == 0.0) return 0;
  if (err < t->pow10[0]) return 1;
  if (!(err < t->pow10[KV_HIST_BINS - 4])) return KV_HIST_BINS - 2;
  const int e = (int)((uint64_t)__double_as_longlong(err) >> 52) - 1023;
  int d = t->decade_of_exp[e - kHistExpMin] - KV_HIST_LOG10_MIN;
  d += err >= t->pow10[d + 1];
  return 2 + d;
}

/* One compared element, classified as in kv_errstats_compute. */
struct element {
  double err, aref, rel, ratio, ulp, dround;
  double e; /* (out - ref) / ulp(ref) */
  int bin, in_bias;
  int kind; /* 0 ordinary, 1 exact non-finite, 2 NaN output, 3 Inf output, 4 reference non-finite */
};

template <kv_dtype T>
__device__ __forceinline__ element classify(const params &p, size_t i) {
  const size_t j = p.index ? (size_t)p.index[i] : i;
  const double o = load<T>(p.out, j), r = p.ref[i];
  const double rounded = round_to<T>(r);
  element x;
  x.err = x.aref = x.rel = x.e = 0.0;
  x.in_bias = 0;
  if (isfinite(o) && isfinite(r)) {
    x.kind = 0;
    x.err = fabs(o - r);
    x.aref = fabs(r);
    const double bound = __dadd_rn(__dadd_rn(__dmul_rn(p.coef_ref, x.aref), __dmul_rn(p.coef_mag, p.mag[i])), p.abs_floor);
    x.ratio = x.err == 0.0 ? 0.0 : __ddiv_rn(x.err, bound);
    if (isnan(x.ratio)) x.ratio = INFINITY;
    x.ulp = ulp_distance<T>(o, r);
    x.bin = hist_bin(p.tab, x.err);
    x.rel = __ddiv_rn(x.err, x.aref > p.rel_floor ? x.aref : p.rel_floor);
    x.e = __ddiv_rn(__dsub_rn(o, r), kv_ulp_at(r, T));
    x.in_bias = x.aref >= p.bias_min && fabs(x.e) <= KV_BIAS_WINDOW;
  } else if (isnan(o) ? isnan(r) : o == rounded) {
    x.kind = 1, x.ratio = 0.0, x.ulp = 0.0, x.bin = 0;
  } else if (isfinite(r)) {
    x.kind = isnan(o) ? 2 : 3, x.ratio = INFINITY, x.ulp = INFINITY, x.bin = KV_HIST_BINS - 1;
  } else {
    x.kind = 4, x.ratio = INFINITY, x.ulp = INFINITY, x.bin = KV_HIST_BINS - 2;
  }
  x.dround = isfinite(rounded) ? fabs(rounded - r) : 0.0;
  return x;
}

__device__ __forceinline__ double max_of(double a, double b) { return b > a ? b : a; } /* a NaN b never wins */

__device__ __forceinline__ void partial_init(partial &a) {
  a.sum_abs = a.sum_err2 = a.sum_ref2 = a.sum_e = a.sum_s = a.sum_e2 = 0.0;
  a.max_abs = a.max_rel = a.max_ulp = a.max_round = 0.0;
  a.worst_ratio = -1.0;
  a.worst_pos = ~0ULL;
  a.n_finite = a.n_nan = a.n_inf = a.n_bias = 0;
}

__device__ __forceinline__ void combine(partial &a, const partial &b) {
  a.sum_abs += b.sum_abs;
  a.sum_err2 += b.sum_err2;
  a.sum_ref2 += b.sum_ref2;
  a.sum_e += b.sum_e;
  a.sum_s += b.sum_s;
  a.sum_e2 += b.sum_e2;
  a.max_abs = max_of(a.max_abs, b.max_abs);
  a.max_rel = max_of(a.max_rel, b.max_rel);
  a.max_ulp = max_of(a.max_ulp, b.max_ulp);
  a.max_round = max_of(a.max_round, b.max_round);
  if (b.worst_ratio > a.worst_ratio || (b.worst_ratio == a.worst_ratio && b.worst_pos < a.worst_pos)) {
    a.worst_ratio = b.worst_ratio;
    a.worst_pos = b.worst_pos;
  }
  a.n_finite += b.n_finite;
  a.n_nan += b.n_nan;
  a.n_inf += b.n_inf;
  a.n_bias += b.n_bias;
}

/* bins[b]++ for this thread, one shared atomic per distinct b among the warp's active threads
 * (errors and ULP digits cluster in a few bins). Integer counts: the order does not matter. */
__device__ __forceinline__ void count_in(unsigned int *bins, int b) {
  const unsigned peers = __match_any_sync(__activemask(), b);
  if ((int)(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&bins[b], (unsigned)__popc(peers));
}

/* Tree over the block's partials in shared memory, in a fixed order; thread 0 gets the result. */
__device__ void block_reduce(partial *sh) {
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) combine(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
}

/* Pass 1: per-block partials and the histogram. */
template <kv_dtype T>
__global__ void __launch_bounds__(kThreads) stats_kernel(params p, partial *blocks, scratch *sc) {
  __shared__ partial sh[kThreads];
  __shared__ unsigned int hist[KV_HIST_BINS];
  if (threadIdx.x < KV_HIST_BINS) hist[threadIdx.x] = 0;
  __syncthreads();
  partial a;
  partial_init(a);
  const size_t stride = (size_t)gridDim.x * kThreads;
  for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < p.n; i += stride) {
    const element x = classify<T>(p, i);
    if (x.kind == 0) {
      a.n_finite++;
      a.sum_abs += x.err;
      a.sum_err2 += __dmul_rn(x.err, x.err);
      a.sum_ref2 += __dmul_rn(x.aref, x.aref);
      a.max_abs = max_of(a.max_abs, x.err);
      a.max_rel = max_of(a.max_rel, x.rel);
      if (x.in_bias) {
        a.n_bias++;
        a.sum_e += x.e;
        a.sum_s += p.ref[i] < 0.0 ? -x.e : x.e;
        a.sum_e2 += __dmul_rn(x.e, x.e);
      }
    }
    a.n_nan += x.kind == 2;
    a.n_inf += x.kind == 3;
    a.max_round = max_of(a.max_round, x.dround);
    a.max_ulp = max_of(a.max_ulp, x.ulp);
    if (x.ratio > a.worst_ratio) { /* positions rise along the loop: the first maximum stays */
      a.worst_ratio = x.ratio;
      a.worst_pos = i;
    }
    count_in(hist, x.bin);
  }
  sh[threadIdx.x] = a;
  __syncthreads();
  block_reduce(sh);
  if (threadIdx.x == 0) blocks[blockIdx.x] = sh[0];
  if (threadIdx.x < KV_HIST_BINS && hist[threadIdx.x]) atomicAdd(&sc->hist[threadIdx.x], (unsigned long long)hist[threadIdx.x]);
}

/* Pass 2: one block combines the block partials in block order. */
__global__ void __launch_bounds__(kThreads) final_kernel(const partial *blocks, unsigned nblocks, const int64_t *index,
                                                         scratch *sc) {
  __shared__ partial sh[kThreads];
  partial a;
  partial_init(a);
  for (unsigned b = threadIdx.x; b < nblocks; b += kThreads) combine(a, blocks[b]);
  sh[threadIdx.x] = a;
  __syncthreads();
  block_reduce(sh);
  if (threadIdx.x == 0) {
    sc->total = sh[0];
    sc->worst_index = index ? index[sh[0].worst_pos] : (long long)sh[0].worst_pos;
  }
}

/* Radix select, one pass: count the digit at `shift` of the ULP errors whose higher digits
 * equal the prefix chosen so far. */
template <kv_dtype T>
__global__ void __launch_bounds__(kThreads) radix_count_kernel(params p, scratch *sc, int shift) {
  __shared__ unsigned int count[kRadixBins];
  for (int b = threadIdx.x; b < kRadixBins; b += kThreads) count[b] = 0;
  __syncthreads();
  const unsigned long long high = shift + kRadixBits >= 64 ? 0ULL : ~0ULL << (shift + kRadixBits);
  const unsigned long long prefix = sc->prefix;
  const size_t stride = (size_t)gridDim.x * kThreads;
  for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < p.n; i += stride) {
    const unsigned long long key = (unsigned long long)__double_as_longlong(classify<T>(p, i).ulp);
    if ((key & high) == prefix) count_in(count, (int)((key >> shift) & (kRadixBins - 1)));
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kRadixBins; b += kThreads)
    if (count[b]) atomicAdd(&sc->radix_count[b], (unsigned long long)count[b]);
}

/* Radix select, the choice: the digit whose bucket holds the k-th largest of the matching
 * elements; the counts are cleared for the next pass. One thread. */
__global__ void radix_pick_kernel(scratch *sc, int shift) {
  unsigned long long above = 0;
  int b = kRadixBins - 1;
  for (; b > 0 && above + sc->radix_count[b] < sc->k; b--) above += sc->radix_count[b];
  sc->prefix |= (unsigned long long)b << shift;
  sc->k -= above;
  for (int i = 0; i < kRadixBins; i++) sc->radix_count[i] = 0;
}

template <kv_dtype T>
kv_status launch_all(const params &p, unsigned nblocks, partial *blocks, scratch *sc, cudaStream_t s) {
  stats_kernel<T><<<nblocks, kThreads, 0, s>>>(p, blocks, sc);
  KV_TRY(CHECK_LAUNCH("errstats stats_kernel"));
  final_kernel<<<1, kThreads, 0, s>>>(blocks, nblocks, p.index, sc);
  KV_TRY(CHECK_LAUNCH("errstats final_kernel"));
  for (int shift = 64 - kRadixBits; shift >= 0; shift -= kRadixBits) {
    radix_count_kernel<T><<<nblocks, kThreads, 0, s>>>(p, sc, shift);
    KV_TRY(CHECK_LAUNCH("errstats radix_count_kernel"));
    radix_pick_kernel<<<1, 1, 0, s>>>(sc, shift);
    KV_TRY(CHECK_LAUNCH("errstats radix_pick_kernel"));
  }
  return KV_OK;
}

kv_status run(const params &p, kv_dtype out_t, scratch *host, double deadline, cudaStream_t s) {
  size_t want = (p.n + kThreads - 1) / kThreads;
  const unsigned nblocks = want > kMaxBlocks ? kMaxBlocks : (unsigned)want; /* a function of n only */
  void *mem = NULL;
  KV_TRY(CHECK_CUDA(cudaMallocAsync(&mem, sizeof(scratch) + nblocks * sizeof(partial), s)));
  scratch *sc = static_cast<scratch *>(mem);
  partial *blocks = reinterpret_cast<partial *>(sc + 1);
  params q = p;
  q.tab = &sc->tab;
  kv_status st = CHECK_CUDA(cudaMemcpyAsync(sc, host, sizeof *host, cudaMemcpyHostToDevice, s));
  if (st == KV_OK) {
    switch (out_t) {
      case KV_FP16: st = launch_all<KV_FP16>(q, nblocks, blocks, sc, s); break;
      case KV_BF16: st = launch_all<KV_BF16>(q, nblocks, blocks, sc, s); break;
      case KV_FP32: st = launch_all<KV_FP32>(q, nblocks, blocks, sc, s); break;
      default: st = launch_all<KV_FP64>(q, nblocks, blocks, sc, s); break;
    }
  }
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpyAsync(host, sc, sizeof *host, cudaMemcpyDeviceToHost, s));
  if (CHECK_CUDA(cudaFreeAsync(mem, s)) != KV_OK) st = KV_ERR;
  cudaEvent_t done = NULL;
  if (st == KV_OK) st = CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  if (st == KV_OK) st = CHECK_CUDA(cudaEventRecord(done, s));
  if (st == KV_OK) st = kv_cuda_wait_event(done, deadline, "the error statistics on the device");
  if (done && !kv_fatal_pending() && CHECK_CUDA(cudaEventDestroy(done)) != KV_OK) st = KV_ERR;
  return st;
}

}  // namespace

extern "C" kv_status kv_cuda_errstats(const void *d_out, kv_dtype out_t, const int64_t *d_index, const double *d_ref,
                                      const double *d_mag, size_t n, kv_precision prec, const kv_tolerance *tol,
                                      double red_len, double deadline, kv_errstats *st, void *stream) {
  memset(st, 0, sizeof *st);
  st->worst_index = -1;
  st->n_checked = (int64_t)n;
  if (n == 0) return KV_OK;
  if (out_t < KV_FP16 || out_t > KV_FP64) {
    kv_report(__FILE__, __LINE__, "errstats", "unsupported output type %d", (int)out_t);
    return KV_ERR;
  }
  scratch *host = static_cast<scratch *>(KV_CALLOC(1, sizeof(scratch)));
  KV_TRY(CHECK_ALLOC(host));
  for (int e = kHistExpMin; e <= kHistExpMax; e++) host->tab.decade_of_exp[e - kHistExpMin] = (int)floor(e * log10(2.0));
  for (int d = 0; d < KV_HIST_BINS - 2; d++) host->tab.pow10[d] = pow(10.0, KV_HIST_LOG10_MIN + d);
  host->k = n - (99 * (uint64_t)n + 99) / 100 + 1; /* nearest rank: the ceil(0.99 n)-th smallest */
  params p;
  p.out = d_out;
  p.index = d_index;
  p.ref = d_ref;
  p.mag = d_mag;
  p.n = n;
  kv_tolerance_coefs(tol, prec, red_len, &p.coef_ref, &p.coef_mag); /* those of kv_tolerance_bound() */
  p.abs_floor = tol->abs_floor;
  p.rel_floor = tol->rel_floor;
  p.bias_min = kv_min_normal(out_t);
  p.tab = NULL;
  const kv_status rc = run(p, out_t, host, deadline, static_cast<cudaStream_t>(stream));
  if (rc == KV_OK) {
    const partial &t = host->total;
    st->max_abs = t.max_abs;
    st->max_rel = t.max_rel;
    st->mean_abs = t.n_finite ? t.sum_abs / (double)t.n_finite : 0.0;
    st->rel_l2 = t.sum_err2 == 0.0 ? 0.0 : sqrt(t.sum_err2) / sqrt(t.sum_ref2);
    st->max_ulp = t.max_ulp;
    memcpy(&st->p99_ulp, &host->prefix, sizeof st->p99_ulp);
    st->max_bound_ratio = t.worst_ratio;
    st->worst_index = host->worst_index;
    const double baseline = t.max_round > kv_min_normal(out_t) ? t.max_round : kv_min_normal(out_t);
    st->floor_ratio = t.max_abs / baseline;
    st->n_nan = (int64_t)t.n_nan;
    st->n_inf = (int64_t)t.n_inf;
    for (int b = 0; b < KV_HIST_BINS; b++) st->hist[b] = host->hist[b];
    st->n_bias = (int64_t)t.n_bias;
    kv_errstats_bias(st, t.sum_e, t.sum_s, t.sum_e2);
  }
  free(host);
  return rc;
}
