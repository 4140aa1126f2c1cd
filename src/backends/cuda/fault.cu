/* fault.cu - kv_cuda_hang: a kernel that never finishes, for --inject hang (the watchdog must
 * name it); kv_cuda_fault: a real sticky device error for --inject sticky on the cuda
 * backend. One thread stores through a device address that no allocation can have (the
 * address is a kernel argument, so the compiler cannot see the fault); the store faults with
 * cudaErrorIllegalAddress, which leaves the context unusable. The launch and the following
 * synchronize go through CHECK_LAUNCH / CHECK_CUDA, whose sticky-error path defers the fatal
 * error (kv_fatal_defer) exactly as for a kernel that faults on its own. */
#include <stdint.h>

#include "core/cuda_check.cuh"
#include "backends/cuda/device.h"

namespace {

/* Far below the first page of the device's virtual address space: never mapped. */
constexpr uintptr_t kInvalidAddress = 0x100;

__global__ void fault_kernel(volatile unsigned *p) { *p = 0xdeadu; }

/* Spins while the word is zero; the word is a fresh zeroed allocation nothing else writes. */
__global__ void hang_kernel(volatile unsigned *flag) {
  while (*flag == 0u) {
  }
}

}  // namespace

extern "C" kv_status kv_cuda_fault(void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  fault_kernel<<<1, 1, 0, s>>>(reinterpret_cast<volatile unsigned *>(kInvalidAddress));
  KV_TRY(CHECK_LAUNCH("fault_kernel (--inject sticky)"));
  return CHECK_CUDA(cudaStreamSynchronize(s));
}

extern "C" kv_status kv_cuda_hang(void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  unsigned *flag = NULL;
  KV_TRY(CHECK_CUDA(cudaMallocAsync((void **)&flag, sizeof *flag, s)));
  KV_TRY(CHECK_CUDA(cudaMemsetAsync(flag, 0, sizeof *flag, s)));
  hang_kernel<<<1, 1, 0, s>>>(flag);
  return CHECK_LAUNCH("hang_kernel (--inject hang)");
}
