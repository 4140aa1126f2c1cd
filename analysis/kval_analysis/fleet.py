"""fleet.py - the checks of `kval-analyze fleet`, per physical GPU (gpu_key: its UUID), among
GPUs of the same model that ran identical inputs: fingerprint disagreements per case (computed
here and read from fp_agrees; for a family whose output has parts, e.g. fa2bwd's dq, dk, dv,
the parts whose error statistics differ from a majority rank's, which names the kernel that
computed other bits); arithmetic: every GPU of one model shows the same outcome of
every tensor-core probe (tcprobe's `outcome` dataset); performance: per case each GPU's median time against the median
of the other GPUs, with the noise kval recorded (p10/p90 and repetitions of every GPU) marked
SAME / FAST / SLOW / AMBIGUOUS, and per GPU the median slowdown over its cases with a
confidence interval (order statistics at level 1 - 0.01 / G for G GPUs compared: family-wise
99 %, so a healthy fleet of any size fails no GPU in 99 % of campaigns even at a threshold of
zero) and the robust z of that median among the GPUs of its model: a GPU fails only when the
whole interval lies above 1 + slow (and, with three or more GPUs, its z exceeds the
threshold); failed cases; completeness (a file that did not reach every planned cell is
INCOMPLETE, never PASS; so is every expected host, e.g. a Slurm node of the campaign, with no
file at all, and the hosts of every file that did not complete are listed as nodes with missing
results); against a baseline (baseline.py). The result is one JSON-able dict
(schema_version 2) with a verdict PASS / FAIL / INCOMPLETE; fleet_output.py renders it."""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import stats
from .io import case_frame, case_labels, failure_mask, family_axes, output_mask

SCHEMA_VERSION = 2
TELEMETRY = ("sm_clock_min", "sm_clock_max", "temperature", "power", "throttle_reasons", "clock_flag")
TIMING = ("time_median", "time_p10", "time_p90", "time_stddev", "reps")
THROTTLE_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                 0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
                 0x100: "display_clock"}
GPU_FIELDS = ("gpu_key", "uuid", "host", "gpu_index", "pci_bus_id", "serial", "gpu_name")


@dataclass
class FleetOptions:
    z: float = 3.5             # with >= 3 GPUs of a model, a failing GPU's robust z also exceeds this
    slow: float = 0.02         # a GPU fails when its median slowdown's interval lies above 1 + slow
    mad_floor: float = 0.002   # lower bound of the MAD of the GPUs' median slowdowns (nearly equal GPUs)
    noise: float = 0.05        # a case whose 95 % noise half-width exceeds this is AMBIGUOUS
    regress: float = 0.05      # baseline: a GPU fails when its median ratio's interval lies above 1 + regress
    error_factor: float = 2.0  # baseline: growth factor of max_ulp / rel_l2 that is flagged
    confidence: float = 0.99   # family-wise confidence of the per-GPU intervals (level 1 - (1 - c) / GPUs)


def interval_level(opts, n_gpus):
    """Confidence level of each GPU's interval when n_gpus GPUs are judged (Bonferroni)."""
    return 1 - (1 - opts.confidence) / max(1, n_gpus)


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


