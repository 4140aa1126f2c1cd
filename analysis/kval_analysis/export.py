"""export.py - `kval-analyze export`: every (rank, case) of every family of the given files as
one flat table, written as CSV (or Parquet when the output name ends in .parquet and pyarrow
is installed): family, the per-rank columns (file, host, GPU UUID, ...), every family's axis
columns (empty where a family has no such axis), status, message and every statistic, and for
a family whose output has parts each part's statistics as PART_STAT columns (dq_rel_l2, ...)."""
import pandas as pd

from .cases import family_frame
from .io import KvalInputError, family_axes

FIRST = ["family", "file", "rank", "rank_in_file", "host", "gpu_uuid", "gpu_name", "gpu_index", "pci_bus_id",
         "serial", "run_time", "status", "message"]


def _with_part_columns(frame, ds):
    """The family's part statistics (part_stats) as one column per part and statistic."""
    if "part_stats" not in ds:
        return frame
    keys = ["rank"] + family_axes(ds)
    wide = ds["part_stats"].drop_vars([c for c in ds["part_stats"].coords if c not in ("part", "part_stat") + tuple(keys)])
    order = [(str(p), str(q)) for p in ds["part"].values for q in ds["part_stat"].values]  # the file's order
    wide = wide.to_series().unstack(["part", "part_stat"])[order]
    wide.columns = [f"{p}_{q}" for p, q in wide.columns]
    return frame.merge(wide.reset_index(), on=keys, how="left")


def export_frame(runs):
    """The flat table of every (rank, case); hist and per-file comparison keys left out."""
    parts, axes = [], []
    for name, ds in runs.families.items():
        frame = family_frame(ds).drop(columns=["compare_key", "params_key", "gpu_key"], errors="ignore")
        frame = _with_part_columns(frame, ds)
        parts.append(frame.assign(family=name))
        axes += [a for a in family_axes(ds) if a not in axes]
    if not parts:
        return pd.DataFrame(columns=FIRST)
    table = pd.concat(parts, ignore_index=True, sort=False)
    first = [c for c in FIRST if c in table] + [a for a in axes if a in table and a not in FIRST]
    return table[first + [c for c in table.columns if c not in first]]


def write_export(runs, path):
    """Write the table to path (.csv, or .parquet); returns the number of rows."""
    table = export_frame(runs)
    if str(path).endswith(".parquet"):
        try:
            table.to_parquet(path, index=False)
        except ImportError as err:
            raise KvalInputError(f"{path}: Parquet output needs pyarrow ({err}); write a .csv instead") from None
    elif str(path).endswith(".csv"):
        table.to_csv(path, index=False)
    else:
        raise KvalInputError(f"{path}: the output name must end in .csv or .parquet")
    return len(table)
