#!/usr/bin/env python3
"""peers.py - PyTorch's decode attention at the shapes of decode_bench's `bench` command, by the
job's timing method (bench/peer_timing.py: the deck's [run] settings, L2 flush, stop rule,
median), written as rows of the bench CSV (bench/README.md) so bench/side_by_side.py can set
them beside kval's.

The same problem as kval's decode family (families/decode/decode.h): q [batch, 32 heads,
q_len 1, d], a paged cache of 16-token pages under a shuffled block table. Two peers and a ceiling:
  gather+sdpa  one call: the pages gathered through the block table (index_select) into
               contiguous K and V, then F.scaled_dot_product_attention (enable_gqa)
  sdpa         SDPA alone on K and V already gathered (contiguous): no paging at all, a bound
               no paged kernel has to meet
  copy         a device copy moving the case's bytes (half of them read, half written), timed
               the same way: the same-size copy, the ceiling of a problem this small (a
               decode of a few tens of MB is as far from the large copy's rate as the copy
               of its bytes is)
At decode_bench kv8's shapes (KV8) the cache is 8-bit (torch.float8_e4m3fn / float8_e5m2, kv_type
e4m3 / e5m2): gather+sdpa gathers the 8-bit pages and widens them to the storage type before
SDPA (PyTorch has no 8-bit attention), sdpa runs on K and V already gathered and widened.
GB/s counts kval's bytes (q, K, V read once, out and lse written; the table), precision
<storage>:fp32. Backend names as above.

  peers.py --csv FILE [--deck inputs/default.deck] [--json FILE]   (exit 77 without PyTorch or a GPU)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import peer_timing  # noqa: E402

AXES = ["kv_type", "headdim", "page_size", "ctx_len", "batch", "q_heads", "kv_heads", "q_len", "dist"]
# (batch, ctx, q_heads, kv_heads, headdim, storage): decode_bench.cu's kShapes
SHAPES = [(1, 8192, 32, 8, 128, "bf16"), (1, 131072, 32, 8, 128, "bf16"), (8, 1024, 32, 8, 128, "bf16"),
          (8, 8192, 32, 8, 128, "bf16"), (8, 32768, 32, 8, 128, "bf16"), (8, 32768, 32, 8, 128, "fp16"),
          (32, 4096, 32, 8, 128, "bf16"), (8, 8192, 32, 32, 128, "bf16"), (8, 8192, 32, 4, 128, "bf16"),
          (8, 8192, 32, 8, 64, "fp16"), (4, 65536, 32, 8, 128, "fp16")]
# (batch, ctx, storage, 8-bit cache type), GQA 32 / 8, head dim 128: decode_bench.cu's kKv8
KV8 = [(1, 131072, "bf16", "e4m3"), (8, 8192, "bf16", "e4m3"), (8, 32768, "bf16", "e4m3"), (8, 32768, "fp16", "e5m2"),
       (32, 4096, "bf16", "e4m3")]
PAGE = 16


def measure(torch, timer, w):
    import torch.nn.functional as F

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows_out = []
    cases = [(b, c, hq, hkv, d, dt, "storage") for b, c, hq, hkv, d, dt in SHAPES]
    cases += [(b, c, 32, 8, 128, dt, kv) for b, c, dt, kv in KV8]
    for batch, ctx, hq, hkv, d, dt, kv in cases:
        t, ct = dtypes[dt], dtypes[dt if kv == "storage" else kv]
        pps = (ctx + PAGE - 1) // PAGE
        pages = batch * pps
        kc = torch.randn(pages, hkv, PAGE, d, device="cuda", generator=gen).to(ct)
        vc = torch.randn(pages, hkv, PAGE, d, device="cuda", generator=gen).to(ct)
        table = torch.randperm(pages, device="cuda", generator=gen).view(batch, pps)
        q = torch.randn(batch, hq, 1, d, device="cuda", generator=gen).to(t)

        def gathered(cache):
            # the pages through the table, contiguous, widened to the storage type (8-bit pages
            # are gathered as bytes: index_select has no 8-bit float kernels in every PyTorch)
            raw = cache.view(torch.uint8) if cache.element_size() == 1 else cache
            g = raw.index_select(0, table.reshape(-1)).view(ct).view(batch, pps, hkv, PAGE, d)
            return g.permute(0, 2, 1, 3, 4).reshape(batch, hkv, pps * PAGE, d)[:, :, :ctx].to(t)

        kg, vg = gathered(kc), gathered(vc)
        s, sq = kc.element_size(), q.element_size()
        nbytes = 2 * batch * hq * d * sq + 2 * batch * ctx * hkv * d * s + 4 * batch * hq + 4 * pages
        flops = 4.0 * batch * hq * ctx * d
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        gather_sdpa = lambda: F.scaled_dot_product_attention(q, gathered(kc), gathered(vc), enable_gqa=True)  # noqa: E731
        for name, fn, work in (("gather+sdpa", gather_sdpa, flops),
                               ("sdpa", lambda: F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True), flops),
                               ("copy", lambda: dst.copy_(src), 0.0)):
            ms, reps = timer.median_ms(fn)
            moved = 2 * (nbytes // 2) if name == "copy" else nbytes
            row = dict(family="decode", backend=name, precision=f"{dt}:fp32", kv_type=kv, headdim=d, page_size=PAGE,
                       ctx_len=ctx, batch=batch, q_heads=hq, kv_heads=hkv, q_len=1, dist="normal", ms=f"{ms:.5f}",
                       tflops=f"{work / ms / 1e9:.2f}", gbps=f"{moved / ms / 1e6:.1f}", reps=reps)
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
            w.writerow(row)
            rows_out.append(row)
        del kc, vc, kg, vg, q, table, src, dst
    return rows_out


if __name__ == "__main__":
    sys.exit(peer_timing.main(__doc__, AXES, measure))
