/* gemm_launch.cu - kv_cuda_gemm, the GEMM family's CUDA side as the cuda backend sees it:
 * a case (axes variant, precision, layout, shape; params alpha, beta; inputs a, b[, c];
 * output d) becomes a kv_gemm_problem, which gemm_dispatch.cu launches with the variant's
 * kernel, and gemm_reference.cu turns into the fp64 reference. */
#include "families/gemm/gemm_api.h"

extern "C" {
#include "families/families.h"
}

static kv_status kv_gemm_problem_of(const kv_case *c, const void *const *in, void *d, kv_gemm_variant *v,
                                    kv_gemm_problem *p) {
  const char *variant = kv_case_str(c, "variant");
  if (kv_gemm_variant_parse(variant, v) != 0) {
    kv_report(__FILE__, __LINE__, "gemm", "variant '%s' is not kval-wgmma, kval-mma or cublas", variant);
    return KV_ERR;
  }
  kv_gemm_dims dims;
  kv_gemm_dims_of(c, &dims);
  p->m = (int)dims.m;
  p->n = (int)dims.n;
  p->k = (int)dims.k;
  p->a_t = dims.a_trans;
  p->b_t = dims.b_trans;
  p->prec = c->prec;
  p->alpha = dims.alpha;
  p->beta = dims.beta;
  p->a = in ? in[0] : NULL;
  p->b = in ? in[1] : NULL;
  p->c = in && dims.has_c ? in[2] : NULL;
  p->d = d;
  return KV_OK;
}

static kv_status gemm_launch(const kv_case *c, void *const *d_in, void *const *d_out, void *stream) {
  kv_gemm_variant v;
  kv_gemm_problem p;
  KV_TRY(kv_gemm_problem_of(c, (const void *const *)d_in, d_out[0], &v, &p));
  return kv_gemm_run(v, &p, static_cast<cudaStream_t>(stream));
}

static kv_status gemm_reference(const kv_case *c, const void *const *d_in, double *d_ref, double *d_mag,
                                double *d_aux_ref, void *stream) {
  kv_gemm_variant v;
  kv_gemm_problem p;
  (void)d_aux_ref; /* gemm has no auxiliary output */
  KV_TRY(kv_gemm_problem_of(c, d_in, NULL, &v, &p));
  return kv_gemm_reference(&p, d_ref, d_mag, static_cast<cudaStream_t>(stream));
}

static kv_status gemm_resources(const kv_case *c, kv_kernel_resources *r) {
  kv_gemm_variant v;
  kv_gemm_problem p;
  KV_TRY(kv_gemm_problem_of(c, NULL, NULL, &v, &p));
  return kv_gemm_resources(v, &p, r);
}

const kv_cuda_family kv_cuda_gemm = {gemm_launch, gemm_reference, gemm_resources};
