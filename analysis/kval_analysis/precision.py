"""precision.py - `kval-analyze precision`: the precision study. fp16 vs bf16 storage and
fp16/bf16 vs fp32 accumulation: error distributions per family (log10|err| histograms and
per-case relative L2 errors), error growth against the reduction length (gemm K, fa2 key
length and head dim, norm hidden size) with the sqrt(K)*u and K*u model lines, pairwise
precision comparisons, and a summary of where each precision stays within its tolerance
(status, max_bound_ratio). Writes precision.html, precision.md and PNGs."""
import math
import os

import numpy as np
import pandas as pd

from . import plots
from .cases import family_frame, split_precision, typical_per_case, unit_roundoff
from .document import Document
from .io import FAILED, RAN, family_axes

THEORY_GREY = {"fp16": "0.45", "bf16": "0.1", "fp32": "0.7"}
LADDER = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
# family -> [(x column, plot stem suffix, x label, what K is)]
GROWTH = {
    "gemm": [("K", "K", "reduction length K (elements)", "K")],
    "fa2": [("seqlen", "seqlen", "sequence length (tokens; P.V reduction over keys)", "key length"),
            ("headdim", "headdim", "head dimension (Q.K^T reduction)", "head dim")],
    "layernorm": [("hidden", "hidden", "hidden size (elements reduced per row)", "hidden")],
    "rmsnorm": [("hidden", "hidden", "hidden size (elements reduced per row)", "hidden")],
}


def bin_labels(edges):
    """Histogram lower edges (log10) -> readable labels: 0, <1e-12, 1e-12, ..., >=1e4, non-finite."""
    finite = [e for e in edges if np.isfinite(e)]
    lo, hi = (min(finite), max(finite)) if finite else (None, None)
    labels = []
    for e in edges:
        if np.isnan(e):
            labels.append("non-finite")
        elif np.isinf(e):
            labels.append("0 (exact)")
        elif e == lo:
            labels.append(f"<1e{int(lo) + 1}")
        elif e == hi:
            labels.append(f">=1e{int(hi)}")
        else:
            labels.append(f"1e{int(e)}")
    return labels


def _theory(precisions):
    """Callback for plots.line_plot drawing sqrt(K)*u and K*u of each accumulator and the
    output rounding u of each storage type on the rel_l2 panel."""
    accs = sorted({split_precision(p)[1] for p in precisions}, key=lambda t: -unit_roundoff(t))
    stores = sorted({split_precision(p)[0] for p in precisions}, key=lambda t: -unit_roundoff(t))

    def draw(ax, metric, xs, colors):
        if metric != "rel_l2" or len(xs) == 0:
            return
        lo, hi = ax.get_ylim()
        xs = np.asarray(xs, dtype=float)
        for acc in accs:
            u = unit_roundoff(acc)
            if not np.isfinite(u):
                continue
            grey = THEORY_GREY.get(acc, "0.3")
            ax.plot(xs, np.sqrt(xs) * u, color=grey, linestyle="--", linewidth=1,
                    label=f"sqrt(K)*u  (u={acc} 2^{int(round(math.log2(u)))})")
            ax.plot(xs, xs * u, color=grey, linestyle=":", linewidth=1.3, label=f"K*u  (u={acc})")
        for st in stores:
            u = unit_roundoff(st)
            if np.isfinite(u):
                ax.axhline(u, color=THEORY_GREY.get(st, "0.3"), linestyle="-.", linewidth=0.8,
                           label=f"u of {st} storage (output rounding)")
        ax.set_ylim(lo / 3, hi * 20)

    return draw


def _typical(frames):
    return {name: typical_per_case(frame, axes) for name, (frame, axes) in frames.items()}


def _where(bad, axes, everything):
    """Which axis values the failing cases have, for the axes where that is a subset."""
    parts = []
    for a in axes:
        if a == "precision":
            continue
        vals = sorted(bad[a].unique().tolist(), key=str)
        if len(vals) < everything[a].nunique():
            parts.append(f"{a} in {{{', '.join(map(str, vals))}}}")
    return "; ".join(parts)


def _verdict(bad, ran, axes, part):
    if len(bad):
        where = _where(bad, axes, part)
        return f"fails where {where}" if where else "fails in every case swept"
    return "yes, every case" if len(ran) else "no case ran (skipped or not run)"


