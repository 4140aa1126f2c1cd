"""fleet.py - the checks of `kval-analyze fleet`. Within the given files, among ranks that ran
identical inputs on the same GPU model: fingerprint disagreements per case (computed here and
read from fp_agrees when present); performance outliers from the per-case robust z-score
(median absolute deviation) and slowdown ratio of time_median, aggregated per GPU, with
telemetry beside them; failed cases. Against a baseline: time regressions, error growth and
new failures per GPU (matched by UUID) and case, GPUs that disappeared or appeared. Nodes
with missing results: ranks of files that did not complete (a job interrupted or a node lost
mid-run) and expected hosts with no file at all are flagged, never reported healthy. The
result is one JSON-able dict; fleet_output.py renders it."""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .io import FAILED, RAN, case_frame, case_labels, family_axes

TELEMETRY = ("sm_clock_min", "sm_clock_max", "temperature", "power", "throttle_reasons", "clock_flag")
THROTTLE_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                 0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
                 0x100: "display_clock"}
STATUS_SEVERITY = {"error": 5, "fail_nonfinite": 4, "fail_tolerance": 3, "pass": 2, "skipped": 1, "not_run": 0}
MAD_TO_SIGMA = 0.6745  # robust z = 0.6745 (x - median) / MAD
RELL2_FLOOR = 1e-12   # rel_l2 below this counts as this when comparing error growth
ULP_FLOOR = 1.0       # max_ulp below one ULP counts as one ULP


@dataclass
class FleetOptions:
    z: float = 3.5             # flag a GPU whose median robust z over its cases exceeds this
    slow: float = 0.10         # ... or whose median slowdown vs its peers exceeds this fraction
    mad_floor: float = 0.02    # MAD never below this fraction of the median (deterministic timings)
    regress: float = 0.10      # baseline: relative time increase of a case that is a regression
    error_factor: float = 2.0  # baseline: growth factor of max_ulp / rel_l2 that is flagged


def throttle_names(mask):
    """NVML clocks-throttle-reason bitmask -> 'sw_thermal+hw_slowdown' ('none', '-' unknown)."""
    if mask is None or not np.isfinite(mask) or mask < 0:
        return "-"
    mask = int(mask)
    names = [n for bit, n in THROTTLE_BITS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_BITS)
    if rest:
        names.append(hex(rest))
    return "+".join(names) if names else "none"


