"""test_fleet.py - fleet verdicts on synthetic runs: a flipped output bit and a 30% slower GPU
fail and are named (host, GPU index, UUID, PCI bus id, serial) with exit 1; a clean run
passes (exit 0); two GPUs: only the slow one fails; baseline comparison per GPU (a whole GPU
slower fails, one slow case is listed but does not fail), error growth, new failures and
vanished GPUs; JSON (schema_version 2) and JUnit (a testsuite per GPU, a testcase per case)
agree with the verdict."""
import json
import xml.etree.ElementTree as ET

import h5py
import numpy as np

import synth
from conftest import FLIP, FLIP_RANK, SLOW_RANK
from kval_analysis import cli, fleet
from kval_analysis.io import load


def _uuid(rank):
    return synth.gpu_uuid(f"node{rank // 2:02d}", rank % 2)


def _junit(path):
    root = ET.parse(path).getroot()
    return {s.get("name"): s for s in root.iter("testsuite")}


def _failures(suite):
    return [(tc.get("classname"), tc.get("name")) for tc in suite.iter("testcase") if tc.find("failure") is not None]


def test_flipped_bit_and_slow_gpu_are_named(faulty_file, tmp_path, capsys):
    js, ju = str(tmp_path / "f.json"), str(tmp_path / "f.xml")
    assert cli.main(["fleet", faulty_file, "--json", js, "--junit", ju]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "VERDICT: FAIL (2 of 6 GPU(s) fail or are incomplete)" and lines[-1] == lines[0]
    flip = f"node01 GPU0 ({_uuid(FLIP_RANK)}) NVIDIA H200, PCI 00000000:18:00.0, serial SN000002: fingerprint"
    slow = f"node02 GPU0 ({_uuid(SLOW_RANK)}) NVIDIA H200, PCI 00000000:18:00.0, serial SN000004: performance"
    assert lines[1].split(None, 1) == ["FAIL", flip + ": 1 case(s) disagree with peers"]
    assert lines[2].startswith("  FAIL       " + slow + ": median slowdown +30")
    fp_line = next(line for line in lines if _uuid(FLIP_RANK) in line and "kval-mma" in line)
    assert fp_line.split()[:3] == ["node01", str(FLIP_RANK), _uuid(FLIP_RANK)]

    res = json.load(open(js))
    assert res["schema_version"] == 2 and res["verdict"] == "FAIL"
    dis = res["fingerprint"]["disagreements"]
    assert [(d["rank"], d["host"], d["uuid"], d["case"]["shape"], d["agreeing_ranks"], d["source"]) for d in dis] == \
        [(FLIP_RANK, "node01", _uuid(FLIP_RANK), FLIP[1]["shape"], 5, "computed+fp_agrees")]
    flagged = [g for g in res["performance"]["gpus"] if g["flagged"]]
    assert [(g["rank"], g["uuid"]) for g in flagged] == [(SLOW_RANK, _uuid(SLOW_RANK))]
    g = flagged[0]
    assert 1.25 < g["ratio_low"] <= g["median_ratio"] <= g["ratio_high"] < 1.35 and g["states"]["SLOW"] == g["cases"]
    assert g["telemetry"]["throttle_reasons"] == "sw_thermal"
    assert [v["verdict"] for v in res["gpus"]] == ["FAIL", "FAIL"] + ["PASS"] * 4

    suites = _junit(ju)
    assert len(suites) == 6
    s = suites[f"node01 {_uuid(FLIP_RANK)}"]
    assert s.get("hostname") == "node01"
    props = {p.get("name"): p.get("value") for p in s.find("properties")}
    assert props["pci_bus_id"] == "00000000:18:00.0" and props["serial"] == "SN000002"
    assert sorted(_failures(s)) == sorted([("kval.fleet", "fingerprint"), ("kval.gemm", "variant=kval-mma "
                                           "precision=bf16:fp32 layout=nn shape=512x512x1024 dist=normal")])
    assert _failures(suites[f"node02 {_uuid(SLOW_RANK)}"]) == [("kval.fleet", "performance")]
    case = next(tc for tc in s.iter("testcase") if tc.get("classname") == "kval.rmsnorm")
    cprops = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert cprops["gpu_uuid"] == _uuid(FLIP_RANK) and float(cprops["rel_l2"]) > 0 and float(case.get("time")) > 0
    skipped = [tc for tc in s.iter("testcase") if tc.find("skipped") is not None]
    assert len(skipped) == 12 and skipped[0].find("skipped").get("message") == "fp32 storage not implemented for fa2"
    assert int(s.get("tests")) == 48 + 36 + 24 + 24 + 4


def test_a_flip_names_the_part_whose_statistics_differ(make_file, tmp_path, capsys):
    cell = {"precision": "bf16:fp32", "headdim": 128, "seqlen": 2048, "causal": 1}
    path = make_file("bwd.h5", nranks=4, families=("fa2bwd", "gemm"), flips=[("fa2bwd", cell, 2, "dk")])
    js = str(tmp_path / "f.json")
    assert cli.main(["fleet", path, "--json", js]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "fa2bwd" in x and "seqlen=2048" in x)
    assert line.split()[-1] == "dk"
    dis = json.load(open(js))["fingerprint"]["disagreements"]
    assert [(d["rank"], d["family"], d["parts"]) for d in dis] == [(2, "fa2bwd", ["dk"])]
    assert cli.main(["fleet", make_file("gemm.h5", nranks=4, families=("gemm",), flips=[FLIP]), "--json", js]) == 1
    assert [d["parts"] for d in json.load(open(js))["fingerprint"]["disagreements"]] == [None]  # no parts


def test_clean_run_passes(clean_file, tmp_path, capsys):
    ju = str(tmp_path / "c.xml")
    assert cli.main(["fleet", clean_file, "--junit", ju]) == 0
    assert capsys.readouterr().out.startswith("VERDICT: PASS (all 6 GPU(s) pass every check)")
    assert all(_failures(s) == [] for s in _junit(ju).values())


def test_two_gpus_only_the_slow_one_fails(make_file):
    path = make_file("two.h5", nranks=2, slow={1: 1.3})
    res = fleet.analyse(load([path]))
    assert {g["rank"]: g["flagged"] for g in res["performance"]["gpus"]} == {0: False, 1: True}
    assert [g["verdict"] for g in res["gpus"]] == ["FAIL", "PASS"]


def test_fp_agrees_from_the_file_is_read(make_file):
    path = make_file("agree.h5", nranks=4, families=("rmsnorm",))
    with h5py.File(path, "a") as f:
        f["rmsnorm/fp_agrees"][3, 0, 0, 1, 0] = 0
    res = fleet.analyse(load([path]))
    assert [(d["rank"], d["source"], d["case"]["hidden"]) for d in res["fingerprint"]["disagreements"]] == \
        [(3, "fp_agrees", 1024)]
    assert res["verdict"] == "FAIL"


def test_failures_listed(make_file, capsys):
    path = make_file("fail.h5", nranks=2, families=("layernorm",),
                     failures=[("layernorm", {"precision": "bf16:fp32", "hidden": 4096, "dist": "offset"}, 1,
                                "fail_nonfinite", "3 NaN outputs")])
    assert cli.main(["fleet", path]) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if "fail_nonfinite" in line)
    assert line.split()[:3] == ["node00", "1", synth.gpu_uuid("node00", 1)] and "3 NaN outputs" in line


