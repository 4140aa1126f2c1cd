"""report.py - `kval-analyze report`: one self-contained HTML page (PNGs beside it), a
Markdown summary and per-family CSV tables from one or many kval files: run metadata and
the deck, the GPU of every rank, pass/fail counts per family and precision, the worst cases
by error, throughput tables and charts (error and throughput against the sweep axes,
roofline with the measured ceilings, spread of time across ranks)."""
import os

import numpy as np
import pandas as pd

from . import plots
from .cases import ERROR_STATS, family_frame, status_matrix, throughput_table, worst_per_case
from .document import Document
from .io import FAILED, RAN, case_labels, family_axes

RUN_ATTRS = ("kval_version", "git_commit", "command_line", "creation_time", "complete", "backend", "mode", "seed",
             "nranks", "layout_version", "mpi_version", "hdf5_version", "hdf5_flavour", "cuda_runtime",
             "cuda_driver", "slurm_job_id", "slurm_nodes", "deck_path")
GPU_COLUMNS = ("rank", "file", "rank_in_file", "host", "local_rank", "device_index", "device_name", "uuid",
               "serial", "pci_bus_id", "sm_count", "cc", "memory_GiB", "driver_version", "runtime_version",
               "copy_gbps", "matrix_tflops", "fp64_tflops", "nvml")
YLABEL = {"rel_l2": "relative L2 error ||out-ref||/||ref|| (1)",
          "max_ulp": "max error (ULPs of the storage type)",
          "tflops": "throughput (TFLOP/s)", "gbps": "bandwidth (GB/s)"}
# (file stem, x axis, metrics, series, aggregation, x label, what the aggregation covers)
PLOT_SPECS = {
    "fa2": [("fa2_error_vs_seqlen", "seqlen", ["rel_l2", "max_ulp"], ["precision", "headdim", "variant"], "max",
             "sequence length (tokens)", "worst over ranks, causal, batch, heads and dist"),
            ("fa2_throughput_vs_seqlen", "seqlen", ["tflops"], ["variant", "precision", "headdim", "causal"], "median",
             "sequence length (tokens)", "median over ranks, batch, heads and dist")],
    "gemm": [("gemm_error_vs_K", "K", ["rel_l2", "max_ulp"], ["precision", "variant"], "max",
              "reduction length K (elements)", "worst over ranks, layouts, dists and shapes with that K"),
             ("gemm_throughput_vs_K", "K", ["tflops"], ["precision", "variant"], "median",
              "reduction length K (elements)", "median over ranks, layouts, dists and shapes with that K")],
}
for _norm in ("layernorm", "rmsnorm"):
    PLOT_SPECS[_norm] = [
        (f"{_norm}_error_vs_hidden", "hidden", ["rel_l2", "max_ulp"], ["precision"], "max",
         "hidden size (elements)", "worst over ranks, rows and dists"),
        (f"{_norm}_throughput_vs_hidden", "hidden", ["gbps"], ["precision"], "median",
         "hidden size (elements)", "median over ranks, rows and dists")]


def _run_section(doc, runs):
    doc.heading("Runs")
    table = pd.DataFrame({"attribute": list(RUN_ATTRS)})
    for run in runs.files:
        table[os.path.basename(run.path)] = [run.attrs.get(k, "(absent)") for k in RUN_ATTRS]
    doc.table(table)
    for note in runs.notes:
        doc.note(note)
    decks = {}
    for run in runs.files:
        decks.setdefault(str(run.attrs.get("deck_text", "")), []).append(os.path.basename(run.path))
    for text, names in decks.items():
        doc.heading(f"Deck ({', '.join(names)})", 3)
        doc.code(text if text.strip() else "(no deck_text attribute)")


def _gpu_section(doc, runs):
    doc.heading("GPUs (one row per rank)")
    t = runs.ranks.copy()
    if "cc_major" in t and "cc_minor" in t:
        t["cc"] = t["cc_major"].astype(str) + "." + t["cc_minor"].astype(str)
    if "memory_bytes" in t:
        t["memory_GiB"] = t["memory_bytes"].astype(float) / 2**30
    if len(runs.files) > 1:
        t["file"] = t["file"].map(os.path.basename)
    doc.table(t[[c for c in GPU_COLUMNS if c in t and (c != "file" or len(runs.files) > 1)]])


