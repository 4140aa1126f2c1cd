#!/usr/bin/env python3
"""compare_files.py - case-for-case comparison of two kval HDF5 files (used by the kill,
resume and signal tests). Two files are equal when they come from the same deck, [run]
settings, seed, mode and rank count and every (rank, cell) holds the same status, message,
fingerprint, error statistics, histogram and fleet comparison; timings, telemetry and the
reference's wall time are ignored, as are the rank identities (/ranks) and the
command line.

  compare_files.py A B            A equals B (e.g. a resumed file and an uninterrupted run)
  compare_files.py --subset A B   A is a prefix of B (e.g. a killed file): every cell with a
                                  result in A equals B's; every not_run cell of A holds only
                                  fill values, except at most --torn cells (a write cut short)

Prints one summary line ("A: 37 results, B: 114 results, ...") and the first differences.
Exit status: 0 equal, 1 different, 2 a file cannot be read or is not a kval file.
As a module: load(path) -> Run, compare(a, b, subset, torn) -> list of differences.
"""
import argparse
import sys

import h5py
import numpy as np

NOT_RUN, SKIPPED = 0, 4
# Per-cell datasets that measure time, the machine or the moment, not the computation: every
# dataset in seconds (its `units` attribute "s": kernel times, the reference's, the phases) and
IGNORED = {"reps", "tflops", "gbps", "roofline_frac", "sm_clock_min", "sm_clock_max", "mem_clock", "temperature",
           "power", "throttle_reasons", "clock_flag",
           "checksum"}  # a hash of the row, timings included
FLEET = {"fp_distinct", "fp_majority", "fp_agrees"}  # written at the end of an uninterrupted run
ROOT_ATTRS = ("deck_text", "run_settings", "seed", "nranks", "mode", "backend", "layout_version")
FAMILY_ATTRS = ("axes", "n_cells", "n_valid", "n_skipped")


class Run:
    """The comparable content of one kval file, read into memory."""

    def __init__(self, path):
        self.path = path
        with h5py.File(path, "r") as f:
            if "layout_version" not in f.attrs:
                raise ValueError(f"{path}: not a kval file (no layout_version attribute)")
            self.attrs = {k: _plain(f.attrs[k]) for k in f.attrs}
            self.families = {}
            for name, g in f.items():
                if name == "ranks" or not isinstance(g, h5py.Group) or "status" not in g:
                    continue
                axes = [a for a in _plain(g.attrs["axes"]).split(",") if a]
                fam = {"attrs": {k: _plain(g.attrs[k]) for k in g.attrs},
                       "scales": {a: g[a][...] for a in axes}, "data": {}}
                shape = g["status"].shape
                for dname, ds in g.items():
                    if isinstance(ds, h5py.Dataset) and _plain(ds.attrs.get("units", "")) == "s":
                        continue
                    if isinstance(ds, h5py.Dataset) and ds.shape[:len(shape)] == shape:
                        fam["data"][dname] = ds[...]
                    elif isinstance(ds, h5py.Dataset) and dname in FLEET:
                        fam["data"][dname] = ds[...]
                self.families[name] = fam

    def n_results(self):
        return sum(_results(f) for f in self.families.values())


def _plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _results(fam):
    """(rank, cell) pairs holding a result: any status but not_run, less the cells the plan
    skips (status skipped from creation on; a run-time memory skip says "needs ...")."""
    st, msg = fam["data"]["status"], fam["data"]["message"]
    planned_skip = (st == SKIPPED) & ~np.char.startswith(msg, b"needs ")
    return int(np.count_nonzero((st != NOT_RUN) & ~planned_skip))


def _is_fill(name, arr):
    """Element-wise: True where the value is the dataset's fill value."""
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "S":
        return arr == b""
    if name in ("fingerprint", "hist"):
        return arr == 0
    if name == "fp_agrees":
        return arr == 2
    return arr == -1


def _equal(a, b):
    """Element-wise equality, NaN equal to NaN."""
    if a.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


def _where(fam, index):
    """'rank R axis=value ...' of a cell index."""
    axes = [a for a in fam["attrs"]["axes"].split(",") if a]
    parts = [f"rank {index[0]}"]
    for a, i in zip(axes, index[1:]):
        v = _plain(fam["scales"][a][i])
        parts.append(f"{a}={v}")
    return " ".join(parts)


