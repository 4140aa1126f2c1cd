#!/usr/bin/env python3
"""perf_tables.py - Markdown tables of the speeds kval measured in one of its HDF5 files
(docs/PERFORMANCE.md is written from these): fa2 TFLOP/s per variant, head dim, precision,
causal and seqlen; gemm TFLOP/s per shape and precision for every variant with the ratio to cuBLAS; norm
GB/s per shape and precision. Only cases with status pass are shown; rank 0 is used.

  perf_tables.py FILE.h5
"""
import sys

import h5py
import numpy as np


def axis(g, name):
    vals = g[name][...]
    return [v.decode() if isinstance(v, bytes) else v for v in vals]


def cube(g, name):
    """Dataset of rank 0 as a dict from axis-value tuples to values."""
    axes = g.attrs["axes"]
    axes = (axes.decode() if isinstance(axes, bytes) else axes).split(",")
    data = g[name][0]
    coords = [axis(g, a) for a in axes]
    out = {}
    for idx in np.ndindex(data.shape):
        out[tuple(coords[i][j] for i, j in enumerate(idx))] = data[idx]
    return axes, out


def passed(g):
    _, st = cube(g, "status")
    return {k for k, v in st.items() if v == 1}


def fa2(f):
    g = f["fa2"]
    axes, tf = cube(g, "tflops")
    ok = passed(g)
    var = (lambda k: k[axes.index("variant")]) if "variant" in axes else (lambda k: "-")
    key = lambda k: (var(k), k[axes.index("headdim")], k[axes.index("precision")], k[axes.index("causal")])
    seqlens = sorted({k[axes.index("seqlen")] for k in ok})
    print("| variant | headdim | precision | causal | " + " | ".join(f"L={s}" for s in seqlens) + " |")
    print("|---|---|---|---|" + "---|" * len(seqlens))
    for row in sorted({key(k) for k in ok}):
        cells = []
        for s in seqlens:
            vals = [tf[k] for k in ok if key(k) == row and k[axes.index("seqlen")] == s]
            cells.append(f"{vals[0]:.0f}" if vals else "-")
        print("| " + " | ".join(str(x) for x in row) + " | " + " | ".join(cells) + " |")


def gemm(f):
    g = f["gemm"]
    axes, tf = cube(g, "tflops")
    ok = passed(g)
    ia, ip, ish = axes.index("variant"), axes.index("precision"), axes.index("shape")
    variants = [v for v in ("kval-wgmma", "kval-mma", "cublas") if any(k[ia] == v for k in ok)]
    print("| shape | precision | " + " | ".join(variants) + " | wgmma / cuBLAS |")
    print("|---|---|" + "---|" * (len(variants) + 1))
    for shp, p in sorted({(k[ish], k[ip]) for k in ok}, key=lambda t: (t[1], t[0])):
        val = {}
        for k in ok:
            if k[ish] == shp and k[ip] == p:
                val[k[ia]] = tf[k]
        ratio = val["kval-wgmma"] / val["cublas"] if "kval-wgmma" in val and "cublas" in val else float("nan")
        print(f"| {shp} | {p} | " + " | ".join(f"{val[v]:.1f}" if v in val else "-" for v in variants)
              + f" | {ratio:.2f} |")


def norms(f):
    for fam in ("layernorm", "rmsnorm"):
        if fam not in f:
            continue
        g = f[fam]
        axes, gb = cube(g, "gbps")
        _, fr = cube(g, "roofline_frac")
        ok = passed(g)
        print(f"\n{fam}: GB/s (read x + write y + weights) and fraction of the measured copy bandwidth\n")
        print("| rows x hidden | precision | GB/s | of copy |")
        print("|---|---|---|---|")
        for k in sorted(ok, key=lambda k: (k[axes.index("precision")], k[axes.index("rows")], k[axes.index("hidden")])):
            print(f"| {k[axes.index('rows')]}x{k[axes.index('hidden')]} | {k[axes.index('precision')]} | "
                  f"{gb[k]:.0f} | {fr[k]:.2f} |")


def main():
    f = h5py.File(sys.argv[1], "r")
    r = f["ranks"]
    name = r["device_name"][0]
    print(f"file {sys.argv[1]}: git {f.attrs['git_commit']}, created {f.attrs['creation_time']}, "
          f"{name.decode() if isinstance(name, bytes) else name}, copy {r['copy_gbps'][0]:.0f} GB/s, "
          f"bf16 matrix {r['matrix_tflops'][0]:.0f} TFLOP/s, fp64 {r['fp64_tflops'][0]:.1f} TFLOP/s\n")
    if "fa2" in f:
        print("fa2 TFLOP/s\n")
        fa2(f)
    if "gemm" in f:
        print("\ngemm TFLOP/s\n")
        gemm(f)
    norms(f)


if __name__ == "__main__":
    main()
