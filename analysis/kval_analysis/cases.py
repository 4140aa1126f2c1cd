"""cases.py - per-case tables derived from the family Datasets: precision decoding and unit
roundoffs, the reduction length K of each case (the file's red_len, as kval's tolerance used
it), gemm's M and N (the file's coordinates, else parsed from "MxNxK"), one row per case
aggregated over ranks, throughput per case and status counts per family and precision (every
status the files hold, by name)."""
import numpy as np
import pandas as pd

from .io import case_frame, failure_mask, output_mask

UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24, "fp64": 2.0**-53, "e4m3": 2.0**-4,
                 "e5m2": 2.0**-3}
# kval's rules for 8-bit storage (src/core/dtype.c: kv_precision_output, kv_precision_accum_roundoff):
# outputs are bf16, and the tensor cores' fp32 accumulation keeps FP8_ACC_BITS significand bits
# (src/numerics/fp8.h KV_FP8_ACC_BITS; test_analysis checks the two agree).
FP8_STORAGE = ("e4m3", "e5m2")
FP8_ACC_BITS = 14
ERROR_STATS = ("max_bound_ratio", "max_abs", "max_rel", "rel_l2", "max_ulp", "p99_ulp", "floor_ratio",
               "aux_max_abs", "n_nan", "n_inf")
THROUGHPUT_STATS = ("time_median", "tflops", "gbps", "intensity", "roofline_frac")


def split_precision(precision):
    """'fp16:fp32' -> ('fp16', 'fp32'); a name without ':' is storage = accumulator."""
    storage, _, accum = str(precision).partition(":")
    return storage, (accum or storage)


def unit_roundoff(dtype):
    return UNIT_ROUNDOFF.get(dtype, np.nan)


def output_type(storage):
    """The type of a case's outputs: the storage type, bf16 for 8-bit storage."""
    return "bf16" if storage in FP8_STORAGE else storage


def accum_roundoff(precision):
    """u of the accumulation the tolerance charges: the accumulator's, 2^-FP8_ACC_BITS for FP8."""
    storage, accum = split_precision(precision)
    return 2.0**-FP8_ACC_BITS if storage in FP8_STORAGE else unit_roundoff(accum)


def parse_shape(shape):
    """'MxNxK' -> (M, N, K) as ints; NaNs when the text is not of that form."""
    parts = str(shape).lower().split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        return (np.nan, np.nan, np.nan)
    return tuple(int(p) for p in parts)


def family_frame(ds, variables=None):
    """case_frame plus derived columns: storage, accum, K (reduction length) and, for gemm, M, N."""
    frame = case_frame(ds, None if variables is None else list(variables) + ["red_len"])
    family = ds.attrs["family"]
    if "precision" in frame:
        split = frame["precision"].map(split_precision)
        frame["storage"] = split.map(lambda t: t[0]).astype(object)
        frame["accum"] = split.map(lambda t: t[1]).astype(object)
    if family == "gemm" and "shape" in frame and not {"M", "N"} <= set(frame.columns):
        mnk = frame["shape"].map(parse_shape)
        frame["M"] = mnk.map(lambda t: t[0]).astype(float)
        frame["N"] = mnk.map(lambda t: t[1]).astype(float)
    frame["K"] = frame["red_len"] if "red_len" in frame else np.nan
    return frame



def status_matrix(runs):
    """Counts of (rank, cell) statuses per family and precision, one column per status name
    the files hold (runs.statuses) and non_finite: cells whose output had NaN or Inf."""
    rows = []
    for name, ds in runs.families.items():
        frame = case_frame(ds, ["status"])
        keys = ["precision"] if "precision" in frame else []
        groups = frame.groupby(keys) if keys else [(("all",), frame)]
        for key, sub in groups:
            counts = sub["status"].value_counts()
            row = {"family": name, "precision": key[0] if isinstance(key, tuple) else key}
            row.update({s: int(counts.get(s, 0)) for s in runs.statuses})
            if "n_nonfinite" in ds:
                row["non_finite"] = int((ds["n_nonfinite"].sel(precision=row["precision"]) > 0).sum()) \
                    if "precision" in ds.dims else int((ds["n_nonfinite"] > 0).sum())
            rows.append(row)
    return pd.DataFrame(rows)


def ran_or_error(frame):
    """Rows whose case produced an output or ended with an error."""
    return output_mask(frame["status"]) | (frame["status"] == "error")


def worst_per_case(frame, axes, by="max_bound_ratio"):
    """One row per case among the ranks that ran it: a rank where it failed (io.failure_mask) if
    there is one, so a case that failed anywhere never shows as passed; among those, the largest
    `by`."""
    ran = frame[ran_or_error(frame)]
    key = ran[by].fillna(-np.inf) if by in ran else pd.Series(0.0, index=ran.index)
    ran = (ran.assign(_failed=failure_mask(ran["status"]), _key=key)
           .sort_values(["_failed", "_key"], ascending=False, kind="stable").drop(columns=["_failed", "_key"]))
    return ran.drop_duplicates(subset=axes, keep="first")


def typical_per_case(frame, axes, by="max_bound_ratio"):
    """One row per case: the rank with the median `by` among the ranks that ran it (the lower
    median for an even count), so one faulty rank does not stand for the case."""
    ran = frame[ran_or_error(frame)]
    if ran.empty:
        return ran
    key = ran[by].fillna(np.inf) if by in ran else pd.Series(0.0, index=ran.index)
    ran = ran.assign(_key=key).sort_values(axes + ["_key"], kind="stable")
    g = ran.groupby(axes, sort=False)
    pos, size = g.cumcount(), g["_key"].transform("size")
    return ran[pos == (size - 1) // 2].drop(columns="_key")


def throughput_table(frame, axes):
    """Per case (over the ranks that ran it): median time and rates, rank spread of time."""
    ran = frame[output_mask(frame["status"]) & np.isfinite(frame["time_median"].astype(float))]
    if ran.empty:
        return pd.DataFrame()
    stats = [c for c in THROUGHPUT_STATS if c in ran]
    g = ran.groupby(axes, sort=True)
    table = g[stats].median()
    table["ranks"] = g["time_median"].count()
    table["spread"] = g["time_median"].max() / g["time_median"].min()
    table = table.reset_index()
    table["time_us"] = table.pop("time_median") * 1e6
    return table[axes + ["ranks", "time_us"] + [c for c in stats if c != "time_median"] + ["spread"]]
