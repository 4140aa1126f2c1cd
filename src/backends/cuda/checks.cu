/* checks.cu - kv_cuda_checksum: the order-independent 64-bit checksum of device buffers
 * (numerics/checksum.h: one term per 8-byte word, added modulo 2^64) for the backend's checks
 * that inputs stay unchanged and that every launch of a case writes the same output bits. The
 * sum does not depend on the order in which blocks finish, several buffers (with distinct
 * salts) add into one sum, and a change of any bit of any word changes it (with probability
 * 1 - 2^-64 for a random change). The host recomputes the verification launch's sum from the
 * downloaded outputs (kv_checksum_finding), so this kernel is itself checked in every case. */
#include <stdint.h>

#include "backends/cuda/device.h"
#include "core/cuda_check.cuh"
#include "numerics/checksum.h"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) checksum_kernel(const unsigned char *buf, size_t bytes,
                                                            unsigned salt, unsigned long long *sum) {
  __shared__ unsigned long long part[kThreads];
  const size_t words = (bytes + 7) / 8, stride = (size_t)gridDim.x * kThreads;
  unsigned long long acc = 0;
  for (size_t w = (size_t)blockIdx.x * kThreads + threadIdx.x; w < words; w += stride) {
    unsigned long long v = 0;
    if (8 * w + 8 <= bytes && ((uintptr_t)buf & 7) == 0) {
      v = reinterpret_cast<const unsigned long long *>(buf)[w];
    } else {
      for (size_t b = 8 * w; b < bytes && b < 8 * w + 8; b++) v |= (unsigned long long)buf[b] << (8 * (b - 8 * w));
    }
    acc += kv_checksum_term(v, w, salt);
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, part[0]);
}

}  // namespace

extern "C" kv_status kv_cuda_checksum(const void *d_buf, size_t bytes, unsigned salt, unsigned long long *d_sum,
                                      void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (bytes == 0) return KV_OK;
  size_t blocks = (bytes / 8 + kThreads) / kThreads;
  if (blocks > 4096) blocks = 4096;
  checksum_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(static_cast<const unsigned char *>(d_buf), bytes, salt, d_sum);
  return CHECK_LAUNCH("checksum_kernel");
}