def _py(value):
    """numpy scalar -> Python scalar, NaN -> None (JSON-able)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _case(row, axes):
    return {a: _py(row[a]) for a in axes}


def _gpu(row):
    return {"rank": int(row["rank"]), "host": str(row["host"]), "uuid": str(row["gpu_uuid"]),
            "gpu_name": str(row["gpu_name"]), "file": str(row["file"])}


def _frames(runs, variables):
    for name, ds in runs.families.items():
        axes = family_axes(ds)
        frame = case_frame(ds, variables)
        yield name, axes, frame


def fingerprint_check(runs):
    """Ranks whose fingerprint differs from the majority of the ranks that ran the same case on
    the same GPU model with the same inputs (seed, parameters)."""
    found, comparable = {}, set()
    for name, axes, frame in _frames(runs, ["status", "fingerprint", "fp_agrees"]):
        frame["group"] = frame["compare_key"].astype(str) + "|" + frame["params_key"].astype(str)
        keys = ["group"] + axes
        ran = frame[frame["status"].isin(RAN) & (frame["fingerprint"] != 0)]
        ran = ran[ran.groupby(keys)["fingerprint"].transform("size") >= 2]
        comparable.update(int(r) for r in ran["rank"].unique())
        counts = ran.groupby(keys + ["fingerprint"]).size().rename("n").reset_index()
        counts = counts.sort_values("n", ascending=False, kind="stable")
        top = counts.groupby(keys, sort=False).agg(majority=("fingerprint", "first"), n_major=("n", "first"),
                                                   n_ranks=("n", "sum"), n_fp=("n", "size"))
        ties = counts.merge(top.reset_index(), on=keys)
        ties = ties[ties["n"] == ties["n_major"]].groupby(keys).size().rename("n_top")
        top = top.join(ties).reset_index()
        merged = ran.merge(top[top["n_fp"] > 1], on=keys)
        tie = merged["n_top"] > 1
        bad = merged[tie | (merged["fingerprint"] != merged["majority"])]
        for _, row in bad.iterrows():
            key = (name, int(row["rank"]), tuple(row[a] for a in axes))
            majority = None if row["n_top"] > 1 else f"{int(row['majority']):016x}"
            agree = 0 if majority is None else int(row["n_major"])
            found[key] = dict(_gpu(row), family=name, case=_case(row, axes),
                              fingerprint=f"{int(row['fingerprint']):016x}", majority=majority,
                              agreeing_ranks=agree, ranks=int(row["n_ranks"]), source="computed")
        if "fp_agrees" in frame:
            for _, row in frame[frame["fp_agrees"] == 0].iterrows():
                key = (name, int(row["rank"]), tuple(row[a] for a in axes))
                if key in found:
                    found[key]["source"] = "computed+fp_agrees"
                    continue
                comparable.add(int(row["rank"]))
                found[key] = dict(_gpu(row), family=name, case=_case(row, axes),
                                  fingerprint=f"{int(row['fingerprint']):016x}", majority=None,
                                  agreeing_ranks=None, ranks=None, source="fp_agrees")
    return sorted(found.values(), key=lambda d: (d["rank"], d["family"])), comparable


def _loo_median(sorted_vals, pos):
    """Median of sorted_vals without the element at each position in pos (n >= 2)."""
    n = len(sorted_vals) - 1
    k = n // 2

    def at(j):  # element j of the array with `pos` removed
        return np.where(j < pos, sorted_vals[np.minimum(j, n)], sorted_vals[np.minimum(j + 1, n)])

    if n % 2:
        return at(np.full_like(pos, k))
    return 0.5 * (at(np.full_like(pos, k - 1)) + at(np.full_like(pos, k)))


def _case_scores(ran, keys, mad_floor):
    """Per (rank, case): peers' median time (leave-one-out), slowdown ratio, robust z."""
    ran = ran.sort_values(keys + ["time_median"], kind="stable").reset_index(drop=True)
    gid = ran.groupby(keys, sort=False).ngroup().to_numpy()
    t = ran["time_median"].to_numpy(dtype=float)
    peer = np.full(len(ran), np.nan)
    z = np.full(len(ran), np.nan)
    bounds = np.flatnonzero(np.diff(gid)) + 1
    for idx in np.split(np.arange(len(ran)), bounds):
        if len(idx) < 2:
            continue
        vals = t[idx]
        peer[idx] = _loo_median(vals, np.arange(len(idx)))
        if len(idx) >= 3:
            med = np.median(vals)
            mad = max(np.median(np.abs(vals - med)), mad_floor * med)
            z[idx] = MAD_TO_SIGMA * (vals - med) / mad
    return ran.assign(peer_time=peer, ratio=t / peer, z=z)


def _telemetry(part):
    def col(c):
        return pd.to_numeric(part[c], errors="coerce") if c in part else pd.Series(dtype=float)

    thr = col("throttle_reasons")
    thr = thr[thr >= 0]
    return {"sm_clock_min": _py(col("sm_clock_min").min()), "sm_clock_max": _py(col("sm_clock_max").max()),
            "temperature_max": _py(col("temperature").max()), "power_median": _py(col("power").median()),
            "throttle_reasons": throttle_names(int(np.bitwise_or.reduce(thr.astype(np.int64).to_numpy()))
                                               if len(thr) else None),
            "clock_flag_cases": int((col("clock_flag") > 0).sum())}


