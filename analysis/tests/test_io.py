"""test_io.py - loading kval files: named dimensions from dimension scales, per-rank
coordinates, multi-file combination, string flavours, NaN or Inf outputs as inf errors, and
clear errors (exit 2) on bad input (among them an older layout, /ranks short of nranks, a
fingerprint that lacks an axis)."""
import h5py
import numpy as np
import pytest

import synth
from kval_analysis import cli
from kval_analysis.io import KvalInputError, case_frame, load


def test_single_file_named_dims_and_coords(clean_file):
    runs = load([clean_file])
    ds = runs.family("fa2")
    assert ds["time_median"].dims == ("rank", "precision", "headdim", "seqlen", "causal", "batch", "heads", "dist")
    assert ds["hist"].dims[-1] == "hist_bin"
    assert list(ds["headdim"].values) == [64, 128]
    assert list(ds["precision"].values) == ["fp16:fp32", "bf16:fp32", "fp16:fp16", "fp32:fp32"]
    assert set(np.unique(ds["status"].values)) == {"pass", "skipped"}
    assert (ds["status"].sel(precision="fp32:fp32") == "skipped").all()
    msg = ds["message"].sel(precision="fp32:fp32").values.ravel()[0]
    assert msg == "fp32 storage not implemented for fa2"
    for coord in ("host", "gpu_uuid", "gpu_name", "file", "run_time"):
        assert ds[coord].dims == ("rank",)
    assert list(ds["host"].values) == ["node00", "node00", "node01", "node01", "node02", "node02"]
    assert ds["gpu_uuid"].values[3] == synth.gpu_uuid("node01", 1)
    assert ds.attrs["params"]["tokens"] == 16384.0
    assert ds["fingerprint"].dtype == np.uint64
    assert len(runs.ranks) == 6 and runs.notes == []


def test_part_statistics_of_a_family_with_parts(make_file):
    """fa2bwd's part_stats: named dimensions part and part_stat after the cell's, the parts'
    values, both files combined, and +inf in the error statistics of a part with NaN outputs."""
    cell = {"precision": "bf16:fp32", "headdim": 128, "seqlen": 2048, "causal": 1}
    a = make_file("a.h5", nranks=2, families=("fa2bwd",),
                  failures=[("fa2bwd", cell, 1, "fail_nonfinite", "3 NaN, 0 Inf outputs")])
    b = make_file("b.h5", nranks=2, families=("fa2bwd", "gemm"), host_prefix="beta")
    runs = load([a, b])
    ds = runs.family("fa2bwd")
    ps = ds["part_stats"]
    assert ps.dims == ("rank", "precision", "headdim", "seqlen", "causal", "batch", "heads", "dist", "part", "part_stat")
    assert list(ds["part"].values) == ["dq", "dk", "dv"] and ps.sizes["rank"] == 4
    assert "part_stats" not in runs.family("gemm")
    rel = ps.sel(part_stat="rel_l2", rank=0)
    assert np.allclose(rel.sel(part="dv") / rel.sel(part="dq"), 0.5)
    checked = ps.sel(part_stat="n_checked").sum("part")
    assert (checked == ds["n_checked"]).all()
    frame = case_frame(ds)  # one row per (rank, cell): part_stats is not a per-cell column
    assert len(frame) == ds["status"].size and "part" not in frame and "part_stats" not in frame
    bad = ps.sel(rank=1, **cell).squeeze()
    assert np.isinf(bad.sel(part="dv", part_stat="max_rel")) and np.isfinite(bad.sel(part="dq", part_stat="max_rel"))


