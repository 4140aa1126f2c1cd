"""io.py - loads kval HDF5 files (README "The HDF5 file", layout_version 3) into one xarray
Dataset per kernel family, the files combined along `rank`. Everything is read with h5py and
every dimension is named by the dimension scale attached to it (never by position). Each
family Dataset carries per-rank coordinates: host, gpu_uuid, gpu_name, gpu_index, pci_bus_id,
serial, file, run_time, rank_in_file, gpu_key (the physical GPU: its UUID, used to match GPUs
across runs) and compare_key (ranks with equal keys ran identical inputs on the same GPU
model), and the numeric coordinates a family derives from its axes (gemm M, N, K); a family
whose output has parts (fa2bwd: dq, dk, dv) has part_stats over the dimensions part and
part_stat besides (the error statistics of each part). Status
names come from the file (its enum, else the root attribute status_names); statuses this
version does not know are kept by name. Honest numbers: a cell whose output held NaN or Inf
where the reference is finite gets +inf in every error statistic (the file's statistics cover
the finite elements only) and n_nonfinite = n_nan + n_inf. Bad input raises KvalInputError
with a message naming the file and what is missing."""
import os
import posixpath
from dataclasses import dataclass, field

import h5py
import numpy as np
import pandas as pd
import xarray as xr

LAYOUT_VERSION = 3
STATUS_NAMES = ("not_run", "pass", "fail_tolerance", "fail_nonfinite", "skipped", "error")
NO_OUTPUT = ("not_run", "skipped", "error")  # every other status names a checked output
ERROR_FIELDS = ("max_abs", "max_rel", "rel_l2", "mean_abs", "max_ulp", "p99_ulp", "max_bound_ratio", "floor_ratio")
KNOWN_FAMILIES = ("fa2", "gemm", "layernorm", "rmsnorm")
REQUIRED_ROOT_ATTRS = ("layout_version", "nranks", "backend", "mode", "creation_time")
OPTIONAL_ROOT_ATTRS = ("kval_version", "git_commit", "command_line", "deck_text", "deck_path",
                       "mpi_version", "hdf5_version", "cuda_runtime", "cuda_driver", "slurm_job_id",
                       "slurm_nodes", "seed", "hdf5_flavour", "status_names")
REQUIRED_RANK_FIELDS = ("host", "device_name", "uuid")
REQUIRED_FAMILY_ATTRS = ("axes", "n_cells", "n_valid", "n_skipped")
REQUIRED_FAMILY_DATASETS = ("status", "fingerprint")
HIST_DIM = "hist_bin"
PART_DIMS = ("part", "part_stat")  # the dimensions of part_stats besides the cell's
# Fill values used where combined files do not share a cell (same meaning as in the file).
FILL = {"status": "not_run", "fingerprint": np.uint64(0), "message": "", "hist": np.uint64(0),
        "fp_agrees": np.int8(2), "fp_distinct": np.int32(0), "fp_majority": np.uint64(0)}


class KvalInputError(Exception):
    """A file that is missing, not HDF5, or not a kval file of a supported layout."""


def is_failure(status):
    """A status that fails the case: error, or any name starting with "fail" (fail_tolerance,
    fail_nonfinite, and failures later versions add). A finding such as `inaccurate` is not."""
    status = str(status)
    return status == "error" or status.startswith("fail")


INACCURATE = "inaccurate"  # beyond its fp64 bound but equal to the precision model: a study's finding


def finding_mask(statuses):
    """Boolean mask: the case is a finding (`inaccurate`: conformant, outside its tolerance), not a failure."""
    s = pd.Series(np.asarray(statuses, dtype=object).reshape(-1)).astype(str)
    return (s == INACCURATE).to_numpy().reshape(np.shape(statuses))


def output_mask(statuses):
    """Boolean mask (pandas Series or numpy array of names): the case produced a checked output."""
    s = pd.Series(np.asarray(statuses, dtype=object).reshape(-1)).astype(str)
    return (~s.isin(NO_OUTPUT) & ~s.str.startswith("unknown(")).to_numpy().reshape(np.shape(statuses))