def summary_table(frames, typical):
    rows = []
    for name, (frame, axes) in frames.items():
        w = typical[name]
        if "precision" not in frame:
            continue
        for prec in frame["precision"].unique():
            part = w[w["precision"] == prec]
            ran = part[part["status"].isin(RAN)]
            bad = part[part["status"].isin(FAILED)]
            skipped = frame[(frame["precision"] == prec) & (frame["status"] == "skipped")]
            storage, accum = split_precision(prec)
            rows.append({"family": name, "precision": prec, "storage": storage, "accum": accum,
                         "cases": len(part), "pass": int((part["status"] == "pass").sum()), "fail": len(bad),
                         "skipped": int(skipped[axes].drop_duplicates().shape[0]),
                         "max_bound_ratio": float(ran["max_bound_ratio"].max()) if len(ran) else np.nan,
                         "median_rel_l2": float(ran["rel_l2"].median()) if len(ran) else np.nan,
                         "max_rel_l2": float(ran["rel_l2"].max()) if len(ran) else np.nan,
                         "max_ulp": float(ran["max_ulp"].max()) if len(ran) else np.nan,
                         "within tolerance": _verdict(bad, ran, axes, part)})
    return pd.DataFrame(rows)


def ladder_table(typical):
    """Fraction of cases whose relative L2 error is at most each level."""
    rows = []
    for name, w in typical.items():
        ran = w[w["status"].isin(RAN) & np.isfinite(w["rel_l2"].astype(float))] if "rel_l2" in w else w.iloc[0:0]
        for prec, part in ran.groupby("precision", sort=False):
            row = {"family": name, "precision": prec, "cases": len(part)}
            row.update({f"rel_l2<={lvl:g}": float((part["rel_l2"] <= lvl).mean()) for lvl in LADDER})
            rows.append(row)
    return pd.DataFrame(rows)


def pair_table(frames, typical):
    """Median rel_l2 ratio between precisions that differ only in storage or only in accumulator."""
    rows = []
    for name, (frame, axes) in frames.items():
        w = typical[name]
        if w.empty or "precision" not in w:
            continue
        w = w[w["status"].isin(RAN)]
        others = [a for a in axes if a != "precision"]
        precs = list(dict.fromkeys(w["precision"]))
        for a in precs:
            for b in precs:
                sa, aa = split_precision(a)
                sb, ab = split_precision(b)
                if a == b or not ((sa == sb and unit_roundoff(ab) > unit_roundoff(aa)) or
                                  (aa == ab and unit_roundoff(sb) > unit_roundoff(sa))):
                    continue
                m = w[w["precision"] == a].merge(w[w["precision"] == b], on=others, suffixes=("_a", "_b"))
                m = m[(m["rel_l2_a"] > 0) & np.isfinite(m["rel_l2_b"])]
                if m.empty:
                    continue
                rows.append({"family": name, "effect": "accumulator" if sa == sb else "storage",
                             "baseline": a, "compared": b, "matched cases": len(m),
                             "median rel_l2 baseline": float(m["rel_l2_a"].median()),
                             "median rel_l2 compared": float(m["rel_l2_b"].median()),
                             "median ratio": float((m["rel_l2_b"] / m["rel_l2_a"]).median())})
    return pd.DataFrame(rows)


def _hist_curves(ds):
    """Per precision: fraction of compared elements per log10|err| bin (cells that ran)."""
    if "hist" not in ds or "precision" not in ds.dims:
        return None, None
    mask = ds["status"].isin(list(RAN))
    hist = ds["hist"].where(mask).astype(float)
    other = [d for d in hist.dims if d not in ("precision", "hist_bin")]
    per = hist.sum(dim=other)
    curves = {}
    for prec in per["precision"].values:
        counts = per.sel(precision=prec).values
        total = counts.sum()
        if total > 0:
            curves[str(prec)] = counts / total
    edges = ds["hist_lower_log10"].values if "hist_lower_log10" in ds.coords else np.arange(per.sizes["hist_bin"])
    return curves, bin_labels(edges)