def _status_section(doc, runs):
    doc.heading("Pass/fail per family and precision")
    if not runs.families:
        doc.note("These files hold no kernel family groups.")
        return
    matrix = status_matrix(runs)
    doc.paragraph("Counts of (rank, case) cells. not_run cells of a split-mode run are the cases other "
                  "ranks ran.")
    doc.table(matrix, row_class=lambda r: "bad" if any(r.get(s, 0) for s in FAILED) else "")


def _worst_section(doc, frames, top=20):
    doc.heading("Worst cases by error")
    rows = []
    for name, (frame, axes) in frames.items():
        worst = worst_per_case(frame, axes)
        if worst.empty:
            continue
        worst = worst.assign(family=name, case=case_labels(worst, axes))
        rows.append(worst)
    if not rows:
        doc.note("No case ran: no error statistics to rank.")
        return
    allw = pd.concat(rows, ignore_index=True)
    if not np.isfinite(allw["max_bound_ratio"].astype(float)).any():
        doc.note("max_bound_ratio is NaN everywhere: cases listed unsorted.")
    allw = (allw.assign(_failed=allw["status"].isin(FAILED))
            .sort_values(["_failed", "max_bound_ratio"], ascending=False, na_position="last").head(top))
    cols = ["family", "case", "host", "rank", "status", "message"] + [c for c in ERROR_STATS if c in allw]
    doc.paragraph(f"The {len(allw)} worst cases: failures first, then by error / tolerance bound ratio "
                  "(pass <= 1), each on the rank where it was worst.")
    doc.table(allw[cols], row_class=lambda r: "bad" if r["status"] in FAILED else "")


def _throughput_section(doc, frames, outdir):
    doc.heading("Throughput")
    doc.paragraph("Per case, medians over the ranks that ran it; spread = slowest / fastest rank time; "
                  "roofline_frac = achieved / min(peak, intensity x bandwidth) with the rank's measured "
                  "ceilings. Full tables: throughput_<family>.csv and cases_<family>.csv (every rank).")
    for name, (frame, axes) in frames.items():
        frame.to_csv(os.path.join(outdir, f"cases_{name}.csv"), index=False)
        table = throughput_table(frame, axes)
        doc.heading(name, 3)
        if table.empty or not np.isfinite(table["time_us"]).any():
            doc.note(f"{name}: no timed case (all cells skipped, not run or NaN).")
            continue
        table.to_csv(os.path.join(outdir, f"throughput_{name}.csv"), index=False)
        varying = [a for a in axes if table[a].nunique() > 1]
        doc.table(table[varying + [c for c in table.columns if c not in axes]], max_rows_md=25)


def _plot_family(doc, name, frame, axes, outdir):
    specs = PLOT_SPECS.get(name)
    if specs is None:
        ints = [a for a in axes if pd.api.types.is_numeric_dtype(frame[a]) and frame[a].nunique() > 1]
        if not ints:
            doc.note(f"{name}: no numeric sweep axis to plot against.")
            return
        specs = [(f"{name}_error_vs_{ints[0]}", ints[0], ["rel_l2", "max_ulp"], ["precision"], "max",
                  ints[0], "worst over ranks and the other axes")]
    ran = frame[frame["status"].isin(RAN)]
    for stem, x, metrics, series, agg, xlabel, covers in specs:
        series = [s for s in series if s in ran and ran[s].nunique() > 0]
        png = f"{stem}.png"
        title = f"{name}: {' and '.join(metrics)} vs {x}"
        ok = plots.line_plot(ran, x, metrics, series, os.path.join(outdir, png), name, xlabel,
                             [YLABEL.get(m, m) for m in metrics], agg=agg)
        if ok:
            doc.image(png, f"{title} ({covers})")
        else:
            doc.note(f"{title}: no finite data to plot.")


