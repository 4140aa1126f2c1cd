"""precision.py - `kval-analyze precision`: the precision study. fp16 vs bf16 storage and
fp16/bf16 vs fp32 accumulation: what ran (backend, GPUs, the --set values and the axis values
that produced results), where each precision stays within its tolerance, error distributions
per family (log10|err| histograms and per-case relative L2 errors), the errors of each part of
an output that has parts (fa2bwd's dq, dk, dv) per precision, fitted growth laws (of each part
too, as "FAMILY (PART)") and
faceted growth charts (growth.py), and pairwise precision comparisons. Honest numbers: a case
whose output was non-finite shows inf, is counted in its own column and never as a small
error. Cases that conform to the precision model but miss their fp64 bound (status
`inaccurate`) are the study's findings, counted and listed apart from failures. One colour per
precision on the whole page. The tensor-core probes (probes.py) get their own table of outcomes
per GPU and stay out of the error statistics. Writes precision.html, precision.md,
precision.json (schema_version 1: what ran, the summary, the findings, the parts, the fits and
the probes' outcomes) and PNGs."""
import json
import os
import shlex

import numpy as np
import pandas as pd

from . import plots
from .cases import family_frame, split_precision, typical_per_case, unit_roundoff
from .document import Document
from .fleet_output import clean
from .growth import GROWTH, fit_section, growth_plots
from .io import failure_mask, family_axes, finding_mask, output_mask, part_view
from .probes import probe_families, probe_section

SCHEMA_VERSION = 1
LADDER = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


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


def _which(cases, axes, part):
    """Where the cases lie: the axis values they share, else how many of the swept cases they are."""
    where = _where(cases, axes, part)
    if where:
        return f"where {where}"
    return "in every case swept" if len(cases) == len(part) else f"in {len(cases)} of {len(part)} cases"


def _verdict(bad, found, ran, axes, part):
    if len(bad):
        return f"fails {_which(bad, axes, part)}"
    if len(found):
        return f"conforms; inaccurate {_which(found, axes, part)}"
    return "yes, every case" if len(ran) else "no case ran (skipped or not run)"


def summary_table(frames, typical):
    rows = []
    for name, (frame, axes) in frames.items():
        w = typical[name]
        if "precision" not in frame:
            continue
        for prec in frame["precision"].unique():
            part = w[w["precision"] == prec]
            ran = part[output_mask(part["status"])]
            bad = part[failure_mask(part["status"])]
            found = part[finding_mask(part["status"])]
            skipped = frame[(frame["precision"] == prec) & (frame["status"] == "skipped")]
            storage, accum = split_precision(prec)
            others = {st: int((part["status"] == st).sum()) for st in part["status"].unique()
                      if st != "pass" and not failure_mask([st])[0] and not finding_mask([st])[0]}
            rows.append({"family": name, "precision": prec, "storage": storage, "accum": accum,
                         "cases": len(part), "pass": int((part["status"] == "pass").sum()), "fail": len(bad),
                         "inaccurate": len(found),
                         "non-finite": int((ran["n_nonfinite"] > 0).sum()) if "n_nonfinite" in ran else 0,
                         "other statuses": ", ".join(f"{k} {v}" for k, v in sorted(others.items())) or "-",
                         "skipped": int(skipped[axes].drop_duplicates().shape[0]),
                         "max_bound_ratio": float(ran["max_bound_ratio"].max()) if len(ran) else np.nan,
                         "median_rel_l2": float(ran["rel_l2"].median()) if len(ran) else np.nan,
                         "max_rel_l2": float(ran["rel_l2"].max()) if len(ran) else np.nan,
                         "max_ulp": float(ran["max_ulp"].max()) if len(ran) else np.nan,
                         "within tolerance": _verdict(bad, found, ran, axes, part)})
    return pd.DataFrame(rows)


def findings_table(frames, typical):
    """The inaccurate cases (conformant, outside their fp64 bound), one row per case."""
    rows = []
    for name, (frame, axes) in frames.items():
        w = typical[name]
        for _, r in w[finding_mask(w["status"])].iterrows():
            rows.append({"family": name, "case": " ".join(f"{a}={r[a]}" for a in axes),
                         "max_bound_ratio": float(r.get("max_bound_ratio", np.nan)),
                         "rel_l2": float(r.get("rel_l2", np.nan)),
                         "non-finite": int(r.get("n_nonfinite", 0) or 0),
                         "emu_max_ulp": float(r.get("emu_max_ulp", np.nan)), "message": str(r.get("message", ""))})
    return pd.DataFrame(rows, columns=["family", "case", "max_bound_ratio", "rel_l2", "non-finite", "emu_max_ulp",
                                       "message"])


