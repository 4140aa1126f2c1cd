"""baseline.py - `kval-analyze fleet --baseline`: each physical GPU (matched by UUID) and case
against the baseline files. Time: per case the ratio of the GPU's median time now to then,
marked SAME / FAST / SLOW / AMBIGUOUS against the combined recorded noise of both runs, and per
GPU the median ratio over its cases with a family-wise 99 % interval (fleet.interval_level): a
GPU regressed only when the whole interval lies above 1 + regress (single slow cases are
listed, not failed). Errors: growth of
max_ulp (floor 1 ulp) or rel_l2 beyond error_factor, and new failures, per case. GPUs of the
baseline that disappeared fail; GPUs that appeared are listed."""
import numpy as np
import pandas as pd

from . import stats
from .fleet import GPU_FIELDS, TIMING, case_dict, gpu_table, interval_level, py
from .io import case_frame, failure_mask, family_axes, output_mask

RELL2_FLOOR = 1e-12   # rel_l2 below this counts as this when comparing error growth
ULP_FLOOR = 1.0       # max_ulp below one ULP counts as one ULP
STATUS_SEVERITY = {"error": 5, "fail_nonfinite": 4, "fail_tolerance": 3, "inaccurate": 2.5, "pass": 2, "skipped": 1, "not_run": 0}
MAX_SLOW_CASES = 200


def _severity(status):
    s = str(status)
    return STATUS_SEVERITY.get(s, 3.5 if s.startswith("fail") else 2)


def _per_gpu(frame, axes):
    """Collapse ranks sharing a GPU key: median time and se, worst errors, most severe status."""
    frame = frame.assign(_sev=frame["status"].map(_severity),
                         se=stats.median_time_se(frame["time_median"], frame["time_p10"], frame["time_p90"],
                                                 frame["time_stddev"], frame["reps"]))
    g = frame.groupby(["gpu_key"] + axes, sort=False)
    out = g.agg(time_median=("time_median", "median"), se=("se", "median"), max_ulp=("max_ulp", "max"),
                rel_l2=("rel_l2", "max"), _sev=("_sev", "max"))
    idx = frame.loc[g["_sev"].idxmax().to_numpy(), ["gpu_key"] + axes + ["status"]]
    return out.reset_index().merge(idx, on=["gpu_key"] + axes)


def _family_rows(name, cur, old, axes, opts):
    """Merged per-GPU rows of one family with ratio, noise, state."""
    m = _per_gpu(cur, axes).merge(_per_gpu(old, axes), on=["gpu_key"] + axes, suffixes=("", "_base"))
    m = m.assign(family=name, both_ran=output_mask(m["status"]) & output_mask(m["status_base"]),
                 ratio=m["time_median"] / m["time_median_base"],
                 halfwidth=stats.Z95 * np.sqrt(m["se"] ** 2 + m["se_base"] ** 2))
    timed = m["both_ran"] & (m["time_median"] > 0) & (m["time_median_base"] > 0)
    m["state"] = np.where(timed, stats.compare_state(m["ratio"], m["halfwidth"], opts.noise), "")
    return m, timed


