"""fleet_output.py - renders the result of fleet.analyse(): a plain-text report for stdout
(the verdict and the failing GPUs first, then fingerprint and arithmetic disagreements, failed cases,
performance outliers, completeness and the baseline), JSON (schema_version 2), and JUnit XML
with one testsuite per GPU (hostname, GPU properties) holding one testcase per case (classname
kval.FAMILY, name the case coordinates, time the median kernel time, properties: GPU UUID,
status and error statistics; failures as failure, error cells as error, skipped and not-run
cells as skipped) and one testcase per GPU check (classname kval.fleet)."""
import json
import math
import xml.etree.ElementTree as ET

import numpy as np

from .io import case_frame, family_axes, output_mask

MAX_ROWS = 50
CASE_PROPERTIES = ("status", "max_bound_ratio", "rel_l2", "max_abs", "max_ulp", "p99_ulp", "n_nonfinite",
                   "tflops", "gbps", "reps", "red_len")


def _fmt(v, spec=".4g"):
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _case_text(case):
    return " ".join(f"{k}={v}" for k, v in case.items())


def _parts_text(parts):
    """The parts of the output whose statistics differ from a majority rank's ("-": no parts)."""
    if parts is None:
        return "-"
    return ", ".join(parts) if parts else "none distinguishable"


def gpu_label(g):
    """'host GPU<index> (uuid)', the way an operator finds the GPU."""
    rank = g["rank"] if "rank" in g else (g.get("ranks") or ["?"])[0]
    index = f"GPU{g['gpu_index']}" if g.get("gpu_index", -1) >= 0 else f"rank{rank}"
    return f"{g['host']} {index} ({g['uuid']})"


def table(headers, rows):
    """Fixed-width text table."""
    rows = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _section(title, headers, rows, empty):
    lines = [f"\n== {title} ({len(rows)}) =="]
    if not rows:
        lines.append(empty)
        return lines
    lines.append(table(headers, rows[:MAX_ROWS]))
    if len(rows) > MAX_ROWS:
        lines.append(f"... {len(rows) - MAX_ROWS} more (see --json)")
    return lines


def verdict_line(res):
    bad = [g for g in res["gpus"] if g["verdict"] != "PASS"]
    n = len(res["gpus"])
    return f"VERDICT: {res['verdict']} ({len(bad)} of {n} GPU(s) fail or are incomplete)" if bad else \
        f"VERDICT: {res['verdict']} (all {n} GPU(s) pass every check)"


