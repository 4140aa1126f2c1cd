#!/usr/bin/env python3
"""attention_peers.py - PyTorch's attention kernels timed on kval's fa2 benchmark shapes, so
their TFLOP/s stand beside kval's (bench/fa2_driver bench). Output format: bench/README.md.

Backends: SDPA with the flash backend (FlashAttention-2 code) and with the cuDNN backend.
Shapes: head dim 64 and 128, fp16 and bf16, causal and not, seqlen 512 .. 16384 with
batch * seqlen = 32768 and 16 heads (the shapes of /work/shared/REFERENCES.md); tensors are
allocated in kval's layout [batch, seqlen, heads, headdim] and handed to SDPA as the
[batch, heads, seqlen, headdim] view (transpose(1, 2)), as FlashAttention reads them.
TFLOP/s = 4 * B * H * L * L * d / t, halved when causal. Each time is the median of --reps
launches timed with CUDA events, each launch after a 256 MB write that flushes the L2.

  attention_peers.py [--csv FILE] [--json FILE] [--reps N]   time the peers
  attention_peers.py --table KVAL_CSV PEERS_CSV              join kval's and the peers' CSVs
"""
import argparse
import csv
import datetime
import json
import statistics
import sys

FIELDS = ["backend", "precision", "headdim", "seqlen", "batch", "heads", "causal", "ms", "tflops"]
LENS = [512, 1024, 2048, 4096, 8192, 16384]
TOKENS, HEADS = 32768, 16


def flops(b, h, lq, lk, d, causal):
    f = 4.0 * b * h * lq * lk * d
    return f / 2 if causal else f


def time_peers(reps):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    backends = [("sdpa-flash", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)]
    rows = []
    for d in (64, 128):
        for dtype, pname in ((torch.float16, "fp16:fp32"), (torch.bfloat16, "bf16:fp32")):
            for causal in (0, 1):
                for L in LENS:
                    B = TOKENS // L
                    gen = torch.Generator(device=dev).manual_seed(L * 7 + d)
                    q, k, v = (torch.randn(B, L, HEADS, d, device=dev, dtype=dtype, generator=gen)
                               for _ in range(3))
                    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                    for name, backend in backends:
                        try:
                            with sdpa_kernel(backend):
                                def run():
                                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
                                for _ in range(3):
                                    run()
                                times = []
                                for _ in range(reps):
                                    flush.zero_()
                                    e0 = torch.cuda.Event(enable_timing=True)
                                    e1 = torch.cuda.Event(enable_timing=True)
                                    e0.record()
                                    run()
                                    e1.record()
                                    e1.synchronize()
                                    times.append(e0.elapsed_time(e1))
                            ms = statistics.median(times)
                            tf = flops(B, HEADS, L, L, d, causal) / (ms * 1e-3) / 1e12
                        except RuntimeError as err:  # backend unavailable for this shape
                            print(f"{name} d={d} {pname} causal={causal} L={L}: {err}".splitlines()[0],
                                  file=sys.stderr)
                            ms, tf = float("nan"), float("nan")
                        row = dict(backend=name, precision=pname, headdim=d, seqlen=L, batch=B, heads=HEADS,
                                   causal=causal, ms=round(ms, 5), tflops=round(tf, 2))
                        print(" ".join(f"{k}={row[k]}" for k in FIELDS), flush=True)
                        rows.append(row)
                    del q, k, v, qt, kt, vt
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                cudnn=torch.backends.cudnn.version(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                tokens=TOKENS, heads=HEADS, reps=reps, timing="CUDA events, median, 256 MB L2 flush per launch")
    return meta, rows


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(kval_csv, peers_csv):
    kval = read_csv(kval_csv)
    peers = {(r["backend"], r["precision"], r["headdim"], r["seqlen"], r["causal"]): float(r["tflops"])
             for r in read_csv(peers_csv)}
    print(f"{'kernel':10} {'prec':10} {'d':>4} {'causal':>6} {'L':>6} {'kval':>7} {'flash':>7} {'cudnn':>7} "
          f"{'/flash':>7} {'/cudnn':>7}")
    for r in kval:
        key = (r["precision"], r["headdim"], r["seqlen"], r["causal"])
        fl = peers.get(("sdpa-flash",) + key)
        cu = peers.get(("sdpa-cudnn",) + key)
        if fl is None and cu is None:
            continue
        kv = float(r["tflops"])
        print(f"{r['backend']:10} {r['precision']:10} {r['headdim']:>4} {r['causal']:>6} {r['seqlen']:>6} {kv:7.1f} {_num(fl)} "
              f"{_num(cu)} {_ratio(kv, fl)} {_ratio(kv, cu)}")


def _num(x):
    return f"{x:7.1f}" if x is not None else "      -"


def _ratio(kv, peer):
    return f"{kv / peer:7.2f}" if peer and peer == peer else "      -"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv")
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--table", nargs=2, metavar=("KVAL_CSV", "PEERS_CSV"))
    a = ap.parse_args()
    if a.table:
        table(*a.table)
        return 0
    meta, rows = time_peers(a.reps)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(meta=meta, results=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
