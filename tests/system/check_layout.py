#!/usr/bin/env python3
"""check_layout.py - check that a kval HDF5 file follows the agreed layout (README, "HDF5 file
layout"), with h5py and with xarray (engine netcdf4, else h5netcdf; every group opened at once): root attributes,
/ranks (one row per rank), every family group with its axis, rank and hist_bin dimension
scales (and the part and part_stat scales of a family whose output has parts), the per-cell datasets with their types, fill values, CF long_name and named
dimensions, the status enum (the named type /case_status), the numeric coordinates named by
the CF coordinates attribute, the fingerprint comparison datasets, the contents of cells that
were not run, the part statistics that add up to the whole output's, and the row checksum of
every cell that holds a result (tests/system/kvrows.py).

Usage: python3 tests/system/check_layout.py FILE [FILE...] --nranks N [--expect-run]
  --expect-run  the file comes from a finished run: complete == 1, every planned case has a
                result (fleet: on every rank; split: on exactly one rank), run cells have
                timings and checked elements.
Exit status 0 when every file conforms; 1 with one line per problem otherwise."""
import argparse
import os
import posixpath
import re
import shlex
import sys

import h5py
import numpy as np
import xarray as xr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvrows  # noqa: E402  (the row checksum, src/output/row.c)

def xarray_engine():
    """xarray's engine for the view: netcdf4 (netCDF-C), else h5netcdf, whichever is installed
    first (tests/system/check_clients.py reads every file it is given with both); None: only the
    h5py checks run (said on stderr). netcdf4 first: h5netcdf names each dimension by
    dereferencing its scale and asking h5py for the name, a search of the whole file per
    dimension of every variable (half a minute for a smoke.deck file)."""
    for module, engine in (("netCDF4", "netcdf4"), ("h5netcdf", "h5netcdf")):
        try:
            __import__(module)
            return engine
        except ImportError:
            pass
    return None


ENGINE = xarray_engine()


def open_groups(path):
    """{"/group": Dataset} of every group of the file: xr.open_groups (xarray 2024.10 and
    later), else one xr.open_dataset per group that h5py lists."""
    if hasattr(xr, "open_groups"):
        return xr.open_groups(path, engine=ENGINE)
    with h5py.File(path, "r") as f:
        names = [k for k in f if isinstance(f[k], h5py.Group)]
    return {"/" + k: xr.open_dataset(path, group=k, engine=ENGINE) for k in names}

def status_names():
    """The case status names in value order, from kv_status_name's table in src/core/dtype.c."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "core", "dtype.c")
    table = re.search(r"names\[KV_NSTATUS\] = \{(.*?)\};", open(path).read(), re.S).group(1)
    return re.findall(r'"(\w+)"', table)


STATUS = status_names()
NOT_RUN, PASS, FAIL_TOL, FAIL_NONFINITE, SKIPPED, ERROR = range(6)
HIST_BINS = 20
MESSAGE_LEN = 96
ROOT_STRINGS = ["kval_version", "git_commit", "command_line", "deck_text", "deck_path", "creation_time",
                "mpi_version", "hdf5_version", "cuda_runtime", "cuda_driver", "slurm_job_id", "slurm_nodes",
                "backend", "mode", "hdf5_flavour", "status_names", "Conventions"]
RANK_FIELDS = {"host": "s", "local_rank": "i", "local_size": "i", "device_index": "i", "device_name": "s",
               "uuid": "s", "serial": "s", "pci_bus_id": "s", "sm_count": "i", "cc_major": "i", "cc_minor": "i",
               "memory_bytes": "f", "driver_version": "i", "runtime_version": "i", "copy_gbps": "f",
               "matrix_tflops": "f", "fp64_tflops": "f", "nvml": "s"}
SPECIAL = {"status", "fingerprint", "checksum", "message", "hist", "fp_distinct", "fp_majority", "fp_agrees", "path", "rank",
           "hist_bin", "part", "part_stat"}
# the families whose checked output has parts (kv_family.out_parts), and their names
PARTS = {"fa2bwd": ["dq", "dk", "dv"]}
MAX_PARTS, PART_STATS = kvrows.part_layout()


def units_of(name):
    """The UDUNITS-2 units a numeric dataset's name implies (README, "The HDF5 file": "1" for
    counts, ratios and ULPs, s, MHz, W, degC, byte, 1e12 s-1 for TFLOP/s, 1e9 byte s-1 for
    GB/s): a rule written apart from the C tables (src/core/result.h, src/output/layout.c),
    so that a unit written wrong there shows here."""
    if name.startswith(("t_", "time_")) or name.endswith("_seconds"):
        return "s"
    if name == "tflops" or name.endswith("_tflops"):
        return "1e12 s-1"
    if name == "gbps" or name.endswith("_gbps"):
        return "1e9 byte s-1"
    if name.endswith("_bytes"):
        return "byte"
    if "clock" in name and name != "clock_flag":
        return "MHz"
    return {"temperature": "degC", "power": "W", "intensity": "byte-1"}.get(name, "1")


def deck_settings(f, section):
    """{key: value text} of the deck's entries in [section] (the root attribute deck_text), with
    the command line's --set section.key=VALUES (attribute command_line) over them."""
    out, current = {}, None
    for line in str(f.attrs.get("deck_text", "")).splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"\[([\w.]+)\]", line)
        if m:
            current = m.group(1)
        elif current == section and "=" in line:
            key, value = (x.strip() for x in line.split("=", 1))
            out[key] = value
    words = shlex.split(str(f.attrs.get("command_line", "")))
    for i, w in enumerate(words):
        arg = w[len("--set="):] if w.startswith("--set=") else words[i + 1] if w == "--set" and i + 1 < len(words) else None
        if arg and "=" in arg and arg.split("=", 1)[0].rsplit(".", 1)[0] == section:
            key, value = arg.split("=", 1)
            out[key.rsplit(".", 1)[1]] = value.strip()
    return out