def test_multi_file_combination(make_file):
    a = make_file("a.h5", nranks=2, host_prefix="alpha")
    b = make_file("b.h5", nranks=2, host_prefix="beta", fixed_strings=True)
    runs = load([a, b])
    ds = runs.family("gemm")
    assert list(ds["rank"].values) == [0, 1, 2, 3]
    assert list(ds["rank_in_file"].values) == [0, 1, 0, 1]
    assert list(ds["file"].values) == [a, a, b, b]
    assert list(ds["host"].values) == ["alpha00", "alpha00", "beta00", "beta00"]
    assert ds["gpu_uuid"].values[2] == synth.gpu_uuid("beta00", 0)
    assert ds["fingerprint"].dtype == np.uint64
    assert list(runs.ranks["host"]) == ["alpha00", "alpha00", "beta00", "beta00"]
    frame = case_frame(ds, ["status", "time_median"])
    assert len(frame) == 4 * 3 * 4 * 1 * 3 * 1
    assert set(frame["file"]) == {a, b}


def test_outer_join_of_different_axes(make_file, tmp_path):
    a = make_file("a.h5", nranks=2, families=("layernorm",))
    b = make_file("b.h5", nranks=2, host_prefix="other", families=("layernorm",))
    with h5py.File(b, "a") as f:  # b swept one extra hidden size: rename 4096 -> 8192
        f["layernorm/hidden"][2] = 8192
    ds = load([a, b]).family("layernorm")
    assert list(ds["hidden"].values) == [256, 1024, 4096, 8192]
    assert (ds["status"].sel(hidden=8192).isel(rank=[0, 1]) == "not_run").all()
    assert (ds["fingerprint"].sel(hidden=8192).isel(rank=[0, 1]) == 0).all()
    assert ds["n_checked"].dtype == np.int64


def test_dimensions_read_by_name_not_position(make_file):
    path = make_file("perm.h5", nranks=2, families=("fa2",))
    with h5py.File(path, "a") as f:
        g = f["fa2"]
        data = g["time_median"][()]
        del g["time_median"]
        order = [0, 3, 2, 1, 4, 5, 6, 7]  # rank, seqlen, headdim, precision, ...
        names = ["rank", "precision", "headdim", "seqlen", "causal", "batch", "heads", "dist"]
        d = g.create_dataset("time_median", data=np.transpose(data, order))
        for i, axis in enumerate(order):
            d.dims[i].attach_scale(g[names[axis]])
        expected = data[1, 2, 1, 0, 1, 0, 0, 0]
    ds = load([path]).family("fa2")
    got = ds["time_median"].sel(rank=1, precision="fp16:fp16", headdim=128, seqlen=512, causal=1).values.item()
    assert got == expected


@pytest.mark.parametrize("damage, expect", [
    ("no_ranks", "group /ranks is missing"),
    ("layout", "layout_version 7 is not supported"),
    ("no_layout", "'layout_version' is missing"),
    ("no_axes", "group /gemm attribute(s) missing: axes"),
    ("no_status", "group /gemm dataset(s) missing: status"),
    ("no_scale", "has no dimension scale attached"),
    ("no_nranks", "root attribute(s) missing: nranks"),
    ("layout_old", "layout_version 2 is not supported"),
    ("nranks_rows", "/ranks has 2 rows but the root attribute nranks is 3"),
    ("fp_axis", "/gemm/fingerprint must have dimensions [rank, variant, precision, layout, shape, dist]"),
])
def test_bad_kval_files_exit_2(make_file, capsys, damage, expect):
    kwargs = {"no_ranks": {"drop_groups": ("ranks",)}, "layout": {"layout_version": 7},
              "layout_old": {"layout_version": 2},
              "no_layout": {"drop_root_attrs": ("layout_version",)},
              "no_nranks": {"drop_root_attrs": ("nranks",)}}.get(damage, {})
    path = make_file("bad.h5", nranks=2, families=("gemm",), **kwargs)
    with h5py.File(path, "a") as f:
        if damage == "no_axes":
            del f["gemm"].attrs["axes"]
        elif damage == "no_status":
            del f["gemm/status"]
        elif damage == "no_scale":
            data = f["gemm/rel_l2"][()]
            del f["gemm/rel_l2"]
            f["gemm"].create_dataset("rel_l2", data=data)
        elif damage == "nranks_rows":  # a rank's row lost from /ranks
            f.attrs["nranks"] = np.int32(3)
        elif damage == "fp_axis":  # fingerprints over every axis but dist: one value would stand for every dist
            data = f["gemm/fingerprint"][..., 0]
            del f["gemm/fingerprint"]
            d = f["gemm"].create_dataset("fingerprint", data=data)
            for i, name in enumerate(["rank", "variant", "precision", "layout", "shape"]):
                d.dims[i].attach_scale(f["gemm"][name])
    with pytest.raises(KvalInputError, match=path.replace(".", r"\.")):
        load([path])
    for command in (["report", path, "-o", path + ".d"], ["fleet", path], ["precision", path, "-o", path + ".p"]):
        assert cli.main(command) == 2
        err = capsys.readouterr().err
        assert expect in err and path in err


