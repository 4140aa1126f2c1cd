#!/usr/bin/env python3
"""side_by_side.py - bench CSV files (bench/README.md: the rows of kval's bench drivers and of the
PyTorch peers) set side by side, one table per family: one line per case (precision and the
shape columns the files share), one column per backend with its TFLOP/s (GB/s for layernorm,
rmsnorm and decode), a "!" after a value whose case failed validation (verdict not pass), and each
backend's ratio to every --ratio-to backend. Columns with a single value are named once above
their table. --best prints, per case, only the fastest backend and its value (the tile and
configuration ladders), and beside it each --ratio-to backend's value and the fastest's ratio to
it (norm_bench sweep: the family's own choice, backend kval, against the best configuration).

  side_by_side.py [--ratio-to BACKEND]... [--best] FILE.csv...
"""
import argparse
import csv
import math
import sys

MEASURES = {"backend", "ms", "tflops", "gbps", "verdict", "max_bound_ratio", "rel_l2", "reps", "registers",
            "local_bytes", "occupancy"}
GBPS_FAMILIES = {"layernorm", "rmsnorm", "decode"}


def read(paths):
    rows, keys = [], None
    for path in paths:
        with open(path, newline="") as f:
            r = csv.DictReader(f)
            cols = [c for c in r.fieldnames if c not in MEASURES]
            keys = cols if keys is None else [c for c in keys if c in cols]
            rows.extend(r)
    return rows, keys or []


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def fmt(v):
    return "-" if v is None or math.isnan(v) else f"{v:.1f}" if abs(v) < 1e4 else f"{v:.0f}"


def print_table(header, lines):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    for line in [header] + lines:
        print("  ".join(str(x).rjust(w) for x, w in zip(line, widths)))


def family_table(family, rows, keys, ratio_to, best):
    metric = "gbps" if family in GBPS_FAMILIES else "tflops"
    cases, backends = {}, []
    for r in rows:
        key = tuple(r[k] for k in keys)
        v = number(r[metric])
        mark = "!" if r.get("verdict") not in ("", "pass", None) else ""
        cases.setdefault(key, {})[r["backend"]] = (v, mark)
        if r["backend"] not in backends:
            backends.append(r["backend"])
    shown = [i for i, k in enumerate(keys) if len({key[i] for key in cases}) > 1]
    fixed = [f"{k}={next(iter(cases))[i]}" for i, k in enumerate(keys) if i not in shown and cases]
    print(f"\n== {family}: {'GB/s' if metric == 'gbps' else 'TFLOP/s'}" + (f" ({' '.join(fixed)})" if fixed else ""))
    header = [keys[i] for i in shown]
    lines = []
    if best:
        for key, got in cases.items():
            name, (v, mark) = max(got.items(), key=lambda kv: -math.inf if math.isnan(kv[1][0]) else kv[1][0])
            line = [key[i] for i in shown] + [name, fmt(v) + mark]
            for r in ratio_to:
                rv, rmark = got.get(r, (math.nan, ""))
                line += [fmt(rv) + rmark, f"{v / rv:.2f}" if rv and not math.isnan(rv) else "-"]
            lines.append(line)
        print_table(header + ["fastest", metric] + [c for r in ratio_to for c in (r, f"fastest/{r}")], lines)
        return
    others = [b for b in backends if b not in ratio_to]
    ratios = [(b, r) for r in ratio_to if r in backends for b in others]
    for key, got in cases.items():
        line = [key[i] for i in shown]
        line += [fmt(got[b][0]) + got[b][1] if b in got else "-" for b in backends]
        for b, r in ratios:
            num, den = got.get(b, (math.nan, ""))[0], got.get(r, (math.nan, ""))[0]
            line.append(f"{num / den:.2f}" if den and not math.isnan(num) and not math.isnan(den) else "-")
        lines.append(line)
    print_table(header + backends + [f"{b}/{r}" for b, r in ratios], lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="FILE.csv")
    ap.add_argument("--ratio-to", action="append", default=[], metavar="BACKEND")
    ap.add_argument("--best", action="store_true")
    a = ap.parse_args()
    rows, keys = read(a.files)
    keys = [k for k in keys if k != "family"]
    families = []
    for r in rows:
        if r["family"] not in families:
            families.append(r["family"])
    for fam in families:
        family_table(fam, [r for r in rows if r["family"] == fam], keys, a.ratio_to, a.best)
    return 0


if __name__ == "__main__":
    sys.exit(main())