def performance_check(runs, opts):
    """Per GPU: median slowdown ratio and robust z over its cases vs peers of the same model."""
    scored = []
    for name, axes, frame in _frames(runs, ["status", "time_median"] + list(TELEMETRY)):
        frame["group"] = (frame["compare_key"].astype(str).str.rsplit("|seed=", n=1).str[0] + "|" +
                          frame["params_key"].astype(str))
        ran = frame[frame["status"].isin(RAN) & (pd.to_numeric(frame["time_median"], errors="coerce") > 0)]
        if ran.empty:
            continue
        s = _case_scores(ran, ["group"] + axes, opts.mad_floor)
        s = s[np.isfinite(s["ratio"])]
        if not s.empty:
            s = s.assign(family=name, case=case_labels(s, axes))
            scored.append(s)
    if not scored:
        return []
    cols = ["rank", "host", "gpu_uuid", "gpu_name", "file", "group", "family", "case", "time_median",
            "peer_time", "ratio", "z"] + [c for c in TELEMETRY]
    allc = pd.concat([s.reindex(columns=cols) for s in scored], ignore_index=True)
    gpus = []
    for rank, part in allc.groupby("rank", sort=True):
        first = part.iloc[0]
        zs = part["z"][np.isfinite(part["z"])]
        med_ratio, med_z = float(part["ratio"].median()), float(zs.median()) if len(zs) else None
        reasons = []
        if med_ratio > 1 + opts.slow:
            reasons.append(f"median slowdown {100 * (med_ratio - 1):.1f}% > {100 * opts.slow:.0f}%")
        if med_z is not None and med_z > opts.z:
            reasons.append(f"median robust z {med_z:.1f} > {opts.z}")
        worst = part.sort_values("ratio", ascending=False).head(5)
        peers = allc[(allc["group"] == first["group"]) & (allc["rank"] != rank)]
        gpus.append(dict(_gpu(first), cases=int(len(part)), median_ratio=med_ratio, median_z=med_z,
                         max_z=_py(zs.max()) if len(zs) else None, flagged=bool(reasons),
                         reasons=reasons, telemetry=_telemetry(part),
                         peer_telemetry=_telemetry(peers) if len(peers) else None,
                         worst_cases=[{"family": r["family"], "case": r["case"], "time_us": 1e6 * r["time_median"],
                                       "peer_time_us": 1e6 * r["peer_time"], "ratio": _py(r["ratio"]),
                                       "z": _py(r["z"]), "sm_clock_min": _py(r["sm_clock_min"]),
                                       "temperature": _py(r["temperature"]),
                                       "throttle": throttle_names(r["throttle_reasons"])}
                                      for _, r in worst.iterrows()]))
    return gpus


def failure_check(runs):
    """(rank, case) cells whose status is neither pass, skipped nor not_run."""
    out = []
    for name, axes, frame in _frames(runs, ["status", "message", "max_bound_ratio", "n_nan", "n_inf"]):
        bad = frame[~frame["status"].isin(("pass", "skipped", "not_run"))]
        for _, row in bad.iterrows():
            out.append(dict(_gpu(row), family=name, case=_case(row, axes), status=str(row["status"]),
                            message=str(row.get("message", "")),
                            max_bound_ratio=_py(row.get("max_bound_ratio", np.nan)),
                            n_nan=_py(row.get("n_nan", -1)), n_inf=_py(row.get("n_inf", -1))))
    return out


def _per_gpu(frame, axes):
    """Collapse ranks sharing a GPU key: median time, worst errors, most severe status."""
    frame = frame.assign(_sev=frame["status"].map(STATUS_SEVERITY).fillna(6))
    g = frame.groupby(["gpu_key"] + axes, sort=False)
    out = g.agg(time_median=("time_median", "median"), max_ulp=("max_ulp", "max"),
                rel_l2=("rel_l2", "max"), _sev=("_sev", "max"))
    idx = frame.loc[g["_sev"].idxmax().to_numpy(), ["gpu_key"] + axes + ["status"]]
    return out.reset_index().merge(idx, on=["gpu_key"] + axes)


def _incomplete(run):
    return str(run.attrs.get("complete", 1)) in ("0", "False")


def missing_check(runs, expect_hosts=()):
    """Nodes whose results are missing: per host, the ranks of files whose root attribute
    complete is 0 (cells without a result counted), and every expected host that no file has."""
    out = []
    for run in runs.files:
        if not _incomplete(run):
            continue
        part = runs.ranks[runs.ranks["file"] == run.path]
        for host, rows in part.groupby("host", sort=True):
            ranks = [int(r) for r in rows["rank"]]
            missing = sum(int((ds["status"].sel(rank=[r for r in ranks if r in ds["rank"]]) == "not_run").sum())
                          for ds in runs.families.values())
            out.append({"host": str(host), "ranks": ranks, "file": run.path, "state": "incomplete",
                        "cells_without_result": missing,
                        "message": f"{run.path} did not complete (complete = 0): {missing} cell(s) of these "
                                   "ranks have no result; the job was interrupted or lost its node"})
    present = set(runs.ranks["host"].astype(str))
    for host in expect_hosts or ():
        if host not in present:
            out.append({"host": host, "ranks": [], "file": None, "state": "missing", "cells_without_result": None,
                        "message": "no result file from this node: its job did not run, or the node was lost "
                                   "before kval created the file"})
    return out


