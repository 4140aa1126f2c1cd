"""test_noise.py - the noise-aware verdicts on synthetic campaigns (one file per node of 8 or
2 GPUs, seeds fixed, no wall-clock involved): noise only (run-to-run jitter, a persistent
per-GPU speed spread, and the heavy noise of oversubscribed cpu-backend runs) fails no GPU,
within a run or against a baseline week; one 30 % slow GPU and one 3 % slow GPU are found and
nothing else; a file with 71 % of its cells never run is INCOMPLETE (exit 1), not PASS, and a
slow GPU among missing cells is still found."""
import pytest

import synth
from kval_analysis import cli, fleet
from kval_analysis.io import load

FAMILIES = ("gemm", "layernorm")


def campaign(tmp_path, tag, nodes=3, gpus=8, seed=0, **kwargs):
    """One synthetic file per node; kwargs (slow, missing, ...) apply to node 0 only."""
    paths = []
    for n in range(nodes):
        extra = kwargs if n == 0 else {k: v for k, v in kwargs.items() if k in ("jitter", "gpu_spread")}
        paths.append(synth.write_kval_file(str(tmp_path / f"{tag}-{n}.h5"), nranks=gpus, gpus_per_host=gpus,
                                           host_prefix=f"n{n}-", families=FAMILIES, noise_seed=1000 * seed + n,
                                           **extra))
    return paths


def failing(res):
    return sorted(g["uuid"] for g in res["gpus"] if g["verdict"] != "PASS")


@pytest.mark.parametrize("seed", range(8))
def test_noise_only_fails_no_gpu(tmp_path, seed):
    res = fleet.analyse(load(campaign(tmp_path, "noise", seed=seed, jitter=0.004, gpu_spread=0.005)))
    assert failing(res) == [] and res["verdict"] == "PASS"
    assert sum(g["states"]["SLOW"] for g in res["performance"]["gpus"]) > 0  # single cases do differ


@pytest.mark.parametrize("seed", range(4))
def test_heavy_noise_of_cpu_runs_fails_no_gpu(tmp_path, seed):
    paths = campaign(tmp_path, "cpu", nodes=2, gpus=2, seed=seed, jitter=0.25)
    base = campaign(tmp_path, "cpu-base", nodes=2, gpus=2, seed=seed + 50, jitter=0.25)
    res = fleet.analyse(load(paths), load(base))
    assert failing(res) == [], [c for c in res["checks"] if c["state"] == "fail"]
    assert res["baseline"]["slow_cases_total"] >= 0 and not any(g["regressed"] for g in res["baseline"]["gpus"])


def test_one_slow_gpu_is_found(tmp_path):
    res = fleet.analyse(load(campaign(tmp_path, "slow", slow={5: 1.3}, gpu_spread=0.005)))
    assert failing(res) == [synth.gpu_uuid("n0-00", 5)]


@pytest.mark.parametrize("seed", range(3))
def test_three_percent_slow_gpu_is_found(tmp_path, seed):
    res = fleet.analyse(load(campaign(tmp_path, "three", seed=seed, slow={2: 1.03}, gpu_spread=0.003)))
    assert failing(res) == [synth.gpu_uuid("n0-00", 2)]
    g = next(g for g in res["performance"]["gpus"] if g["flagged"])
    assert 1.02 < g["ratio_low"] <= g["median_ratio"] <= g["ratio_high"] < 1.045 and g["median_z"] > 3.5


def test_mostly_missing_file_is_incomplete(tmp_path, capsys):
    path = synth.write_kval_file(str(tmp_path / "cut.h5"), nranks=4, families=FAMILIES, missing=0.71)
    assert cli.main(["fleet", path]) == 1
    out = capsys.readouterr().out
    assert out.startswith("VERDICT: INCOMPLETE (4 of 4 GPU(s) fail or are incomplete)")
    res = fleet.analyse(load([path]))
    f = res["completeness"]["files"][0]
    assert not f["complete"] and 0.6 < f["missing_results"] / f["planned_results"] < 0.8


def test_slow_gpu_found_among_missing_cells(tmp_path):
    res = fleet.analyse(load(campaign(tmp_path, "gaps", slow={1: 1.3}, missing=0.3)))
    assert res["verdict"] == "FAIL"
    perf = [g["uuid"] for g in res["performance"]["gpus"] if g["flagged"]]
    assert perf == [synth.gpu_uuid("n0-00", 1)]
    assert {g["verdict"] for g in res["gpus"] if g["host"].startswith("n1")} == {"PASS"}