def failure_mask(statuses):
    """Boolean mask: the status fails the case (is_failure)."""
    s = pd.Series(np.asarray(statuses, dtype=object).reshape(-1)).astype(str)
    return ((s == "error") | s.str.startswith("fail")).to_numpy().reshape(np.shape(statuses))


@dataclass
class RunFile:
    """One input file: its path, decoded root attributes and where its ranks start."""
    path: str
    attrs: dict
    nranks: int
    rank_offset: int
    missing_attrs: list = field(default_factory=list)


@dataclass
class KvalRuns:
    """Files loaded together: per-rank table and one Dataset per family."""
    files: list
    ranks: pd.DataFrame  # one row per global rank
    families: dict       # family name -> xr.Dataset
    notes: list = field(default_factory=list)
    statuses: list = field(default_factory=list)  # status names of the files, in code order

    def family(self, name):
        return self.families.get(name)


def _decode(value):
    """Root/group attribute or string element -> plain Python value."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").rstrip("\0")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _decode(value[()])
        if value.size == 1:
            return _decode(value.reshape(-1)[0])
        return [_decode(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _strings(data):
    """Array of fixed- or variable-length strings (bytes or str) -> object array of str."""
    flat = [_decode(v) if isinstance(v, bytes) else str(v) for v in np.asarray(data).reshape(-1)]
    return np.array(flat, dtype=object).reshape(np.shape(data))


def _dim_names(dset, path):
    """Names of the dimensions of `dset` from the dimension scales attached to them."""
    names = []
    for i, dim in enumerate(dset.dims):
        scales = list(dim.values())
        if not scales:
            raise KvalInputError(f"{path}: dataset {dset.name}: dimension {i} has no dimension scale "
                                 "attached (every dimension must name its axis: README, The HDF5 file)")
        names.append(posixpath.basename(scales[0].name))
    return names


def _status_lookup(dset, attrs):
    """Code -> name table for the status dataset: its HDF5 enum, else the status_names attribute."""
    mapping = h5py.check_enum_dtype(dset.dtype)
    if mapping is None and dset.attrs.get("flag_meanings") is not None and dset.attrs.get("flag_values") is not None:
        mapping = dict(zip(str(_decode(dset.attrs["flag_meanings"])).split(),
                           np.asarray(dset.attrs["flag_values"]).tolist()))
    if mapping is None and attrs.get("status_names"):
        mapping = {}
        for item in str(attrs["status_names"]).split(","):
            code, _, name = item.partition("=")
            mapping[name.strip()] = int(code)
    if mapping is None:
        mapping = {n: i for i, n in enumerate(STATUS_NAMES)}
    return {int(code): name for name, code in mapping.items()}


def _read_root(f, path):
    attrs = {k: _decode(v) for k, v in f.attrs.items()}
    if "layout_version" not in attrs:
        raise KvalInputError(f"{path}: not a kval file: root attribute 'layout_version' is missing")
    try:
        version = int(attrs["layout_version"])
    except (TypeError, ValueError):
        raise KvalInputError(f"{path}: root attribute layout_version={attrs['layout_version']!r} "
                             "is not an integer") from None
    if version != LAYOUT_VERSION:
        raise KvalInputError(f"{path}: layout_version {version} is not supported "
                             f"(this kval-analyze reads layout_version {LAYOUT_VERSION})")
    missing = [k for k in REQUIRED_ROOT_ATTRS if k not in attrs]
    if missing:
        raise KvalInputError(f"{path}: root attribute(s) missing: {', '.join(missing)}")
    return attrs, [k for k in OPTIONAL_ROOT_ATTRS if k not in attrs]


def _read_ranks(f, path, attrs):
    if "ranks" not in f or not isinstance(f["ranks"], h5py.Group):
        raise KvalInputError(f"{path}: group /ranks is missing")
    g = f["ranks"]
    if "rank" not in g:
        raise KvalInputError(f"{path}: /ranks has no 'rank' dimension scale")
    n = g["rank"].shape[0]
    if n != int(attrs["nranks"]):
        raise KvalInputError(f"{path}: /ranks has {n} rows but the root attribute nranks is {attrs['nranks']}")
    missing = [k for k in REQUIRED_RANK_FIELDS if k not in g]
    if missing:
        raise KvalInputError(f"{path}: /ranks dataset(s) missing: {', '.join(missing)}")
    table = {"rank_in_file": np.asarray(g["rank"][()], dtype=np.int64)}
    for name, dset in g.items():
        if name == "rank" or not isinstance(dset, h5py.Dataset):
            continue
        if dset.shape != (n,) or _dim_names(dset, path) != ["rank"]:
            raise KvalInputError(f"{path}: /ranks/{name} must be 1-D over dimension 'rank' "
                                 f"({n} rows), found shape {dset.shape}")
        data = dset[()]
        table[name] = _strings(data) if data.dtype.kind in "SOU" else data
    return pd.DataFrame(table)


def _axis_values(g, axis, path):
    if axis not in g:
        raise KvalInputError(f"{path}: /{g.name.strip('/')} lists axis '{axis}' in its 'axes' attribute "
                             "but has no dimension-scale dataset of that name")
    data = g[axis][()]
    if data.dtype.kind in "SOU":
        return _strings(data)
    return np.asarray(data, dtype=np.float64 if data.dtype.kind == "f" else np.int64)


def _read_variable(dset, name, path, lookup):
    data = dset[()]
    if name == "status":
        codes = np.asarray(data, dtype=np.int64)
        table = np.array([lookup.get(c, f"unknown({c})") for c in range(codes.min(initial=0),
                                                                           codes.max(initial=0) + 1)], dtype=object)
        return table[codes - codes.min(initial=0)] if codes.size else codes.astype(object)
    if data.dtype.kind in "SOU":
        return _strings(data)
    return data


def _read_family(f, name, path, attrs, rank_coords):
    g = f[name]
    gname = f"/{name}"
    missing = [k for k in REQUIRED_FAMILY_ATTRS if k not in g.attrs]
    if missing:
        raise KvalInputError(f"{path}: group {gname} attribute(s) missing: {', '.join(missing)}")
    axes = [a.strip() for a in str(_decode(g.attrs["axes"])).split(",") if a.strip()]
    if not axes:
        raise KvalInputError(f"{path}: group {gname} has an empty 'axes' attribute")
    missing = [k for k in REQUIRED_FAMILY_DATASETS + ("rank",) if k not in g]
    if missing:
        raise KvalInputError(f"{path}: group {gname} dataset(s) missing: {', '.join(missing)}")
    coords = {a: _axis_values(g, a, path) for a in axes}
    nrank = g["rank"].shape[0]
    if nrank != len(rank_coords["rank"]):
        raise KvalInputError(f"{path}: {gname}/rank has {nrank} entries, /ranks has {len(rank_coords['rank'])}")
    sizes = {"rank": nrank, **{a: len(v) for a, v in coords.items()}}
    hist_edges = None
    if HIST_DIM in g:
        hist_edges = np.asarray(g[HIST_DIM][()], dtype=np.float64)
        sizes[HIST_DIM] = len(hist_edges)
    for dim in PART_DIMS:
        if dim in g:
            coords[dim] = _strings(g[dim][()])
            sizes[dim] = len(coords[dim])
    lookup = _status_lookup(g["status"], attrs)
    derived = str(_decode(g["status"].attrs.get("coordinates", ""))).split()
    coords.update(_derived_coords(g, derived, sizes, path))
    data_vars = {}
    for vname, dset in g.items():
        if not isinstance(dset, h5py.Dataset) or vname in sizes or vname in derived or h5py.h5ds.is_scale(dset.id):
            continue
        dims = _dim_names(dset, path)
        for dim, size in zip(dims, dset.shape):
            if dim not in sizes:
                raise KvalInputError(f"{path}: {gname}/{vname}: dimension '{dim}' is not an axis of "
                                     f"{gname} (axes: {', '.join(axes)})")
            if sizes[dim] != size:
                raise KvalInputError(f"{path}: {gname}/{vname}: dimension '{dim}' has {size} entries, "
                                     f"its scale has {sizes[dim]}")
        va = xr.Variable(dims, _read_variable(dset, vname, path, lookup),
                         attrs={k: _decode(v) for k, v in dset.attrs.items()
                                if k in ("units", "description")})
        if "rank" not in dims:  # per-file comparison tables: broadcast along rank
            va = va.set_dims(["rank"] + dims, shape=[nrank] + list(va.shape))
        order = [d for d in ["rank"] + axes + [HIST_DIM, *PART_DIMS] if d in va.dims]
        data_vars[vname] = va.transpose(*order)
    for required in REQUIRED_FAMILY_DATASETS:
        if data_vars[required].dims != tuple(["rank"] + axes):
            raise KvalInputError(f"{path}: {gname}/{required} must have dimensions "
                                 f"[rank, {', '.join(axes)}], found {list(data_vars[required].dims)}")
    _mark_nonfinite(data_vars)
    if "part_stats" in data_vars:
        _mark_nonfinite_parts(data_vars, list(coords["part_stat"]))
    all_coords = dict(coords)
    all_coords.update({k: ("rank", v) for k, v in rank_coords.items() if k != "rank"})
    all_coords["rank"] = rank_coords["rank"]
    if hist_edges is not None:
        all_coords["hist_lower_log10"] = (HIST_DIM, hist_edges)
    params = {k: _decode(v) for k, v in g.attrs.items()  # the deck parameters: float64 attributes
              if k not in REQUIRED_FAMILY_ATTRS and np.asarray(v).dtype.kind == "f"}
    all_coords["params_key"] = ("rank", np.array([repr(sorted(params.items()))] * nrank, dtype=object))
    ds = xr.Dataset(data_vars, coords=all_coords,
                    attrs={"family": family_kind(name), "section": name, "axes": ",".join(axes), "params": params,
                           "n_cells": int(_decode(g.attrs["n_cells"])),
                           "n_valid": int(_decode(g.attrs["n_valid"])),
                           "n_skipped": int(_decode(g.attrs["n_skipped"]))})
    return ds


def _derived_coords(g, names, sizes, path):
    """The numeric coordinates named by the CF coordinates attribute: name -> (axis, values)."""
    out = {}
    for name in names:
        if name not in g or not isinstance(g[name], h5py.Dataset):
            raise KvalInputError(f"{path}: {g.name}: coordinate {name} (attribute coordinates) is missing")
        dims = _dim_names(g[name], path)
        if len(dims) != 1 or dims[0] not in sizes or g[name].shape[0] != sizes[dims[0]]:
            raise KvalInputError(f"{path}: {g.name}/{name}: a coordinate must be 1-D along an axis, found "
                                 f"dimensions {dims} of shape {g[name].shape}")
        out[name] = (dims[0], np.asarray(g[name][()], dtype=np.int64))
    return out


def _mark_nonfinite(data_vars):
    """+inf in the error statistics of cells with NaN/Inf outputs; n_nonfinite = n_nan + n_inf."""
    if "n_nan" not in data_vars or "n_inf" not in data_vars:
        return
    n_nan, n_inf = data_vars["n_nan"], data_vars["n_inf"]
    bad = ((n_nan > 0) | (n_inf > 0)).values
    count = np.where((n_nan.values < 0) | (n_inf.values < 0), -1, n_nan.values + n_inf.values)
    data_vars["n_nonfinite"] = xr.Variable(n_nan.dims, count, attrs={
        "units": "1", "description": "NaN and Inf outputs where the reference is finite (n_nan + n_inf)"})
    for name in ERROR_FIELDS:
        if name in data_vars and data_vars[name].dims == n_nan.dims:
            v = data_vars[name]
            data_vars[name] = v.copy(data=np.where(bad, np.inf, v.values))



def _mark_nonfinite_parts(data_vars, stats):
    """+inf in the error statistics of the parts with NaN/Inf outputs (as _mark_nonfinite)."""
    v = data_vars["part_stats"]
    axis = v.dims.index("part_stat")
    values = np.moveaxis(v.values.copy(), axis, -1)
    if "n_nan" in stats and "n_inf" in stats:
        bad = (values[..., stats.index("n_nan")] > 0) | (values[..., stats.index("n_inf")] > 0)
        for name in ERROR_FIELDS:
            if name in stats:
                values[..., stats.index(name)] = np.where(bad, np.inf, values[..., stats.index(name)])
    data_vars["part_stats"] = v.copy(data=np.moveaxis(values, -1, axis))


def _gpu_keys(table):
    """GPU identity: the UUID when there is one, else host/device_index/local_rank."""
    keys = []
    for row in table.itertuples():
        uuid = str(getattr(row, "uuid", "") or "")
        keys.append(uuid if uuid else f"{row.host}/dev{getattr(row, 'device_index', '?')}"
                                      f"/local{getattr(row, 'local_rank', row.rank_in_file)}")
    return keys


def _column(table, name, default):
    """A /ranks column as a numpy array, or `default` for every rank when the file lacks it."""
    if name in table:
        return table[name].to_numpy(dtype=object if isinstance(default, str) else None)
    return np.array([default] * len(table), dtype=object if isinstance(default, str) else np.int64)


def _load_file(path, offset):
    if not os.path.exists(path):
        raise KvalInputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise KvalInputError(f"{path}: is a directory, not a kval HDF5 file")
    if not h5py.is_hdf5(path):
        raise KvalInputError(f"{path}: not an HDF5 file")
    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise KvalInputError(f"{path}: cannot open as HDF5: {err}") from None
    try:
        with f:
            return _read_file(f, path, offset)
    except KvalInputError:
        raise
    except Exception as err:  # a damaged file fails anywhere inside h5py: bad input, not a crash
        raise KvalInputError(f"{path}: damaged or unreadable kval file ({type(err).__name__}: {err})") from None


def _read_file(f, path, offset):
    """The run, rank table and family Datasets of one open file."""
    attrs, missing_attrs = _read_root(f, path)
    table = _read_ranks(f, path, attrs)
    nranks = len(table)
    table.insert(0, "rank", np.arange(offset, offset + nranks, dtype=np.int64))
    table["file"] = path
    table["run_time"] = str(attrs["creation_time"])
    table["gpu_key"] = _gpu_keys(table)
    table["compare_key"] = [f"{name}|{attrs['backend']}|seed={attrs.get('seed', '?')}"
                            for name in table["device_name"]]
    rank_coords = {"rank": table["rank"].to_numpy(), "rank_in_file": table["rank_in_file"].to_numpy(),
                   "host": table["host"].to_numpy(dtype=object),
                   "gpu_uuid": table["uuid"].to_numpy(dtype=object),
                   "gpu_name": table["device_name"].to_numpy(dtype=object),
                   "gpu_index": _column(table, "device_index", -1),
                   "pci_bus_id": _column(table, "pci_bus_id", ""),
                   "serial": _column(table, "serial", ""),
                   "file": table["file"].to_numpy(dtype=object),
                   "run_time": table["run_time"].to_numpy(dtype=object),
                   "gpu_key": table["gpu_key"].to_numpy(dtype=object),
                   "compare_key": table["compare_key"].to_numpy(dtype=object)}
    families = {}
    for name, obj in f.items():
        if not isinstance(obj, h5py.Group) or name == "ranks":  # also skips the named type /case_status
            continue
        if "axes" in obj.attrs or family_kind(name) in KNOWN_FAMILIES:
            families[name] = _read_family(f, name, path, attrs, rank_coords)
    return RunFile(path, attrs, nranks, offset, missing_attrs), table, families


def _combine(datasets):
    """Concatenate one family's Datasets of several files along rank (outer join of axes)."""
    if len(datasets) == 1:
        return datasets[0]
    fills = {}
    for v, da in datasets[0].data_vars.items():
        if v in FILL:
            fills[v] = FILL[v]
        elif da.dtype.kind in "iu":
            fills[v] = -1
        elif da.dtype.kind == "O":
            fills[v] = ""
        else:
            fills[v] = np.nan
    combined = xr.concat(datasets, dim="rank", data_vars="all", coords="different", compat="equals",
                         join="outer", fill_value=fills, combine_attrs="override")
    for v in combined.data_vars:  # keep the file's integer types where the join introduced fills
        if v in datasets[0] and combined[v].dtype != datasets[0][v].dtype and datasets[0][v].dtype.kind in "iu":
            combined[v] = combined[v].astype(datasets[0][v].dtype)
    return combined