def test_split_mode_nothing_to_compare(make_file, capsys):
    path = make_file("split.h5", nranks=3, mode="split", families=("gemm",))
    assert cli.main(["fleet", path]) == 0
    out = capsys.readouterr().out
    assert "Nothing to compare" in out and out.startswith("VERDICT: PASS")


def test_single_gpu_nothing_to_compare(make_file, tmp_path):
    js = str(tmp_path / "one.json")
    assert cli.main(["fleet", make_file("one.h5", nranks=1), "--json", js, "-q"]) == 0
    res = json.load(open(js))
    assert {c["state"] for c in res["checks"] if c["check"] in ("fingerprint", "performance")} == {"skipped"}


def test_baseline_slow_gpu_and_new_failure(make_file, tmp_path, capsys):
    base = make_file("week1.h5", nranks=4, noise_seed=1)
    case = {"variant": "kval-wgmma", "precision": "fp16:fp32", "shape": "1024x1024x4096"}
    cur = make_file("week2.h5", nranks=4, noise_seed=2, slow={2: 1.2}, case_slow=[("gemm", case, 3, 1.5)],
                    failures=[("fa2", {"precision": "bf16:fp32", "headdim": 64, "seqlen": 2048, "causal": 1}, 0,
                               "fail_tolerance", "bound ratio 1.7")])
    js = str(tmp_path / "b.json")
    assert cli.main(["fleet", cur, "--baseline", base, "--json", js]) == 1
    res = json.load(open(js))
    b = res["baseline"]
    assert [(g["uuid"], g["regressed"]) for g in b["gpus"] if g["regressed"]] == [(_uuid(2), True)]
    one = [d for d in b["slow_cases"] if d["uuid"] == _uuid(3)]
    assert [(d["family"], d["case"]["shape"]) for d in one] == [("gemm", "1024x1024x4096")] and 1.4 < one[0]["ratio"] < 1.6
    assert [(n["uuid"], n["status"], n["base_status"]) for n in b["new_failures"]] == [(_uuid(0), "fail_tolerance", "pass")]
    states = {c["uuid"]: c["state"] for c in res["checks"] if c["check"] == "baseline"}
    assert states == {_uuid(0): "fail", _uuid(1): "pass", _uuid(2): "fail", _uuid(3): "pass"}
    assert "single cases SLOW" in capsys.readouterr().out


