#!/usr/bin/env python3
"""check_clients.py - open a kval file completely with the clients its readers use: h5py,
netCDF4-python (every variable of every group read and compared with h5py, status and
message included), xarray with the netcdf4 and the h5netcdf engines (every group loaded, the
enum and the gemm M/N/K coordinates seen), and check the CF description: Conventions, a
long_name on every variable, units on every numeric variable that parse with UDUNITS-2
(udunits2, when installed), _FillValue where not-run cells hold a fill.

Usage: python3 tests/system/check_clients.py FILE
Exit 0 when every client reads everything; 1 with one line per problem."""
import shutil
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import xarray as xr

FLAGS = ("status", "fp_agrees")  # CF flag variables: no units
NO_UNITS = {"fingerprint", "checksum", "fp_majority", "message"}  # hashes and text


def h5_values(path):
    """group -> variable -> numpy values as h5py reads them (strings decoded)."""
    out = {}
    with h5py.File(path, "r") as f:
        for gname, g in f.items():
            if not isinstance(g, h5py.Group):
                continue
            out[gname] = {}
            for vname, d in g.items():
                data = d[()]
                if data.dtype.kind in "SO":
                    data = np.array([v.decode() if isinstance(v, bytes) else v for v in data.ravel()],
                                    dtype=object).reshape(data.shape)
                out[gname][vname] = data
    return out


def units_parse(units):
    """True when udunits2 parses the string (None: udunits2 not installed)."""
    if not shutil.which("udunits2"):
        return None
    r = subprocess.run(["udunits2", "-H", units, "-W", ""], capture_output=True, text=True, timeout=30)
    return r.returncode == 0 and "Don't recognize" not in r.stdout + r.stderr


def main(path):
    problems = []
    ref = h5_values(path)
    nc = netCDF4.Dataset(path)
    if not str(getattr(nc, "Conventions", "")).startswith("CF-"):
        problems.append("root: no CF Conventions attribute")
    units_seen = set()
    for gname, want in ref.items():
        if gname not in nc.groups:
            problems.append(f"netCDF4: group /{gname} missing")
            continue
        g = nc.groups[gname]
        g.set_auto_mask(False)
        for vname, values in want.items():
            if vname not in g.variables:
                problems.append(f"netCDF4: /{gname}/{vname} missing")
                continue
            v = g.variables[vname]
            got = np.asarray(v[...])
            if values.dtype == object:
                same = got.shape == values.shape and all(str(a) == str(b) for a, b in zip(got.ravel(), values.ravel()))
            else:
                same = np.array_equal(got.astype(values.dtype), values, equal_nan=values.dtype.kind == "f")
            if not same:
                problems.append(f"netCDF4: /{gname}/{vname} differs from h5py")
            attrs = v.ncattrs()
            if "long_name" not in attrs:
                problems.append(f"/{gname}/{vname}: no long_name")
            numeric = values.dtype.kind in "iuf" and vname not in NO_UNITS and vname not in FLAGS
            if numeric and "units" not in attrs and vname not in ("hist",):
                problems.append(f"/{gname}/{vname}: no units")
            if "units" in attrs:
                units_seen.add(v.getncattr("units"))
            if vname in ("time_median", "n_nan", "fingerprint", "status") and "_FillValue" not in attrs:
                problems.append(f"/{gname}/{vname}: no _FillValue")
    nc.close()
    for u in sorted(units_seen):
        ok = units_parse(u)
        if ok is False:
            problems.append(f"units {u!r} do not parse with UDUNITS-2")
    for engine in ("netcdf4", "h5netcdf"):
        for gname in ref:
            try:
                ds = xr.open_dataset(path, group=gname, engine=engine).load()
            except Exception as err:  # any exception is a client that cannot read the group
                problems.append(f"xarray {engine}: /{gname}: {type(err).__name__}: {err}")
                continue
            missing = [v for v in ref[gname] if v not in ds.variables]
            if missing:
                problems.append(f"xarray {engine}: /{gname}: variables missing: {missing}")
            if gname.split(".")[0] == "gemm" and not {"M", "N", "K"} <= set(ds.coords):
                problems.append(f"xarray {engine}: /gemm: M, N, K are not coordinates ({sorted(ds.coords)})")
            ds.close()
    for p in problems:
        print(f"check_clients: {path}: {p}", file=sys.stderr)
    if not problems:
        print(f"check_clients: {path}: OK (h5py, netCDF4 {netCDF4.__version__} with netCDF-C "
              f"{netCDF4.__netcdf4libversion__}, xarray netcdf4 and h5netcdf; {len(units_seen)} units"
              f"{' checked with udunits2' if shutil.which('udunits2') else ''})")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(1)
    sys.exit(main(sys.argv[1]))