def _roofline(doc, runs, frames, outdir):
    points = []
    for name, (frame, axes) in frames.items():
        ran = frame[frame["status"].isin(RAN)]
        if {"intensity", "tflops"} <= set(ran.columns) and not ran.empty:
            med = ran.groupby(axes)[["intensity", "tflops"]].median().reset_index()
            points.append(med.assign(family=name))
    ceilings = pd.DataFrame(columns=["gpu_name", "copy_gbps", "matrix_tflops"])
    r = runs.ranks
    if {"copy_gbps", "matrix_tflops", "device_name"} <= set(r.columns):
        ceilings = (r.groupby("device_name")[["copy_gbps", "matrix_tflops"]].median().reset_index()
                    .rename(columns={"device_name": "gpu_name"}))
    if not points or not plots.roofline_plot(pd.concat(points, ignore_index=True), ceilings,
                                             os.path.join(outdir, "roofline.png")):
        doc.note("Roofline: no case with finite intensity and TFLOP/s.")
        return
    doc.image("roofline.png", "Roofline: one point per case (median over ranks); lines: measured copy "
              "bandwidth and matrix peak per GPU model (median over ranks; no flat roof where the peak "
              "was not measured)")
    if ceilings.empty or not np.isfinite(ceilings["copy_gbps"].astype(float)).any():
        doc.note("Roofline: no measured ceilings in /ranks (copy_gbps, matrix_tflops).")


def _spread(doc, frames, outdir):
    parts = []
    for name, (frame, axes) in frames.items():
        ran = frame[frame["status"].isin(RAN) & np.isfinite(frame["time_median"].astype(float))]
        if ran.empty:
            continue
        med = ran.groupby(axes)["time_median"].transform("median")
        labels = [f"{h}:{r}" for h, r in zip(ran["host"], ran["rank"])]
        parts.append(pd.DataFrame({"label": labels, "ratio": (ran["time_median"] / med).to_numpy()}))
    if not parts or not plots.spread_plot(pd.concat(parts, ignore_index=True), os.path.join(outdir, "spread.png")):
        doc.note("Spread across ranks: no timed case.")
        return
    doc.image("spread.png", "Spread across ranks: time of each case on each rank over the case's median "
              "over ranks (all families); a rank consistently above 1 is slower than its peers")


def _frames(runs):
    return {name: (family_frame(ds), family_axes(ds)) for name, ds in runs.families.items()}


def _summary(doc, runs, frames):
    lines = []
    for name, (frame, axes) in frames.items():
        ds = runs.families[name]
        n_fail = int(frame["status"].isin(FAILED).sum())
        n_ran = int(frame["status"].isin(RAN).sum())
        lines.append(f"{name}: {ds.attrs['n_valid']} valid case(s), {ds.attrs['n_skipped']} skipped; "
                     f"{n_ran} (rank, case) result(s), {n_fail} failure(s).")
    ranks = runs.ranks
    doc.heading("Summary")
    doc.paragraph(f"{len(runs.files)} file(s), {len(ranks)} rank(s) on {ranks['host'].nunique()} host(s), "
                  f"GPU model(s): {', '.join(sorted(set(map(str, ranks['device_name']))))}.")
    for line in lines:
        doc.paragraph(line)
    for missing in [f for f in PLOT_SPECS if f not in runs.families]:
        doc.note(f"Family {missing} is not in these files: no {missing} tables or plots.")


def build_report(runs, outdir):
    """Write report.html, report.md, PNGs and CSVs into outdir; returns (html, md) paths."""
    os.makedirs(outdir, exist_ok=True)
    frames = _frames(runs)
    doc = Document("kval report")
    _summary(doc, runs, frames)
    _run_section(doc, runs)
    _gpu_section(doc, runs)
    _status_section(doc, runs)
    if frames:
        _worst_section(doc, frames)
        _throughput_section(doc, frames, outdir)
        doc.heading("Plots")
        for name, (frame, axes) in frames.items():
            doc.heading(name, 3)
            _plot_family(doc, name, frame, axes, outdir)
        doc.heading("Roofline and rank spread", 3)
        _roofline(doc, runs, frames, outdir)
        _spread(doc, frames, outdir)
    return doc.write(outdir, "report")
