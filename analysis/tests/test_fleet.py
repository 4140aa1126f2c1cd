"""test_fleet.py - fleet verdicts on synthetic runs: a flipped output bit and a 30% slower rank
are flagged and named (host, rank, UUID) with exit 1; a clean run flags nothing (exit 0);
baseline comparison finds regressions, error growth, new failures and vanished GPUs; a file
that did not complete and an expected host without a file are flagged as missing results;
JSON and JUnit outputs agree with the verdict."""
import json
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

import synth
from conftest import FLIP, FLIP_RANK, SLOW_RANK
from kval_analysis import cli, fleet
from kval_analysis.io import load


def _junit_failures(path):
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    fails = [(tc.get("classname").rsplit(".", 1)[1], tc.get("name")) for tc in suite.iter("testcase")
             if tc.find("failure") is not None]
    return suite, fails


def _uuid(rank):
    return synth.gpu_uuid(f"node{rank // 2:02d}", rank % 2)


def test_flipped_bit_and_slow_rank_are_named(faulty_file, tmp_path, capsys):
    js, ju = str(tmp_path / "f.json"), str(tmp_path / "f.xml")
    assert cli.main(["fleet", faulty_file, "--json", js, "--junit", ju]) == 1
    out = capsys.readouterr().out
    fp_line = next(line for line in out.splitlines() if _uuid(FLIP_RANK) in line and "kval-mma" in line)
    assert fp_line.split()[:3] == [f"node{FLIP_RANK // 2:02d}", str(FLIP_RANK), _uuid(FLIP_RANK)]
    slow_line = next(line for line in out.splitlines() if _uuid(SLOW_RANK) in line and "%" in line)
    assert slow_line.split()[:3] == [f"node{SLOW_RANK // 2:02d}", str(SLOW_RANK), _uuid(SLOW_RANK)]
    assert "sw_thermal" in slow_line
    assert "VERDICT: FLAGGED" in out

    res = json.load(open(js))
    dis = res["fingerprint"]["disagreements"]
    assert len(dis) == 1
    assert (dis[0]["rank"], dis[0]["host"], dis[0]["uuid"]) == (FLIP_RANK, "node01", _uuid(FLIP_RANK))
    assert dis[0]["case"]["shape"] == FLIP[1]["shape"] and dis[0]["agreeing_ranks"] == 5
    assert dis[0]["source"] == "computed+fp_agrees"
    flagged = [g for g in res["performance"]["gpus"] if g["flagged"]]
    assert [(g["rank"], g["uuid"]) for g in flagged] == [(SLOW_RANK, _uuid(SLOW_RANK))]
    assert 1.25 < flagged[0]["median_ratio"] < 1.35
    assert flagged[0]["telemetry"]["throttle_reasons"] == "sw_thermal"
    assert res["failures"] == [] and res["flagged"] is True

    suite, fails = _junit_failures(ju)
    assert int(suite.get("tests")) == 6 * 3 and int(suite.get("failures")) == 2
    assert sorted(fails) == sorted([("fingerprint", f"node01 rank{FLIP_RANK} {_uuid(FLIP_RANK)} NVIDIA H200"),
                                    ("performance", f"node02 rank{SLOW_RANK} {_uuid(SLOW_RANK)} NVIDIA H200")])


