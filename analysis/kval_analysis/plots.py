"""plots.py - the PNG charts of the reports (matplotlib, Agg backend): metric-vs-axis line
charts with optional theory lines, faceted error-growth charts (one panel per head dim or
input distribution, one fixed colour per precision on the whole page, max and p99 ULPs side
by side, non-finite outputs marked), the roofline with measured ceilings, the time spread of
each GPU against its peers (log axis, labelled by GPU), error histograms and box plots.
Every chart has labelled axes with units, a title, a legend, log scales where the data spans
decades with ticks at the swept values; a function returns False (and writes nothing) when it
has no finite data to draw."""
import math

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after selecting the backend)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DPI = 110
MAX_LEGEND = 24
# One colour per precision, the same in every chart of every page.
PRECISION_COLORS = {"fp16:fp32": "#1f77b4", "bf16:fp32": "#ff7f0e", "fp32:fp32": "#2ca02c", "fp16:fp16": "#d62728",
                    "bf16:bf16": "#9467bd", "e4m3:fp32": "#8c564b", "e5m2:fp32": "#e377c2"}
EXTRA_COLORS = ("#7f7f7f", "#bcbd22", "#17becf")
NONFINITE_MARK = {"marker": "x", "color": "#c00000", "s": 40, "zorder": 5}


def precision_color(precision):
    """The page-wide colour of a precision (precisions kval does not know get stable extras)."""
    if precision in PRECISION_COLORS:
        return PRECISION_COLORS[precision]
    return EXTRA_COLORS[sum(map(ord, str(precision))) % len(EXTRA_COLORS)]


def precision_rank(precision):
    """Order of a precision in legends and tables: kval's precisions first, in their order."""
    order = list(PRECISION_COLORS)
    return (order.index(precision) if precision in order else len(order), str(precision))


def data_ticks(ax, values):
    """Major x ticks at the swept values (at most 12, evenly thinned), labelled plainly."""
    v = np.unique(_positive(values))
    if v.size == 0:
        return
    if v.size > 12:
        v = v[:: int(math.ceil(v.size / 12))]
    ax.set_xticks(v)
    ax.set_xticklabels([f"{x:g}" for x in v], rotation=45 if v.size > 6 else 0, fontsize="small")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


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
    """Legends (legend: True for every axis, False for none, or the axes that get one), grid, save."""
    for ax in ax_list:
        handles, labels = ax.get_legend_handles_labels()
        if (legend is True or (legend and ax in legend)) and handles:
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
        if set_scale(ax, "x", sub[x]):
            data_ticks(ax, sub[x])
        colors, seen = {}, {}
        groups = sub.groupby(series, sort=True) if series else [((), sub)]
        for i, (key, part) in enumerate(groups):
            key = key if isinstance(key, tuple) else (key,)
            curve = part.groupby(x)[metric].agg(agg).sort_index()
            by_precision = series and series[0] == "precision"
            n = seen[key[0]] = seen.get(key[0], -1) + 1  # the n-th line of this precision: its line style
            line, = ax.plot(curve.index, curve.to_numpy(dtype=float), marker="o", markersize=4,
                            label=_series_label(key, series) if series else metric,
                            color=precision_color(key[0]) if by_precision else f"C{i % 10}",
                            linestyle=("-", "--", ":", "-.")[n % 4] if by_precision else "-" if i < 10 else "--")
            colors[key] = line.get_color()
        inf = data[np.isfinite(data[x]) & (pd.to_numeric(data[metric], errors="coerce") == np.inf)]
        if len(inf) and len(sub):
            xs = np.sort(inf[x].unique())
            ax.scatter(xs, np.full(len(xs), ax.get_ylim()[1]), label=f"non-finite output ({len(inf)} cells)",
                       clip_on=False, **NONFINITE_MARK)
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