def py(value):
    """numpy scalar -> Python scalar, NaN/inf -> None (JSON-able)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def case_dict(row, axes):
    return {a: py(row[a]) for a in axes}


def gpu_table(ranks):
    """gpu_key -> identity of the physical GPU and the (global) ranks and files it appears in."""
    table = {}
    for _, r in ranks.iterrows():
        entry = table.setdefault(r["gpu_key"], {
            "gpu_key": str(r["gpu_key"]), "uuid": str(r["uuid"]), "host": str(r["host"]),
            "gpu_index": int(r["device_index"]) if "device_index" in r else -1,
            "pci_bus_id": str(r.get("pci_bus_id", "")), "serial": str(r.get("serial", "")),
            "gpu_name": str(r["device_name"]), "ranks": [], "files": []})
        entry["ranks"].append(int(r["rank"]))
        if str(r["file"]) not in entry["files"]:
            entry["files"].append(str(r["file"]))
    return table


def _gpu(gpus, key, rank=None):
    g = {k: gpus[key][k] for k in GPU_FIELDS}
    g["rank"] = int(rank) if rank is not None else gpus[key]["ranks"][0]
    return g


def _frames(runs, variables):
    for name, ds in runs.families.items():
        yield name, family_axes(ds), case_frame(ds, variables)


PART_SUMS = ("mean_abs", "rel_l2", "max_abs", "worst_index", "bias_ulp")  # sums and maxima over a part's elements


def differing_parts(ds, case, rank, other):
    """The parts of a case's output whose error statistics (sums and maxima over all their
    elements, which other output bits change) differ between two ranks; None when the family
    has no parts."""
    if "part_stats" not in ds:
        return None
    stats = [str(x) for x in ds["part_stat"].values]
    cols = [stats.index(q) for q in PART_SUMS if q in stats]
    a, b = (ds["part_stats"].sel(rank=r, **case).values.reshape(len(ds["part"]), -1)[:, cols] for r in (rank, other))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return [str(p) for p, eq in zip(ds["part"].values, same.all(axis=1)) if not eq]


def fingerprint_check(runs, gpus):
    """Ranks whose fingerprint differs from the majority of the ranks that ran the same case on
    the same GPU model with the same inputs (seed, parameters); on a tie every rank is named."""
    found, comparable = {}, set()
    for name, axes, frame in _frames(runs, ["status", "fingerprint", "fp_agrees"]):
        frame["group"] = frame["compare_key"].astype(str) + "|" + frame["params_key"].astype(str)
        keys = ["group"] + axes
        ran = frame[output_mask(frame["status"]) & (frame["fingerprint"] != 0)]
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
        bad = merged[(merged["n_top"] > 1) | (merged["fingerprint"] != merged["majority"])]
        major = merged[merged["fingerprint"] == merged["majority"]].drop_duplicates(keys).set_index(keys)["rank"]
        for _, row in bad.iterrows():
            key = (name, int(row["rank"]), tuple(row[a] for a in axes))
            majority = None if row["n_top"] > 1 else f"{int(row['majority']):016x}"
            case = case_dict(row, axes)
            parts = None if majority is None else differing_parts(runs.families[name], case, int(row["rank"]),
                                                                   int(major[tuple(row[k] for k in keys)]))
            found[key] = dict(_gpu(gpus, row["gpu_key"], row["rank"]), family=name, case=case,
                              fingerprint=f"{int(row['fingerprint']):016x}", majority=majority,
                              agreeing_ranks=0 if majority is None else int(row["n_major"]),
                              ranks=int(row["n_ranks"]), source="computed", parts=parts)
        if "fp_agrees" in frame:
            for _, row in frame[frame["fp_agrees"] == 0].iterrows():
                key = (name, int(row["rank"]), tuple(row[a] for a in axes))
                if key in found:
                    found[key]["source"] = "computed+fp_agrees"
                    continue
                comparable.add(int(row["rank"]))
                found[key] = dict(_gpu(gpus, row["gpu_key"], row["rank"]), family=name, case=case_dict(row, axes),
                                  fingerprint=f"{int(row['fingerprint']):016x}", majority=None,
                                  agreeing_ranks=None, ranks=None, source="fp_agrees", parts=None)
    return sorted(found.values(), key=lambda d: (d["rank"], d["family"])), comparable


def arithmetic_check(runs, gpus):
    """Probe outcomes (the `outcome` dataset of a family that measures one: tcprobe's tensor-core
    arithmetic): every GPU of one model must show the same outcome of every probe case. Returns
    the disagreements (a GPU whose outcome differs from the most common one of its model; on a
    tie every GPU of the case) and per GPU its measured outcomes (case, outcome, words)."""
    found, measured = [], {}
    for name, axes, frame in _frames(runs, ["status", "outcome", "message"]):
        if "outcome" not in frame:
            continue
        frame = frame[frame["outcome"] >= 0]
        if frame.empty:
            continue
        frame = frame.assign(model=[gpus[k]["gpu_name"] for k in frame["gpu_key"]])
        for _, row in frame.iterrows():
            measured.setdefault(row["gpu_key"], []).append(
                {"family": name, "case": case_dict(row, axes), "outcome": int(row["outcome"]),
                 "words": str(row["message"]), "status": str(row["status"])})
        for _, grp in frame.groupby(["model"] + axes, sort=True):
            counts = grp["outcome"].value_counts()
            if len(counts) < 2:
                continue
            majority = None if counts.iloc[0] == counts.iloc[1] else int(counts.index[0])
            for _, row in grp[grp["outcome"] != majority].iterrows():
                found.append(dict(_gpu(gpus, row["gpu_key"], row["rank"]), family=name, case=case_dict(row, axes),
                                  outcome=int(row["outcome"]), majority=majority, words=str(row["message"])))
    return sorted(found, key=lambda d: (d["rank"], d["family"])), measured


def _loo_median(sorted_vals, pos):
    """Median of sorted_vals without the element at each position in pos (n >= 2)."""
    n = len(sorted_vals) - 1
    k = n // 2

    def at(j):  # element j of the array with `pos` removed
        return np.where(j < pos, sorted_vals[np.minimum(j, n)], sorted_vals[np.minimum(j + 1, n)])

    if n % 2:
        return at(np.full_like(pos, k))
    return 0.5 * (at(np.full_like(pos, k - 1)) + at(np.full_like(pos, k)))


def timing_frame(runs):
    """One row per (family, comparison group, case, GPU): median over the GPU's ranks of
    time_median and of its relative standard error se, with the case label."""
    parts = []
    for name, axes, frame in _frames(runs, ["status"] + list(TIMING)):
        frame["group"] = (frame["compare_key"].astype(str).str.rsplit("|seed=", n=1).str[0] + "|" +
                          frame["params_key"].astype(str) + "|" + name)
        t = pd.to_numeric(frame["time_median"], errors="coerce")
        frame = frame[output_mask(frame["status"]) & (t > 0)]
        if frame.empty:
            continue
        frame = frame.assign(se=stats.median_time_se(frame["time_median"], frame["time_p10"], frame["time_p90"],
                                                     frame["time_stddev"], frame["reps"]))
        g = frame.groupby(["group"] + axes + ["gpu_key"], sort=False)
        agg = g.agg(t=("time_median", "median"), se=("se", "median"), rank=("rank", "first")).reset_index()
        parts.append(agg.assign(family=name, case=case_labels(agg, axes))[
            ["family", "group", "case", "gpu_key", "rank", "t", "se"]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["family", "group", "case", "gpu_key", "rank", "t", "se"])


def case_comparison(tf, noise):
    """Per (case, GPU) with at least one peer GPU: peer time (median of the other GPUs), ratio,
    the 95 % half-width of the noise (own se, and the peers' se or spread over sqrt(peers)) and
    the state. Rows of cases that only one GPU timed are dropped."""
    tf = tf.sort_values(["family", "group", "case", "t"], kind="stable").reset_index(drop=True)
    gid = tf.groupby(["family", "group", "case"], sort=False).ngroup().to_numpy()
    t, se = tf["t"].to_numpy(dtype=float), tf["se"].to_numpy(dtype=float)
    peer, peer_se = np.full(len(tf), np.nan), np.full(len(tf), np.nan)
    for idx in np.split(np.arange(len(tf)), np.flatnonzero(np.diff(gid)) + 1):
        n = len(idx)
        if n < 2:
            continue
        vals = t[idx]
        peer[idx] = _loo_median(vals, np.arange(n))
        spread = stats.MAD_SIGMA * np.median(np.abs(vals - np.median(vals))) / np.median(vals) if n >= 3 else 0.0
        within = np.nanmedian(se[idx]) if np.isfinite(se[idx]).any() else np.nan
        peer_se[idx] = stats.MEDIAN_SE * max(spread, within) / np.sqrt(n - 1)
    out = tf.assign(peer_time=peer, ratio=t / peer, halfwidth=stats.Z95 * np.sqrt(se ** 2 + peer_se ** 2))
    out = out[np.isfinite(out["ratio"])]
    return out.assign(state=stats.compare_state(out["ratio"], out["halfwidth"], noise))


def _telemetry(frame):
    def col(c):
        return pd.to_numeric(frame[c], errors="coerce") if c in frame else pd.Series(dtype=float)

    thr = col("throttle_reasons")
    thr = thr[thr >= 0]
    return {"sm_clock_min": py(col("sm_clock_min").min()), "sm_clock_max": py(col("sm_clock_max").max()),
            "temperature_max": py(col("temperature").max()), "power_median": py(col("power").median()),
            "throttle_reasons": throttle_names(int(np.bitwise_or.reduce(thr.astype(np.int64).to_numpy()))
                                               if len(thr) else None),
            "clock_flag_cases": int((col("clock_flag") > 0).sum())}


def _telemetry_by_gpu(runs):
    parts = [f[["gpu_key", "gpu_name"] + [c for c in TELEMETRY if c in f]][output_mask(f["status"])]
             for _, _, f in _frames(runs, ["status"] + list(TELEMETRY))]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["gpu_key", "gpu_name"])


def performance_check(runs, gpus, opts):
    """Per GPU with timed peers: case states, median slowdown with its 95 % interval, robust z
    of that median among the GPUs of its model, telemetry beside its peers', slowest cases."""
    cmp = case_comparison(timing_frame(runs), opts.noise)
    if cmp.empty:
        return []
    tel = _telemetry_by_gpu(runs)
    rows = []
    level = interval_level(opts, cmp["gpu_key"].nunique())
    for key, part in cmp.groupby("gpu_key", sort=False):
        med, lo, hi = stats.median_ci(part["ratio"], level)
        states = part["state"].value_counts()
        rows.append({"key": key, "part": part, "median": med, "lo": lo, "hi": hi,
                     "states": {s: int(states.get(s, 0)) for s in stats.STATES}})
    meds = pd.DataFrame({"key": [r["key"] for r in rows], "median": [r["median"] for r in rows],
                         "half": [(r["hi"] - r["lo"]) / 2 for r in rows],
                         "model": [gpus[r["key"]]["gpu_name"] for r in rows]})
    meds["z"] = np.nan
    for _, sub in meds.groupby("model"):
        floor = max(float(sub["half"].median()), opts.mad_floor * float(sub["median"].median()))
        meds.loc[sub.index, "z"] = stats.robust_z(sub["median"], floor)
    out = []
    for r, z in zip(rows, meds["z"]):
        key, part = r["key"], r["part"]
        reasons = []
        if r["lo"] > 1 + opts.slow and not (np.isfinite(z) and z <= opts.z):
            reasons.append(f"median slowdown {100 * (r['median'] - 1):+.1f}% ({100 * level:.4g}% interval "
                           f"{100 * (r['lo'] - 1):+.1f}% to {100 * (r['hi'] - 1):+.1f}%) above {100 * opts.slow:.0f}%"
                           + (f", robust z {z:.1f} > {opts.z}" if np.isfinite(z) else ""))
        worst = part.sort_values("ratio", ascending=False).head(5)
        model = gpus[key]["gpu_name"]
        out.append(dict(_gpu(gpus, key), ranks=gpus[key]["ranks"], cases=int(len(part)),
                        median_ratio=py(r["median"]), ratio_low=py(r["lo"]), ratio_high=py(r["hi"]), level=level,
                        median_z=py(z), states=r["states"], flagged=bool(reasons), reasons=reasons,
                        telemetry=_telemetry(tel[tel["gpu_key"] == key]),
                        peer_telemetry=_telemetry(tel[(tel["gpu_key"] != key) & (tel["gpu_name"] == model)]),
                        worst_cases=[{"family": w["family"], "case": w["case"], "time_us": 1e6 * w["t"],
                                      "peer_time_us": 1e6 * w["peer_time"], "ratio": py(w["ratio"]),
                                      "noise": py(w["halfwidth"]), "state": w["state"]} for _, w in worst.iterrows()]))
    return sorted(out, key=lambda g: g["rank"])


def failure_check(runs, gpus):
    """(rank, case) cells whose status fails the case (io.failure_mask: error, fail_*)."""
    out = []
    for name, axes, frame in _frames(runs, ["status", "message", "max_bound_ratio", "n_nan", "n_inf", "time_median"]):
        for _, row in frame[failure_mask(frame["status"])].iterrows():
            out.append(dict(_gpu(gpus, row["gpu_key"], row["rank"]), family=name, case=case_dict(row, axes),
                            status=str(row["status"]), message=str(row.get("message", "")),
                            max_bound_ratio=py(row.get("max_bound_ratio", np.nan)),
                            n_nan=py(row.get("n_nan", -1)), n_inf=py(row.get("n_inf", -1))))
    return out


def completeness_check(runs):
    """Per file: its `complete` attribute and the planned cells without a result (fleet mode:
    per rank; split mode: cells no rank reached); cells skipped on every rank are not planned."""
    files = []
    missing_by_gpu = {}
    for run in runs.files:
        lo, hi = run.rank_offset, run.rank_offset + run.nranks
        planned = missing = 0
        for ds in runs.families.values():
            sub = ds["status"].sel(rank=[r for r in ds["rank"].values if lo <= r < hi])
            values = sub.values.reshape(sub.shape[0], -1).astype(str)
            plan = ~(values == "skipped").all(axis=0)
            absent = values == "not_run"
            if str(run.attrs.get("mode")) == "split":
                planned += int(plan.sum())
                missing += int((absent.all(axis=0) & plan).sum())
                continue
            planned += int(plan.sum()) * values.shape[0]
            per_rank = (absent & plan).sum(axis=1)
            missing += int(per_rank.sum())
            for key, n in zip(sub["gpu_key"].values, per_rank):
                missing_by_gpu[key] = missing_by_gpu.get(key, 0) + int(n)
        complete = str(run.attrs.get("complete", 1)) not in ("0", "False")
        files.append({"file": run.path, "complete": complete, "planned_results": planned, "missing_results": missing})
    return {"files": files, "gpus": missing_by_gpu}


def missing_check(runs, expect_hosts=()):
    """Nodes whose results are missing: per host, the ranks of files whose root attribute
    complete is 0 (cells without a result counted), and every expected host that no file has."""
    out = []
    for run in runs.files:
        if str(run.attrs.get("complete", 1)) not in ("0", "False"):
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


def _check(gpu, check, state, message):
    return dict(gpu, check=check, state=state, message=message)


def _checks(gpus, res):
    """One verdict per GPU and check: pass, fail, incomplete or skipped."""
    fp_bad, fails = {}, {}
    for d in res["fingerprint"]["disagreements"]:
        fp_bad.setdefault(d["gpu_key"], []).append(d)
    for d in res["failures"]:
        fails.setdefault(d["gpu_key"], []).append(d)
    perf = {g["gpu_key"]: g for g in res["performance"]["gpus"]}
    comparable = set(res["fingerprint"]["comparable_ranks"])
    missing = res["completeness"]["gpus"]
    incomplete_files = {f["file"] for f in res["completeness"]["files"] if not f["complete"] or f["missing_results"]}
    base = res.get("baseline")
    checks = []
    for key, entry in gpus.items():
        gpu = _gpu(gpus, key)
        if key in fp_bad:
            checks.append(_check(gpu, "fingerprint", "fail", f"{len(fp_bad[key])} case(s) disagree with peers"))
        elif comparable & set(entry["ranks"]):
            checks.append(_check(gpu, "fingerprint", "pass", "agrees with its peers"))
        else:
            checks.append(_check(gpu, "fingerprint", "skipped", "no peer ran the same case on the same GPU model"))
        p = perf.get(key)
        if p is None:
            checks.append(_check(gpu, "performance", "skipped", "no peer timed the same case on the same GPU model"))
        else:
            checks.append(_check(gpu, "performance", "fail" if p["flagged"] else "pass", "; ".join(p["reasons"]) or
                                 f"median slowdown {100 * (p['median_ratio'] - 1):+.1f}% vs peers "
                                 f"({p['states']['SLOW']} SLOW, {p['states']['AMBIGUOUS']} AMBIGUOUS of {p['cases']})"))
        arith = res["arithmetic"]
        if key in {d["gpu_key"] for d in arith["disagreements"]}:
            n = sum(d["gpu_key"] == key for d in arith["disagreements"])
            checks.append(_check(gpu, "arithmetic", "fail", f"{n} probe outcome(s) differ from its model's peers"))
        elif key in arith["measured"]:
            checks.append(_check(gpu, "arithmetic", "pass", f"{len(arith['measured'][key])} probe outcome(s), "
                                 "identical to its model's peers"))
        n_fail = len(fails.get(key, []))
        checks.append(_check(gpu, "failures", "fail" if n_fail else "pass", f"{n_fail} failed case(s)"))
        n_miss = missing.get(key, 0)
        bad_files = [f for f in entry["files"] if f in incomplete_files]
        checks.append(_check(gpu, "completeness", "incomplete" if n_miss or bad_files else "pass",
                             f"{n_miss} planned result(s) missing" + (f"; incomplete file(s): {', '.join(bad_files)}"
                                                                      if bad_files else "")))
        if base is not None:
            state, message = base["checks"].get(key, ("skipped", "GPU not in the baseline (appeared)"))
            checks.append(_check(gpu, "baseline", state, message))
    for d in res["missing"]:
        if d["state"] == "missing":
            absent = {"gpu_key": f"{d['host']}:absent", "uuid": "-", "host": d["host"], "gpu_index": -1,
                      "pci_bus_id": "-", "serial": "-", "gpu_name": "-", "rank": -1}
            checks.append(_check(absent, "completeness", "incomplete", d["message"]))
    if base is not None:
        for g in base["disappeared"]:
            checks.append(_check(dict({k: g[k] for k in GPU_FIELDS}, rank=-1), "baseline", "fail",
                                 "GPU present in the baseline is missing from this run"))
    return checks


def verdict_of(checks):
    """FAIL when any check fails, else INCOMPLETE when any is incomplete, else PASS."""
    states = {c["state"] for c in checks}
    return "FAIL" if "fail" in states else "INCOMPLETE" if "incomplete" in states else "PASS"


def gpu_verdicts(gpus, checks):
    """One row per GPU: identity, its verdict and the state of each check."""
    rows = {}
    for c in checks:
        key = c["gpu_key"]
        row = rows.setdefault(key, dict({k: c[k] for k in GPU_FIELDS}, ranks=gpus.get(key, {}).get("ranks", []),
                                        checks={}, failing=[]))
        row["checks"][c["check"]] = c["state"]
        if c["state"] in ("fail", "incomplete"):
            row["failing"].append(f"{c['check']}: {c['message']}")
    for row in rows.values():
        row["verdict"] = verdict_of([{"state": s} for s in row["checks"].values()])
    order = {"FAIL": 0, "INCOMPLETE": 1, "PASS": 2}
    return sorted(rows.values(), key=lambda r: (order[r["verdict"]], r["host"], r["gpu_index"], r["gpu_key"]))


def analyse(runs, baseline=None, opts=None, expect_hosts=None):
    """Run every check; returns the JSON-able result with 'verdict', 'gpus' and 'checks'.
    expect_hosts: hosts (/ranks host: Slurm node names) that must have results."""
    from .baseline import baseline_check

    opts = opts or FleetOptions()
    gpus = gpu_table(runs.ranks)
    disagreements, comparable = fingerprint_check(runs, gpus)
    perf = performance_check(runs, gpus, opts)
    arith_bad, arith_measured = arithmetic_check(runs, gpus)
    res = {"schema_version": SCHEMA_VERSION, "options": vars(opts), "files": [f.path for f in runs.files],
           "baseline_files": [f.path for f in baseline.files] if baseline else [], "notes": list(runs.notes),
           "fingerprint": {"disagreements": disagreements, "comparable_ranks": sorted(comparable)},
           "performance": {"gpus": perf}, "failures": failure_check(runs, gpus),
           "arithmetic": {"disagreements": arith_bad, "measured": arith_measured},
           "completeness": completeness_check(runs), "missing": missing_check(runs, expect_hosts)}
    res["models"] = {str(k): int(v) for k, v in pd.Series([g["gpu_name"] for g in gpus.values()]).value_counts()
                     .sort_index().items()}
    if not comparable and not perf:
        res["notes"].append("Nothing to compare within the run: no case ran on two or more GPUs of the same "
                            "model (one GPU, split mode, or all GPUs different).")
    if baseline is not None:
        res["baseline"] = baseline_check(runs, baseline, gpus, opts)
        if not res["baseline"]["compared"]:
            res["notes"].append("Baseline: no GPU and case in common with the baseline files.")
    res["checks"] = _checks(gpus, res)
    if res.get("baseline") is not None:
        del res["baseline"]["checks"]
    res["gpus"] = gpu_verdicts(gpus, res["checks"])
    res["verdict"] = verdict_of(res["checks"])
    res["flagged"] = res["verdict"] != "PASS"
    return res
