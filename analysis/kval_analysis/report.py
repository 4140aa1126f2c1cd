"""report.py - `kval-analyze report`: one self-contained HTML page (PNGs beside it), a
Markdown summary and per-family CSV tables from one or many kval files. The verdict comes
first (fleet.analyse: PASS / FAIL / INCOMPLETE and one row per physical GPU, keyed by UUID,
with host, GPU index, PCI bus id, serial), then fingerprint disagreements, failed cases and
performance outliers (with the spread of every GPU's time against its peers), then the run
metadata and the deck, the GPUs, pass/fail counts per family and precision, the worst cases
by error (non-finite outputs as inf), throughput tables and charts (error and throughput
against the sweep axes, roofline with the measured ceilings)."""
import os

import numpy as np
import pandas as pd

from . import fleet, plots
from .cases import ERROR_STATS, family_frame, status_matrix, throughput_table, worst_per_case
from .document import Document
from .fleet_output import gpu_label
from .io import case_labels, failure_mask, family_axes, finding_mask, family_kind, output_mask

RUN_ATTRS = ("kval_version", "git_commit", "command_line", "creation_time", "complete", "backend", "mode", "seed",
             "nranks", "layout_version", "mpi_version", "hdf5_version", "hdf5_flavour", "cuda_runtime",
             "cuda_driver", "slurm_job_id", "slurm_nodes", "deck_path")
GPU_COLUMNS = ("host", "device_index", "pci_bus_id", "serial", "uuid", "device_name", "runs", "ranks", "sm_count",
               "cc", "memory_GiB", "driver_version", "runtime_version", "copy_gbps", "matrix_tflops", "fp64_tflops",
               "nvml")
MAX_LISTED = 40
MAX_VERDICT_ROWS = 16
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
    doc.heading("GPUs (one row per physical GPU)")
    t = runs.ranks.copy()
    if "cc_major" in t and "cc_minor" in t:
        t["cc"] = t["cc_major"].astype(str) + "." + t["cc_minor"].astype(str)
    if "memory_bytes" in t:
        t["memory_GiB"] = t["memory_bytes"].astype(float) / 2**30
    g = t.groupby("gpu_key", sort=False)
    first = g.first()
    first["runs"] = g["file"].nunique()
    first["ranks"] = g["rank"].apply(lambda r: ",".join(map(str, r)))
    doc.paragraph("A GPU that appears in several files (several runs, e.g. weekly campaigns) is one row, keyed "
                  "by its UUID; ranks are the global rank numbers of the files in the order given.")
    doc.table(first.reset_index()[[c for c in GPU_COLUMNS if c in first]])


def _verdict_section(doc, runs, res):
    doc.heading("Verdict")
    bad = [g for g in res["gpus"] if g["verdict"] != "PASS"]
    backends = sorted({str(f.attrs.get("backend", "?")) for f in runs.files})
    doc.verdict(res["verdict"], f"{len(res['gpus'])} GPU(s) in {len(runs.files)} file(s) ({', '.join(backends)} "
                                f"backend): {sum(g['verdict'] == 'FAIL' for g in bad)} fail, "
                                f"{sum(g['verdict'] == 'INCOMPLETE' for g in bad)} incomplete. The checks are "
                                "those of kval-analyze fleet (its README section): fingerprints, failed cases, "
                                "performance against the GPU's peers with the recorded noise, completeness.")
    rows = [{"verdict": g["verdict"], "host": g["host"], "gpu": g["gpu_index"], "pci_bus_id": g["pci_bus_id"],
             "serial": g["serial"], "uuid": g["uuid"], "model": g["gpu_name"], "ranks": ",".join(map(str, g["ranks"])),
             **{c: g["checks"].get(c, "-") for c in ("fingerprint", "failures", "performance", "completeness")},
             "why": "; ".join(g["failing"])} for g in res["gpus"]]
    if len(rows) > MAX_VERDICT_ROWS:  # a fleet: the GPUs that need attention; every GPU in the GPUs section
        shown = [r for r in rows if r["verdict"] != "PASS"]
        doc.paragraph(f"{len(rows) - len(shown)} GPU(s) pass every check (all GPUs: the GPUs section below).")
        rows = shown
    if rows:
        doc.table(pd.DataFrame(rows), row_class=lambda r: {"FAIL": "bad", "INCOMPLETE": "warn"}.get(r["verdict"], ""))
    for note in res["notes"]:
        doc.note(note)