def load(paths):
    """Load and validate kval files; raises KvalInputError on bad input."""
    if not paths:
        raise KvalInputError("no input files given")
    files, tables, per_family, notes = [], [], {}, []
    offset = 0
    for path in paths:
        run, table, families = _load_file(str(path), offset)
        offset += run.nranks
        files.append(run)
        tables.append(table)
        if str(run.attrs.get("complete", 1)) in ("0", "False"):
            notes.append(f"{run.path}: the run did not complete (root attribute complete = 0): "
                         "cells it did not reach read as not_run")
        if run.missing_attrs:
            notes.append(f"{run.path}: optional root attribute(s) absent: {', '.join(run.missing_attrs)}")
        for name, ds in families.items():
            per_family.setdefault(name, []).append(ds)
    for name, dsets in per_family.items():
        params = [ds.attrs["params"] for ds in dsets]
        if any(p != params[0] for p in params[1:]):
            notes.append(f"{name}: parameters differ between files ({params}); cases with equal "
                         "axis values are still combined")
    families = {name: _combine(dsets) for name, dsets in per_family.items()}
    ranks = pd.concat(tables, ignore_index=True)
    statuses = list(STATUS_NAMES)
    for ds in families.values():
        statuses += [str(v) for v in pd.unique(ds["status"].values.ravel()) if str(v) not in statuses]
    return KvalRuns(files, ranks, dict(sorted(families.items(), key=lambda kv: _family_order(kv[0]))), notes,
                    statuses)


