#!/usr/bin/env python3
"""run_stats.py - the judge's margins in a kval file, per family, variant and precision: status
counts (names from the file's status_names), and for the cells that ran the largest error
bound ratio, output bound ratio (aux), |bias| in ulps and in standard errors, roofline
fraction and reference cross-check, so the judge's limits (src/run/tolerance.h, the [run]
keys) can be read against what a GPU measures. The messages of failing cells follow.
    python3 jobs/run_stats.py FILE.h5 [--messages N]"""
import argparse
import sys

import h5py
import numpy as np


def status_names(f):
    pairs = (p.split("=", 1) for p in f.attrs["status_names"].split(","))
    return {int(k): v for k, v in pairs}


def axis(g, name):
    """(index in status's dimensions, labels) of the axis `name`; (None, ["-"]) without one."""
    for i, dim in enumerate(g["status"].dims):
        if len(dim) and dim[0].name.rsplit("/", 1)[-1] == name:
            return i, [v.decode() if isinstance(v, bytes) else str(v) for v in dim[0][...]]
    return None, ["-"]


def worst(values, mask, key=np.abs):
    v = values[mask]
    v = v[np.isfinite(v)]
    return float(np.max(key(v))) if v.size else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--messages", type=int, default=12, help="failing cells' messages to print")
    a = ap.parse_args()
    f = h5py.File(a.file, "r")
    names = status_names(f)
    code = {v: k for k, v in names.items()}
    passed, skipped = code["pass"], code["skipped"]
    print(f"{'family':9s} {'variant':11s} {'precision':10s} {'statuses':34s} "
          f"{'bound':>6s} {'aux':>6s} {'|bias|':>7s} {'sig':>5s} {'roof':>5s} {'xchk':>8s}")
    failing = []
    for fam in f:
        g = f[fam]
        if not isinstance(g, h5py.Group) or "status" not in g:
            continue
        st = g["status"][...]
        vax, var = axis(g, "variant")
        pax, prec = axis(g, "precision")
        cols = {k: g[k][...] for k in ("max_bound_ratio", "aux_bound_ratio", "bias_ulp", "bias_se",
                                        "roofline_frac", "ref_xcheck") if k in g}
        for vi, v in enumerate(var):
            for pi, p in enumerate(prec):
                cell = np.ones(st.shape, bool)
                for ax, i in ((vax, vi), (pax, pi)):
                    if ax is not None:
                        cell &= np.expand_dims(np.arange(st.shape[ax]) == i,
                                               [d for d in range(st.ndim) if d != ax])
                s = st[cell]
                if not (s != 0).any():
                    continue
                counts = " ".join(f"{names.get(int(k), k)}={int((s == k).sum())}" for k in np.unique(s) if k)
                sel = cell & (st != 0) & (st != skipped)

                def col(k, key=np.abs):
                    return worst(cols[k], sel, key) if k in cols else float("nan")

                se = cols.get("bias_se")
                sig = float("nan")
                if se is not None:
                    m = sel & np.isfinite(se) & (se > 0) & np.isfinite(cols["bias_ulp"])
                    if m.any():
                        sig = float(np.max(np.abs(cols["bias_ulp"][m]) / se[m]))
                print(f"{fam:9s} {v:11s} {p:10s} {counts:34s} {col('max_bound_ratio'):6.3f} "
                      f"{col('aux_bound_ratio'):6.3f} {col('bias_ulp'):7.4f} {sig:5.1f} "
                      f"{col('roofline_frac'):5.2f} {col('ref_xcheck'):8.1e}")
        msg = g["message"][...]
        for idx in zip(*np.nonzero((st != passed) & (st != 0) & (st != skipped))):
            m = msg[idx].decode(errors="replace")
            failing.append(f"{fam} {names.get(int(st[idx]), st[idx])} {tuple(int(i) for i in idx)}: {m}")
    print(f"{len(failing)} cells neither passed nor skipped")
    for line in failing[: a.messages]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