def spread_plot(frame, path, title="Kernel time of each GPU relative to the median of its peers, per case"):
    """frame: label (host GPU index), ratio (time / median time of the other GPUs of the model
    for the case), failing (bool per row). One box per GPU sorted by median (more than 48 GPUs:
    the median with its 5-95 % range), failing GPUs red, log2 y axis (1.0 = like its peers)."""
    data = frame[np.isfinite(frame["ratio"]) & (frame["ratio"] > 0)]
    if data.empty:
        return False
    order = data.groupby("label", sort=False)["ratio"].median().sort_values()
    failing = set(data.loc[data["failing"], "label"])
    labels = list(order.index)
    fig, ax = plt.subplots(figsize=(max(7.0, min(18.0, 0.35 * len(labels) + 3)), 5), layout="constrained")
    xs = np.arange(1, len(labels) + 1)
    if len(labels) <= 48:
        boxes = ax.boxplot([data.loc[data["label"] == lab, "ratio"].to_numpy() for lab in labels], positions=xs,
                           showfliers=True, patch_artist=True, widths=0.6)
        for patch, lab in zip(boxes["boxes"], labels):
            patch.set_facecolor("#f4a3a3" if lab in failing else "#cfe0f3")
    else:
        q = data.groupby("label")["ratio"].quantile([0.05, 0.95]).unstack().loc[labels]
        colors = ["#c00000" if lab in failing else "#1f77b4" for lab in labels]
        ax.vlines(xs, q[0.05], q[0.95], colors=colors, linewidth=1)
        ax.scatter(xs, order.to_numpy(), c=colors, s=10, zorder=3, label="median over cases (5-95 % range)")
    ax.set_yscale("log", base=2)
    lo, hi = data["ratio"].quantile(0.001), data["ratio"].quantile(0.999)
    ax.set_ylim(min(lo, 0.9) / 1.05, max(hi, 1.1) * 1.05)
    lo, hi = ax.get_ylim()
    ticks = [t for t in (0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2, 3, 4, 8) if lo <= t <= hi]
    ax.set_yticks(ticks)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize="x-small" if len(labels) > 24 else "small")
    for tick, lab in zip(ax.get_xticklabels(), labels):
        if lab in failing:
            tick.set_color("#c00000")
    ax.axhline(1.0, color="grey", linewidth=1, linestyle="--", label="as fast as its peers")
    ax.set_xlabel("GPU (host and GPU index), sorted by median; red: the GPU fails the fleet verdict")
    ax.set_ylabel("time / peers' median time (log scale)")
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path)
    return True


def growth_facets(frame, x, facet, path, title, xlabel, theory=None, facet_label=None):
    """Error growth against x: one column per value of `facet` (None: one column), two rows:
    rel_l2 (with theory lines) and ULPs (max_ulp solid, p99_ulp dashed); one line per precision
    in its page-wide colour (median over the other axes); cases with non-finite outputs are
    marked with a red x at the top of the panel and left out of the lines."""
    if x not in frame or frame.empty:
        return False
    data = frame.assign(_x=pd.to_numeric(frame[x], errors="coerce"))
    data = data[np.isfinite(data["_x"]) & (data["_x"] > 0)]
    facets = list(dict.fromkeys(data[facet])) if facet else [None]  # in the caller's (sorted) order
    finite = data[np.isfinite(data["rel_l2"].astype(float)) & (data["rel_l2"] > 0)]
    if finite.empty:
        return False
    fig, axes = plt.subplots(2, len(facets), figsize=(5.2 * len(facets) + 1.5, 8), squeeze=False,
                             layout="constrained", sharex="col", sharey="row")
    for j, fv in enumerate(facets):
        part = data if fv is None else data[data[facet] == fv]
        ok = part[np.isfinite(part["rel_l2"].astype(float))]
        bad = part[~np.isfinite(part["rel_l2"].astype(float)) & (part["rel_l2"] == np.inf)]
        for i, (metrics, ylabel) in enumerate(((["rel_l2"], "relative L2 error ||out-ref||/||ref|| (1)"),
                                                (["max_ulp", "p99_ulp"], "error (ULPs of the storage type)"))):
            ax = axes[i][j]
            for prec, sub in sorted(ok.groupby("precision", sort=False), key=lambda kv: precision_rank(kv[0])):
                for m, style in zip(metrics, ("-", "--")):
                    if m not in sub:
                        continue
                    curve = sub[sub[m] > 0].groupby("_x")[m].median().sort_index()
                    if len(curve):
                        ax.plot(curve.index, curve.to_numpy(dtype=float), marker="o", markersize=3.5,
                                linestyle=style, color=precision_color(prec),
                                label=f"{prec} {m}" if len(metrics) > 1 else prec)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            if theory is not None and i == 0:
                theory(ax, "rel_l2", np.sort(part["_x"].unique()), {})
            if len(bad):
                top = ax.get_ylim()[1]
                xs = np.sort(bad["_x"].unique())
                ax.scatter(xs, np.full(len(xs), top / 1.6), label=f"non-finite output ({len(bad)} cases)",
                           **NONFINITE_MARK)
            data_ticks(ax, part["_x"])
            ax.set_ylabel(ylabel)
            if i == 1:
                ax.set_xlabel(xlabel)
            ax.set_title(f"{title}" + (f", {facet_label or facet}={fv}" if fv is not None else ""), fontsize="medium")
    _finish(fig, [a for row in axes for a in row], path, legend=[row[-1] for row in axes])
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
        ax.plot(xs, shown, marker="o", markersize=4, color=precision_color(label), label=label)
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
    boxes = ax.boxplot(list(groups.values()), patch_artist=True)
    for patch, label in zip(boxes["boxes"], groups):
        patch.set_facecolor(precision_color(label))
        patch.set_alpha(0.6)
    ax.set_xticks(range(1, len(groups) + 1))
    ax.set_xticklabels(list(groups), rotation=30, ha="right", fontsize="small")
    set_scale(ax, "y", np.concatenate(list(groups.values())))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    _finish(fig, [ax], path, legend=False)
    return True
