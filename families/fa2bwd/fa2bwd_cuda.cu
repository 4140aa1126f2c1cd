/* fa2bwd_cuda.cu - kv_cuda_fa2bwd, the fa2bwd family's CUDA side as the cuda backend sees it: a
 * case (axes variant, precision, headdim, seqlen, causal, batch, heads; params tokens, scale;
 * inputs q, k, v, dout; output dqkv) becomes, once, a kv_fa2bwd_case: the forward's o and lse
 * computed from q, k, v by the fa2 family's kval-mma kernel (the backward reads them; they are
 * not timed), the D workspace, the backward problem that kv_fa2bwd_prepare
 * (fa2bwd_dispatch.cu) decodes, launched as it is, and the reference's kv_fa2bwd_ref_args,
 * which fa2bwd_gpu_ref.cu evaluates in fp64 (from q, k, v, dout alone). */
#include <new>

#include "core/cuda_check.cuh"
#include "families/fa2bwd/fa2bwd.h"
#include "families/fa2bwd/fa2bwd_api.h"
#include "family_cuda.h"

static void fa2bwd_release(void *problem) {
  kv_fa2bwd_case *f = static_cast<kv_fa2bwd_case *>(problem);
  if (!f) return;
  if (f->d_o) (void)CHECK_CUDA(cudaFree(f->d_o));
  if (f->d_lse) (void)CHECK_CUDA(cudaFree(f->d_lse));
  if (f->d_dsum) (void)CHECK_CUDA(cudaFree(f->d_dsum));
  if (f->d_dq_accum) (void)CHECK_CUDA(cudaFree(f->d_dq_accum));
  if (f->d_dq_sem) (void)CHECK_CUDA(cudaFree(f->d_dq_sem));
  delete f;
}

/* o and lse of the case: the fa2 forward (kval-mma) once, synchronised. */
static kv_status run_forward(const kv_fa2bwd_dims &d, kv_precision prec, void *const *d_in, kv_fa2bwd_case *f,
                             const char **why) {
  kv_fa2_args a;
  a.q = d_in[0];
  a.k = d_in[1];
  a.v = d_in[2];
  a.o = f->d_o;
  a.lse = f->d_lse;
  a.batch = static_cast<int>(d.batch);
  a.heads = static_cast<int>(d.heads);
  a.seqlen_q = a.seqlen_k = static_cast<int>(d.seqlen);
  a.scale = d.scale_f;
  a.scale_log2 = d.scale_log2;
  KV_TRY(kv_fa2_prepare(a, KV_FA2_MMA, static_cast<int>(d.headdim), prec, d.causal, &f->fwd, why));
  KV_TRY(kv_fa2_launch(f->fwd, 0));
  return CHECK_CUDA(cudaStreamSynchronize(0));
}

static kv_status fa2bwd_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                                const char **why) {
  kv_fa2bwd_dims d;
  kv_fa2bwd_dims_of(c, &d);
  if (d.batch > 0x7fffffffLL || d.seqlen > 0x7fffffffLL) {
    *why = "fa2bwd: batch or seqlen exceeds the kernel's int range";
    return KV_ERR;
  }
  const size_t tokens = static_cast<size_t>(d.batch * d.seqlen * d.heads), n = tokens * static_cast<size_t>(d.headdim);
  long long accum_bytes, sem_bytes;
  kv_fa2bwd_workspace(d.variant, d.batch, d.heads, d.seqlen, d.headdim, &accum_bytes, &sem_bytes);
  kv_fa2bwd_case *f = new (std::nothrow) kv_fa2bwd_case();
  KV_TRY(CHECK_ALLOC(f));
  if (CHECK_CUDA(cudaMalloc(&f->d_o, n * kv_dtype_size(c->prec.storage))) != KV_OK ||
      CHECK_CUDA(cudaMalloc(&f->d_lse, tokens * sizeof(float))) != KV_OK ||
      CHECK_CUDA(cudaMalloc(&f->d_dsum, tokens * sizeof(float))) != KV_OK ||
      (accum_bytes > 0 && CHECK_CUDA(cudaMalloc(&f->d_dq_accum, static_cast<size_t>(accum_bytes))) != KV_OK) ||
      (sem_bytes > 0 && CHECK_CUDA(cudaMalloc(&f->d_dq_sem, static_cast<size_t>(sem_bytes))) != KV_OK) ||
      run_forward(d, c->prec, d_in, f, why) != KV_OK) {
    fa2bwd_release(f);
    return KV_ERR;
  }
  const size_t part = n * kv_dtype_size(c->prec.storage);
  kv_fa2bwd_args a;
  a.q = d_in[0];
  a.k = d_in[1];
  a.v = d_in[2];
  a.dout = d_in[3];
  a.o = f->d_o;
  a.lse = f->d_lse;
  a.dsum = f->d_dsum;
  a.dq = d_out[0];
  a.dk = static_cast<char *>(d_out[0]) + part;
  a.dv = static_cast<char *>(d_out[0]) + 2 * part;
  a.dq_accum = f->d_dq_accum;
  a.dq_sem = f->d_dq_sem;
  a.dq_rotate = 0;
  a.batch = static_cast<int>(d.batch);
  a.heads = static_cast<int>(d.heads);
  a.seqlen = static_cast<int>(d.seqlen);
  a.scale = d.scale_f;
  a.scale_log2 = d.scale_log2;
  if (kv_fa2bwd_prepare(a, d.variant, static_cast<int>(d.headdim), c->prec, d.causal, &f->kernel, why) != KV_OK) {
    fa2bwd_release(f);
    return KV_ERR;
  }
  kv_fa2bwd_ref_args &r = f->ref;
  r.q = d_in[0];
  r.k = d_in[1];
  r.v = d_in[2];
  r.dout = d_in[3];
  r.store = c->prec.storage;
  r.batch = d.batch;
  r.heads = d.heads;
  r.seqlen = d.seqlen;
  r.headdim = d.headdim;
  r.causal = d.causal;
  r.scale = d.scale;
  kv_fa2bwd_mag_terms(c, &r.rho, &r.eta);
  *problem = f;
  return KV_OK;
}

static kv_status fa2bwd_launch(const void *problem, void *stream) {
  return kv_fa2bwd_launch(static_cast<const kv_fa2bwd_case *>(problem)->kernel, static_cast<cudaStream_t>(stream));
}

static kv_status fa2bwd_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                                  double *d_aux_mag, void *stream) {
  (void)d_aux_ref;
  (void)d_aux_mag;
  kv_fa2bwd_ref_args r = static_cast<const kv_fa2bwd_case *>(problem)->ref;
  r.ref = d_ref;
  r.mag = d_mag;
  return kv_fa2bwd_gpu_reference(r, static_cast<cudaStream_t>(stream));
}

static kv_status fa2bwd_resources(const void *problem, kv_kernel_resources *res) {
  return kv_fa2bwd_resources(static_cast<const kv_fa2bwd_case *>(problem)->kernel, res);
}

extern "C" const kv_cuda_family kv_cuda_fa2bwd = {fa2bwd_prepare, fa2bwd_launch, fa2bwd_reference, fa2bwd_resources,
                                                  fa2bwd_release};