def family_kind(name):
    """The family of a group: /fa2, or a named deck section's group /fa2.NAME."""
    return name.split(".", 1)[0]


def _family_order(name):
    kind = family_kind(name)
    return (KNOWN_FAMILIES.index(kind) if kind in KNOWN_FAMILIES else len(KNOWN_FAMILIES), name)


def family_axes(ds):
    return ds.attrs["axes"].split(",")


def case_frame(ds, variables=None):
    """Long table: one row per (rank, cell) with the axis values, per-rank coordinates and the
    requested variables (all per-cell variables when None)."""
    extra = (HIST_DIM, *PART_DIMS)  # the histogram and the part statistics: not one value per cell
    per_cell = [v for v in ds.data_vars if not set(extra) & set(ds[v].dims)]
    if variables is not None:
        per_cell = [v for v in variables if v in per_cell]
    sub = ds[per_cell]
    sub = sub.drop_vars([c for c in sub.coords if set(extra) & set(sub[c].dims)])
    sub = sub.drop_dims([d for d in sub.dims if d in extra])
    frame = sub.to_dataframe().reset_index()
    for col in ("host", "gpu_uuid", "gpu_name", "file", "run_time", "gpu_key", "compare_key", "params_key"):
        if col in frame:
            frame[col] = frame[col].astype(object)
    return frame


def part_view(ds, part):
    """The family Dataset with one part's statistics (part_stats) in place of the whole
    output's, for the per-case tables and fits of that part; integer statistics keep the
    file's fill (-1) where the part has none."""
    view = ds.drop_vars("part_stats")
    for stat in (str(x) for x in ds["part_stat"].values):
        if stat in view:
            v = ds["part_stats"].sel(part=part, part_stat=stat, drop=True)
            view[stat] = (v.fillna(-1) if view[stat].dtype.kind in "iu" else v).astype(view[stat].dtype)
    return view.drop_dims(list(PART_DIMS))


def case_labels(frame, axes):
    """'precision=fp16:fp32 headdim=64 ...' for every row of a case frame (vectorised)."""
    labels = pd.Series("", index=frame.index, dtype=object)
    for i, a in enumerate(axes):
        labels = labels + ("" if i == 0 else " ") + f"{a}=" + frame[a].astype(str)
    return labels