def layout_version():
    """KV_LAYOUT_VERSION of src/output/internal.h, the one definition of the layout's version."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "output", "internal.h")
    return int(re.search(r"#define KV_LAYOUT_VERSION (\d+)", open(path).read()).group(1))


class Checker:
    def __init__(self, path, nranks, expect_run):
        self.path, self.nranks, self.expect_run = path, nranks, expect_run
        self.problems = []
        self.views = None  # xarray's Datasets of the groups, opened once (view)

    def bad(self, where, msg):
        self.problems.append("%s: %s: %s" % (self.path, where, msg))

    def expect(self, cond, where, msg):
        if not cond:
            self.bad(where, msg)
        return cond

    # --- root and /ranks ---
    def root(self, f):
        a = f.attrs
        for name in ROOT_STRINGS:
            if self.expect(name in a, "/", "attribute %s missing" % name):
                self.expect(isinstance(a[name], str), "/", "attribute %s is not a string" % name)
        for name in ("seed", "file_id", "nranks", "layout_version", "complete"):
            self.expect(name in a, "/", "attribute %s missing" % name)
        if self.problems:
            return False
        self.expect(a["seed"].dtype == np.uint64, "/", "seed is %s, expected uint64" % a["seed"].dtype)
        run = deck_settings(f, "run")
        settings = dict(kv.split("=", 1) for kv in str(a.get("run_settings", "")).split())
        self.deck_numbers(run, settings, "/", "run_settings %s=%s")  # the [run] entries it records
        seed = run.get("seed")
        self.expect(seed is None or int(a["seed"]) == int(seed), "/", "seed %s, the deck sets %s" % (a["seed"], seed))
        self.expect(a["file_id"].dtype == np.uint64 and int(a["file_id"]) != 0, "/", "file_id is not a nonzero uint64")
        self.expect(int(a["nranks"]) == self.nranks, "/", "nranks %s, expected %d" % (a["nranks"], self.nranks))
        want = layout_version()
        self.expect(int(a["layout_version"]) == want, "/", "layout_version %s, expected %d" % (a["layout_version"], want))
        self.expect(a["mode"] in ("fleet", "split"), "/", "mode %r" % a["mode"])
        self.expect(a["hdf5_flavour"] in ("parallel", "serial"), "/", "hdf5_flavour %r" % a["hdf5_flavour"])
        want = ",".join("%d=%s" % (i, s) for i, s in enumerate(STATUS))
        self.expect(a["status_names"] == want, "/", "status_names %r, expected %r" % (a["status_names"], want))
        self.expect(int(a["complete"]) in (0, 1), "/", "complete %s" % a["complete"])
        self.expect(a["Conventions"].startswith("CF-"), "/", "Conventions %r" % a["Conventions"])
        if self.expect(isinstance(f.get("case_status"), h5py.Datatype), "/case_status", "named status type missing"):
            self.expect(h5py.check_enum_dtype(f["case_status"].dtype) == {s: i for i, s in enumerate(STATUS)},
                        "/case_status", "enum %s" % h5py.check_enum_dtype(f["case_status"].dtype))
        if self.expect_run:
            self.expect(int(a["complete"]) == 1, "/", "complete is %s: the run did not finish" % a["complete"])
        return True

    def deck_numbers(self, deck, recorded, where, what):
        """Every numeric deck entry that `recorded` ({key: value}) also holds has the deck's value
        there (`what` % (key, recorded value) names it)."""
        for key, value in deck.items():
            try:
                want = float(value)
            except ValueError:
                continue
            if key in recorded:
                self.expect(float(recorded[key]) == want, where, (what + ", the deck sets %s") % (key, recorded[key], value))

    def scale(self, g, name, n, where):
        if not self.expect(name in g, where, "dimension scale %s missing" % name):
            return None
        d = g[name]
        self.expect(d.is_scale, where, "%s is not a dimension scale" % name)
        self.expect(d.shape == (n,), where, "%s has shape %s, expected (%d,)" % (name, d.shape, n))
        return d

    def attached(self, ds, scales, where):
        """Dimension i of ds is attached to scales[i] (h5py objects), and to nothing else. The
        scales are compared as objects (file and address); their names, which h5py finds for an
        object reached through a reference by searching the whole file, only for a message."""
        if not self.expect(len(ds.dims) == len(scales), where, "%d dimensions, expected %d" % (len(ds.dims), len(scales))):
            return
        for i, s in enumerate(scales):
            got = ds.dims[i].values()
            if not (len(got) == 1 and got[0] == s):
                self.bad(where, "dimension %d attached to %s, expected %s" % (i, [d.name for d in got], s.name))

    def ranks(self, f):
        if not self.expect("ranks" in f, "/ranks", "group missing"):
            return
        g = f["ranks"]
        rank = self.scale(g, "rank", self.nranks, "/ranks")
        if rank is None:
            return
        self.expect(np.array_equal(rank[()], np.arange(self.nranks)), "/ranks/rank", "values %s" % rank[()])
        for name, kind in RANK_FIELDS.items():
            if not self.expect(name in g, "/ranks", "dataset %s missing" % name):
                continue
            d = g[name]
            self.expect(d.shape == (self.nranks,), "/ranks/" + name, "shape %s, one row per rank expected" % (d.shape,))
            if kind == "s":
                self.expect(h5py.check_string_dtype(d.dtype) is not None and h5py.check_string_dtype(d.dtype).length is None,
                            "/ranks/" + name, "not a variable-length string")
            else:
                self.expect(d.dtype.kind == kind, "/ranks/" + name, "dtype %s" % d.dtype)
                self.expect(d.attrs.get("units") == units_of(name), "/ranks/" + name,
                            "units %r, expected %r" % (d.attrs.get("units"), units_of(name)))
            self.attached(d, [rank], "/ranks/" + name)
        ds = self.view("ranks")
        if ds is None:
            return
        for name in RANK_FIELDS:
            if name in ds:
                self.expect(ds[name].dims == ("rank",), "/ranks/" + name, "xarray dims %s" % (ds[name].dims,))

    def view(self, group):
        """xarray's Dataset of a group (None without an engine, or when xarray does not see
        the group: a problem). Every group is opened in one pass over the file (xr.open_groups;
        netCDF-C reads the file's metadata on every open) and closed by run()."""
        if not ENGINE:
            return None
        if self.views is None:
            try:
                self.views = open_groups(self.path)
            except Exception as e:  # noqa: BLE001 (whatever the engine raises, the file is not readable by it)
                self.views = {}
                self.bad("/", "xarray (engine %s) cannot open the file: %s: %s" % (ENGINE, type(e).__name__, e))
                return None
        ds = self.views.get("/" + group)
        self.expect(ds is not None or not self.views, "/" + group, "xarray (engine %s) sees no such group" % ENGINE)
        return ds

    # --- family groups ---
    def family(self, f, name, doubles, ints):
        g, where = f[name], "/" + name
        start = len(self.problems)
        for a in ("axes", "n_cells", "n_valid", "n_skipped", "n_results"):
            if not self.expect(a in g.attrs, where, "attribute %s missing" % a):
                return
        axes = g.attrs["axes"].split(",")
        n_cells, n_skipped = int(g.attrs["n_cells"]), int(g.attrs["n_skipped"])
        # the family's parameters (numeric attributes besides the counts) hold what the deck set
        counts = ("n_cells", "n_valid", "n_skipped", "n_results")
        params = {k: v for k, v in g.attrs.items() if k not in axes and k not in counts}
        self.deck_numbers(deck_settings(f, name), params, where, "parameter %s is %s")
        self.expect(int(g.attrs["n_valid"]) + n_skipped == n_cells, where, "n_valid + n_skipped != n_cells")
        rank = self.scale(g, "rank", self.nranks, where)
        axis_scales = []
        for ax in axes:
            if ax not in g:
                self.bad(where, "axis scale %s missing" % ax)
                return
            s = g[ax]
            self.expect(s.is_scale and s.ndim == 1, where, "axis %s is not a 1-D dimension scale" % ax)
            strdt = h5py.check_string_dtype(s.dtype)
            self.expect(s.dtype in (np.int64, np.float64) or
                        (strdt is not None and strdt.length is None and strdt.encoding == "utf-8"),
                        where, "axis %s has dtype %s (int64, float64 or variable-length UTF-8 expected)" % (ax, s.dtype))
            axis_scales.append(s)
        hist_bin = self.scale(g, "hist_bin", HIST_BINS, where)
        if rank is None or hist_bin is None or len(self.problems) > start:
            return
        shape = tuple(s.shape[0] for s in axis_scales)
        self.expect(int(np.prod(shape)) == n_cells, where, "axis lengths %s do not make n_cells %d" % (shape, n_cells))
        edges = np.concatenate(([-np.inf], np.arange(-13, 5, dtype=float), [np.nan]))
        self.expect(np.array_equal(hist_bin[()], edges, equal_nan=True), where + "/hist_bin", "values %s" % hist_bin[()])
        full, cell_scales = (self.nranks,) + shape, [rank] + axis_scales
        spec = {"status": (full, None, 0), "fingerprint": (full, np.uint64, 0), "checksum": (full, np.uint64, 0),
                "message": (full, "S96", b""),
                "hist": (full + (HIST_BINS,), np.uint64, 0), "fp_distinct": (shape, np.int32, 0),
                "fp_majority": (shape, np.uint64, 0), "fp_agrees": (full, np.int8, 2)}
        spec.update({d: (full, np.float64, np.nan) for d in doubles})
        spec.update({i: (full, np.int64, -1) for i in ints})
        parts = PARTS.get(name.split(".")[0], [])
        part = part_stat = None
        if parts:
            part = self.scale(g, "part", len(parts), where)
            part_stat = self.scale(g, "part_stat", len(PART_STATS), where)
            if part is None or part_stat is None:
                return
            text = lambda v: [x.decode() if isinstance(x, bytes) else x for x in v[()]]
            self.expect(text(part) == parts, where + "/part", "values %s, expected %s" % (text(part), parts))
            self.expect(text(part_stat) == PART_STATS, where + "/part_stat", "values %s" % text(part_stat))
            spec["part_stats"] = (full + (len(parts), len(PART_STATS)), np.float64, np.nan)
        self.expect(len(parts) <= MAX_PARTS, where, "%d parts, at most %d" % (len(parts), MAX_PARTS))
        self.expect(parts or not any(k in g for k in ("part", "part_stat", "part_stats")), where,
                    "part statistics in a family without parts")
        for dname, (dshape, dtype, fill) in spec.items():
            if not self.expect(dname in g, where, "dataset %s missing" % dname):
                continue
            d, dw = g[dname], where + "/" + dname
            self.expect(d.shape == dshape, dw, "shape %s, expected %s" % (d.shape, dshape))
            if dtype is not None:
                self.expect(d.dtype == np.dtype(dtype), dw, "dtype %s, expected %s" % (d.dtype, np.dtype(dtype)))
            got_fill = d.fillvalue
            same = np.isnan(got_fill) if isinstance(fill, float) and np.isnan(fill) else got_fill == fill
            self.expect(same, dw, "fill value %r, expected %r" % (got_fill, fill))
            if dname == "hist":
                scales = cell_scales + [hist_bin]
            elif dname == "part_stats":
                scales = cell_scales + [part, part_stat]
            elif dname in ("fp_distinct", "fp_majority"):
                scales = axis_scales
            else:
                scales = cell_scales
            self.attached(d, scales, dw)
            if dname in doubles or dname in ints:
                for a in ("units", "description"):
                    self.expect(a in d.attrs, dw, "attribute %s missing" % a)
                self.expect(d.attrs.get("units") == units_of(dname), dw,
                            "units %r, expected %r" % (d.attrs.get("units"), units_of(dname)))
            self.expect("long_name" in d.attrs, dw, "attribute long_name missing")
        coords = str(g["status"].attrs.get("coordinates", "")).split() if "status" in g else []
        for c in coords:
            if self.expect(c in g, where, "coordinate %s (attribute coordinates) missing" % c):
                d = g[c]
                if self.expect(d.ndim == 1 and d.dtype == np.int64 and len(d.dims[0].values()) == 1 and
                               posixpath.basename(d.dims[0].values()[0].name) in axes, where + "/" + c,
                               "not a 1-D int64 dataset along an axis") and c in ("M", "N", "K") and "shape" in g:
                    # GEMM's M, N, K along shape (README): the numbers of each "MxNxK"
                    text = [x.decode() if isinstance(x, bytes) else x for x in g["shape"][()]]
                    want = [int(t.split("x")["MNK".index(c)]) for t in text]
                    got = [int(x) for x in d[()]]
                    self.expect(got == want, where + "/" + c, "values %s, the shapes say %s" % (got, want))
        shipped = name.split(".")[0] in ("fa2", "gemm", "layernorm", "rmsnorm")  # families with kernel paths
        self.expect("path" in g or not shipped, where, "dataset path missing")
        if "path" in g:
            d = g["path"]
            strdt = h5py.check_string_dtype(d.dtype)
            self.expect(d.shape == shape and strdt is not None and strdt.length is None, where + "/path",
                        "shape %s dtype %s, expected %s variable-length strings" % (d.shape, d.dtype, shape))
            self.attached(d, axis_scales, where + "/path")
            filled = int(sum(1 for v in d[()].ravel() if v))
            self.expect(filled == int(g.attrs["n_valid"]), where + "/path",
                        "%d cells with a path, n_valid is %s" % (filled, g.attrs["n_valid"]))
        extra = set(g) - set(spec) - SPECIAL - set(axes) - set(coords)
        self.expect(not extra, where, "unexpected objects %s" % sorted(extra))
        if len(self.problems) == start:
            self.status_enum(g["status"], where + "/status")
        if len(self.problems) == start:
            self.cells(g, where, doubles, ints, n_skipped)
        if len(self.problems) == start and parts:
            self.part_cells(g, where)
        if len(self.problems) == start and ENGINE:
            self.xarray_view(name, axes, axis_scales, doubles, ints, len(parts))

    def status_enum(self, d, where):
        mapping = h5py.check_enum_dtype(d.dtype)
        want = {s: i for i, s in enumerate(STATUS)}
        self.expect(mapping == want, where, "enum %s, expected %s" % (mapping, want))
        self.expect(d.dtype.base == np.int8, where, "enum base %s, expected int8" % d.dtype.base)
        self.expect(d.attrs.get("flag_meanings") == " ".join(STATUS), where, "flag_meanings %r" % d.attrs.get("flag_meanings"))
        self.flags(d, where, len(STATUS))
        agrees, aw = d.parent["fp_agrees"], where[:-len("status")] + "fp_agrees"
        self.expect(agrees.attrs.get("flag_meanings") == "disagrees agrees not_comparable", aw,
                    "flag_meanings %r" % agrees.attrs.get("flag_meanings"))
        self.flags(agrees, aw, 3)

    def flags(self, d, where, n):
        """CF flag_values: int8 0 .. n-1, the values the flag_meanings name in order."""
        values = d.attrs.get("flag_values")
        self.expect(values is not None and np.asarray(values).dtype == np.int8 and
                    np.array_equal(np.asarray(values), np.arange(n)), where,
                    "flag_values %s, expected 0 .. %d" % (values, n - 1))

    def cells(self, g, where, doubles, ints, n_skipped):
        status = g["status"][()]
        mode, complete = g.file.attrs["mode"], int(g.file.attrs["complete"])
        flat = status.reshape(self.nranks, -1)
        bad = (flat < 0) | (flat >= len(STATUS))
        self.expect(not bad.any(), where + "/status", "%d values outside the enum" % bad.sum())
        msg = g["message"][()].reshape(self.nranks, -1)
        empty = msg == b""
        not_run = flat == NOT_RUN
        fills = [(n, g[n][()].reshape(self.nranks, -1), "nan") for n in doubles] + \
                [(n, g[n][()].reshape(self.nranks, -1), -1) for n in ints] + \
                [("fingerprint", g["fingerprint"][()].reshape(self.nranks, -1), 0),
                 ("checksum", g["checksum"][()].reshape(self.nranks, -1), 0),
                 ("hist", g["hist"][()].reshape(self.nranks, -1, HIST_BINS).sum(axis=2), 0)]
        for name, v, fill in fills:
            is_fill = np.isnan(v) if fill == "nan" else v == fill
            n = int((not_run & ~is_fill).sum())
            self.expect(n == 0, where + "/" + name, "%d not-run cells do not hold the fill value %s" % (n, fill))
        self.expect(not (not_run & ~empty).any(), where + "/message", "not-run cells with a message")
        sums = kvrows.group_checksums(g).reshape(self.nranks, -1)
        wrong = ~not_run & (sums != g["checksum"][()].reshape(self.nranks, -1))
        self.expect(not wrong.any(), where + "/checksum", "%d rows do not match their checksum" % wrong.sum())
        skipped = flat == SKIPPED
        self.expect(not (skipped & empty).any(), where + "/message", "skipped cells without a reason")
        plan_skipped = skipped.all(axis=0) & (msg == msg[0]).all(axis=0)
        self.expect(plan_skipped.sum() >= n_skipped, where, "%d cells skipped with the same reason on every rank, "
                    "n_skipped is %d" % (plan_skipped.sum(), n_skipped))
        agrees = g["fp_agrees"][()]
        self.expect(np.isin(agrees, (0, 1, 2)).all(), where + "/fp_agrees", "values outside 0, 1, 2")
        self.expect((g["fp_distinct"][()] >= 0).all(), where + "/fp_distinct", "negative counts")
        have = (~not_run).sum()
        if complete:
            n_results = int(g.attrs["n_results"])
            want = int(have) - self.nranks * n_skipped
            self.expect(n_results == want, where, "n_results %d, the status dataset has %d results" % (n_results, want))
        if not self.expect_run:
            return
        per_cell = (~not_run).sum(axis=0)
        if mode == "fleet":
            self.expect(not not_run.any(), where + "/status", "%d cells not run in a finished fleet run" % not_run.sum())
        else:
            owners = np.where(skipped.all(axis=0), 1, per_cell)
            self.expect((owners == 1).all(), where + "/status", "split run: cells run on %s ranks, expected 1"
                        % sorted(set(owners[owners != 1].tolist())))
        ran = np.isin(flat, (PASS, FAIL_TOL, FAIL_NONFINITE))
        t = g["time_median"][()].reshape(self.nranks, -1)
        self.expect(ran.any(), where, "no cell was run")
        self.expect((np.isfinite(t[ran]) & (t[ran] > 0)).all(), where + "/time_median", "run cells without a timing")
        nc = g["n_checked"][()].reshape(self.nranks, -1)
        self.expect((nc[ran] > 0).all(), where + "/n_checked", "run cells with no checked element")
        self.expect(not ((flat == ERROR) & empty).any(), where + "/message", "error cells without a message")

    def part_cells(self, g, where):
        """Cells not run hold NaN part statistics; the parts of a judged cell tile its output:
        their checked elements add up to the whole's and their largest bound ratio is the
        whole's."""
        flat = g["status"][()].reshape(self.nranks, -1)
        ps = g["part_stats"][()].reshape(self.nranks, flat.shape[1], -1, len(PART_STATS))
        stat = lambda s: ps[..., PART_STATS.index(s)]
        not_run = flat == NOT_RUN
        self.expect(np.isnan(ps[not_run]).all(), where + "/part_stats", "not-run cells that hold part statistics")
        judged = np.isin(flat, (PASS, FAIL_TOL, FAIL_NONFINITE))
        self.expect(np.isfinite(stat("n_checked")).all(axis=-1)[judged].all(), where + "/part_stats",
                    "judged cells without part statistics")
        nc = g["n_checked"][()].reshape(self.nranks, -1)
        ratio = g["max_bound_ratio"][()].reshape(self.nranks, -1)
        self.expect((stat("n_checked").sum(axis=-1)[judged] == nc[judged]).all(), where + "/part_stats",
                    "cells whose parts' checked elements do not add up to n_checked")
        self.expect((stat("max_bound_ratio").max(axis=-1)[judged] == ratio[judged]).all(), where + "/part_stats",
                    "cells whose parts' largest bound ratio is not max_bound_ratio")

    def xarray_view(self, name, axes, axis_scales, doubles, ints, n_parts):
        where = "/%s (xarray)" % name
        ds = self.view(name)
        if ds is None:
            return
        want_dims = {"rank": self.nranks, "hist_bin": HIST_BINS}
        if n_parts:
            want_dims.update({"part": n_parts, "part_stat": len(PART_STATS)})
        want_dims.update({a: s.shape[0] for a, s in zip(axes, axis_scales)})
        self.expect(dict(ds.sizes) == want_dims, where, "dimensions %s, expected %s" % (dict(ds.sizes), want_dims))
        cell = ("rank",) + tuple(axes)
        for v in ["status", "fingerprint", "checksum", "message", "fp_agrees"] + doubles + ints:
            self.expect(ds[v].dims == cell, where, "%s has dims %s, expected %s" % (v, ds[v].dims, cell))
        for v in doubles:
            self.expect(ds[v].dtype == np.float64, where, "%s decoded as %s" % (v, ds[v].dtype))
        self.expect(ds["hist"].dims == cell + ("hist_bin",), where, "hist dims %s" % (ds["hist"].dims,))
        if n_parts:
            self.expect(ds["part_stats"].dims == cell + ("part", "part_stat"), where,
                        "part_stats dims %s" % (ds["part_stats"].dims,))
        for v in ("fp_distinct", "fp_majority"):
            self.expect(ds[v].dims == tuple(axes), where, "%s dims %s" % (v, ds[v].dims))
        self.expect(np.array_equal(ds["rank"].values, np.arange(self.nranks)), where, "rank coordinate")
        for a, s in zip(axes, axis_scales):
            got, want = ds[a].values, s[()]
            if want.dtype.kind == "O":
                want = np.array([w.decode() if isinstance(w, bytes) else w for w in want])
            self.expect(np.array_equal(got.astype(want.dtype), want), where, "coordinate %s is %s, expected %s" % (a, got, want))
        self.expect(ds["status"].attrs.get("flag_meanings") == " ".join(STATUS), where, "status flag_meanings")

    def run(self):
        doubles, ints = kvrows.result_fields()
        try:
            f = h5py.File(self.path, "r")
        except OSError as e:
            self.bad("/", "cannot open: %s" % e)
            return
        try:
            with f:
                self.check(f, doubles, ints)
        finally:
            for ds in (self.views or {}).values():
                ds.close()

    def check(self, f, doubles, ints):
        if not self.root(f):
            return
        self.ranks(f)
        families = [k for k in f if k != "ranks" and not isinstance(f[k], h5py.Datatype)]
        self.expect(families, "/", "no family group")
        for name in families:
            if self.expect(isinstance(f[name], h5py.Group), "/" + name, "not a group"):
                self.family(f, name, doubles, ints)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--nranks", type=int, required=True)
    ap.add_argument("--expect-run", action="store_true")
    args = ap.parse_args()
    if not ENGINE:
        print("check_layout: neither netCDF4 nor h5netcdf is installed: the xarray view of the files is not checked",
              file=sys.stderr)
    failed = 0
    for path in args.files:
        c = Checker(path, args.nranks, args.expect_run)
        try:
            c.run()
        except Exception as e:  # a file so broken that a check itself fails is a mismatch too
            c.bad("/", "check failed with %s: %s" % (type(e).__name__, e))
        for p in c.problems:
            print("check_layout: " + p, file=sys.stderr)
        if c.problems:
            failed += 1
        else:
            print("check_layout: %s: OK (%d ranks%s)" % (path, args.nranks, ", finished run" if args.expect_run else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
