#!/usr/bin/env python3
"""peers.py - PyTorch SDPA backward (cuDNN and flash backends) at fa2bwd's shapes, timed with
CUDA events after warm-up: one line per case (backend, precision, headdim, seqlen, causal,
batch, heads, ms, TFLOP/s with the FlashAttention convention 10 B H L^2 d, halved when causal).

  peers.py [--tokens 16384] [--heads 16] [--seqlen 2048 ...] [--headdim 64 128]
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa


def time_backward(backend, q, k, v, do, causal, reps=20):
    with sdpa_kernel([backend]):
        out = sdpa(q, k, v, is_causal=bool(causal))
        for _ in range(3):
            torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seqlen", type=int, nargs="+", default=[2048])
    p.add_argument("--headdim", type=int, nargs="+", default=[64, 128])
    a = p.parse_args()
    print("backend,precision,headdim,seqlen,causal,batch,heads,ms,tflops")
    for dt, name in ((torch.float16, "fp16:fp32"), (torch.bfloat16, "bf16:fp32")):
        for d in a.headdim:
            for l in a.seqlen:
                b = max(1, a.tokens // l)
                q, k, v, do = (torch.randn(b, a.heads, l, d, device="cuda", dtype=dt) for _ in range(4))
                for t in (q, k, v):
                    t.requires_grad_(True)
                for causal in (0, 1):
                    flops = 10.0 * b * a.heads * l * l * d / (2 if causal else 1)
                    for backend, label in ((SDPBackend.CUDNN_ATTENTION, "sdpa-cudnn"),
                                           (SDPBackend.FLASH_ATTENTION, "sdpa-flash")):
                        try:
                            ms = time_backward(backend, q, k, v, do, causal)
                            print(f"{label},{name},{d},{l},{causal},{b},{a.heads},{ms:.4f},{flops / ms / 1e9:.1f}")
                        except RuntimeError as e:
                            print(f"{label},{name},{d},{l},{causal},{b},{a.heads},nan,nan  # {str(e)[:60]}")


if __name__ == "__main__":
    main()