def test_inf_outputs_are_never_small_errors(make_file):
    """A cell whose output held Inf but no NaN: +inf in its error statistics, counted non-finite."""
    path = make_file("inf.h5", nranks=2, families=("rmsnorm",))
    with h5py.File(path, "a") as f:  # rank 1, fp16:fp32, hidden 4096, normal
        f["rmsnorm/n_inf"][1, 0, 0, 2, 0] = 5
        f["rmsnorm/status"][1, 0, 0, 2, 0] = synth.STATUS["fail_nonfinite"]
    ds = load([path]).family("rmsnorm")
    cell = {"precision": "fp16:fp32", "rows": 1024, "hidden": 4096, "dist": "normal"}
    assert int(ds["n_nan"].sel(rank=1, **cell)) == 0 and int(ds["n_nonfinite"].sel(rank=1, **cell)) == 5
    for stat in ("max_abs", "rel_l2", "max_ulp", "max_bound_ratio"):
        assert np.isinf(ds[stat].sel(rank=1, **cell)) and np.isfinite(ds[stat].sel(rank=0, **cell)), stat


def test_incomplete_run_is_noted(make_file):
    path = make_file("killed.h5", nranks=2, families=("rmsnorm",))
    with h5py.File(path, "a") as f:
        f.attrs["complete"] = np.int64(0)
    runs = load([path])
    assert any("did not complete" in note for note in runs.notes)