PART_COLUMNS = (("median_rel_l2", "rel_l2", "median"), ("max_rel_l2", "rel_l2", "max"),
                ("max_p99_ulp", "p99_ulp", "max"), ("max_ulp", "max_ulp", "max"),
                ("max_bound_ratio", "max_bound_ratio", "max"))


def part_frames(runs, frames):
    """(family, part) -> the family's frame with that part's statistics in place of the whole
    output's (io.part_view), for each family whose output has parts."""
    return {(name, str(part)): (family_frame(part_view(runs.families[name], str(part))), axes)
            for name, (frame, axes) in frames.items() if "part_stats" in runs.families[name]
            for part in runs.families[name]["part"].values}


def parts_table(by_part):
    """Per family with parts, precision and part: the (rank, case) results with an output and
    their part's error statistics, so dq, dk and dv are compared apart."""
    rows = {}  # (family, precision) -> its parts' rows, in the order the parts come
    for (name, part), (frame, axes) in by_part.items():
        if "precision" not in axes:
            continue
        ran = frame[output_mask(frame["status"])]
        for prec, cases in ran.groupby("precision", sort=False):
            row = {"family": name, "precision": prec, "part": part, "cases": len(cases)}
            row.update({col: float(cases[stat].astype(float).agg(how)) for col, stat, how in PART_COLUMNS})
            rows.setdefault((name, prec), []).append(row)
    return pd.DataFrame([row for group in rows.values() for row in group])


def ladder_table(typical):
    """Fraction of cases whose relative L2 error is at most each level."""
    rows = []
    for name, w in typical.items():
        ran = w[output_mask(w["status"]) & ~np.isnan(w["rel_l2"].astype(float))] if "rel_l2" in w else w.iloc[0:0]
        for prec, part in ran.groupby("precision", sort=False):
            row = {"family": name, "precision": prec, "cases": len(part),
                   "non-finite": float(np.isinf(part["rel_l2"].astype(float)).mean())}
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
        w = w[output_mask(w["status"])]
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
                both = np.isfinite(m["rel_l2_a"]) & np.isfinite(m["rel_l2_b"])
                nonfinite = int((~both).sum())
                m = m[both & (m["rel_l2_a"] > 0)]
                if m.empty:
                    continue
                rows.append({"family": name, "effect": "accumulator" if sa == sb else "storage",
                             "baseline": a, "compared": b, "matched cases": len(m),
                             "median rel_l2 baseline": float(m["rel_l2_a"].median()),
                             "median rel_l2 compared": float(m["rel_l2_b"].median()),
                             "median ratio": float((m["rel_l2_b"] / m["rel_l2_a"]).median()),
                             "pairs with non-finite output (left out)": nonfinite})
    return pd.DataFrame(rows)


def _hist_curves(ds):
    """Per precision: fraction of compared elements per log10|err| bin (cells that ran)."""
    if "hist" not in ds or "precision" not in ds.dims:
        return None, None
    mask = ds["status"].copy(data=output_mask(ds["status"].values))
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
    ran = w[output_mask(w["status"])] if not w.empty else w
    png = f"precision_{name}_rel_l2_box.png"
    groups = {p: part["rel_l2"].to_numpy(dtype=float) for p, part in ran.groupby("precision", sort=False)} \
        if not ran.empty and "precision" in ran else {}
    bad = {p: int(np.isinf(v).sum()) for p, v in groups.items() if np.isinf(v).any()}
    if plots.box_plot(groups, os.path.join(outdir, png), f"{name}: relative L2 error per case",
                      "relative L2 error ||out-ref||/||ref|| (1)"):
        doc.image(png, f"{name}: distribution over cases of the relative L2 error (median rank per case)" +
                  (f"; not shown, non-finite output: {', '.join(f'{p} {n} case(s)' for p, n in bad.items())}"
                   if bad else ""))
    else:
        doc.note(f"{name}: no finite relative L2 errors.")


def _set_values(command_line):
    """The --set overrides of a recorded command line."""
    try:
        words = shlex.split(str(command_line))
    except ValueError:
        return []
    out = [w.split("=", 1)[1] for w in words if w.startswith("--set=")]
    out += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--set"]
    return out


def what_ran(runs, frames):
    """Backend, GPUs, versions, --set values and the axis values that produced results."""
    ranks = runs.ranks
    info = {"files": [os.path.basename(f.path) for f in runs.files],
            "backend": sorted({str(f.attrs.get("backend", "?")) for f in runs.files}),
            "kval": sorted({f"{f.attrs.get('kval_version', '?')} (git {f.attrs.get('git_commit', '?')})"
                            for f in runs.files}),
            "gpus": {str(k): int(v) for k, v in ranks.groupby("device_name")["gpu_key"].nunique().items()},
            "hosts": sorted(set(map(str, ranks["host"]))),
            "set": sorted({v for f in runs.files for v in _set_values(f.attrs.get("command_line", ""))}),
            "seed": sorted({str(f.attrs.get("seed", "?")) for f in runs.files}), "axes": {}}
    for name, (frame, axes) in frames.items():
        ran = frame[output_mask(frame["status"])]
        info["axes"][name] = {a: [v.item() if isinstance(v, np.generic) else v for v in
                                  sorted(ran[a].unique(), key=lambda t: (isinstance(t, str), t))] for a in axes}
    return info


