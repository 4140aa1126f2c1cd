"""growth.py - error growth of the precision study: fitted growth laws and their charts. Per
family x precision x input distribution (x kernel variant where the family has one) the
least-squares exponent b of rel_l2 ~ K^b and of p99_ulp ~ K^b against the reduction length
K (the file's red_len), with one intercept per combination of the other axes (so head dims,
shapes or causal masks with different error levels share the slope but not the level) and
its Student-t 95 % interval, beside the theory: 0 at the output-rounding floor, 0.5 for
random-sign round-to-nearest accumulation (error ~ sqrt(K) u), 1.0 for same-sign or
truncating accumulation (K u). Cases
whose output was non-finite, or whose error is exactly 0, are left out of a fit and counted.
The charts facet by head dim, input distribution and variant (one panel each) instead of
averaging them, with one colour per precision."""
import math
import os

import numpy as np
import pandas as pd

from . import plots, stats
from .cases import accum_roundoff, output_type, split_precision, unit_roundoff
from .io import family_kind, output_mask

THEORY = {"no growth: the output-rounding floor": 0.0, "random-sign, round to nearest (sqrt(K) u)": 0.5,
          "same sign or truncation (K u)": 1.0}
THEORY_GREY = {"fp16": "0.45", "bf16": "0.1", "fp32": "0.7"}
# family -> [(x column, plot stem suffix, x label, what K is)]
GROWTH = {
    "gemm": [("K", "K", "reduction length K (elements)", "K")],
    "fa2": [("seqlen", "seqlen", "sequence length (tokens; P.V reduction over keys)", "key length"),
            ("headdim", "headdim", "head dimension (Q.K^T reduction)", "head dim")],
    "layernorm": [("hidden", "hidden", "hidden size (elements reduced per row)", "hidden")],
    "rmsnorm": [("hidden", "hidden", "hidden size (elements reduced per row)", "hidden")],
}
FACETS = ("headdim", "dist", "variant", "promote")  # axes shown side by side, never averaged
# The axes that set the reduction length (the regressor, not strata); other families: _fixes_k.
K_AXES = {"gemm": ("shape",), "fa2": ("seqlen",), "layernorm": ("hidden",), "rmsnorm": ("hidden",)}
QUANTITIES = (("rel_l2", "relative L2 error"), ("p99_ulp", "99th percentile error (ULPs)"))


def theory_lines(precisions):
    """Callback for the charts drawing sqrt(K)*u and K*u of each accumulation and the output
    rounding u of each output type on the rel_l2 panel (FP8: the tensor cores' 14-bit
    accumulation, bf16 outputs)."""
    def acc_name(p):
        storage, accum = split_precision(p)
        return "fp8-tc" if storage != output_type(storage) else accum
    accs = {acc_name(p): accum_roundoff(p) for p in precisions}
    accs = sorted(accs.items(), key=lambda t: -t[1])
    stores = sorted({output_type(split_precision(p)[0]) for p in precisions}, key=lambda t: -unit_roundoff(t))

    def draw(ax, metric, xs, colors):
        if metric != "rel_l2" or len(xs) == 0:
            return
        lo, hi = ax.get_ylim()
        xs = np.asarray(xs, dtype=float)
        for acc, u in accs:
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
                           label=f"u of {st} output (output rounding)")
        ax.set_ylim(lo / 3, hi * 20)

    return draw


