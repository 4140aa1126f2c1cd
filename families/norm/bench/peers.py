#!/usr/bin/env python3
"""peers.py - PyTorch's LayerNorm (F.layer_norm) and RMSNorm (F.rms_norm) timed at the shapes
of norm_bench's `bench` command, by the job's timing method (bench/peer_timing.py: the deck's
[run] settings, L2 flush, stop rule, median), written as rows of the bench CSV
(bench/README.md) so bench/side_by_side.py can set them beside kval's.

Inputs as the families define them (families/norm/norm.c, dist normal): x normal, weight
1 + 0.1 N, bias 0.1 N, eps 1e-5, in fp16, bf16 or fp32 (PyTorch accumulates in fp32:
precision <storage>:fp32). Backend "torch". GB/s count x read and y written once plus the
weight (and bias) once, kval's byte count; TFLOP/s kval's FLOP count (8 per element for
LayerNorm, 5 for RMSNorm). Backend "copy": y.copy_(x) at the same shape, timed the same way,
GB/s counting x read and y written (the same-size copy the norms are held against), one row
under each norm.

  peers.py --csv FILE [--deck inputs/default.deck] [--json FILE]   (exit 77 without PyTorch or a GPU)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import peer_timing  # noqa: E402

AXES = ["rows", "hidden", "dist"]
SHAPES = [(16384, 4096, "fp16"), (16384, 4096, "bf16"), (16384, 4096, "fp32"), (65536, 1024, "fp16"),
          (65536, 1024, "bf16"), (32768, 128, "fp16"), (4096, 16384, "fp16"), (4096, 16384, "bf16"),
          (262144, 256, "fp16"), (8192, 8192, "bf16"), (16384, 4100, "fp16"), (16384, 4100, "bf16"),
          (16384, 4097, "fp16"), (16384, 4097, "bf16"), (16384, 11009, "fp16"), (16384, 11009, "bf16"),
          (16384, 4099, "fp32"), (65536, 1025, "fp16"), (32768, 2047, "bf16"),
          (16384, 6145, "fp16"), (8192, 14337, "bf16"), (16384, 2051, "fp32"), (8192, 8195, "fp32")]
EPS = 1e-5


def measure(torch, timer, w):
    import torch.nn.functional as F

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows_out = []

    def emit(row):
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        w.writerow(row)
        rows_out.append(row)

    for rows, hidden, dt in SHAPES:
        t = dtypes[dt]
        x = torch.randn(rows, hidden, device="cuda", generator=gen).to(t)
        wt = (1 + 0.1 * torch.randn(hidden, device="cuda", generator=gen)).to(t)
        b = (0.1 * torch.randn(hidden, device="cuda", generator=gen)).to(t)
        n, s = x.numel(), x.element_size()
        for norm, fn, flops, vecs in (("layernorm", lambda: F.layer_norm(x, (hidden,), wt, b, EPS), 8.0, 2),
                                      ("rmsnorm", lambda: F.rms_norm(x, (hidden,), wt, EPS), 5.0, 1)):
            ms, reps = timer.median_ms(fn)
            emit(dict(family=norm, backend="torch", precision=f"{dt}:fp32", rows=rows, hidden=hidden, dist="normal",
                      ms=f"{ms:.5f}", tflops=f"{flops * n / ms / 1e9:.2f}",
                      gbps=f"{(2 * n + vecs * hidden) * s / ms / 1e6:.1f}", reps=reps))
        y = torch.empty_like(x)
        ms, reps = timer.median_ms(lambda: y.copy_(x))
        for norm in ("layernorm", "rmsnorm"):
            emit(dict(family=norm, backend="copy", precision=f"{dt}:fp32", rows=rows, hidden=hidden, dist="normal",
                      ms=f"{ms:.5f}", tflops="0.00", gbps=f"{2 * n * s / ms / 1e6:.1f}", reps=reps))
        del x, y, wt, b
    return rows_out


if __name__ == "__main__":
    sys.exit(peer_timing.main(__doc__, AXES, measure))
