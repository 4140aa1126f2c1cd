/* fa2_cuda.cu - kv_cuda_fa2, the fa2 family's CUDA side as the cuda backend sees it: a case
 * (axes variant, precision, headdim, seqlen, causal, batch, heads, seqlen_k; params tokens,
 * scale; inputs q, k, v; outputs o and the fp32 LSE) becomes, once, a kv_fa2_case: the kernel
 * problem that kv_fa2_prepare (fa2_dispatch.cu) decodes into the variant's instantiation with
 * its TMA descriptors, launched as it is, and the reference's kv_fa2_ref_args, which
 * fa2_gpu_ref.cu evaluates in fp64. */
#include <new>

#include "core/cuda_check.cuh"
#include "families/fa2/fa2.h"
#include "families/fa2/fa2_api.h"
#include "family_cuda.h"

static kv_status fa2_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                             const char **why) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  if (d.batch > 0x7fffffffLL || d.seqlen > 0x7fffffffLL || d.seqlen_k > 0x7fffffffLL) {
    *why = "fa2: batch, seqlen or seqlen_k exceeds the kernel's int range";
    return KV_ERR;
  }
  kv_fa2_args a;
  a.q = d_in[0];
  a.k = d_in[1];
  a.v = d_in[2];
  a.o = d_out[0];
  a.lse = static_cast<float *>(d_out[1]);
  a.batch = (int)d.batch;
  a.heads = (int)d.heads;
  a.seqlen_q = (int)d.seqlen;
  a.seqlen_k = (int)d.seqlen_k;
  a.scale = d.scale_f;
  a.scale_log2 = d.scale_log2;
  kv_fa2_case *f = new (std::nothrow) kv_fa2_case();
  KV_TRY(CHECK_ALLOC(f));
  if (kv_fa2_prepare(a, d.variant, (int)d.headdim, c->prec, d.causal, &f->kernel, why) != KV_OK) {
    delete f;
    return KV_ERR;
  }
  f->ref.q = d_in[0];
  f->ref.k = d_in[1];
  f->ref.v = d_in[2];
  f->ref.store = c->prec.storage;
  f->ref.accum = c->prec.accum;
  f->ref.batch = d.batch;
  f->ref.heads = d.heads;
  f->ref.seqlen_q = d.seqlen;
  f->ref.seqlen_k = d.seqlen_k;
  f->ref.headdim = d.headdim;
  f->ref.causal = d.causal;
  f->ref.scale = d.scale;
  f->ref.rho = kv_fa2_mag_rho(c);
  *problem = f;
  return KV_OK;
}

static kv_status fa2_launch(const void *problem, void *stream) {
  return kv_fa2_launch(static_cast<const kv_fa2_case *>(problem)->kernel, static_cast<cudaStream_t>(stream));
}

static kv_status fa2_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                               double *d_aux_mag, void *stream) {
  kv_fa2_ref_args r = static_cast<const kv_fa2_case *>(problem)->ref;
  r.ref = d_ref;
  r.mag = d_mag;
  r.lse = d_aux_ref;
  r.lse_mag = d_aux_mag;
  return kv_fa2_gpu_reference(r, static_cast<cudaStream_t>(stream));
}

static kv_status fa2_resources(const void *problem, kv_kernel_resources *res) {
  return kv_fa2_resources(static_cast<const kv_fa2_case *>(problem)->kernel, res);
}

static void fa2_release(void *problem) { delete static_cast<kv_fa2_case *>(problem); }

extern "C" const kv_cuda_family kv_cuda_fa2 = {fa2_prepare, fa2_launch, fa2_reference, fa2_resources, fa2_release};
