/* fa2_launch.cu - kv_cuda_fa2, the fa2 family's CUDA side as the cuda backend sees it: a case
 * (axes variant, precision, headdim, seqlen, causal, batch, heads; params tokens, seqlen_k,
 * scale; inputs q, k, v; outputs o and the fp32 LSE) becomes the kernel's kv_fa2_args, which
 * fa2_dispatch.cu launches with the variant's matching instantiation, and the reference's
 * kv_fa2_ref_args, which fa2_reference.cu evaluates in fp64. */
#include "core/cuda_check.cuh"
#include "families/fa2/fa2_api.h"
#include "family_cuda.h"

extern "C" {
#include "families/families.h"
}

/* Storage and accumulator codes of the kernel for the case's precision; KV_ERR (reported)
 * for a pair the kernel does not have. */
static kv_status fa2_codes(const kv_case *c, int *store, int *acc) {
  const kv_precision p = c->prec;
  if (p.storage == KV_FP16 && (p.accum == KV_FP32 || p.accum == KV_FP16)) {
    *store = KV_FA2_FP16;
    *acc = p.accum == KV_FP32 ? KV_FA2_ACC_F32 : KV_FA2_ACC_F16;
    return KV_OK;
  }
  if (p.storage == KV_BF16 && (p.accum == KV_FP32 || p.accum == KV_BF16)) {
    *store = KV_FA2_BF16;
    *acc = p.accum == KV_FP32 ? KV_FA2_ACC_F32 : KV_FA2_ACC_BF16;
    return KV_OK;
  }
  kv_report(__FILE__, __LINE__, "fa2", "precision %s:%s has no fa2 kernel (fp16:fp32, fp16:fp16, bf16:fp32, bf16:bf16)",
            kv_dtype_name(p.storage), kv_dtype_name(p.accum));
  return KV_ERR;
}

static kv_status fa2_launch(const kv_case *c, void *const *d_in, void *const *d_out, void *stream) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  int store, acc;
  KV_TRY(fa2_codes(c, &store, &acc));
  if (d.batch > 0x7fffffffLL || d.seqlen > 0x7fffffffLL || d.seqlen_k > 0x7fffffffLL) {
    kv_report(__FILE__, __LINE__, "fa2", "batch %lld, seqlen %lld or seqlen_k %lld exceeds the kernel's int range",
              d.batch, d.seqlen, d.seqlen_k);
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
  const char *why = NULL;
  const cudaError_t e = kv_fa2_variant_forward(d.wgmma ? KV_FA2_VARIANT_WGMMA : KV_FA2_VARIANT_MMA, a, (int)d.headdim,
                                               store, acc, d.causal, static_cast<cudaStream_t>(stream), &why);
  if (e == cudaErrorInvalidValue && why) {
    (void)cudaGetLastError();
    kv_report(__FILE__, __LINE__, "fa2", "%s", why);
    return KV_ERR;
  }
  return CHECK_CUDA(e);
}

static kv_status fa2_reference(const kv_case *c, const void *const *d_in, double *d_ref, double *d_mag,
                               double *d_aux_ref, void *stream) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  int store, acc;
  KV_TRY(fa2_codes(c, &store, &acc));
  kv_fa2_ref_args r;
  r.q = d_in[0];
  r.k = d_in[1];
  r.v = d_in[2];
  r.store = store;
  r.batch = d.batch;
  r.heads = d.heads;
  r.seqlen_q = d.seqlen;
  r.seqlen_k = d.seqlen_k;
  r.headdim = d.headdim;
  r.causal = d.causal;
  r.scale = d.scale;
  r.rho = kv_fa2_mag_rho(c);
  r.ref = d_ref;
  r.mag = d_mag;
  r.lse = d_aux_ref;
  char err[512];
  if (kv_fa2_reference_run(r, static_cast<cudaStream_t>(stream), err, sizeof err) != 0) {
    kv_report(__FILE__, __LINE__, "fa2 reference", "%s", err);
    (void)cudaGetLastError();
    (void)CHECK_CUDA(cudaDeviceSynchronize()); /* a context the failure broke is fatal */
    return KV_ERR;
  }
  return KV_OK;
}

static kv_status fa2_resources(const kv_case *c, kv_kernel_resources *res) {
  kv_fa2_dims d;
  kv_fa2_dims_of(c, &d);
  int store, acc;
  KV_TRY(fa2_codes(c, &store, &acc));
  kv_fa2_kernel_info info;
  const char *why = NULL;
  const cudaError_t e = kv_fa2_variant_resources(d.wgmma ? KV_FA2_VARIANT_WGMMA : KV_FA2_VARIANT_MMA, (int)d.headdim,
                                                 store, acc, d.causal, &info, &why);
  if (e == cudaErrorInvalidValue && why) {
    kv_report(__FILE__, __LINE__, "fa2", "%s", why);
    return KV_ERR;
  }
  KV_TRY(CHECK_CUDA(e));
  res->registers = info.registers;
  res->smem_bytes = info.smem_bytes;
  res->local_bytes = info.local_bytes;
  res->occupancy = info.blocks_per_sm;
  return KV_OK;
}

const kv_cuda_family kv_cuda_fa2 = {fa2_launch, fa2_reference, fa2_resources};
