/* norm_launch.cu - the kv_cuda_family entries kv_cuda_layernorm / kv_cuda_rmsnorm that the
 * cuda backend calls with a case: the case decoded into a norm problem (inputs x, w[, b];
 * output y; see FAMILIES.md), then the launch and the resource query of the variant the
 * dispatcher picks (norm_dispatch.cu) and the fp64 reference (norm_reference.cu). */
#include "family_cuda.h"
#include "families/norm/norm_traits.h"

extern "C" {
#include "families/families.h"
}

static kv_norm_problem problem_of(const kv_case *c, bool layernorm, const void *const *in, void *out) {
  kv_norm_dims d;
  kv_norm_dims_of(c, &d);
  kv_norm_problem pr;
  pr.p.x = in ? in[0] : nullptr;
  pr.p.w = in ? in[1] : nullptr;
  pr.p.b = (in && layernorm) ? in[2] : nullptr;
  pr.p.y = out;
  pr.p.rows = d.rows;
  pr.p.hidden = (int)d.hidden;
  pr.p.inv_hidden = (float)(1.0 / (double)d.hidden);
  pr.p.eps = (float)d.eps;
  pr.eps = d.eps;
  pr.layernorm = layernorm;
  pr.storage = c->prec.storage;
  pr.accum = c->prec.accum;
  return pr;
}

static kv_status launch_case(const kv_case *c, bool layernorm, void *const *d_in, void *const *d_out, void *stream) {
  const kv_norm_problem pr = problem_of(c, layernorm, (const void *const *)d_in, d_out[0]);
  return kv_norm_launch(&pr, static_cast<cudaStream_t>(stream));
}

static kv_status reference_case(const kv_case *c, bool layernorm, const void *const *d_in, double *d_ref,
                                double *d_mag, void *stream) {
  const kv_norm_problem pr = problem_of(c, layernorm, d_in, nullptr);
  return kv_norm_reference(&pr, d_ref, d_mag, static_cast<cudaStream_t>(stream));
}

static kv_status resources_case(const kv_case *c, bool layernorm, kv_kernel_resources *r) {
  const kv_norm_problem pr = problem_of(c, layernorm, nullptr, nullptr);
  kv_norm_kernel k;
  KV_TRY(kv_norm_select(&pr, kv_norm_default_config(&pr), &k));
  cudaFuncAttributes a;
  KV_TRY(CHECK_CUDA(cudaFuncGetAttributes(&a, k.func)));
  int blocks = 0;
  KV_TRY(CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.func, k.block, 0)));
  r->registers = a.numRegs;
  r->smem_bytes = (int)a.sharedSizeBytes;
  r->local_bytes = (int)a.localSizeBytes;
  r->occupancy = blocks;
  return KV_OK;
}

static kv_status ln_launch(const kv_case *c, void *const *i, void *const *o, void *s) { return launch_case(c, true, i, o, s); }
static kv_status rms_launch(const kv_case *c, void *const *i, void *const *o, void *s) { return launch_case(c, false, i, o, s); }
static kv_status ln_reference(const kv_case *c, const void *const *i, double *ref, double *mag, double *aux, void *s) {
  (void)aux;
  return reference_case(c, true, i, ref, mag, s);
}
static kv_status rms_reference(const kv_case *c, const void *const *i, double *ref, double *mag, double *aux, void *s) {
  (void)aux;
  return reference_case(c, false, i, ref, mag, s);
}
static kv_status ln_resources(const kv_case *c, kv_kernel_resources *r) { return resources_case(c, true, r); }
static kv_status rms_resources(const kv_case *c, kv_kernel_resources *r) { return resources_case(c, false, r); }

extern "C" const kv_cuda_family kv_cuda_layernorm = {ln_launch, ln_reference, ln_resources};
extern "C" const kv_cuda_family kv_cuda_rmsnorm = {rms_launch, rms_reference, rms_resources};