def test_not_hdf5_and_missing_file(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not an hdf5 file\n")
    assert cli.main(["fleet", str(text)]) == 2
    assert "not an HDF5 file" in capsys.readouterr().err
    missing = str(tmp_path / "nope.h5")
    assert cli.main(["report", missing, "-o", str(tmp_path / "out")]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    assert cli.main(["precision", str(other), "-o", str(tmp_path / "p")]) == 2
    assert "not a kval file" in capsys.readouterr().err


def test_missing_baseline_file_exit_2(clean_file, tmp_path, capsys):
    assert cli.main(["fleet", clean_file, "--baseline", str(tmp_path / "gone.h5")]) == 2
    assert "gone.h5: no such file" in capsys.readouterr().err


def test_export_flat_table(make_file, tmp_path, capsys):
    a = make_file("a.h5", nranks=2, families=("gemm", "rmsnorm"))
    out = str(tmp_path / "cases.csv")
    assert cli.main(["export", a, "-o", out]) == 0
    import pandas as pd
    table = pd.read_csv(out)
    assert len(table) == 2 * (36 + 24)
    assert list(table.columns[:6]) == ["family", "file", "rank", "rank_in_file", "host", "gpu_uuid"]
    gemm = table[table["family"] == "gemm"]
    assert set(gemm["M"]) == {256, 512, 1024} and set(gemm["K"]) == {256, 1024, 4096}
    assert gemm["hidden"].isna().all() and table.loc[table["family"] == "rmsnorm", "shape"].isna().all()
    assert cli.main(["export", a, "-o", str(tmp_path / "cases.txt")]) == 2
    assert "must end in .csv or .parquet" in capsys.readouterr().err


def test_export_has_a_column_per_part_and_statistic(make_file, tmp_path):
    path = make_file("bwd.h5", nranks=2, families=("fa2bwd", "gemm"))
    out = str(tmp_path / "cases.csv")
    assert cli.main(["export", path, "-o", out]) == 0
    import pandas as pd
    table = pd.read_csv(out)
    assert len(table) == 2 * (16 + 36)  # one row per (rank, cell), parts as columns
    bwd = table[table["family"] == "fa2bwd"]
    assert [c for c in table.columns if c.endswith("_rel_l2")] == ["dq_rel_l2", "dk_rel_l2", "dv_rel_l2"]
    assert ((bwd["dv_rel_l2"] / bwd["rel_l2"] - 0.5).abs() < 1e-9).all()  # synth.PART_ERROR
    assert (bwd["dq_n_checked"] + bwd["dk_n_checked"] + bwd["dv_n_checked"] == bwd["n_checked"]).all()
    assert table.loc[table["family"] == "gemm", "dq_rel_l2"].isna().all()


def test_gemm_coordinates_and_unknown_status(make_file):
    path = make_file("coords.h5", nranks=2, families=("gemm",))
    with h5py.File(path, "a") as f:  # a status a later kval adds (issue 17: inaccurate)
        data = f["gemm/status"][()]
        del f["gemm/status"], f["case_status"]
        f["case_status"] = h5py.enum_dtype({**synth.STATUS, "inaccurate": 6}, basetype="i1")
        data[1, 0, 0, 0, 0, 0] = 6
        d = f["gemm"].create_dataset("status", data=data, dtype=f["case_status"])
        for i, name in enumerate(["rank", "variant", "precision", "layout", "shape", "dist"]):
            d.dims[i].attach_scale(f["gemm"][name])
        d.attrs["coordinates"] = "M N K"
    runs = load([path])
    ds = runs.family("gemm")
    assert list(ds["K"].values) == [256, 1024, 4096] and ds["K"].dims == ("shape",)
    assert "inaccurate" in runs.statuses and (ds["status"] == "inaccurate").sum() == 1
    from kval_analysis import fleet
    res = fleet.analyse(runs)
    assert res["failures"] == []  # a finding, not a failure


def test_export_parquet_or_a_clear_error(make_file, tmp_path, capsys):
    path = make_file("p.h5", nranks=2, families=("rmsnorm",))
    out = str(tmp_path / "cases.parquet")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert cli.main(["export", path, "-o", out]) == 2
        assert "Parquet output needs pyarrow" in capsys.readouterr().err
        return
    assert cli.main(["export", path, "-o", out]) == 0
    import pandas as pd
    assert len(pd.read_parquet(out)) == 2 * 24


def test_readme_xarray_example_runs_as_written(make_file, tmp_path, monkeypatch):
    """analysis/README.md's xarray lines, read from the README, on a file named s.h5."""
    import os
    from conftest import ANALYSIS
    text = open(os.path.join(ANALYSIS, "README.md")).read()
    block = text.split("Or xarray directly on a file")[1].split("\n\n")[1]
    code = "\n".join(line[4:] for line in block.splitlines())
    assert "engine=\"h5netcdf\"" in code and "swap_dims" in code
    make_file("s.h5", nranks=2, families=("gemm",))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "analysis/README.md", "exec"), {})


def test_readme_part_stats_example_runs_as_written(make_file):
    """analysis/README.md's part_stats lines, read from the README, on a loaded fa2bwd file."""
    import os
    from conftest import ANALYSIS
    text = open(os.path.join(ANALYSIS, "README.md")).read()
    block = text.split("held NaN or Inf outputs):")[1].split("\n\n")[1]
    code = "\n".join(line[4:] for line in block.splitlines())
    assert "part_stats.sel(part=" in code
    runs = load([make_file("bwd.h5", nranks=2, families=("fa2bwd",))])
    scope = {"runs": runs}
    exec(compile(code, "analysis/README.md", "exec"), scope)
    assert scope["bwd"].part_stats.sel(part="dk", part_stat="rel_l2").max("rank").notnull().any()
