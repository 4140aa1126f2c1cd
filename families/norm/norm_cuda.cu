/* norm_cuda.cu - kv_cuda_layernorm and kv_cuda_rmsnorm, the norm families' CUDA side as the
 * cuda backend sees it: a case (axes precision, rows, hidden; param eps; inputs x, w[, b];
 * output y) becomes a kv_norm_problem once, with the kernel variant norm_dispatch.cu chooses
 * for its row length (the general path where the case's `general` parameter asks for it);
 * then launches, the fp64 reference (norm_gpu_ref.cu) and the resources of that variant. */
#include <new>

#include "families/norm/norm.h"
#include "families/norm/norm_api.h"
#include "family_cuda.h"

static kv_status prepare(bool layernorm, const kv_case *c, void *const *in, void *const *out, void **problem,
                         const char **why) {
  kv_norm_dims d;
  kv_norm_dims_of(c, &d);
  kv_norm_problem *pr = new (std::nothrow) kv_norm_problem();
  KV_TRY(CHECK_ALLOC(pr));
  pr->p.x = in[0];
  pr->p.w = in[1];
  pr->p.b = layernorm ? in[2] : nullptr;
  pr->p.y = out[0];
  pr->p.rows = d.rows;
  pr->p.hidden = (int)d.hidden;
  pr->p.inv_hidden = (float)(1.0 / (double)d.hidden);
  pr->p.eps = (float)d.eps;
  pr->eps = d.eps;
  pr->layernorm = layernorm;
  pr->storage = c->prec.storage;
  pr->accum = c->prec.accum;
  if (kv_norm_prepare(pr, kv_norm_general_forced(c) ? -1 : kv_norm_default_config(pr), why) != KV_OK) {
    delete pr;
    return KV_ERR;
  }
  *problem = pr;
  return KV_OK;
}

static kv_status ln_prepare(const kv_case *c, void *const *in, void *const *out, void **problem, const char **why) {
  return prepare(true, c, in, out, problem, why);
}
static kv_status rms_prepare(const kv_case *c, void *const *in, void *const *out, void **problem, const char **why) {
  return prepare(false, c, in, out, problem, why);
}

static kv_status launch(const void *problem, void *stream) {
  return kv_norm_launch(static_cast<const kv_norm_problem *>(problem), static_cast<cudaStream_t>(stream));
}

static kv_status reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                           double *d_aux_mag, void *stream) {
  (void)d_aux_ref, (void)d_aux_mag; /* the norms have no auxiliary output */
  return kv_norm_gpu_reference(static_cast<const kv_norm_problem *>(problem), d_ref, d_mag,
                               static_cast<cudaStream_t>(stream));
}

static kv_status resources(const void *problem, kv_kernel_resources *r) {
  return kv_norm_resources(static_cast<const kv_norm_problem *>(problem), r);
}

static void release(void *problem) { delete static_cast<kv_norm_problem *>(problem); }

extern "C" const kv_cuda_family kv_cuda_layernorm = {ln_prepare, launch, reference, resources, release};
extern "C" const kv_cuda_family kv_cuda_rmsnorm = {rms_prepare, launch, reference, resources, release};
