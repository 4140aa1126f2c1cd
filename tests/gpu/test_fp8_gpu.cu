/* test_fp8_gpu.cu - the GPU's own FP8 conversion instructions against kval's (numerics/fp8.c),
 * exhaustively, on the device (make check; exit 77 without a GPU):
 * - decode's widening of an 8-bit KV cache, widen_pair of decode_kernels.cuh as the kernel runs
 *   it (cvt.rn.f16x2.e4m3x2 / .e5m2x2, then to bf16 for bf16 storage), for all 65536 byte
 *   pairs of each format and storage, against kv_fp8_to_f64 (exact: NaN as NaN);
 * - the narrowing cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (the instruction from sm_89 on; the host
 *   test test_fp8_cuda compares CUDA's host-side code, a different path) for every one of the
 *   2^32 fp32 bit patterns against kv_f32_to_fp8(x, f, KV_FP8_SATFINITE), bit for bit, NaN
 *   patterns included; the host threads compare one chunk while the GPU converts the next.
 * A mismatch names the input bits, kval's and the GPU's codes and how many of that set differ. */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "core/cuda_check.cuh"
#include "families/decode/decode_kernels.cuh"
extern "C" {
#include "families/ref_threads.h"
#include "numerics/fp8.h"
#include "numerics/halfprec.h"
}
#include "tests/unit/test_util.h"

/* A failed CUDA call (reported by kval's CHECK_CUDA: rank, host, file, line) ends the test. */
#define CU(call)                                                                                \
  do {                                                                                          \
    if (CHECK_CUDA(call) != KV_OK) return 1;                                                    \
  } while (0)

/* out[x] = widen_pair<KV, S>(x): the two values of the byte pair x (low byte first). */
template <kv_dtype KV, kv_dtype S>
__global__ void widen_all(uint32_t *out) {
  const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < 65536u) out[x] = kv_decode::widen_pair<KV, S>(x);
}

/* out[i] = the 8-bit code of the fp32 with bits base + i, i < n (n even), by the hardware's
 * narrowing of pairs (the PTX puts its first source in the upper byte). */
template <int E5M2>
__global__ void narrow_chunk(uint32_t base, uint32_t n, uint8_t *out) {
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; 2 * p < n; p += gridDim.x * blockDim.x) {
    const float lo = __uint_as_float(base + 2 * p), hi = __uint_as_float(base + 2 * p + 1);
    unsigned short r;
    if (E5M2)
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
    else
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
    out[2 * p] = static_cast<uint8_t>(r & 0xffu);
    out[2 * p + 1] = static_cast<uint8_t>(r >> 8);
  }
}

static double widened(uint16_t bits, kv_dtype s) {
  return s == KV_FP16 ? (double)kv_f16_to_f32(bits) : (double)kv_bf16_to_f32(bits);
}

/* All byte pairs of one format widened to one storage type, against kv_fp8_to_f64. */
template <kv_dtype KV, kv_dtype S>
static int check_widen(uint32_t *d_out, uint32_t *h_out) {
  const kv_fp8_format f = KV == KV_E4M3 ? KV_FP8_E4M3 : KV_FP8_E5M2;
  widen_all<KV, S><<<256, 256>>>(d_out);
  CU(cudaGetLastError());
  CU(cudaMemcpy(h_out, d_out, 65536 * sizeof *h_out, cudaMemcpyDeviceToHost));
  long bad = 0;
  char first[160] = "";
  for (uint32_t x = 0; x < 65536u; x++)
    for (int half = 0; half < 2; half++) {
      const uint8_t b = static_cast<uint8_t>(x >> (8 * half));
      const double want = kv_fp8_to_f64(b, f), got = widened(static_cast<uint16_t>(h_out[x] >> (16 * half)), S);
      const bool same = std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
      if (!same && bad++ == 0)
        snprintf(first, sizeof first, "pair %#06x, byte %#04x: kval %a, gpu %a", x, b, want, got);
    }
  EXPECT(bad == 0, "%s widened to %s: %ld of 131072 values differ; first: %s", kv_fp8_format_name(f),
         S == KV_FP16 ? "fp16" : "bf16", bad, first);
  return 0;
}

/* The host side of the narrowing: slices of one chunk on the host threads. */
struct slice_job {
  const uint8_t *gpu;
  uint32_t base, n;
  kv_fp8_format f;
  int slices;
  long bad[KV_REF_MAX_THREADS * 4], nan_bad[KV_REF_MAX_THREADS * 4];
  uint32_t first[KV_REF_MAX_THREADS * 4];
};

static kv_status compare_slice(int s, void *arg) {
  slice_job *j = static_cast<slice_job *>(arg);
  const uint32_t len = j->n / (uint32_t)j->slices, lo = (uint32_t)s * len, hi = s == j->slices - 1 ? j->n : lo + len;
  for (uint32_t i = lo; i < hi; i++) {
    const uint32_t bits = j->base + i;
    const uint8_t want = kv_f32_to_fp8(kv_bits_f32(bits), j->f, KV_FP8_SATFINITE);
    if (want != j->gpu[i]) {
      if (j->bad[s]++ == 0) j->first[s] = bits;
      if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) j->nan_bad[s]++;
    }
  }
  return KV_OK;
}