def test_clean_run_flags_nothing(clean_file, tmp_path, capsys):
    ju = str(tmp_path / "c.xml")
    assert cli.main(["fleet", clean_file, "--junit", ju]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: OK" in out
    suite, fails = _junit_failures(ju)
    assert fails == [] and int(suite.get("tests")) == 18 and int(suite.get("skipped")) == 0


def test_two_ranks_slow_one_is_the_one_flagged(make_file):
    path = make_file("two.h5", nranks=2, slow={1: 1.3})
    res = fleet.analyse(load([path]))
    flags = {g["rank"]: g["flagged"] for g in res["performance"]["gpus"]}
    assert flags == {0: False, 1: True}


def test_fp_agrees_from_the_file_is_read(make_file):
    path = make_file("agree.h5", nranks=4, families=("rmsnorm",))
    with h5py.File(path, "a") as f:
        f["rmsnorm/fp_agrees"][3, 0, 0, 1, 0] = 0
    res = fleet.analyse(load([path]))
    dis = res["fingerprint"]["disagreements"]
    assert [(d["rank"], d["source"], d["case"]["hidden"]) for d in dis] == [(3, "fp_agrees", 1024)]
    assert res["flagged"]


def test_failures_listed_and_flagged(make_file, capsys):
    path = make_file("fail.h5", nranks=2, families=("layernorm",),
                     failures=[("layernorm", {"precision": "bf16:fp32", "hidden": 4096, "dist": "offset"}, 1,
                                "fail_nonfinite", "3 NaN outputs")])
    assert cli.main(["fleet", path]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "fail_nonfinite" in line)
    assert line.split()[:3] == ["node00", "1", synth.gpu_uuid("node00", 1)] and "3 NaN outputs" in line


def test_split_mode_nothing_to_compare(make_file, capsys):
    path = make_file("split.h5", nranks=3, mode="split", families=("gemm",))
    assert cli.main(["fleet", path]) == 0
    out = capsys.readouterr().out
    assert "Nothing to compare" in out and "VERDICT: OK" in out


def test_single_rank_nothing_to_compare(make_file, tmp_path):
    path = make_file("one.h5", nranks=1)
    js = str(tmp_path / "one.json")
    assert cli.main(["fleet", path, "--json", js, "-q"]) == 0
    res = json.load(open(js))
    assert {c["state"] for c in res["checks"] if c["check"] != "failures"} == {"skipped"}


def test_baseline_regression_and_new_failure(make_file, tmp_path, capsys):
    base = make_file("week1.h5", nranks=4, noise_seed=1)
    case = {"variant": "kval-wgmma", "precision": "fp16:fp32", "shape": "1024x1024x4096"}
    cur = make_file("week2.h5", nranks=4, noise_seed=2, case_slow=[("gemm", case, 3, 1.5)],
                    failures=[("fa2", {"precision": "bf16:fp32", "headdim": 64, "seqlen": 2048, "causal": 1}, 0,
                               "fail_tolerance", "bound ratio 1.7")])
    js, ju = str(tmp_path / "b.json"), str(tmp_path / "b.xml")
    assert cli.main(["fleet", cur, "--baseline", base, "--json", js, "--junit", ju]) == 1
    res = json.load(open(js))
    regs = res["baseline"]["regressions"]
    assert [(r["uuid"], r["family"], r["case"]["shape"]) for r in regs] == [(_uuid(3), "gemm", "1024x1024x4096")]
    assert 1.4 < regs[0]["ratio"] < 1.6
    new = res["baseline"]["new_failures"]
    assert [(n["uuid"], n["status"], n["base_status"]) for n in new] == [(_uuid(0), "fail_tolerance", "pass")]
    assert res["baseline"]["error_changes"] == [] and res["baseline"]["disappeared"] == []
    out = capsys.readouterr().out
    assert "time regressions" in out and _uuid(3) in out
    _, fails = _junit_failures(ju)
    assert ("baseline", f"node01 rank3 {_uuid(3)} NVIDIA H200") in fails
    assert ("baseline", f"node00 rank0 {_uuid(0)} NVIDIA H200") in fails


def test_baseline_unchanged_is_clean(make_file):
    base = make_file("w1.h5", nranks=4, noise_seed=1)
    cur = make_file("w2.h5", nranks=4, noise_seed=2)
    res = fleet.analyse(load([cur]), load([base]))
    assert not res["flagged"]
    assert all(n == 36 + 36 + 24 + 24 for n in res["baseline"]["compared"].values())


def test_baseline_error_growth_and_vanished_gpus(make_file):
    base = make_file("w1.h5", nranks=4, families=("rmsnorm",))
    cur = make_file("w2.h5", nranks=2, families=("rmsnorm",), error_scale=3.0)
    res = fleet.analyse(load([cur]), load([base]))
    b = res["baseline"]
    assert {d["uuid"] for d in b["disappeared"]} == {_uuid(2), _uuid(3)}
    assert len(b["error_changes"]) == 2 * 4 * 3 * 2  # every case of both remaining GPUs
    assert res["flagged"]
    absent = [c for c in res["checks"] if c["rank"] == -1]
    assert len(absent) == 2 and all(c["state"] == "fail" for c in absent)


def test_new_gpu_is_noted_not_flagged(make_file):
    base = make_file("w1.h5", nranks=2, families=("gemm",))
    cur = make_file("w2.h5", nranks=4, families=("gemm",))
    res = fleet.analyse(load([cur]), load([base]))
    assert {d["uuid"] for d in res["baseline"]["appeared"]} == {_uuid(2), _uuid(3)}
    assert not res["flagged"]


def test_incomplete_file_and_absent_host_are_missing_never_healthy(make_file, tmp_path, capsys):
    good = make_file("n0.h5", nranks=2, host_prefix="a", families=("gemm",))
    lost = make_file("n1.h5", nranks=2, host_prefix="b", families=("gemm",))
    with h5py.File(lost, "a") as f:  # a node lost mid-run: complete = 0, the second rank ran nothing
        f.attrs["complete"] = np.int64(0)
        status = f["gemm/status"]
        cells = status[1, ...]
        status[1, ...] = np.zeros_like(cells)
    js, ju = str(tmp_path / "m.json"), str(tmp_path / "m.xml")
    assert cli.main(["fleet", good, lost, "--expect-hosts", "a00,b00,c00", "--json", js, "--junit", ju]) == 1
    out = capsys.readouterr().out
    assert "Nodes with missing results (interrupted job, lost node, or no file) (2)" in out
    assert "VERDICT: FLAGGED" in out
    res = json.load(open(js))
    missing = {d["host"]: d for d in res["missing"]}
    assert set(missing) == {"b00", "c00"}
    assert missing["b00"]["state"] == "incomplete" and missing["b00"]["ranks"] == [2, 3]
    assert missing["b00"]["cells_without_result"] == cells.size
    assert missing["c00"]["state"] == "missing" and missing["c00"]["file"] is None
    bad = {(c["host"], c["rank"]) for c in res["checks"] if c["check"] == "complete" and c["state"] == "fail"}
    assert bad == {("b00", 2), ("b00", 3), ("c00", -1)}
    _, fails = _junit_failures(ju)
    assert ("complete", "c00 absent - -") in fails
    assert cli.main(["fleet", good, "--expect-hosts", "a00", "-q"]) == 0
    with pytest.raises(SystemExit) as usage:
        cli.main(["fleet", good, "--expect-hosts", "a00,,b00", "-q"])
    assert usage.value.code == 2 and "not a comma-separated list of host names" in capsys.readouterr().err


def test_leave_one_out_median_matches_brute_force():
    rng = np.random.default_rng(3)
    for n in range(2, 9):
        vals = np.sort(rng.random(n))
        got = fleet._loo_median(vals, np.arange(n))
        want = [np.median(np.delete(vals, i)) for i in range(n)]
        assert np.allclose(got, want)
