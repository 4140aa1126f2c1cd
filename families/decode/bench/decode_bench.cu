/* decode_bench.cu - the decode family's bench driver, on the bench harness (bench/harness.h):
 * every row is a kval case run, timed and validated as the job runs it.
 *   decode_bench [bench|pages|kv8|all] [--csv FILE] [--deck FILE] [--set run.KEY=VALUE]...
 * bench  the family's kernel (backend "kval") at the shapes PyTorch's peers time (peers.py):
 *        page 16, shuffled block table, batch 1 .. 32, context 1k .. 128k, GQA 1, 4 and 8
 *        (32 query heads), head dims 64 and 128, fp16:fp32 and bf16:fp32
 * pages  one shape (batch 8, ctx 32k, 32/8 heads, d 128, bf16) at page sizes 16 .. 128, with
 *        the shuffled table and the contiguous one (table_seed=0): the cost of indirection
 * kv8    8-bit KV caches (e4m3, e5m2) beside the 16-bit one at the shapes of peers.py's KV8
 *        list (page 16, shuffled table, GQA 4, d 128)
 * all    all three (the default). GB/s is the family's byte count (K and V read once) over the
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

/* (batch, ctx, storage, 8-bit cache type): peers.py's KV8 */
const struct {
  int batch, ctx;
  const char *prec, *kv8;
} kKv8[] = {{1, 131072, "bf16:fp32", "e4m3"}, {8, 8192, "bf16:fp32", "e4m3"}, {8, 32768, "bf16:fp32", "e4m3"},
            {8, 32768, "fp16:fp32", "e5m2"}, {32, 4096, "bf16:fp32", "e4m3"}};

kv_status kv8(kv_bench *b) {
  for (const auto &s : kKv8)
    for (const char *kv : {"storage", s.kv8}) {
      char spec[192];
      snprintf(spec, sizeof spec,
               "precision=%s kv_type=%s headdim=128 page_size=16 ctx_len=%d batch=%d q_heads=32 kv_heads=8 q_len=1", s.prec,
               kv, s.ctx, s.batch);
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
  static const kv_bench_command commands[] = {{"bench", bench}, {"pages", pages}, {"kv8", kv8}, {nullptr, nullptr}};
  return kv_bench_main("decode", commands, argc, argv);
}