/* Every fp32 bit pattern narrowed by one format's instruction, against kv_f32_to_fp8. */
template <int E5M2>
static int check_narrow(uint8_t *d_out[2], uint8_t *h_out[2], int threads) {
  const kv_fp8_format f = E5M2 ? KV_FP8_E5M2 : KV_FP8_E4M3;
  const uint32_t chunk = 1u << 28;
  const int chunks = 16;
  static slice_job job;
  long bad = 0, nan_bad = 0;
  uint32_t first = 0;
  narrow_chunk<E5M2><<<4096, 256>>>(0u, chunk, d_out[0]);
  CU(cudaGetLastError());
  for (int c = 0; c < chunks; c++) {
    const int cur = c & 1;
    CU(cudaMemcpy(h_out[cur], d_out[cur], chunk, cudaMemcpyDeviceToHost));
    if (c + 1 < chunks) {
      narrow_chunk<E5M2><<<4096, 256>>>((uint32_t)(c + 1) * chunk, chunk, d_out[cur ^ 1]);
      CU(cudaGetLastError());
    }
    memset(&job, 0, sizeof job);
    job.gpu = h_out[cur];
    job.base = (uint32_t)c * chunk;
    job.n = chunk;
    job.f = f;
    job.slices = 4 * threads;
    EXPECT(kv_parallel_for(job.slices, threads, compare_slice, &job) == KV_OK, "host threads of chunk %d", c);
    for (int s = 0; s < job.slices; s++) {
      if (job.bad[s] && !bad) first = job.first[s];
      bad += job.bad[s];
      nan_bad += job.nan_bad[s];
    }
  }
  CU(cudaDeviceSynchronize());
  uint8_t g = 0; /* the GPU's code of the first mismatch, converted again */
  if (bad) {
    narrow_chunk<E5M2><<<1, 1>>>(first & ~1u, 2, d_out[0]);
    CU(cudaMemcpy(h_out[0], d_out[0], 2, cudaMemcpyDeviceToHost));
    g = h_out[0][first & 1u];
  }
  EXPECT(bad == 0, "cvt.rn.satfinite.%sx2.f32 over all 2^32 fp32 patterns: %ld differ from kv_f32_to_fp8 (%ld of them "
         "NaN inputs); first: fp32 0x%08x (%a): kval 0x%02x, gpu 0x%02x",
         kv_fp8_format_name(f), bad, nan_bad, first, (double)kv_bits_f32(first),
         bad ? kv_f32_to_fp8(kv_bits_f32(first), f, KV_FP8_SATFINITE) : 0, g);
  printf("   %s: 2^32 fp32 patterns, %ld differ\n", kv_fp8_format_name(f), bad);
  return 0;
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("test_fp8_gpu: no GPU: skipped\n");
    return 77;
  }
  cudaDeviceProp prop;
  CU(cudaGetDeviceProperties(&prop, 0));
  if (prop.major * 10 + prop.minor < 89) {
    printf("test_fp8_gpu: compute capability %d.%d has no FP8 conversions: skipped\n", prop.major, prop.minor);
    return 77;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int threads = cpus < 1 ? 1 : cpus > KV_REF_MAX_THREADS ? KV_REF_MAX_THREADS : (int)cpus;

  TEST("decode's widening of an 8-bit cache (widen_pair): all 65536 byte pairs");
  uint32_t *d_pairs = nullptr, *h_pairs = nullptr;
  CU(cudaMalloc(&d_pairs, 65536 * sizeof *d_pairs));
  CU(cudaMallocHost(&h_pairs, 65536 * sizeof *h_pairs));
  if (check_widen<KV_E4M3, KV_FP16>(d_pairs, h_pairs) || check_widen<KV_E4M3, KV_BF16>(d_pairs, h_pairs) ||
      check_widen<KV_E5M2, KV_FP16>(d_pairs, h_pairs) || check_widen<KV_E5M2, KV_BF16>(d_pairs, h_pairs))
    return 1;
  CU(cudaFree(d_pairs));
  CU(cudaFreeHost(h_pairs));

  TEST("cvt.rn.satfinite narrowing: every fp32 bit pattern, %d host threads", threads);
  uint8_t *d_out[2] = {nullptr, nullptr}, *h_out[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; i++) {
    CU(cudaMalloc(&d_out[i], 1u << 28));
    CU(cudaMallocHost(&h_out[i], 1u << 28));
  }
  if (check_narrow<0>(d_out, h_out, threads) || check_narrow<1>(d_out, h_out, threads)) return 1;
  for (int i = 0; i < 2; i++) {
    CU(cudaFree(d_out[i]));
    CU(cudaFreeHost(h_out[i]));
  }
  TEST_RETURN();
}
