#!/usr/bin/env python3
"""phase_times.py - where a kval run's time went, per group (family section): the cases that
ran, the sums of their phase times (the t_* datasets: setup, timing loop, checks, statistics,
cross-checks, judge, whole case; ref_seconds: the fp64 reference), the kernel time inside the
timing loop (time_mean x reps) and the loop's overhead per repetition beside it (flush, launch
and wait around each timed launch, the warm-up launches included).
    python3 jobs/phase_times.py FILE.h5 [--top N]"""
import argparse

import h5py
import numpy as np

PHASES = ("t_setup", "t_timing", "ref_seconds", "t_checks", "t_stats", "t_xcheck", "t_judge", "t_case")


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
    heads = ("setup", "timing", "ref", "checks", "stats", "xcheck", "judge", "case")
    print(f"{'group':18s} {'cases':>5s} " + " ".join(f"{h:>7s}" for h in heads) + f" {'kernel':>7s} {'reps':>7s} {'us/rep':>7s}")
    sums = np.zeros(len(PHASES) + 2)
    slow = []
    for name in f:
        g = f[name]
        if not isinstance(g, h5py.Group) or "t_case" not in g:
            continue
        ran = np.isfinite(g["t_case"][...])
        n = int(ran.sum())
        if not n:
            continue
        row = [total(g, p, ran) for p in PHASES]
        reps = g["reps"][...][ran].astype(float)
        reps[reps < 0] = 0
        kernel = float(np.nansum(g["time_mean"][...][ran] * reps))
        per_rep = (row[1] - kernel) / reps.sum() * 1e6 if reps.sum() else float("nan")
        sums += np.nan_to_num(np.array(row + [kernel, reps.sum()]))
        print(f"{name:18s} {n:5d} " + " ".join(f"{x:7.2f}" for x in row) + f" {kernel:7.2f} {int(reps.sum()):7d} {per_rep:7.1f}")
        t = g["t_case"][...]
        for idx in zip(*np.nonzero(ran)):
            slow.append((float(t[idx]), name, idx, float(g["t_timing"][idx]), int(g["reps"][idx]),
                         float(g["time_mean"][idx])))
    print(f"{'all':18s} {'':5s} " + " ".join(f"{x:7.2f}" for x in sums[:len(PHASES)]) +
          f" {sums[-2]:7.2f} {int(sums[-1]):7d}")
    slow.sort(reverse=True)
    print(f"slowest {a.top} cases (group, index, case s, timing s, reps, kernel mean s):")
    for t, name, idx, tt, reps, km in slow[:a.top]:
        print(f"  {name:18s} {str(tuple(int(i) for i in idx)):28s} {t:7.3f} {tt:7.3f} {reps:5d} {km:.2e}")


if __name__ == "__main__":
    main()
