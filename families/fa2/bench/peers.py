#!/usr/bin/env python3
"""peers.py - PyTorch's attention kernels timed on the shapes of fa2_bench's `bench` command, by
the job's timing method (bench/peer_timing.py: the deck's [run] settings, L2 flush, stop rule,
median), written as rows of the bench CSV (bench/README.md) so bench/side_by_side.py can set
them beside kval's.

Backends: SDPA with the flash backend (FlashAttention-2 code) and with the cuDNN backend.
Shapes: head dim 64 and 128 (and 256 at seqlen 4096), fp16 and bf16 (PyTorch accumulates in
fp32: precision fp16:fp32, bf16:fp32), causal and not, seqlen 512 .. 16384 with batch * seqlen
= 32768 and 16 heads,
inputs normal(0, 1) (dist normal); tensors in kval's layout [batch, seqlen, heads, headdim],
handed to SDPA as the [batch, heads, seqlen, headdim] view (transpose(1, 2)), as
FlashAttention reads them. TFLOP/s = 4 * B * H * L * L * d / t, halved when causal (kval's
count for seqlen_k = seqlen); GB/s counts q, k, v read and o written once.

  peers.py --csv FILE [--deck inputs/default.deck] [--json FILE]   (exit 77 without PyTorch or a GPU)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import peer_timing  # noqa: E402

AXES = ["headdim", "seqlen", "causal", "batch", "heads", "dist"]
LENS = [512, 1024, 2048, 4096, 8192, 16384]
TOKENS, HEADS = 32768, 16


def flops(b, h, lq, lk, d, causal):
    f = 4.0 * b * h * lq * lk * d
    return f / 2 if causal else f


def time_peers(torch, timer, w):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [("sdpa-flash", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)]
    rows = []
    for d, lens in ((64, LENS), (128, LENS), (256, (4096,))):  # d 256: fa2_bench's kval-wgmma rows
        for dtype, pname in ((torch.float16, "fp16:fp32"), (torch.bfloat16, "bf16:fp32")):
            for causal in (0, 1):
                for L in lens:
                    B = TOKENS // L
                    gen = torch.Generator(device="cuda").manual_seed(L * 7 + d)
                    q, k, v = (torch.randn(B, L, HEADS, d, device="cuda", dtype=dtype, generator=gen)
                               for _ in range(3))
                    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                    nbytes = 4 * q.numel() * q.element_size()
                    for name, backend in backends:
                        row = dict(family="fa2", backend=name, precision=pname, headdim=d, seqlen=L, causal=causal,
                                   batch=B, heads=HEADS, dist="normal")
                        try:
                            with sdpa_kernel(backend):
                                ms, reps = timer.median_ms(
                                    lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal)))
                            row.update(ms=f"{ms:.5f}", tflops=f"{flops(B, HEADS, L, L, d, causal) / ms / 1e9:.2f}",
                                       gbps=f"{nbytes / ms / 1e6:.1f}", reps=reps)
                        except RuntimeError as err:  # backend unavailable for this shape
                            print(f"{name} d={d} {pname} causal={causal} L={L}: {err}".splitlines()[0],
                                  file=sys.stderr)
                            row.update(ms="nan", tflops="nan", gbps="nan", verdict="error")
                        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                        w.writerow(row)
                        rows.append(row)
                    del q, k, v, qt, kt, vt
    return rows


if __name__ == "__main__":
    sys.exit(peer_timing.main(__doc__, AXES, time_peers))
