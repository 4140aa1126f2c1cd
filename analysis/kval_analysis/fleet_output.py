"""fleet_output.py - renders the result of fleet.analyse(): a plain-text table report for
stdout, JSON, and JUnit XML with one testcase per GPU and check (fingerprint, performance,
failures, baseline, complete)."""
import json
import math
import xml.etree.ElementTree as ET

MAX_ROWS = 50


def _fmt(v, spec=".4g"):
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _case_text(case):
    return " ".join(f"{k}={v}" for k, v in case.items())


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


def text_report(res):
    o = res["options"]
    lines = [f"kval fleet: {len(res['files'])} file(s); GPU models: "
             + ", ".join(f"{m} x{n}" for m, n in res["models"].items())]
    if res["baseline_files"]:
        lines.append(f"baseline: {len(res['baseline_files'])} file(s)")
    lines += [f"note: {n}" for n in res["notes"]]
    fp = res["fingerprint"]["disagreements"]
    lines += _section("Fingerprint disagreements (same GPU model, same inputs, different output bits)",
                      ["host", "rank", "uuid", "family", "case", "fingerprint", "majority", "agree"],
                      [[d["host"], d["rank"], d["uuid"], d["family"], _case_text(d["case"]), d["fingerprint"],
                        d["majority"] or "(no majority)",
                        f"{d['agreeing_ranks']}/{d['ranks']}" if d["ranks"] else d["source"]] for d in fp],
                      f"none among {len(res['fingerprint']['comparable_ranks'])} comparable rank(s)")
    perf = res["performance"]["gpus"]
    flagged = [g for g in perf if g["flagged"]]
    lines += _section(f"Performance outliers (median robust z > {o['z']} or median slowdown > "
                      f"{100 * o['slow']:.0f}% vs peers of the same model)",
                      ["host", "rank", "uuid", "gpu", "cases", "slowdown", "median_z", "sm_clk_min", "sm_clk_max",
                       "temp_max", "power", "throttle", "peers: sm_clk_min/temp/power"],
                      [[g["host"], g["rank"], g["uuid"], g["gpu_name"], g["cases"],
                        f"{100 * (g['median_ratio'] - 1):+.1f}%", g["median_z"],
                        g["telemetry"]["sm_clock_min"], g["telemetry"]["sm_clock_max"],
                        g["telemetry"]["temperature_max"], g["telemetry"]["power_median"],
                        g["telemetry"]["throttle_reasons"],
                        "/".join(_fmt((g["peer_telemetry"] or {}).get(k)) for k in
                                 ("sm_clock_min", "temperature_max", "power_median"))] for g in flagged],
                      f"none among {len(perf)} GPU(s) with timed peers")
    for g in flagged:
        lines.append(f"  slowest cases of {g['host']} rank {g['rank']}:")
        for c in g["worst_cases"]:
            lines.append(f"    {c['family']} {c['case']}: {_fmt(c['time_us'])} us vs peers {_fmt(c['peer_time_us'])} us "
                         f"(x{_fmt(c['ratio'])}, z {_fmt(c['z'])}, sm_clock_min {_fmt(c['sm_clock_min'])} MHz, "
                         f"temp {_fmt(c['temperature'])} C, throttle {c['throttle']})")
    fails = res["failures"]
    lines += _section("Failed cases", ["host", "rank", "uuid", "family", "case", "status", "bound_ratio", "message"],
                      [[d["host"], d["rank"], d["uuid"], d["family"], _case_text(d["case"]), d["status"],
                        d["max_bound_ratio"], d["message"]] for d in fails], "none")
    lines += _section("Nodes with missing results (interrupted job, lost node, or no file)",
                      ["host", "ranks", "state", "cells_without_result", "file"],
                      [[d["host"], ",".join(map(str, d["ranks"])) or "-", d["state"], d["cells_without_result"],
                        d["file"] or "-"] for d in res.get("missing", [])], "none")
    base = res.get("baseline")
    if base is not None:
        lines += _baseline_text(base, o)
    n_fail = sum(1 for c in res["checks"] if c["state"] == "fail")
    lines.append(f"\nVERDICT: {'FLAGGED' if res['flagged'] else 'OK'} ({n_fail} failing GPU check(s) of "
                 f"{len(res['checks'])})")
    return "\n".join(lines) + "\n"


def _baseline_text(base, o):
    lines = []
    gpu = ["host", "ranks", "uuid"]

    def ids(d):
        return [d["host"], ",".join(map(str, d["ranks"])), d["uuid"]]

    lines += _section(f"Baseline: time regressions (> {100 * o['regress']:.0f}%)", gpu + ["family", "case", "time_us",
                      "base_us", "ratio"],
                      [ids(d) + [d["family"], _case_text(d["case"]), d["time_us"], d["base_time_us"], d["ratio"]]
                       for d in base["regressions"]], "none")
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


def _clean(obj):
    """JSON-safe copy: numpy scalars to Python, NaN/inf to null."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(res, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_clean(res), f, indent=2, allow_nan=False)
        f.write("\n")


def write_junit(res, path):
    """JUnit XML: testsuite kval-fleet, one testcase per GPU and check."""
    checks = res["checks"]
    suite = ET.Element("testsuite", name="kval-fleet", tests=str(len(checks)),
                       failures=str(sum(c["state"] == "fail" for c in checks)),
                       skipped=str(sum(c["state"] == "skipped" for c in checks)), errors="0")
    for c in checks:
        rank = f"rank{c['rank']}" if c["rank"] >= 0 else "absent"
        case = ET.SubElement(suite, "testcase", classname=f"kval.fleet.{c['check']}",
                             name=f"{c['host']} {rank} {c['uuid']} {c['gpu_name']}")
        if c["state"] == "fail":
            ET.SubElement(case, "failure", message=c["message"], type=c["check"]).text = c["message"]
        elif c["state"] == "skipped":
            ET.SubElement(case, "skipped", message=c["message"])
        else:
            ET.SubElement(case, "system-out").text = c["message"]
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