def _header(doc, info):
    doc.heading("What ran")
    doc.paragraph(f"Backend {', '.join(info['backend'])}; GPUs: "
                  + ", ".join(f"{m} x{n}" for m, n in info["gpus"].items())
                  + f" on {len(info['hosts'])} host(s) ({', '.join(info['hosts'][:8])}"
                  + (" ..." if len(info["hosts"]) > 8 else "") + f"); kval {', '.join(info['kval'])}; seed "
                  + ", ".join(info["seed"]) + "; --set: " + ("; ".join(info["set"]) or "none") + ".")
    rows = [{"family": fam, "axis values that produced results": "; ".join(
        f"{a} = {' '.join(map(str, v)) or '(none)'}" for a, v in axes.items())} for fam, axes in info["axes"].items()]
    doc.table(pd.DataFrame(rows), caption="the deck's values that ran: axis values with at least one result")


def build_precision(runs, outdir):
    """Write precision.html, precision.md and PNGs into outdir; returns (html, md) paths."""
    os.makedirs(outdir, exist_ok=True)
    probes = probe_families(runs)
    frames = {n: (family_frame(ds), family_axes(ds)) for n, ds in runs.families.items() if n not in probes}
    typical = _typical(frames)
    doc = Document("kval precision study")
    info = what_ran(runs, frames)
    doc.paragraph(f"{len(runs.files)} file(s): {', '.join(info['files'])}. "
                  "Errors are against an fp64 reference on the same rounded inputs. Per case the rank with "
                  "the median error/tolerance ratio stands for the case, so one faulty GPU does not distort "
                  "the study (kval-analyze fleet and report show faulty ranks). Unit roundoff u: fp16 "
                  "2^-11, bf16 2^-8, fp32 2^-24.")
    for note in runs.notes:
        doc.note(note)
    _header(doc, info)
    out = {"schema_version": SCHEMA_VERSION, "what_ran": info, "summary": [], "findings": [], "parts": [],
           "fits": [], "probes": probe_section(doc, runs)}
    if not frames:
        doc.note("These files hold no kernel family groups.")
        return _write(doc, out, outdir)
    doc.heading("Which precision is within tolerance where")
    summary = summary_table(frames, typical)
    if summary.empty:
        doc.note("No family has a precision axis with cases that ran.")
    else:
        doc.table(summary, row_class=lambda r: "bad" if r["fail"] else "warn" if r["non-finite"] or r["inaccurate"] else "")
    out["summary"] = summary.to_dict("records")
    findings = findings_table(frames, typical)
    doc.heading("Findings: conformant but inaccurate", 3)
    doc.paragraph(f"{len(findings)} case(s) whose output equals what the precision model computes (the cpu "
                  "emulation, bit for bit: emu_max_ulp 0) but misses its fp64 bound: a correct kernel of an "
                  "inadequate precision (status inaccurate, docs/NUMERICS.md section 4). They do not fail the run.")
    if len(findings):
        doc.table(findings, row_class=lambda r: "warn")
    out["findings"] = findings.to_dict("records")
    by_part = part_frames(runs, frames)
    parts = parts_table(by_part)
    if len(parts):
        doc.heading("Errors of each part of an output", 3)
        doc.paragraph("Families whose checked output has parts (fa2bwd: the gradients dq, dk and dv, each "
                      "reduced over its own index) keep each part's error statistics (the file's part_stats): "
                      "per precision and part, over every rank's cases with an output.")
        doc.table(parts)
    out["parts"] = parts.to_dict("records")
    named = {f"{name} ({part})": v for (name, part), v in by_part.items()}
    out["fits"] = fit_section(doc, dict(typical, **_typical(named)), dict(frames, **named)).to_dict("records")
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
        growth_plots(doc, name, frame, outdir)
    for missing in [f for f in GROWTH if f not in frames]:
        doc.note(f"Family {missing} is not in these files.")
    return _write(doc, out, outdir)


def _write(doc, out, outdir):
    with open(os.path.join(outdir, "precision.json"), "w", encoding="utf-8") as f:
        json.dump(clean(out), f, indent=2, allow_nan=False)
        f.write("\n")
    return doc.write(outdir, "precision")
