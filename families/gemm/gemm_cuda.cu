/* gemm_cuda.cu - kv_cuda_gemm, the GEMM family's CUDA side as the cuda backend sees it: a case
 * (axes variant, precision, layout, shape; params alpha, beta; inputs a, b[, c]; output d)
 * becomes a kv_gemm_problem once, which gemm_dispatch.cu launches with the variant's kernel
 * and gemm_gpu_ref.cu turns into the fp64 reference. */
#include <new>

#include "families/gemm/gemm.h"
#include "families/gemm/gemm_api.h"
#include "family_cuda.h"

struct gemm_case {
  int variant;
  kv_gemm_problem p;
};

static kv_status gemm_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                              const char **why) {
  gemm_case *g = new (std::nothrow) gemm_case();
  KV_TRY(CHECK_ALLOC(g));
  kv_gemm_dims dims;
  kv_gemm_dims_of(c, &dims);
  g->p.m = (int)dims.m;
  g->p.n = (int)dims.n;
  g->p.k = (int)dims.k;
  g->p.a_t = dims.a_trans;
  g->p.b_t = dims.b_trans;
  g->p.prec = c->prec;
  g->p.alpha = dims.alpha;
  g->p.beta = dims.beta;
  g->p.a = d_in[0];
  g->p.b = d_in[1];
  g->p.c = dims.has_c ? d_in[2] : nullptr;
  g->p.d = d_out[0];
  g->variant = kv_gemm_variant_of(kv_case_str(c, "variant"));
  *why = kv_gemm_unsupported(g->variant, g->p.m, g->p.n, g->p.k, g->p.a_t, g->p.b_t, g->p.prec);
  if (*why) {
    delete g;
    return KV_ERR;
  }
  *problem = g;
  return KV_OK;
}

static kv_status gemm_launch(const void *problem, void *stream) {
  const gemm_case *g = static_cast<const gemm_case *>(problem);
  const char *why = nullptr;
  const kv_status st = kv_gemm_run(g->variant, &g->p, static_cast<cudaStream_t>(stream), &why);
  return KV_REFUSED(st, why, "gemm");
}

static kv_status gemm_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                                double *d_aux_mag, void *stream) {
  (void)d_aux_ref, (void)d_aux_mag; /* gemm has no auxiliary output */
  return kv_gemm_gpu_reference(&static_cast<const gemm_case *>(problem)->p, d_ref, d_mag,
                               static_cast<cudaStream_t>(stream));
}

static kv_status gemm_resources(const void *problem, kv_kernel_resources *r) {
  const gemm_case *g = static_cast<const gemm_case *>(problem);
  const char *why = nullptr;
  const kv_status st = kv_gemm_resources(g->variant, &g->p, r, &why);
  return KV_REFUSED(st, why, "gemm");
}

static void gemm_release(void *problem) { delete static_cast<gemm_case *>(problem); }

extern "C" const kv_cuda_family kv_cuda_gemm = {
    gemm_prepare, gemm_launch, gemm_reference, gemm_resources, gemm_release};