def _distribution(doc, name, ds, w, outdir):
    curves, labels = _hist_curves(ds)
    png = f"precision_{name}_hist.png"
    if curves and plots.hist_plot(curves, labels, os.path.join(outdir, png),
                                  f"{name}: distribution of |out - ref| per precision"):
        doc.image(png, f"{name}: histogram of log10|out - ref| over every compared element of the cases that ran "
                       "(all ranks), as a fraction per precision")
    else:
        doc.note(f"{name}: no error histogram data (hist absent or every cell not run).")
    ran = w[w["status"].isin(RAN)] if not w.empty else w
    png = f"precision_{name}_rel_l2_box.png"
    groups = {p: part["rel_l2"].to_numpy(dtype=float) for p, part in ran.groupby("precision", sort=False)} \
        if not ran.empty and "precision" in ran else {}
    if plots.box_plot(groups, os.path.join(outdir, png), f"{name}: relative L2 error per case",
                      "relative L2 error ||out-ref||/||ref|| (1)"):
        doc.image(png, f"{name}: distribution over cases of the relative L2 error (median rank per case)")
    else:
        doc.note(f"{name}: no finite relative L2 errors.")


def _growth(doc, name, frame, outdir):
    ran = frame[frame["status"].isin(RAN)]
    specs = GROWTH.get(name, [])
    for x, stem, xlabel, kname in specs:
        if x not in ran or ran[x].nunique() < 2:
            doc.note(f"{name}: fewer than two values of {x}: no growth plot against it.")
            continue
        png = f"precision_{name}_growth_{stem}.png"
        ok = plots.line_plot(ran, x, ["rel_l2", "max_ulp"], ["precision"], os.path.join(outdir, png), name, xlabel,
                             ["relative L2 error ||out-ref||/||ref|| (1)", "max error (ULPs of the storage type)"],
                             agg="median", theory=_theory(ran["precision"].unique()), logy=True)
        if ok:
            doc.image(png, f"{name}: error growth with the {kname} (median over ranks and the other axes); grey "
                           "lines: sqrt(K)*u (typical, round-to-nearest) and K*u (worst case) for each accumulator "
                           "u, and the storage type's u")
        else:
            doc.note(f"{name}: no finite errors to plot against {x}.")


def build_precision(runs, outdir):
    """Write precision.html, precision.md and PNGs into outdir; returns (html, md) paths."""
    os.makedirs(outdir, exist_ok=True)
    frames = {n: (family_frame(ds), family_axes(ds)) for n, ds in runs.families.items()}
    typical = _typical(frames)
    doc = Document("kval precision study")
    doc.paragraph(f"{len(runs.files)} file(s): {', '.join(os.path.basename(f.path) for f in runs.files)}. "
                  "Errors are against an fp64 reference on the same rounded inputs. Per case the rank with "
                  "the median error/tolerance ratio stands for the case, so one faulty GPU does not distort "
                  "the study (kval-analyze fleet and report show faulty ranks). Unit roundoff u: fp16 "
                  "2^-11, bf16 2^-8, fp32 2^-24.")
    for note in runs.notes:
        doc.note(note)
    if not frames:
        doc.note("These files hold no kernel family groups.")
        return doc.write(outdir, "precision")
    doc.heading("Which precision is within tolerance where")
    summary = summary_table(frames, typical)
    if summary.empty:
        doc.note("No family has a precision axis with cases that ran.")
    else:
        doc.table(summary, row_class=lambda r: "bad" if r["fail"] else "")
    doc.heading("Fraction of cases within relative-L2 levels", 3)
    doc.table(ladder_table(typical))
    doc.heading("Storage and accumulator effects", 3)
    doc.paragraph("For precisions that differ only in the storage type or only in the accumulator: the "
                  "median over matching cases of rel_l2(compared) / rel_l2(baseline).")
    doc.table(pair_table(frames, typical))
    for name, (frame, axes) in frames.items():
        doc.heading(name)
        if "precision" not in axes:
            doc.note(f"{name} has no precision axis.")
            continue
        _distribution(doc, name, runs.families[name], typical[name], outdir)
        _growth(doc, name, frame, outdir)
    for missing in [f for f in GROWTH if f not in frames]:
        doc.note(f"Family {missing} is not in these files.")
    return doc.write(outdir, "precision")