def baseline_check(runs, base, gpus, opts):
    """Compare each GPU (by gpu_key) and case with the baseline runs."""
    base_gpus = gpu_table(base.ranks)
    result = {"gpus": [], "slow_cases": [], "error_changes": [], "new_failures": [],
              "disappeared": [dict(base_gpus[k], ranks=[]) for k in base_gpus if k not in gpus],
              "appeared": [gpus[k] for k in gpus if k not in base_gpus], "compared": {}, "checks": {}}
    ratios = {}
    stats_cols = ["status", "max_ulp", "rel_l2"] + list(TIMING)
    for name, ds in runs.families.items():
        if name not in base.families or family_axes(base.families[name]) != family_axes(ds):
            continue
        axes = family_axes(ds)
        cur, old = case_frame(ds, stats_cols), case_frame(base.families[name], stats_cols)
        for fr in (cur, old):
            for col in stats_cols[1:]:
                if col not in fr:
                    fr[col] = np.nan
        m, timed = _family_rows(name, cur, old, axes, opts)
        for key, n in m[m["both_ran"] | failure_mask(m["status"])].groupby("gpu_key").size().items():
            result["compared"][key] = result["compared"].get(key, 0) + int(n)
        for key, part in m[timed].groupby("gpu_key"):
            ratios.setdefault(key, []).append(part)
        slow = m[timed & (m["state"] == "SLOW") & (m["ratio"] > 1 + opts.regress)]
        for _, row in slow.iterrows():
            result["slow_cases"].append(dict(_ident(gpus, row["gpu_key"]), family=name, case=case_dict(row, axes),
                                             time_us=1e6 * row["time_median"], base_time_us=1e6 * row["time_median_base"],
                                             ratio=py(row["ratio"]), noise=py(row["halfwidth"])))
        ulp_grew = m["max_ulp"] > opts.error_factor * np.maximum(m["max_ulp_base"], ULP_FLOOR)
        l2_grew = m["rel_l2"] > opts.error_factor * np.maximum(m["rel_l2_base"], RELL2_FLOOR)
        for _, row in m[m["both_ran"] & (ulp_grew | l2_grew)].iterrows():
            result["error_changes"].append(dict(_ident(gpus, row["gpu_key"]), family=name, case=case_dict(row, axes),
                                                max_ulp=py(row["max_ulp"]), base_max_ulp=py(row["max_ulp_base"]),
                                                rel_l2=py(row["rel_l2"]), base_rel_l2=py(row["rel_l2_base"])))
        new_fail = failure_mask(m["status"]) & ~failure_mask(m["status_base"])
        for _, row in m[new_fail].iterrows():
            result["new_failures"].append(dict(_ident(gpus, row["gpu_key"]), family=name, case=case_dict(row, axes),
                                               status=row["status"], base_status=row["status_base"]))
    result["slow_cases"].sort(key=lambda d: -(d["ratio"] or 0))
    result["slow_cases_total"] = len(result["slow_cases"])
    result["slow_cases"] = result["slow_cases"][:MAX_SLOW_CASES]
    _verdicts(result, gpus, ratios, opts)
    return result


def _ident(gpus, key):
    return dict({k: gpus[key][k] for k in GPU_FIELDS}, ranks=gpus[key]["ranks"])


def _verdicts(result, gpus, ratios, opts):
    """Per GPU: median time ratio with its interval, case states; the baseline check state."""
    errors, new = {}, {}
    for d in result["error_changes"]:
        errors[d["gpu_key"]] = errors.get(d["gpu_key"], 0) + 1
    for d in result["new_failures"]:
        new[d["gpu_key"]] = new.get(d["gpu_key"], 0) + 1
    level = interval_level(opts, len(ratios))
    for key in result["compared"]:
        part = pd.concat(ratios[key]) if key in ratios else pd.DataFrame({"ratio": [], "state": []})
        med, lo, hi = stats.median_ci(part["ratio"], level)
        states = part["state"].value_counts()
        regressed = bool(lo > 1 + opts.regress)
        entry = dict(_ident(gpus, key), cases=int(len(part)), median_ratio=py(med), ratio_low=py(lo),
                     ratio_high=py(hi), level=level, states={s: int(states.get(s, 0)) for s in stats.STATES}, regressed=regressed,
                     error_changes=errors.get(key, 0), new_failures=new.get(key, 0))
        result["gpus"].append(entry)
        problems = []
        if regressed:
            problems.append(f"slower than the baseline: median ratio {med:.3f} ({100 * level:.4g}% interval {lo:.3f} "
                            f"to {hi:.3f}) "
                            f"above {1 + opts.regress:.2f}")
        if errors.get(key):
            problems.append(f"{errors[key]} case(s) with error growth")
        if new.get(key):
            problems.append(f"{new[key]} new failure(s)")
        msg = "; ".join(problems) or (f"median time ratio {med:.3f} vs the baseline over {len(part)} case(s)"
                                      if len(part) else f"{result['compared'][key]} compared case(s)")
        result["checks"][key] = ("fail" if problems else "pass", msg)