def fit_table(typical, frames):
    """One row per family x precision x dist (x variant) x quantity with the fitted exponent."""
    rows = []
    for name, (frame, axes) in frames.items():
        w = typical[name]
        if w.empty or "precision" not in w or "red_len" not in w:
            continue
        w = w[output_mask(w["status"])]
        keys = [k for k in ("precision", "dist", "variant", "promote") if k in axes]
        drivers = K_AXES.get(family_kind(name)) or [a for a in axes if _fixes_k(w, a)]
        others = [a for a in axes if a not in keys and a not in drivers]
        for key, part in w.groupby(keys, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            for q, label in QUANTITIES:
                if q not in part:
                    continue
                y = part[q].astype(float)
                k = part["red_len"].astype(float)
                nonfinite = int((~np.isfinite(y)).sum())
                zero = int((y == 0).sum())
                ok = np.isfinite(y) & (y > 0) & np.isfinite(k) & (k > 0)
                strata = part.loc[ok, others].astype(str).agg("|".join, axis=1) if others else None
                fit = stats.growth_fit(k[ok], y[ok], strata)
                row = dict(zip(["family"] + keys, (name,) + key), quantity=q, what=label)
                row.update({"exponent": np.nan, "ci_low": np.nan, "ci_high": np.nan, "points": int(ok.sum()),
                            "K_min": float(k[ok].min()) if ok.any() else np.nan,
                            "K_max": float(k[ok].max()) if ok.any() else np.nan, "r2": np.nan,
                            "left_out_nonfinite": nonfinite, "left_out_zero": zero})
                if fit is not None:
                    row.update({"exponent": fit["exponent"], "ci_low": fit["low"], "ci_high": fit["high"],
                                "r2": fit["r2"], "strata": fit["strata"]})
                    row["consistent_with"] = ", ".join(f"{b:g}" for b in THEORY.values()
                                                       if fit["low"] <= b <= fit["high"]) or "neither"
                else:
                    row["consistent_with"] = "no fit (fewer than 3 points or one K)"
                rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    first = [c for c in ("family", "precision", "dist", "variant", "quantity") if c in table]
    table = table.assign(_p=table["precision"].map(plots.precision_rank))
    table = table.sort_values(["family", "_p"] + [c for c in ("dist", "variant") if c in table], kind="stable")
    return table[first + [c for c in table.columns if c not in first and c != "_p"]].reset_index(drop=True)


def _fixes_k(frame, axis):
    """An axis whose every value has one reduction length sets K itself, so it is the
    regressor, not a stratum (for a family kval-analyze does not know)."""
    k = frame.groupby(axis)["red_len"].nunique()
    return len(k) > 1 and bool((k <= 1).all())


def fit_section(doc, typical, frames):
    """The fitted growth laws: table in the page and Markdown; returns the table for JSON."""
    doc.heading("Fitted growth laws")
    doc.paragraph("Least-squares exponent b of error ~ K^b in log-log space against the reduction length K "
                  "(red_len: the GEMM K, the longer of head dim and key length for fa2, the hidden size for the "
                  "norms), per family, precision, input distribution and kernel variant, with one intercept per "
                  "combination of the other axes, and its Student-t 95 % interval. Theory: "
                  + "; ".join(f"{b:g} for {t}" for t, b in THEORY.items()) + ". Cases with non-finite outputs "
                  "or an error of exactly 0 are left out and counted.")
    table = fit_table(typical, frames)
    if table.empty:
        doc.note("No family with a precision axis and red_len has cases that ran.")
    else:
        doc.table(table.drop(columns=["what", "strata"], errors="ignore"),
                  row_class=lambda r: "warn" if r["left_out_nonfinite"] else "")
    return table


def _facets(frame, x):
    return [f for f in FACETS if f in frame and f != x and frame[f].nunique() > 1]


def growth_plots(doc, name, frame, outdir):
    """One faceted chart per growth axis of the family."""
    ran = frame[output_mask(frame["status"])]
    for x, stem, xlabel, kname in GROWTH.get(family_kind(name), []):
        if x not in ran or ran[x].nunique() < 2:
            doc.note(f"{name}: fewer than two values of {x}: no growth plot against it.")
            continue
        facets = _facets(ran, x)
        ran = ran.sort_values(facets, kind="stable") if facets else ran  # numeric facets in numeric order
        data = ran.assign(_facet=ran[facets].astype(str).agg(", ".join, axis=1) if facets else "all")
        png = f"precision_{name}_growth_{stem}.png"
        ok = plots.growth_facets(data, x, "_facet" if facets else None, os.path.join(outdir, png), name, xlabel,
                                 theory=theory_lines(ran["precision"].unique()), facet_label="/".join(facets))
        if ok:
            doc.image(png, f"{name}: error growth with the {kname}, one panel per {' and '.join(facets) or 'family'} "
                           "(median over ranks and the remaining axes); top: rel_l2 with sqrt(K)*u (typical, "
                           "round-to-nearest) and K*u (worst case) of each accumulator u and the storage type's u; "
                           "bottom: max_ulp (solid) and p99_ulp (dashed); red x: cases with non-finite output")
        else:
            doc.note(f"{name}: no finite errors to plot against {x}.")