def text_report(res):
    o = res["options"]
    lines = [verdict_line(res)]
    for g in res["gpus"]:
        if g["verdict"] != "PASS":
            lines.append(f"  {g['verdict']:<10} {gpu_label(g)} {g['gpu_name']}, PCI {g['pci_bus_id']}, serial "
                         f"{g['serial']}: " + "; ".join(g["failing"]))
    lines.append(f"kval fleet: {len(res['files'])} file(s); GPU models: "
                 + ", ".join(f"{m} x{n}" for m, n in res["models"].items()))
    if res["baseline_files"]:
        lines.append(f"baseline: {len(res['baseline_files'])} file(s)")
    lines += [f"note: {n}" for n in res["notes"]]
    fp = res["fingerprint"]["disagreements"]
    lines += _section("Fingerprint disagreements (same GPU model, same inputs, different output bits)",
                      ["host", "rank", "uuid", "family", "case", "fingerprint", "majority", "agree", "parts"],
                      [[d["host"], d["rank"], d["uuid"], d["family"], _case_text(d["case"]), d["fingerprint"],
                        d["majority"] or "(no majority)",
                        f"{d['agreeing_ranks']}/{d['ranks']}" if d["ranks"] else d["source"], _parts_text(d["parts"])]
                       for d in fp],
                      f"none among {len(res['fingerprint']['comparable_ranks'])} comparable rank(s)")
    arith = res["arithmetic"]
    lines += _section("Tensor-core arithmetic disagreements (same GPU model, different probe outcome)",
                      ["host", "rank", "uuid", "family", "case", "outcome", "majority", "words"],
                      [[d["host"], d["rank"], d["uuid"], d["family"], _case_text(d["case"]), d["outcome"],
                        "(no majority)" if d["majority"] is None else d["majority"], d["words"]]
                       for d in arith["disagreements"]],
                      f"none among {len(arith['measured'])} GPU(s) with probe outcomes")
    fails = res["failures"]
    lines += _section("Failed cases", ["host", "rank", "uuid", "family", "case", "status", "bound_ratio", "message"],
                      [[d["host"], d["rank"], d["uuid"], d["family"], _case_text(d["case"]), d["status"],
                        d["max_bound_ratio"], d["message"]] for d in fails], "none")
    perf = res["performance"]["gpus"]
    flagged = [g for g in perf if g["flagged"]]
    lines += _section(f"Performance outliers (median slowdown's interval above {100 * o['slow']:.0f}% and, with "
                      f"3+ GPUs, robust z > {o['z']})",
                      ["host", "rank", "uuid", "gpu", "cases", "slowdown", "interval", "z", "SLOW/AMBIG",
                       "sm_clk_min", "temp_max", "throttle", "peers: sm_clk_min/temp/power"],
                      [[g["host"], g["rank"], g["uuid"], g["gpu_name"], g["cases"],
                        f"{100 * (g['median_ratio'] - 1):+.1f}%",
                        f"{100 * (g['ratio_low'] - 1):+.1f}%..{100 * (g['ratio_high'] - 1):+.1f}%", g["median_z"],
                        f"{g['states']['SLOW']}/{g['states']['AMBIGUOUS']}", g["telemetry"]["sm_clock_min"],
                        g["telemetry"]["temperature_max"], g["telemetry"]["throttle_reasons"],
                        "/".join(_fmt((g["peer_telemetry"] or {}).get(k)) for k in
                                 ("sm_clock_min", "temperature_max", "power_median"))] for g in flagged],
                      f"none among {len(perf)} GPU(s) with timed peers")
    for g in flagged:
        lines.append(f"  slowest cases of {gpu_label(g)}:")
        for c in g["worst_cases"]:
            lines.append(f"    {c['family']} {c['case']}: {_fmt(c['time_us'])} us vs peers {_fmt(c['peer_time_us'])} us "
                         f"(x{_fmt(c['ratio'])}, noise +-{_fmt(c['noise'])}, {c['state']})")
    comp = [f for f in res["completeness"]["files"] if not f["complete"] or f["missing_results"]]
    lines += _section("Incomplete files", ["file", "complete", "missing results", "planned results"],
                      [[f["file"], f["complete"], f["missing_results"], f["planned_results"]] for f in comp], "none")
    lines += _section("Nodes with missing results (interrupted job, lost node, or no file)",
                      ["host", "ranks", "state", "cells_without_result", "file"],
                      [[d["host"], ",".join(map(str, d["ranks"])) or "-", d["state"], d["cells_without_result"],
                        d["file"] or "-"] for d in res.get("missing", [])], "none")
    base = res.get("baseline")
    if base is not None:
        lines += _baseline_text(base, o)
    lines.append("\n" + verdict_line(res))
    return "\n".join(lines) + "\n"


def _baseline_text(base, o):
    lines = []
    gpu = ["host", "ranks", "uuid"]

    def ids(d):
        return [d["host"], ",".join(map(str, d["ranks"])), d["uuid"]]

    lines += _section(f"Baseline: GPUs slower than the baseline (median ratio's interval above "
                      f"{1 + o['regress']:.2f})", gpu + ["cases", "median ratio", "interval", "SLOW", "AMBIG"],
                      [ids(d) + [d["cases"], d["median_ratio"], f"{_fmt(d['ratio_low'])}..{_fmt(d['ratio_high'])}",
                                 d["states"]["SLOW"], d["states"]["AMBIGUOUS"]]
                       for d in base["gpus"] if d["regressed"]], "none")
    lines += _section(f"Baseline: single cases SLOW beyond their noise and {100 * o['regress']:.0f}% (listed, not "
                      f"failed; {base['slow_cases_total']} in all)", gpu + ["family", "case", "time_us", "base_us",
                                                                            "ratio", "noise"],
                      [ids(d) + [d["family"], _case_text(d["case"]), d["time_us"], d["base_time_us"], d["ratio"],
                                 d["noise"]] for d in base["slow_cases"]], "none")
    lines += _section(f"Baseline: error growth (> x{o['error_factor']})", gpu + ["family", "case", "max_ulp",
                      "base", "rel_l2", "base"],
                      [ids(d) + [d["family"], _case_text(d["case"]), d["max_ulp"], d["base_max_ulp"], d["rel_l2"],
                                 d["base_rel_l2"]] for d in base["error_changes"]], "none")
    lines += _section("Baseline: new failures", gpu + ["family", "case", "status", "base_status"],
                      [ids(d) + [d["family"], _case_text(d["case"]), d["status"], d["base_status"]]
                       for d in base["new_failures"]], "none")
    lines += _section("Baseline: GPUs that disappeared", ["host", "uuid", "gpu"],
                      [[d["host"], d["uuid"], d["gpu_name"]] for d in base["disappeared"]], "none")
    lines += _section("Baseline: GPUs that appeared (not flagged)", ["host", "uuid", "gpu"],
                      [[d["host"], d["uuid"], d["gpu_name"]] for d in base["appeared"]], "none")
    return lines


