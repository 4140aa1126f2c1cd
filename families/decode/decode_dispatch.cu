/* decode_dispatch.cu - the paged-KV decode kernel of a problem, chosen once: the family's
 * support rule (decode_limits.h) and the argument checks, then the instantiation (head dim x
 * storage x KV cache type, inst/decode_<st>[_<kv>].cu), whose prepare step raises the
 * shared-memory limit; then the launch and the resource query of the prepared problem. */
#include <cmath>

#include "families/decode/decode_api.h"

namespace {

template <int D, kv_dtype S>
cudaError_t by_cache(kv_decode_problem *pr) {
  if (pr->kv == KV_E4M3) return kv_decode_prepare_inst<D, S, KV_E4M3>(pr);
  if (pr->kv == KV_E5M2) return kv_decode_prepare_inst<D, S, KV_E5M2>(pr);
  return kv_decode_prepare_inst<D, S, S>(pr);
}

template <int D>
cudaError_t by_store(kv_decode_problem *pr) {
  return pr->prec.storage == KV_FP16 ? by_cache<D, KV_FP16>(pr) : by_cache<D, KV_BF16>(pr);
}

/* Why the arguments cannot be launched, or NULL. */
const char *bad_args(const kv_decode_args &a) {
  if (a.batch < 1 || a.kv_heads < 1 || a.q_len < 1 || a.ctx < 1) return "decode kernel: empty batch, heads, queries or cache";
  if (a.batch > 65535) return "decode kernel: batch above the grid's 65535";
  if (a.group != a.q_heads / a.kv_heads || a.rows != a.q_len * a.group) return "decode kernel: inconsistent GQA group";
  if (a.pages_per_seq != (a.ctx + a.page - 1) / a.page) return "decode kernel: pages_per_seq does not cover ctx";
  if (a.splits < 1 || a.split_pages < 1 || (long long)(a.splits - 1) * a.split_pages >= a.pages_per_seq)
    return "decode kernel: split plan does not cover the pages";
  if (a.splits > 1 && (!a.part_o || !a.part_lse || !a.arrivals))
    return "decode kernel: several splits need partial buffers and arrival counts";
  if ((double)a.batch * a.q_len * a.q_heads > 2147483647.0) return "decode kernel: rows exceed the int range";
  if (!(a.scale > 0.f) || !(a.scale_log2 > 0.f)) return "decode kernel: the softmax scale must be positive";
  if (!(a.v_scale > 0.f) || !std::isfinite(a.v_scale)) return "decode kernel: the V cache's scale must be positive and finite";
  return nullptr;
}

}  // namespace

kv_status kv_decode_prepare(const kv_decode_args &a, int headdim, kv_precision prec, kv_dtype kv, kv_decode_problem *pr,
                            const char **why) {
  *why = kv_decode_unsupported(headdim, prec, kv, a.page, a.q_heads, a.kv_heads, a.q_len);
  if (!*why) *why = bad_args(a);
  if (*why) return KV_ERR;
  *pr = kv_decode_problem();
  pr->a = a;
  pr->headdim = headdim;
  pr->prec = prec;
  pr->kv = kv;
  return CHECK_CUDA(headdim == 64 ? by_store<64>(pr) : by_store<128>(pr));
}

kv_status kv_decode_launch(const kv_decode_problem &pr, cudaStream_t stream) { return CHECK_CUDA(pr.launch(pr, stream)); }

kv_status kv_decode_resources(const kv_decode_problem &pr, kv_kernel_resources *r) { return CHECK_CUDA(pr.info(r)); }
