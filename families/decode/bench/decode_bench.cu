/* decode_bench.cu - the decode family's bench driver, on the bench harness (bench/harness.h):
 * every row is a kval case run, timed and validated as the job runs it.
 *   decode_bench [bench|pages|all] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * bench  the family's kernel (backend "kval") at the shapes PyTorch's peers time (peers.py):
 *        page 16, shuffled block table, batch 1 .. 32, context 1k .. 128k, GQA 1, 4 and 8
 *        (32 query heads), head dims 64 and 128, fp16:fp32 and bf16:fp32
 * pages  one shape (batch 8, ctx 32k, 32/8 heads, d 128, bf16) at page sizes 16 .. 128, with
 *        the shuffled table and the contiguous one (table_seed=0): the cost of indirection
 * all    both (the default). GB/s is the family's byte count (K and V read once) over the
 *        median; the device line gives the measured copy ceiling. Exit 0 when every case
 *        passed, 1 otherwise, 77 without a GPU. */
#include <stdio.h>

#include "bench/harness.h"

namespace {

const struct {
  int batch, ctx, q_heads, kv_heads, headdim;
  const char *prec;
} kShapes[] = {{1, 8192, 32, 8, 128, "bf16:fp32"},    {1, 131072, 32, 8, 128, "bf16:fp32"},
               {8, 1024, 32, 8, 128, "bf16:fp32"},    {8, 8192, 32, 8, 128, "bf16:fp32"},
               {8, 32768, 32, 8, 128, "bf16:fp32"},   {8, 32768, 32, 8, 128, "fp16:fp32"},
               {32, 4096, 32, 8, 128, "bf16:fp32"},   {8, 8192, 32, 32, 128, "bf16:fp32"},
               {8, 8192, 32, 4, 128, "bf16:fp32"},    {8, 8192, 32, 8, 64, "fp16:fp32"},
               {4, 65536, 32, 8, 128, "fp16:fp32"}};

kv_status bench(kv_bench *b) {
  for (const auto &s : kShapes) {
    char spec[192];
    snprintf(spec, sizeof spec, "precision=%s headdim=%d page_size=16 ctx_len=%d batch=%d q_heads=%d kv_heads=%d q_len=1",
             s.prec, s.headdim, s.ctx, s.batch, s.q_heads, s.kv_heads);
    KV_TRY(kv_bench_case(b, "decode", spec, nullptr, nullptr));
  }
  return KV_OK;
}

kv_status pages(kv_bench *b) {
  for (int page = 16; page <= 128; page *= 2)
    for (int seed = 1; seed >= 0; --seed) {
      char spec[192];
      snprintf(spec, sizeof spec,
               "precision=bf16:fp32 headdim=128 page_size=%d ctx_len=32768 batch=8 q_heads=32 kv_heads=8 table_seed=%d",
               page, seed);
      KV_TRY(kv_bench_case(b, "decode", spec, seed ? "kval" : "kval-contiguous", nullptr));
    }
  return KV_OK;
}

}  // namespace

int main(int argc, char **argv) {
  static const kv_bench_command commands[] = {{"bench", bench}, {"pages", pages}, {nullptr, nullptr}};
  return kv_bench_main("decode", commands, argc, argv);
}