def _gpu_table(ranks):
    table = {}
    for _, r in ranks.iterrows():
        entry = table.setdefault(r["gpu_key"], {"gpu_key": r["gpu_key"], "uuid": str(r["uuid"]),
                                                "host": str(r["host"]), "gpu_name": str(r["device_name"]),
                                                "ranks": []})
        entry["ranks"].append(int(r["rank"]))
    return table


def baseline_check(runs, base, opts):
    """Compare each GPU (by UUID) and case with the baseline runs."""
    cur_gpus, base_gpus = _gpu_table(runs.ranks), _gpu_table(base.ranks)
    result = {"regressions": [], "error_changes": [], "new_failures": [], "fingerprint_changes": 0,
              "disappeared": [base_gpus[k] for k in base_gpus if k not in cur_gpus],
              "appeared": [cur_gpus[k] for k in cur_gpus if k not in base_gpus], "compared": {}}
    stats = ["status", "time_median", "max_ulp", "rel_l2"]
    for name, ds in runs.families.items():
        if name not in base.families:
            continue
        axes = family_axes(ds)
        if family_axes(base.families[name]) != axes:
            continue
        cur, old = case_frame(ds, stats), case_frame(base.families[name], stats)
        for col in ("max_ulp", "rel_l2", "time_median"):
            for fr in (cur, old):
                if col not in fr:
                    fr[col] = np.nan
        m = _per_gpu(cur, axes).merge(_per_gpu(old, axes), on=["gpu_key"] + axes, suffixes=("", "_base"))
        both_ran = m["status"].isin(RAN) & m["status_base"].isin(RAN)
        for key, n in m[both_ran | m["status"].isin(FAILED)].groupby("gpu_key").size().items():
            result["compared"][key] = result["compared"].get(key, 0) + int(n)
        ratio = m["time_median"] / m["time_median_base"]
        for _, row in m[both_ran & (ratio > 1 + opts.regress)].iterrows():
            result["regressions"].append(dict(cur_gpus[row["gpu_key"]], family=name, case=_case(row, axes),
                                              time_us=1e6 * row["time_median"],
                                              base_time_us=1e6 * row["time_median_base"],
                                              ratio=_py(row["time_median"] / row["time_median_base"])))
        ulp_grew = m["max_ulp"] > opts.error_factor * np.maximum(m["max_ulp_base"], ULP_FLOOR)
        l2_grew = m["rel_l2"] > opts.error_factor * np.maximum(m["rel_l2_base"], RELL2_FLOOR)
        for _, row in m[both_ran & (ulp_grew | l2_grew)].iterrows():
            result["error_changes"].append(dict(cur_gpus[row["gpu_key"]], family=name, case=_case(row, axes),
                                                max_ulp=_py(row["max_ulp"]), base_max_ulp=_py(row["max_ulp_base"]),
                                                rel_l2=_py(row["rel_l2"]), base_rel_l2=_py(row["rel_l2_base"])))
        new_fail = m["status"].isin(FAILED) & ~m["status_base"].isin(FAILED)
        for _, row in m[new_fail].iterrows():
            result["new_failures"].append(dict(cur_gpus[row["gpu_key"]], family=name, case=_case(row, axes),
                                               status=row["status"], base_status=row["status_base"]))
    return result


def _check(gpu, check, state, message):
    return {"rank": gpu["rank"], "host": gpu["host"], "uuid": gpu["uuid"], "gpu_name": gpu["gpu_name"],
            "check": check, "state": state, "message": message}