def clean(obj):
    """JSON-safe copy: numpy scalars to Python, NaN/inf to null."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(res, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(clean(res), f, indent=2, allow_nan=False)
        f.write("\n")


def _properties(parent, items):
    props = ET.SubElement(parent, "properties")
    for name, value in items:
        ET.SubElement(props, "property", name=name, value=_fmt(value if not isinstance(value, float) or
                                                                math.isfinite(value) else str(value)))


def _case_tests(runs, res):
    """gpu_key -> list of testcase elements, one per case the GPU's ranks have in the files."""
    fp_bad = {(d["rank"], d["family"], tuple(d["case"].values())) for d in res["fingerprint"]["disagreements"]}
    out = {}
    for name, ds in runs.families.items():
        axes = family_axes(ds)
        frame = case_frame(ds, ["message", "time_median"] + list(CASE_PROPERTIES))
        split = frame["file"].map({f.path: str(f.attrs.get("mode")) for f in runs.files}) == "split"
        frame = frame[~(split & (frame["status"] == "not_run"))]  # split mode: other ranks' cases
        for row in frame.itertuples(index=False):
            row = row._asdict()
            case = " ".join(f"{a}={row[a]}" for a in axes)
            t = row.get("time_median", np.nan)
            tc = ET.Element("testcase", classname=f"kval.{name}", name=case,
                            time=f"{t:.9f}" if isinstance(t, float) and math.isfinite(t) else "0")
            _properties(tc, [("gpu_uuid", row["gpu_uuid"]), ("rank", row["rank"]), ("file", row["file"])] +
                        [(p, row[p]) for p in CASE_PROPERTIES if p in row])
            status = str(row["status"])
            key = (int(row["rank"]), name, tuple(row[a] if not isinstance(row[a], np.generic) else row[a].item()
                                                for a in axes))
            if status == "error":
                ET.SubElement(tc, "error", message=str(row["message"]), type="error")
            elif status.startswith("fail"):
                ET.SubElement(tc, "failure", message=f"{status}: {row['message']}", type=status)
            elif key in fp_bad:
                ET.SubElement(tc, "failure", message="output bits differ from the GPU's peers", type="fingerprint")
            elif status == "not_run":
                ET.SubElement(tc, "skipped", message="not run (the run did not reach this case)")
            elif status == "skipped":
                ET.SubElement(tc, "skipped", message=str(row["message"]))
            elif not output_mask([status])[0]:
                ET.SubElement(tc, "skipped", message=status)
            out.setdefault(row["gpu_key"], []).append(tc)
    return out


def write_junit(res, runs, path):
    """JUnit XML: one testsuite per GPU with its cases and its fleet checks."""
    per_case = _case_tests(runs, res)
    root = ET.Element("testsuites", name="kval-fleet")
    checks = {}
    for c in res["checks"]:
        checks.setdefault(c["gpu_key"], []).append(c)
    for key, gpu_checks in checks.items():
        g = gpu_checks[0]
        cases = per_case.get(key, [])
        for c in gpu_checks:
            tc = ET.Element("testcase", classname="kval.fleet", name=c["check"], time="0")
            if c["state"] in ("fail", "incomplete"):
                ET.SubElement(tc, "failure", message=c["message"], type=c["check"]).text = c["message"]
            elif c["state"] == "skipped":
                ET.SubElement(tc, "skipped", message=c["message"])
            else:
                ET.SubElement(tc, "system-out").text = c["message"]
            cases.append(tc)
        suite = ET.SubElement(root, "testsuite", name=f"{g['host']} {g['uuid']}", hostname=g["host"],
                              tests=str(len(cases)), failures=str(sum(tc.find("failure") is not None for tc in cases)),
                              errors=str(sum(tc.find("error") is not None for tc in cases)),
                              skipped=str(sum(tc.find("skipped") is not None for tc in cases)))
        _properties(suite, [(k, g[k]) for k in ("gpu_key", "uuid", "host", "gpu_index", "pci_bus_id", "serial",
                                                "gpu_name")])
        suite.extend(cases)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
