/* decode_cuda.cu - kv_cuda_decode, the decode family's CUDA side as the cuda backend sees it:
 * a case (axes precision, headdim, page_size, ctx_len, batch, q_heads, kv_heads, q_len; params
 * scale, table_seed, sms, k_scale, v_scale; inputs q, k_cache, v_cache; outputs out and the fp32 LSE) becomes,
 * once, a kv_decode_case: the block table of the case (kv_decode_block_table) uploaded, the
 * split plan for this GPU's SM count with its partial buffers and arrival counts, the kernel
 * problem (decode_dispatch.cu) and the arguments of the fp64 reference (decode_gpu_ref.cu). */
#include <cstdlib>
#include <new>

#include "core/cuda_check.cuh"
#include "families/decode/decode.h"
#include "families/decode/decode_api.h"
#include "family_cuda.h"

static void decode_release(void *problem) {
  kv_decode_case *f = static_cast<kv_decode_case *>(problem);
  if (!f) return;
  if (f->d_table) (void)CHECK_CUDA(cudaFree(f->d_table));
  if (f->d_part) (void)CHECK_CUDA(cudaFree(f->d_part));
  if (f->d_arrivals) (void)CHECK_CUDA(cudaFree(f->d_arrivals));
  delete f;
}

/* The table of the case on the device. */
static kv_status upload_table(const kv_decode_dims &d, int32_t **dst) {
  int32_t *host = static_cast<int32_t *>(malloc(static_cast<size_t>(d.num_pages) * sizeof(int32_t)));
  KV_TRY(CHECK_ALLOC(host));
  kv_decode_block_table(&d, host);
  const size_t bytes = static_cast<size_t>(d.num_pages) * sizeof(int32_t);
  kv_status st = CHECK_CUDA(cudaMalloc(dst, bytes));
  if (st == KV_OK) st = CHECK_CUDA(cudaMemcpy(*dst, host, bytes, cudaMemcpyHostToDevice));
  free(host);
  return st;
}

static kv_status decode_prepare(const kv_case *c, void *const *d_in, void *const *d_out, void **problem,
                                const char **why) {
  int dev, sms;
  KV_TRY(CHECK_CUDA(cudaGetDevice(&dev)));
  KV_TRY(CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)));
  kv_decode_dims d;
  kv_decode_dims_of(c, sms, &d);
  if (d.num_pages > 0x7fffffffLL || d.ctx > 0x7fffffffLL) {
    *why = "decode: pages or ctx_len exceed the kernel's int range";
    return KV_ERR;
  }
  kv_decode_case *f = new (std::nothrow) kv_decode_case();
  KV_TRY(CHECK_ALLOC(f));
  if (upload_table(d, &f->d_table) != KV_OK) {
    decode_release(f);
    return KV_ERR;
  }
  const size_t rows = static_cast<size_t>(d.batch * d.q_len * d.q_heads);
  const size_t groups = static_cast<size_t>(d.batch * d.kv_heads);
  const size_t part_bytes = static_cast<size_t>(d.splits) * rows * (d.headdim + 1) * sizeof(float);
  /* partials start as NaN: a combine that reads a split before it is written poisons the first launch */
  if (d.splits > 1 &&
      (CHECK_CUDA(cudaMalloc(&f->d_part, part_bytes)) != KV_OK ||
       CHECK_CUDA(cudaMemset(f->d_part, 0xff, part_bytes)) != KV_OK ||
       CHECK_CUDA(cudaMalloc(&f->d_arrivals, groups * sizeof(int))) != KV_OK ||
       CHECK_CUDA(cudaMemset(f->d_arrivals, 0, groups * sizeof(int))) != KV_OK)) {
    decode_release(f);
    return KV_ERR;
  }
  kv_decode_args a;
  a.q = d_in[0];
  a.k = d_in[1];
  a.v = d_in[2];
  a.o = d_out[0];
  a.lse = static_cast<float *>(d_out[1]);
  a.table = f->d_table;
  a.part_o = f->d_part;
  a.part_lse = f->d_part ? f->d_part + static_cast<size_t>(d.splits) * rows * d.headdim : nullptr;
  a.arrivals = f->d_arrivals;
  a.batch = static_cast<int>(d.batch);
  a.q_len = static_cast<int>(d.q_len);
  a.q_heads = static_cast<int>(d.q_heads);
  a.kv_heads = static_cast<int>(d.kv_heads);
  a.group = static_cast<int>(d.group);
  a.rows = static_cast<int>(d.rows);
  a.page = static_cast<int>(d.page);
  a.pages_per_seq = static_cast<int>(d.pages_per_seq);
  a.ctx = static_cast<int>(d.ctx);
  a.splits = d.splits;
  a.split_pages = static_cast<int>(d.split_pages);
  a.scale = d.scale_f;
  a.scale_log2 = d.scale_log2;
  a.v_scale = d.v_scale;
  if (kv_decode_prepare(a, static_cast<int>(d.headdim), c->prec, d.kv_type, &f->kernel, why) != KV_OK) {
    decode_release(f);
    return KV_ERR;
  }
  kv_decode_ref_args &r = f->ref;
  r.q = d_in[0];
  r.k = d_in[1];
  r.v = d_in[2];
  r.table = f->d_table;
  r.store = d.kv_type;
  r.io = d.io_type;
  r.accum = c->prec.accum;
  r.batch = d.batch;
  r.q_len = d.q_len;
  r.q_heads = d.q_heads;
  r.kv_heads = d.kv_heads;
  r.page = d.page;
  r.pages_per_seq = d.pages_per_seq;
  r.ctx = d.ctx;
  r.headdim = d.headdim;
  r.scale = d.scale;
  r.k_scale = d.k_scale;
  r.v_scale = d.v_scale;
  r.rho = kv_decode_mag_rho(c->prec, &d);
  *problem = f;
  return KV_OK;
}

static kv_status decode_launch(const void *problem, void *stream) {
  return kv_decode_launch(static_cast<const kv_decode_case *>(problem)->kernel, static_cast<cudaStream_t>(stream));
}

static kv_status decode_reference(const void *problem, double *d_ref, double *d_mag, double *d_aux_ref,
                                  double *d_aux_mag, void *stream) {
  kv_decode_ref_args r = static_cast<const kv_decode_case *>(problem)->ref;
  r.ref = d_ref;
  r.mag = d_mag;
  r.lse = d_aux_ref;
  r.lse_mag = d_aux_mag;
  return kv_decode_gpu_reference(r, static_cast<cudaStream_t>(stream));
}

static kv_status decode_resources(const void *problem, kv_kernel_resources *res) {
  return kv_decode_resources(static_cast<const kv_decode_case *>(problem)->kernel, res);
}

extern "C" const kv_cuda_family kv_cuda_decode = {decode_prepare, decode_launch, decode_reference, decode_resources,
                                                  decode_release};
