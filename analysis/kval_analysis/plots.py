"""plots.py - the PNG charts of the reports (matplotlib, Agg backend): metric-vs-axis line
charts with optional theory lines, the roofline with measured ceilings, the per-rank time
spread, error histograms and box plots. Every chart has labelled axes with units, a title,
a legend, log scales where the data spans decades; a function returns False (and writes
nothing) when it has no finite data to draw."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after selecting the backend)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DPI = 110
MAX_LEGEND = 24


def _positive(values):
    v = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
    return v[np.isfinite(v) & (v > 0)]


def _is_power_of_two(v):
    return v > 0 and abs(math.log2(v) - round(math.log2(v))) < 1e-9


def set_scale(ax, which, values):
    """Log scale when positive data spans more than a factor 30 (base 2 on x for powers of two
    spanning at least 4x); returns True when the axis is logarithmic."""
    v = _positive(values)
    setter = ax.set_xscale if which == "x" else ax.set_yscale
    if v.size == 0:
        return False
    span = v.max() / v.min()
    if which == "x" and span >= 4 and all(_is_power_of_two(x) for x in v):
        setter("log", base=2)
        return True
    if span >= 30:
        setter("log")
        return True
    return False


def _series_label(key, series):
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{s}={k}" if s not in ("precision", "variant", "family") else str(k)
                     for s, k in zip(series, key))


def _finish(fig, ax_list, path, legend=True):
    for ax in ax_list:
        handles, labels = ax.get_legend_handles_labels()
        if legend and handles:
            where = {} if len(handles) <= 6 else {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
            ax.legend(handles[:MAX_LEGEND], labels[:MAX_LEGEND], fontsize="small", **where)
        ax.grid(True, which="major", alpha=0.3)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)


def line_plot(frame, x, metrics, series, path, title, xlabel, ylabels, agg="max", theory=None, logy=False):
    """One panel per metric: `metric` aggregated (agg over ranks and the other axes) against x,
    one line per combination of the `series` columns. theory(ax, metric, xs, colors) may add
    reference lines (colors maps a series key to its line colour). logy forces a log y axis."""
    metrics = [m for m in metrics if m in frame]
    if x not in frame or not metrics:
        return False
    data = frame.copy()
    data[x] = pd.to_numeric(data[x], errors="coerce")
    finite = [m for m in metrics if np.isfinite(pd.to_numeric(data[m], errors="coerce")).any()]
    if not finite or not np.isfinite(data[x]).any():
        return False
    fig, axes = plt.subplots(1, len(finite), figsize=(6.2 * len(finite), 4.4), squeeze=False, layout="constrained")
    axes = axes[0]
    for ax, metric, ylabel in zip(axes, finite, [ylabels[metrics.index(m)] for m in finite]):
        sub = data[np.isfinite(data[x]) & np.isfinite(pd.to_numeric(data[metric], errors="coerce"))]
        if logy:
            ax.set_yscale("log")
        if set_scale(ax, "y", sub[metric]) or logy:
            sub = sub[sub[metric] > 0]
        set_scale(ax, "x", sub[x])
        colors = {}
        groups = sub.groupby(series, sort=True) if series else [((), sub)]
        for i, (key, part) in enumerate(groups):
            curve = part.groupby(x)[metric].agg(agg).sort_index()
            line, = ax.plot(curve.index, curve.to_numpy(dtype=float), marker="o", markersize=4,
                            label=_series_label(key, series) if series else metric, color=f"C{i % 10}",
                            linestyle="-" if i < 10 else "--")
            colors[key if isinstance(key, tuple) else (key,)] = line.get_color()
        if theory is not None:
            theory(ax, metric, np.sort(sub[x].unique()), colors)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {metric} vs {x}", fontsize="medium")
    _finish(fig, axes, path)
    return True


def roofline_plot(points, ceilings, path, title="Roofline: every case against the measured ceilings"):
    """points: family, intensity (FLOP/byte), tflops; ceilings: gpu_name, copy_gbps (GB/s),
    matrix_tflops (TFLOP/s), one row per GPU model (medians over ranks)."""
    pts = points[np.isfinite(points["intensity"]) & np.isfinite(points["tflops"]) &
                 (points["intensity"] > 0) & (points["tflops"] > 0)]
    if pts.empty:
        return False
    fig, ax = plt.subplots(figsize=(8, 5.5), layout="constrained")
    for i, (family, part) in enumerate(pts.groupby("family", sort=False)):
        ax.scatter(part["intensity"], part["tflops"], s=14, alpha=0.7, color=f"C{i}", label=family)
    lo, hi = pts["intensity"].min() / 2, pts["intensity"].max() * 2
    for j, row in enumerate(ceilings.itertuples()):
        bw, peak = float(row.copy_gbps), float(row.matrix_tflops)
        if not np.isfinite(bw) or bw <= 0:
            continue
        xs = np.geomspace(lo, max(hi, peak * 1e3 / bw * 2) if np.isfinite(peak) else hi, 200)
        roof = xs * bw / 1e3
        label = f"{row.gpu_name}: {bw:.0f} GB/s"
        if np.isfinite(peak) and peak > 0:
            roof = np.minimum(roof, peak)
            label += f", {peak:.0f} TFLOP/s"
        ax.plot(xs, roof, color="k", linestyle=["-", "--", ":", "-."][j % 4], linewidth=1.2,
                label=f"ceiling {label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved throughput (TFLOP/s)")
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path)
    return True


def spread_plot(frame, path, title="Kernel time per rank relative to the per-case median"):
    """frame: label (host:rank), ratio (time_median / per-case median over ranks)."""
    data = frame[np.isfinite(frame["ratio"])]
    if data.empty:
        return False
    labels = list(dict.fromkeys(data["label"]))
    width = max(7.0, 0.4 * len(labels) + 2) if len(labels) <= 64 else 10.0
    fig, ax = plt.subplots(figsize=(width, 5), layout="constrained")
    if len(labels) <= 64:
        ax.boxplot([data.loc[data["label"] == lab, "ratio"].to_numpy() for lab in labels], showfliers=True)
        ax.set_xticks(range(1, len(labels) + 1))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize="x-small")
    else:
        med = data.groupby("label", sort=False)["ratio"].median().sort_values()
        ax.plot(range(len(med)), med.to_numpy(), marker=".", linestyle="none", label="median over cases")
        for i in range(max(0, len(med) - 3), len(med)):  # name the slowest ranks when they stand out
            if med.iloc[i] < 1.02:
                continue
            ax.annotate(med.index[i], (i, med.iloc[i]), fontsize="x-small", ha="right",
                        xytext=(-4, 4), textcoords="offset points")
        ax.set_xlabel("ranks, sorted by median ratio")
    ax.axhline(1.0, color="grey", linewidth=1, linestyle="--", label="per-case median")
    ax.set_ylabel("time / per-case median over ranks (1)")
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path)
    return True


def hist_plot(curves, bin_labels, path, title):
    """curves: label -> fraction of elements per histogram bin (log10|err| bins)."""
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    drew = False
    xs = np.arange(len(bin_labels))
    for i, (label, frac) in enumerate(curves.items()):
        frac = np.asarray(frac, dtype=float)
        if not np.isfinite(frac).any() or frac.sum() <= 0:
            continue
        shown = np.where(frac > 0, frac, np.nan)
        ax.plot(xs, shown, marker="o", markersize=4, color=f"C{i % 10}", label=label,
                linestyle="-" if i < 10 else "--")
        drew = True
    if not drew:
        plt.close(fig)
        return False
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels(bin_labels, rotation=60, ha="right", fontsize="small")
    ax.set_xlabel("|out - ref| (lower edge of the decade bin)")
    ax.set_ylabel("fraction of compared elements")
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path)
    return True


def box_plot(groups, path, title, ylabel):
    """groups: label -> values (one box each, log y when the values span decades)."""
    groups = {k: _positive(v) for k, v in groups.items()}
    groups = {k: v for k, v in groups.items() if v.size}
    if not groups:
        return False
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) + 2), 4.8), layout="constrained")
    ax.boxplot(list(groups.values()))
    ax.set_xticks(range(1, len(groups) + 1))
    ax.set_xticklabels(list(groups), rotation=30, ha="right", fontsize="small")
    set_scale(ax, "y", np.concatenate(list(groups.values())))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path, legend=False)
    return True