def _fingerprint_section(doc, res):
    dis = res["fingerprint"]["disagreements"]
    doc.heading(f"Fingerprint disagreements ({len(dis)})")
    if not dis:
        doc.paragraph(f"None: every case that ran on two or more GPUs of one model gave the same output bits "
                      f"({len(res['fingerprint']['comparable_ranks'])} comparable ranks).")
        return
    frame = pd.DataFrame(dis)
    frame["gpu"] = [gpu_label(d) for d in dis]
    per = frame.groupby(["gpu", "gpu_name"], sort=False).agg(
        cases=("family", "size"), families=("family", lambda f: ", ".join(sorted(set(f)))),
        no_majority=("majority", lambda m: int(m.isna().sum()))).reset_index()
    doc.paragraph("The same inputs on GPUs of the same model gave different output bits: silent data corruption "
                  "on the GPU named, or, where no fingerprint has a majority (e.g. two GPUs), on one of them.")
    doc.table(per, row_class=lambda r: "bad")
    detail = frame.assign(case=[" ".join(f"{k}={v}" for k, v in d["case"].items()) for d in dis])
    doc.table(detail[["gpu", "family", "case", "fingerprint", "majority", "agreeing_ranks", "ranks"]].head(MAX_LISTED),
              caption=f"first {min(MAX_LISTED, len(dis))} of {len(dis)} (all: kval-analyze fleet --json)")


def _failures_section(doc, res):
    fails = res["failures"]
    doc.heading(f"Failed cases ({len(fails)})")
    if not fails:
        doc.paragraph("None.")
        return
    frame = pd.DataFrame([{"gpu": gpu_label(d), "family": d["family"],
                           "case": " ".join(f"{k}={v}" for k, v in d["case"].items()), "status": d["status"],
                           "max_bound_ratio": d["max_bound_ratio"], "n_nan": d["n_nan"], "n_inf": d["n_inf"],
                           "message": d["message"]} for d in fails])
    doc.table(frame, max_rows_html=200, row_class=lambda r: "bad")


def _performance_section(doc, runs, res, outdir):
    perf = res["performance"]["gpus"]
    o = res["options"]
    doc.heading("Performance against peers")
    if not perf:
        doc.paragraph("No GPU has a peer of its model that timed the same cases.")
        return
    doc.paragraph(f"Per case, each GPU's median time over the median of the other GPUs of its model; SAME when "
                  f"within the 95 % noise kval recorded (p10/p90 and repetitions), AMBIGUOUS when that noise "
                  f"exceeds {100 * o['noise']:.0f} %. A GPU fails when the interval of its median slowdown "
                  f"(family-wise {100 * o['confidence']:.0f} % over the GPUs) lies above {100 * o['slow']:.0f} % "
                  f"and, with three or more GPUs, its robust z among them exceeds {o['z']}.")
    rows = [{"verdict": "FAIL" if g["flagged"] else "pass", "gpu": gpu_label(g), "model": g["gpu_name"],
             "cases": g["cases"], "median slowdown": f"{100 * (g['median_ratio'] - 1):+.1f}%",
             "interval": f"{100 * (g['ratio_low'] - 1):+.1f}% .. {100 * (g['ratio_high'] - 1):+.1f}%",
             "z": g["median_z"], **{s: g["states"][s] for s in ("SAME", "FAST", "SLOW", "AMBIGUOUS")},
             "sm_clock_min": g["telemetry"]["sm_clock_min"], "temp_max": g["telemetry"]["temperature_max"],
             "throttle": g["telemetry"]["throttle_reasons"]}
            for g in sorted(perf, key=lambda g: -(g["median_ratio"] or 0))]
    doc.table(pd.DataFrame(rows), row_class=lambda r: "bad" if r["verdict"] == "FAIL" else "")
    cmp = fleet.case_comparison(fleet.timing_frame(runs), o["noise"])
    failing = {g["gpu_key"] for g in res["gpus"] if g["verdict"] == "FAIL"}
    gpus = fleet.gpu_table(runs.ranks)
    if cmp.empty:
        return
    labels = {k: gpu_label(dict(g, rank=g["ranks"][0])) .split(" (")[0] for k, g in gpus.items()}
    if len(set(labels.values())) < len(labels):  # one host and index for several GPUs: add the UUID
        labels = {k: f"{labels[k]} {k[:12]}" for k in labels}
    spread = pd.DataFrame({"label": cmp["gpu_key"].map(labels), "ratio": cmp["ratio"],
                           "failing": cmp["gpu_key"].isin(failing)})
    if plots.spread_plot(spread, os.path.join(outdir, "spread.png")):
        two = cmp["gpu_key"].nunique() == 2
        doc.image("spread.png", "Time of every case on each GPU over the median time of the other GPUs of its "
                  "model (log scale; 1 = as fast as its peers; red: fails the verdict)" +
                  ("; with two GPUs each is compared with the other, so the plot is symmetric and only the "
                   "verdict's interval says which one is slow" if two else ""))


