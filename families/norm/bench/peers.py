#!/usr/bin/env python3
"""norm_peers.py - PyTorch's LayerNorm (F.layer_norm) and RMSNorm (F.rms_norm) timed at the
shapes of families/norm/bench/norm_bench.cu, with the same method: random inputs (never zeros), weight and
bias like the kval family (1 + 0.1 N, 0.1 N), CUDA events around each call, L2 flushed
(a memset of twice the L2 size) before each repetition, median of 50 after 5 warm-ups,
GB/s counting read x + write y. Prints a table and writes JSON; with --kval FILE (the JSON
of `norm_bench bench`) it also prints kval's default variant, and the fastest variant of the
same run, against PyTorch.

    python3 families/norm/bench/peers.py --json torch_norm.json [--kval kval_norm.json]
"""
import argparse
import json
import statistics
import sys

SHAPES = [(16384, 4096, "fp16"), (16384, 4096, "bf16"), (16384, 4096, "fp32"), (65536, 1024, "fp16"),
          (65536, 1024, "bf16"), (32768, 128, "fp16"), (4096, 16384, "fp16"), (4096, 16384, "bf16"),
          (262144, 256, "fp16"), (8192, 8192, "bf16"), (16384, 4100, "fp16"), (16384, 4100, "bf16"),
          (16384, 4097, "fp16")]
REPS, WARMUP, EPS = 50, 5, 1e-5


def time_torch(torch, fn, flush):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPS):
        flush.zero_()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def measure():
    import torch
    import torch.nn.functional as F

    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(2 * props.L2_cache_size, dtype=torch.uint8, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows_out = []
    for rows, hidden, dt in SHAPES:
        t = dtypes[dt]
        x = torch.randn(rows, hidden, device="cuda", generator=gen).to(t)
        w = (1 + 0.1 * torch.randn(hidden, device="cuda", generator=gen)).to(t)
        b = (0.1 * torch.randn(hidden, device="cuda", generator=gen)).to(t)
        nbytes = 2 * x.numel() * x.element_size()
        for norm, fn in (("layernorm", lambda: F.layer_norm(x, (hidden,), w, b, EPS)),
                         ("rmsnorm", lambda: F.rms_norm(x, (hidden,), w, EPS))):
            sec = time_torch(torch, fn, flush)
            rows_out.append({"norm": norm, "dtype": dt, "rows": rows, "hidden": hidden, "us": sec * 1e6,
                             "gbps": nbytes / sec / 1e9})
        del x, w, b
    meta = {"torch": torch.__version__, "device": props.name,
            "unit": "GB/s, read x + write y, median of %d, L2 flushed" % REPS}
    return meta, rows_out


def compare(torch_rows, kval_path):
    with open(kval_path) as f:
        kval = json.load(f)["results"]
    key = lambda r: (r["norm"], r["dtype"], r["rows"], r["hidden"])
    default = {key(r): r for r in kval if r["default"]}
    best = {}
    for r in kval:
        if key(r) not in best or r["gbps"] > best[key(r)]["gbps"]:
            best[key(r)] = r
    print("\n| norm | dtype | rows x hidden | kval variant | kval GB/s | torch GB/s | kval/torch | kval/copy "
          "| fastest variant | GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in torch_rows:
        k, b = default.get(key(t)), best.get(key(t))
        if k is None:
            continue
        print("| %s | %s | %dx%d | %s | %.0f | %.0f | %.2f | %.1f%% | %s | %.0f |" % (
            t["norm"], t["dtype"], t["rows"], t["hidden"], k["variant"], k["gbps"], t["gbps"], k["gbps"] / t["gbps"],
            100.0 * k["gbps"] / k["copy_gbps"], b["variant"], b["gbps"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="write the PyTorch timings here")
    ap.add_argument("--kval", help="JSON of `norm_bench bench` to compare against")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("norm_peers: PyTorch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("norm_peers: no GPU")
        return 77
    meta, rows = measure()
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    print("%s, torch %s; %s" % (meta["device"], meta["torch"], meta["unit"]))
    print("| norm | dtype | rows x hidden | us | GB/s |\n|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %dx%d | %.1f | %.0f |" % (r["norm"], r["dtype"], r["rows"], r["hidden"], r["us"], r["gbps"]))
    if args.kval:
        compare(rows, args.kval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
