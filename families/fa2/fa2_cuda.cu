/* fa2_cuda.cu - kv_cuda_fa2, the fa2 family's CUDA side as the cuda backend sees it: a case
 * (axes variant, precision, headdim, seqlen, causal, batch, heads; params tokens, seqlen_k,
 * scale; inputs q, k, v; outputs o and the fp32 LSE) becomes, once, the kernel's kv_fa2_args,
 * which fa2_dispatch.cu launches with the variant's instantiation, and the reference's
 * kv_fa2_ref_args, which fa2_gpu_ref.cu evaluates in fp64. */
#include <new>

#include "core/cuda_check.cuh"
#include "families/fa2/fa2.h"
#include "families/fa2/fa2_api.h"
#include "family_cuda.h"

struct fa2_case {
  int variant, headdim, causal;
  kv_precision prec;
  kv_fa2_args a;
  kv_fa2_ref_args r;
};

static kv_status fa2_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                             const char **why) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  if (d.batch > 0x7fffffffLL || d.seqlen > 0x7fffffffLL || d.seqlen_k > 0x7fffffffLL) {
    *why = "fa2: batch, seqlen or seqlen_k exceeds the kernel's int range";
    return KV_ERR;
  }
  fa2_case *f = new (std::nothrow) fa2_case();
  KV_TRY(CHECK_ALLOC(f));
  f->variant = d.variant;
  f->headdim = (int)d.headdim;
  f->causal = d.causal;
  f->prec = c->prec;
  *why = kv_fa2_unsupported(f->variant, f->headdim, f->prec);
  if (*why) {
    delete f;
    return KV_ERR;
  }
  f->a.q = d_in[0];
  f->a.k = d_in[1];
  f->a.v = d_in[2];
  f->a.o = d_out[0];
  f->a.lse = static_cast<float *>(d_out[1]);
  f->a.batch = (int)d.batch;
  f->a.heads = (int)d.heads;
  f->a.seqlen_q = (int)d.seqlen;
  f->a.seqlen_k = (int)d.seqlen_k;
  f->a.scale = d.scale_f;
  f->a.scale_log2 = d.scale_log2;
  f->r.q = d_in[0];
  f->r.k = d_in[1];
  f->r.v = d_in[2];
  f->r.store = c->prec.storage;
  f->r.accum = c->prec.accum;
  f->r.batch = d.batch;
  f->r.heads = d.heads;
  f->r.seqlen_q = d.seqlen;
  f->r.seqlen_k = d.seqlen_k;
  f->r.headdim = d.headdim;
  f->r.causal = d.causal;
  f->r.scale = d.scale;
  f->r.rho = kv_fa2_mag_rho(c);
  *problem = f;
  return KV_OK;
}

static kv_status fa2_launch(const void *problem, void *stream) {
  const fa2_case *f = static_cast<const fa2_case *>(problem);
  const char *why = nullptr;
  const kv_status st =
      kv_fa2_forward(f->variant, f->a, f->headdim, f->prec, f->causal, static_cast<cudaStream_t>(stream), &why);
  return KV_REFUSED(st, why, "fa2");
}

static kv_status fa2_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                               double *d_aux_mag, void *stream) {
  kv_fa2_ref_args r = static_cast<const fa2_case *>(problem)->r;
  r.ref = d_ref;
  r.mag = d_mag;
  r.lse = d_aux_ref;
  r.lse_mag = d_aux_mag;
  return kv_fa2_gpu_reference(r, static_cast<cudaStream_t>(stream));
}

static kv_status fa2_resources(const void *problem, kv_kernel_resources *res) {
  const fa2_case *f = static_cast<const fa2_case *>(problem);
  kv_fa2_kernel_info info;
  const char *why = nullptr;
  const kv_status st = kv_fa2_resources(f->variant, f->headdim, f->prec, f->causal, &info, &why);
  KV_TRY(KV_REFUSED(st, why, "fa2"));
  res->registers = info.registers;
  res->smem_bytes = info.smem_bytes;
  res->local_bytes = info.local_bytes;
  res->occupancy = info.blocks_per_sm;
  return KV_OK;
}

static void fa2_release(void *problem) { delete static_cast<fa2_case *>(problem); }

extern "C" const kv_cuda_family kv_cuda_fa2 = {fa2_prepare, fa2_launch, fa2_reference, fa2_resources, fa2_release};