def compare(a, b, subset=False, torn=0, limit=20):
    """Differences between Run a and Run b as a list of strings (empty: equal)."""
    diffs = []
    for k in ROOT_ATTRS:
        if a.attrs.get(k) != b.attrs.get(k):
            diffs.append(f"root attribute {k}: {a.attrs.get(k)!r} != {b.attrs.get(k)!r}")
    if not subset and a.attrs.get("complete") != b.attrs.get("complete"):
        diffs.append(f"root attribute complete: {a.attrs.get('complete')} != {b.attrs.get('complete')}")
    if sorted(a.families) != sorted(b.families):
        diffs.append(f"families {sorted(a.families)} != {sorted(b.families)}")
    if diffs:
        return diffs
    n_torn = 0
    for name in sorted(a.families):
        fa, fb = a.families[name], b.families[name]
        for k in FAMILY_ATTRS + (() if subset else ("n_results",)):
            if fa["attrs"].get(k) != fb["attrs"].get(k):
                diffs.append(f"/{name} attribute {k}: {fa['attrs'].get(k)!r} != {fb['attrs'].get(k)!r}")
        for ax in fa["scales"]:
            if not np.array_equal(fa["scales"][ax], fb["scales"][ax]):
                diffs.append(f"/{name}/{ax}: axis values differ")
        if sorted(fa["data"]) != sorted(fb["data"]):
            diffs.append(f"/{name}: datasets {sorted(fa['data'])} != {sorted(fb['data'])}")
        if diffs:
            return diffs
        sa, sb = fa["data"]["status"], fb["data"]["status"]
        if sa.shape != sb.shape:
            return diffs + [f"/{name}/status: shape {sa.shape} != {sb.shape}"]
        have = sa != NOT_RUN if subset else np.ones(sa.shape, bool)
        fill_ok = np.ones(sa.shape, bool)
        for dname in sorted(fa["data"]):
            if dname in IGNORED or (subset and dname in FLEET):
                continue
            x, y = fa["data"][dname], fb["data"][dname]
            if x.shape != y.shape:
                diffs.append(f"/{name}/{dname}: shape {x.shape} != {y.shape}")
                continue
            eq = _equal(x, y)
            if dname == "message":
                # a run-time memory skip names the free memory of the moment
                mem = np.char.startswith(x, b"needs ") & np.char.startswith(y, b"needs ")
                eq = eq | mem
            cell_eq = eq.reshape(eq.shape[:sa.ndim] + (-1,)).all(axis=-1) if eq.ndim > sa.ndim else eq
            if dname in FLEET and cell_eq.ndim == sa.ndim - 1:
                bad = np.argwhere(~cell_eq)
                for idx in bad[:limit]:
                    diffs.append(f"/{name}/{dname}[{', '.join(map(str, idx))}]: {x[tuple(idx)]!r} != "
                                 f"{y[tuple(idx)]!r}")
                continue
            bad = np.argwhere(have & ~cell_eq)
            for idx in bad[:limit]:
                t = tuple(idx)
                diffs.append(f"/{name} {_where(fa, t)}: {dname} {x[t]!r} != {y[t]!r}")
            if subset and dname != "status":
                f = _is_fill(dname, x)
                f = f.reshape(f.shape[:sa.ndim] + (-1,)).all(axis=-1) if f.ndim > sa.ndim else f
                if f.shape == sa.shape:
                    fill_ok &= f
        if subset:
            torn_cells = np.argwhere(~have & ~fill_ok)
            n_torn += len(torn_cells)
            if n_torn > torn:
                for idx in torn_cells[:limit]:
                    diffs.append(f"/{name} {_where(fa, tuple(idx))}: status not_run but the cell holds values")
        if len(diffs) > limit:
            break
    return diffs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="kval file (the resumed or killed one)")
    p.add_argument("b", help="kval file of one uninterrupted run")
    p.add_argument("--subset", action="store_true", help="A may lack results that B holds")
    p.add_argument("--torn", type=int, default=0, help="with --subset: not_run cells of A allowed to hold values")
    p.add_argument("--min-results", type=int, default=0, help="fail unless A holds at least this many results")
    args = p.parse_args(argv)
    try:
        a, b = Run(args.a), Run(args.b)
    except (OSError, ValueError, KeyError) as e:
        print(f"compare_files: {e}", file=sys.stderr)
        return 2
    diffs = compare(a, b, args.subset, args.torn)
    na, nb = a.n_results(), b.n_results()
    if na < args.min_results:
        diffs.append(f"{args.a} holds {na} results, expected at least {args.min_results}")
    print(f"compare_files: {args.a}: {na} results, {args.b}: {nb} results; "
          f"{'equal' if not diffs else f'{len(diffs)} differences'}{' (subset)' if args.subset else ''}")
    for d in diffs[:40]:
        print(f"  {d}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