def _status_section(doc, runs):
    doc.heading("Pass/fail per family and precision")
    if not runs.families:
        doc.note("These files hold no kernel family groups.")
        return
    matrix = status_matrix(runs)
    doc.paragraph("Counts of (rank, case) cells. not_run cells of a split-mode run are the cases other "
                  "ranks ran.")
    bad = [c for c in matrix.columns if c not in ("family", "precision") and (c == "error" or c.startswith("fail"))]
    doc.table(matrix, row_class=lambda r: "bad" if any(r.get(s, 0) for s in bad) else "")


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
    allw = (allw.assign(_failed=failure_mask(allw["status"]))
            .sort_values(["_failed", "max_bound_ratio"], ascending=False, na_position="last").head(top))
    cols = ["family", "case", "host", "rank", "status", "message"] + [c for c in ERROR_STATS if c in allw]
    cols += ["n_nonfinite"] if "n_nonfinite" in allw else []
    doc.paragraph(f"The {len(allw)} worst cases: failures first, then by error / tolerance bound ratio "
                  "(pass <= 1), each on the rank where it was worst. A case whose output held NaN or Inf shows "
                  "inf in every error statistic (n_nonfinite counts those elements).")
    doc.table(allw[cols], row_class=lambda r: "bad" if failure_mask([r["status"]])[0] else "")


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
    specs = PLOT_SPECS.get(family_kind(name))
    if specs is None:
        ints = [a for a in axes if pd.api.types.is_numeric_dtype(frame[a]) and frame[a].nunique() > 1]
        if not ints:
            doc.note(f"{name}: no numeric sweep axis to plot against.")
            return
        specs = [(f"{name}_error_vs_{ints[0]}", ints[0], ["rel_l2", "max_ulp"], ["precision"], "max",
                  ints[0], "worst over ranks and the other axes")]
    ran = frame[output_mask(frame["status"])]
    for stem, x, metrics, series, agg, xlabel, covers in specs:
        series = [s for s in series if s in ran and ran[s].nunique() > 0]
        kind = family_kind(name)
        png = f"{name}{stem[len(kind):]}.png" if stem.startswith(kind) else f"{name}_{stem}.png"  # one per group
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
        ran = frame[output_mask(frame["status"])]
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


def _frames(runs):
    return {name: (family_frame(ds), family_axes(ds)) for name, ds in runs.families.items()}


def _summary(doc, runs, frames):
    lines = []
    for name, (frame, axes) in frames.items():
        ds = runs.families[name]
        n_fail = int(failure_mask(frame["status"]).sum())
        n_found = int(finding_mask(frame["status"]).sum())
        n_ran = int(output_mask(frame["status"]).sum())
        lines.append(f"{name}: {ds.attrs['n_valid']} valid case(s), {ds.attrs['n_skipped']} skipped; "
                     f"{n_ran} (rank, case) result(s), {n_fail} failure(s)"
                     + (f", {n_found} inaccurate (conformant findings, not failures)." if n_found else "."))
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
    res = fleet.analyse(runs)
    doc = Document("kval report")
    _verdict_section(doc, runs, res)
    _fingerprint_section(doc, res)
    _failures_section(doc, res)
    _performance_section(doc, runs, res, outdir)
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
        doc.heading("Roofline", 3)
        _roofline(doc, runs, frames, outdir)
    return doc.write(outdir, "report")