def test_baseline_unchanged_passes(make_file):
    base = make_file("w1.h5", nranks=4, noise_seed=1)
    cur = make_file("w2.h5", nranks=4, noise_seed=2)
    res = fleet.analyse(load([cur]), load([base]))
    assert res["verdict"] == "PASS"
    assert all(n == 36 + 36 + 24 + 24 for n in res["baseline"]["compared"].values())


def test_baseline_error_growth_and_vanished_gpus(make_file):
    base = make_file("w1.h5", nranks=4, families=("rmsnorm",))
    cur = make_file("w2.h5", nranks=2, families=("rmsnorm",), error_scale=3.0)
    res = fleet.analyse(load([cur]), load([base]))
    b = res["baseline"]
    assert {d["uuid"] for d in b["disappeared"]} == {_uuid(2), _uuid(3)}
    assert len(b["error_changes"]) == 2 * 4 * 3 * 2  # every case of both remaining GPUs
    absent = [c for c in res["checks"] if c["rank"] == -1]
    assert len(absent) == 2 and all(c["state"] == "fail" for c in absent) and res["verdict"] == "FAIL"


def test_new_gpu_is_noted_not_failed(make_file):
    base = make_file("w1.h5", nranks=2, families=("gemm",))
    cur = make_file("w2.h5", nranks=4, families=("gemm",))
    res = fleet.analyse(load([cur]), load([base]))
    assert {d["uuid"] for d in res["baseline"]["appeared"]} == {_uuid(2), _uuid(3)}
    assert res["verdict"] == "PASS"


def test_leave_one_out_median_matches_brute_force():
    rng = np.random.default_rng(3)
    for n in range(2, 9):
        vals = np.sort(rng.random(n))
        assert np.allclose(fleet._loo_median(vals, np.arange(n)), [np.median(np.delete(vals, i)) for i in range(n)])


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
    assert out.startswith("VERDICT: INCOMPLETE")
    assert "== Nodes with missing results (interrupted job, lost node, or no file) (2) ==" in out
    res = json.load(open(js))
    missing = {d["host"]: d for d in res["missing"]}
    assert set(missing) == {"b00", "c00"}
    assert missing["b00"]["state"] == "incomplete" and missing["b00"]["ranks"] == [2, 3]
    assert missing["b00"]["cells_without_result"] == cells.size
    assert missing["c00"]["state"] == "missing" and missing["c00"]["file"] is None
    bad = {g["host"] for g in res["gpus"] if g["verdict"] == "INCOMPLETE"}
    assert bad == {"b00", "c00"}
    assert "c00" in _junit(ju) or any("c00" in name for name in _junit(ju))
    assert cli.main(["fleet", good, "--expect-hosts", "a00", "-q"]) == 0
    try:
        cli.main(["fleet", good, "--expect-hosts", "a00,,b00", "-q"])
        raise AssertionError("an empty host name was accepted")
    except SystemExit as usage:
        assert usage.code == 2 and "not a comma-separated list of host names" in capsys.readouterr().err
