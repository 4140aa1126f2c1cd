/* gemm_cuda.cu - kv_cuda_gemm, the GEMM family's CUDA side as the cuda backend sees it: a case
 * (axes variant, precision, layout, shape, alpha, beta, scale_a, scale_b, promote; inputs a,
 * b[, c]; output d) becomes once a kv_gemm_problem, the problem object: kv_gemm_prepare (gemm_dispatch.cu)
 * chooses the variant's kernel and encodes what its launch needs (TMA descriptors, grid,
 * cuBLASLt plan); launches are kv_gemm_launch alone, and gemm_gpu_ref.cu turns the problem's
 * arguments into the fp64 reference. */
#include <new>

#include "families/gemm/gemm.h"
#include "families/gemm/gemm_api.h"
#include "family_cuda.h"

static void gemm_release(void *problem) {
  kv_gemm_problem *pr = static_cast<kv_gemm_problem *>(problem);
  kv_gemm_release(pr);
  delete pr;
}

static kv_status gemm_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                              const char **why) {
  kv_gemm_dims dims;
  kv_gemm_dims_of(c, &dims);
  kv_gemm_args g;
  g.m = (int)dims.m;
  g.n = (int)dims.n;
  g.k = (int)dims.k;
  g.a_t = dims.a_trans;
  g.b_t = dims.b_trans;
  g.prec = c->prec;
  g.alpha = dims.alpha;
  g.beta = dims.beta;
  g.scale_a = dims.scale_a;
  g.scale_b = dims.scale_b;
  g.promote = (int)dims.promote;
  g.a = d_in[0];
  g.b = d_in[1];
  g.c = dims.has_c ? d_in[2] : nullptr;
  g.d = d_out[0];
  kv_gemm_problem *pr = new (std::nothrow) kv_gemm_problem();
  KV_TRY(CHECK_ALLOC(pr));
  if (kv_gemm_prepare(&g, kv_gemm_variant_of(kv_case_str(c, "variant")), pr, why) != KV_OK) {
    gemm_release(pr);
    return KV_ERR;
  }
  *problem = pr;
  return KV_OK;
}

static kv_status gemm_launch(const void *problem, void *stream) {
  return kv_gemm_launch(static_cast<const kv_gemm_problem *>(problem), static_cast<cudaStream_t>(stream));
}

static kv_status gemm_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                                double *d_aux_mag, void *stream) {
  (void)d_aux_ref, (void)d_aux_mag; /* gemm has no auxiliary output */
  return kv_gemm_gpu_reference(&static_cast<const kv_gemm_problem *>(problem)->g, d_ref, d_mag,
                               static_cast<cudaStream_t>(stream));
}

static kv_status gemm_resources(const void *problem, kv_kernel_resources *r) {
  return kv_gemm_resources(static_cast<const kv_gemm_problem *>(problem), r);
}

extern "C" const kv_cuda_family kv_cuda_gemm = {
    gemm_prepare, gemm_launch, gemm_reference, gemm_resources, gemm_release};
