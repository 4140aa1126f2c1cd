#!/usr/bin/env python3
"""phase_times.py - where a kval run's time went, per group (family section): the cases that
ran, the sums of their phase times (the t_* datasets: setup, timing loop, checks, statistics,
cross-checks, judge, whole case; ref_seconds: the fp64 reference: every dataset whose
long_name is a "wall time of ...", as src/core/timing.h's KV_PHASES writes them), the kernel
time inside the timing loop (time_mean x reps) and the loop's overhead per repetition beside it (flush, launch
and wait around each timed launch, the warm-up launches included).
    python3 jobs/phase_times.py FILE.h5 [--top N]"""
import argparse

import h5py
import numpy as np


def phases_of(g):
    """The wall-time datasets of a group (units "s", long_name "wall time of ..."), the whole
    case last."""
    names = [n for n in g if g[n].attrs.get("units") == "s" and
             str(g[n].attrs.get("long_name", "")).startswith("wall time of")]
    return sorted(names, key=lambda n: n == "t_case")


def heading(name):
    return name.removeprefix("t_").removesuffix("_seconds")


def total(g, name, ran):
    if name not in g:
        return float("nan")
    v = g[name][...][ran]
    return float(np.nansum(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=8, help="slowest cases to list")
    a = ap.parse_args()
    f = h5py.File(a.file, "r")
    groups = [f[n] for n in f if isinstance(f[n], h5py.Group) and "t_case" in f[n]]
    if not groups:
        raise SystemExit(f"{a.file}: no family group with phase times (t_case)")
    phases = phases_of(groups[0])
    print(f"{'group':18s} {'cases':>5s} " + " ".join(f"{heading(h):>7s}" for h in phases) +
          f" {'kernel':>7s} {'reps':>7s} {'us/rep':>7s}")
    sums = np.zeros(len(phases) + 2)
    slow = []
    for g in groups:
        name = g.name.lstrip("/")
        ran = np.isfinite(g["t_case"][...])
        n = int(ran.sum())
        if not n:
            continue
        row = [total(g, p, ran) for p in phases]
        reps = g["reps"][...][ran].astype(float)
        reps[reps < 0] = 0
        kernel = float(np.nansum(g["time_mean"][...][ran] * reps))
        per_rep = (row[phases.index("t_timing")] - kernel) / reps.sum() * 1e6 if reps.sum() else float("nan")
        sums += np.nan_to_num(np.array(row + [kernel, reps.sum()]))
        print(f"{name:18s} {n:5d} " + " ".join(f"{x:7.2f}" for x in row) + f" {kernel:7.2f} {int(reps.sum()):7d} {per_rep:7.1f}")
        t = g["t_case"][...]
        for idx in zip(*np.nonzero(ran)):
            slow.append((float(t[idx]), name, idx, float(g["t_timing"][idx]), int(g["reps"][idx]),
                         float(g["time_mean"][idx])))
    print(f"{'all':18s} {'':5s} " + " ".join(f"{x:7.2f}" for x in sums[:len(phases)]) +
          f" {sums[-2]:7.2f} {int(sums[-1]):7d}")
    slow.sort(reverse=True)
    print(f"slowest {a.top} cases (group, index, case s, timing s, reps, kernel mean s):")
    for t, name, idx, tt, reps, km in slow[:a.top]:
        print(f"  {name:18s} {str(tuple(int(i) for i in idx)):28s} {t:7.3f} {tt:7.3f} {reps:5d} {km:.2e}")


if __name__ == "__main__":
    main()
