"""peer_timing.py - the job's timing method and the bench CSV format for the PyTorch peers
(families/fa2/bench/peers.py, families/norm/bench/peers.py), so that their rows stand beside
the rows of kval's bench drivers (bench/harness.c) measured the same way:

- the [run] settings of the same deck (default inputs/default.deck): warmup, min_reps,
  max_reps, rse_target, time_cap, l2_flush; every one of them must be set there;
- warm-up calls, then repetitions each timed alone with a pair of CUDA events; before each
  one, outside the timed region, a write of max(2 x L2, 32 MiB) evicts L2 (unless
  l2_flush = warm), as src/backends/cuda/harness.c and backend.c do;
- the stop rule of that harness: after min_reps, when the relative standard error of the
  median (from its distribution-free 95% order-statistic interval, src/core/timing.c) is at
  most rse_target; at max_reps; or after time_cap seconds;
- the median (linear interpolation, as kv_timing_summarize).

The CSV columns are bench/README.md's; a peer leaves the validation and resource columns
empty (its output is not checked against kval's reference). PyTorch's dispatch between the two
events is part of a peer's time (microseconds; visible only on the smallest shapes).
"""
import argparse
import csv
import datetime
import json
import math
import os
import time

RUN_KEYS = ("warmup", "min_reps", "max_reps", "rse_target", "time_cap", "l2_flush")
TAIL = ["ms", "tflops", "gbps", "verdict", "max_bound_ratio", "rel_l2", "reps", "registers", "local_bytes",
        "occupancy"]
Z95 = 1.959963984540054


def run_settings(deck):
    """The [run] keys of the deck as numbers (l2_flush: 1 for flush, 0 for warm)."""
    section, found = None, {}
    with open(deck) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
            elif section == "run" and "=" in line:
                key, value = (x.strip() for x in line.split("=", 1))
                found[key] = value
    missing = [k for k in RUN_KEYS if k not in found]
    if missing:
        raise SystemExit(f"peer_timing: {deck}: [run] must set {', '.join(missing)} for the peers")
    rs = {k: float(found[k]) for k in RUN_KEYS if k != "l2_flush"}
    rs["l2_flush"] = 0 if found["l2_flush"] == "warm" else 1
    return rs


def _percentile(s, q):
    pos = q * (len(s) - 1)
    i = int(pos)
    return s[-1] if i >= len(s) - 1 else s[i] + (pos - i) * (s[i + 1] - s[i])


def median_rse(samples):
    """kv_timing_median_rse: half the width of the median's 95% interval over z, relative."""
    n = len(samples)
    if n < 5:
        return math.inf
    s = sorted(samples)
    half = Z95 * math.sqrt(n) / 2.0
    lo, hi = max(1, math.floor(n / 2.0 - half)), min(n, math.ceil(1.0 + n / 2.0 + half))
    spread, med = s[hi - 1] - s[lo - 1], _percentile(s, 0.5)
    if spread == 0.0:
        return 0.0
    return spread / (2.0 * Z95 * med) if med > 0.0 else math.inf


class Timer:
    """Times a callable as the job's harness times a kernel launch."""

    def __init__(self, torch, rs):
        self.torch, self.rs = torch, rs
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush = torch.empty(max(2 * l2, 32 << 20), dtype=torch.uint8, device="cuda")

    def median_ms(self, fn):
        """(median milliseconds, repetitions) of fn()."""
        torch, rs = self.torch, self.rs
        for _ in range(int(rs["warmup"])):
            fn()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times, start = [], time.monotonic()
        while len(times) < max(1, int(rs["max_reps"])):
            if rs["l2_flush"]:
                self.flush.fill_(0x5A)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
            if time.monotonic() - start >= rs["time_cap"]:
                break
            if len(times) >= rs["min_reps"] and median_rse(times) <= rs["rse_target"]:
                break
        return _percentile(sorted(times), 0.5), len(times)


def writer(path, family_axes):
    """A CSV writer with bench/README.md's header for a family whose axes (variant and precision
    aside) are family_axes; rows are dicts, missing columns are left empty."""
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=["family", "backend", "precision"] + list(family_axes) + TAIL, restval="")
    w.writeheader()
    return f, w


def main(doc, family_axes, measure):
    """A peer script's command line, `--csv FILE [--deck FILE] [--json FILE]`: measure(torch,
    timer, writer) times the peer and writes its rows (returning them); --json also writes
    {meta, results}. Exit 77 without PyTorch or a GPU."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--csv", required=True, help="bench CSV of the peer's rows")
    ap.add_argument("--deck", default=os.path.join(here, "..", "inputs", "default.deck"),
                    help="its [run] settings time the peer (default: the main job's deck)")
    ap.add_argument("--json", help="also write {meta, results} here")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("peers: PyTorch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("peers: no GPU")
        return 77
    rs = run_settings(a.deck)
    f, w = writer(a.csv, family_axes)
    with f:
        rows = measure(torch, Timer(torch, rs), w)
    if a.json:
        meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), run=rs,
                    timing="bench/peer_timing.py: the job's [run] stop rule, CUDA events, L2 flushed per repetition")
        with open(a.json, "w") as jf:
            json.dump(dict(meta=meta, results=rows), jf, indent=1)
    return 0
