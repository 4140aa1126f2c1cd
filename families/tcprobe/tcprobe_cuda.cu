/* tcprobe_cuda.cu - kv_cuda_tcprobe, the tcprobe family's CUDA side as the cuda backend sees
 * it: a case (axes probe, precision, instruction; no inputs; output d) becomes a problem once:
 * the sub-tests' operands built on the host (tcprobe_inputs.c) and copied to the device, the
 * kernel of the instruction and input type chosen (tcprobe_kernels.cuh; wgmma only on a
 * Hopper GPU, mma.sync from Ampere on, with FP8 from compute capability 8.9 on and only when
 * the build holds sm_89+ code for it); then launches, the fp64 reference on the device and
 * the kernel's resources. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdlib>
#include <new>

#include "core/cuda_check.cuh"
#include "families/tcprobe/tcprobe.h"
#include "families/tcprobe/tcprobe_kernels.cuh"
#include "family_cuda.h"

namespace {

typedef void (*probe_kernel)(const kv_tcp_operands *, int, float *);

struct problem {
  kv_tcp_operands *d_ops = nullptr;
  float *d_out = nullptr;
  int n = 0, threads = 0;
  kv_dtype st = KV_FP16;
  probe_kernel kernel = nullptr;
  const char *name = nullptr;
};

void release(void *p) {
  problem *pr = static_cast<problem *>(p);
  if (!pr) return;
  if (pr->d_ops) CHECK_CUDA(cudaFree(pr->d_ops));
  delete pr;
}

/* The two kernels of an input type, with their names. */
struct kernels {
  probe_kernel mma, wgmma;
  const char *mma_name, *wgmma_name;
};

template <class T> kernels kernels_of(const char *mma_name, const char *wgmma_name) {
  return {kv_tcp::mma_kernel<T>, kv_tcp::wgmma_kernel<T>, mma_name, wgmma_name};
}

kernels kernels_for(kv_dtype st) {
  switch (st) {
    case KV_FP16: return kernels_of<__half>("kv_tcp::mma_kernel<fp16>", "kv_tcp::wgmma_kernel<fp16>");
    case KV_BF16: return kernels_of<__nv_bfloat16>("kv_tcp::mma_kernel<bf16>", "kv_tcp::wgmma_kernel<bf16>");
    case KV_E4M3: return kernels_of<__nv_fp8_e4m3>("kv_tcp::mma_kernel<e4m3>", "kv_tcp::wgmma_kernel<e4m3>");
    default: return kernels_of<__nv_fp8_e5m2>("kv_tcp::mma_kernel<e5m2>", "kv_tcp::wgmma_kernel<e5m2>");
  }
}

/* The kernel for the instruction and input type; NULL with *why when the device lacks it. */
kv_status choose(problem *pr, int instruction, const char **why) {
  int dev = 0, major = 0, minor = 0;
  KV_TRY(CHECK_CUDA(cudaGetDevice(&dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)));
  const kernels k = kernels_for(pr->st);
  if (instruction == KV_TCP_WGMMA) {
    if (major != 9) {
      *why = "tcprobe: wgmma needs a Hopper GPU (compute capability 9.x)";
      return KV_ERR;
    }
    pr->kernel = k.wgmma;
    pr->threads = kv_tcp::kWgmmaThreads;
    pr->name = k.wgmma_name;
    return KV_OK;
  }
  if (major < 8) {
    *why = "tcprobe: mma.sync m16n8k16 with bf16 needs compute capability 8.0 or newer";
    return KV_ERR;
  }
  if (kv_tcp_is_fp8(pr->st)) {
    cudaFuncAttributes a;
    KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&a, k.mma)));
    if (10 * major + minor < 89) {
      *why = "tcprobe: mma.sync m16n8k32 with e4m3/e5m2 needs compute capability 8.9 or newer";
      return KV_ERR;
    }
    if (a.binaryVersion < 89) { /* the build's code for this device is an sm_8x target below 8.9 */
      *why = "tcprobe: this build has no sm_89+ code for the FP8 mma.sync kernel (--with-cuda-arch)";
      return KV_ERR;
    }
  }
  pr->kernel = k.mma;
  pr->threads = kv_tcp::kMmaThreads;
  pr->name = k.mma_name;
  return KV_OK;
}

kv_status prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **out_problem, const char **why) {
  (void)d_in;
  problem *pr = new (std::nothrow) problem();
  KV_TRY(CHECK_ALLOC(pr));
  pr->st = c->prec.storage;
  pr->d_out = static_cast<float *>(d_out[0]);
  int probe;
  kv_tcp_operands *ops = kv_tcp_case_subtests(c, &probe, &pr->n);
  kv_status st = ops ? choose(pr, kv_tcp_instruction_of(kv_case_str(c, "instruction")), why) : KV_ERR;
  const size_t bytes = (size_t)pr->n * sizeof(kv_tcp_operands);
  if (st == KV_OK) st = CHECK_CUDA(cudaMalloc(&pr->d_ops, bytes));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpy(pr->d_ops, ops, bytes, cudaMemcpyHostToDevice));
  free(ops);
  if (st != KV_OK) {
    release(pr);
    return KV_ERR;
  }
  *out_problem = pr;
  return KV_OK;
}

kv_status launch(const void *p, void *stream) {
  const problem *pr = static_cast<const problem *>(p);
  pr->kernel<<<1, pr->threads, 0, static_cast<cudaStream_t>(stream)>>>(pr->d_ops, pr->n, pr->d_out);
  return CHECK_LAUNCH(pr->name);
}

kv_status reference(const void *p, double *d_ref, double *d_mag, double *d_aux_ref, double *d_aux_mag, void *stream) {
  (void)d_aux_ref, (void)d_aux_mag; /* no auxiliary output */
  const problem *pr = static_cast<const problem *>(p);
  const int threads = 128, blocks = (pr->n + threads - 1) / threads;
  kv_tcp::reference_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(pr->d_ops, pr->n, pr->st, d_ref,
                                                                                      d_mag);
  return CHECK_LAUNCH("kv_tcp::reference_kernel");
}

kv_status resources(const void *p, kv_kernel_resources *r) {
  const problem *pr = static_cast<const problem *>(p);
  cudaFuncAttributes a;
  KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&a, pr->kernel)));
  int blocks = 0;
  KV_TRY(CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, pr->kernel, pr->threads, 0)));
  r->registers = a.numRegs;
  r->smem_bytes = (int)a.sharedSizeBytes;
  r->local_bytes = (int)a.localSizeBytes;
  r->occupancy = blocks;
  return KV_OK;
}

}  // namespace

extern "C" const kv_cuda_family kv_cuda_tcprobe = {prepare, launch, reference, resources, release};