def _checks(runs, res):
    """One verdict per GPU (rank) and check: pass, fail or skipped."""
    checks = []
    fp_bad = {}
    for d in res["fingerprint"]["disagreements"]:
        fp_bad.setdefault(d["rank"], []).append(d)
    perf = {g["rank"]: g for g in res["performance"]["gpus"]}
    fails = {}
    for d in res["failures"]:
        fails.setdefault(d["rank"], []).append(d)
    base = res.get("baseline")
    base_bad = {}
    for kind in ("regressions", "error_changes", "new_failures") if base is not None else ():
        for d in base[kind]:
            for rank in d["ranks"]:
                base_bad[rank] = base_bad.get(rank, 0) + 1
    incomplete = {rank: d for d in res["missing"] for rank in d["ranks"]}
    for _, r in runs.ranks.iterrows():
        gpu = {"rank": int(r["rank"]), "host": str(r["host"]), "uuid": str(r["uuid"]), "gpu_name": str(r["device_name"])}
        rank = gpu["rank"]
        if rank in incomplete:
            checks.append(_check(gpu, "complete", "fail", incomplete[rank]["message"]))
        if rank in fp_bad:
            checks.append(_check(gpu, "fingerprint", "fail", f"{len(fp_bad[rank])} case(s) disagree with peers"))
        elif rank in res["fingerprint"]["comparable_ranks"]:
            checks.append(_check(gpu, "fingerprint", "pass", "agrees with its peers"))
        else:
            checks.append(_check(gpu, "fingerprint", "skipped", "no peer ran the same case on the same GPU model"))
        p = perf.get(rank)
        if p is None:
            checks.append(_check(gpu, "performance", "skipped", "no peer timed the same case on the same GPU model"))
        else:
            checks.append(_check(gpu, "performance", "fail" if p["flagged"] else "pass",
                                 "; ".join(p["reasons"]) or f"median ratio {p['median_ratio']:.3f} vs peers"))
        n_fail = len(fails.get(rank, []))
        checks.append(_check(gpu, "failures", "fail" if n_fail else "pass", f"{n_fail} failed case(s)"))
        if base is not None:
            key = r["gpu_key"]
            n = base_bad.get(rank, 0)
            if key not in base["compared"]:
                checks.append(_check(gpu, "baseline", "skipped", "GPU not in the baseline (appeared)"))
            else:
                checks.append(_check(gpu, "baseline", "fail" if n else "pass",
                                     f"{n} regression(s)/error change(s)/new failure(s) in "
                                     f"{base['compared'][key]} compared case(s)"))
    for d in res["missing"]:
        if d["state"] == "missing":
            checks.append(_check({"rank": -1, "host": d["host"], "uuid": "-", "gpu_name": "-"}, "complete", "fail",
                                 d["message"]))
    if base is not None:
        for g in base["disappeared"]:
            checks.append(_check({"rank": -1, "host": g["host"], "uuid": g["uuid"], "gpu_name": g["gpu_name"]},
                                 "baseline", "fail", "GPU present in the baseline is missing from this run"))
    return checks


def analyse(runs, baseline=None, opts=None, expect_hosts=None):
    """Run every check; returns the JSON-able result with 'flagged' and per-GPU 'checks'.
    expect_hosts: hosts (/ranks host: Slurm node names) that must have results."""
    opts = opts or FleetOptions()
    disagreements, comparable = fingerprint_check(runs)
    perf = performance_check(runs, opts)
    res = {"options": vars(opts), "files": [f.path for f in runs.files],
           "baseline_files": [f.path for f in baseline.files] if baseline else [],
           "notes": list(runs.notes),
           "fingerprint": {"disagreements": disagreements, "comparable_ranks": sorted(comparable)},
           "performance": {"gpus": perf}, "failures": failure_check(runs),
           "missing": missing_check(runs, expect_hosts)}
    models = runs.ranks.groupby("device_name")["rank"].count()
    res["models"] = {str(k): int(v) for k, v in models.items()}
    if not comparable and not perf:
        res["notes"].append("Nothing to compare within the run: no case ran on two or more ranks with the "
                            "same GPU model (one rank, split mode, or all GPUs different).")
    if baseline is not None:
        res["baseline"] = baseline_check(runs, baseline, opts)
        if not res["baseline"]["compared"]:
            res["notes"].append("Baseline: no GPU and case in common with the baseline files.")
    res["checks"] = _checks(runs, res)
    res["flagged"] = any(c["state"] == "fail" for c in res["checks"])
    return res
