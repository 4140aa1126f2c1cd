"""test_kval_bin.py - end to end with the real C program: runs a tiny deck on 2 MPI ranks with
the cpu backend (`mpirun -np 2 $KVAL_BIN --backend cpu DECK -o f.h5`) and feeds the file to
report, fleet and precision (a [gemm.scale] section: fractional axis values); the tensor-core probes' outcomes on 2 ranks through precision and
fleet (the arithmetic check). Runs only when KVAL_BIN names an executable and mpirun exists."""
import json
import os
import shutil
import subprocess

import pytest

from kval_analysis import cli
from kval_analysis.io import load

KVAL_BIN = os.environ.get("KVAL_BIN", "")
TINY_DECK = """# tiny deck of the analysis integration test
[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32
shape = 32x32x32 32x32x64

[rmsnorm]
precision = fp16:fp32 fp32:fp32
rows = 8
hidden = 64 128

[fa2]
precision = fp16:fp32
headdim = 64
seqlen = 32 64
causal = 0 1
heads = 2
tokens = 64

[gemm.scale]
variant = kval-mma
shape = 32x32x32
alpha = 1 -0.75
beta = 0 0.5
"""

pytestmark = pytest.mark.skipif(
    not (KVAL_BIN and os.access(KVAL_BIN, os.X_OK) and shutil.which("mpirun")),
    reason="needs KVAL_BIN pointing to a built kval binary and mpirun on PATH")


def test_real_kval_file(tmp_path, capsys):
    deck = tmp_path / "tiny.deck"
    deck.write_text(TINY_DECK)
    out = tmp_path / "f.h5"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    proc = subprocess.run(["mpirun", "-np", "2", KVAL_BIN, "--backend", "cpu", str(deck), "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    # 0: every case passed, 1: some case failed validation (the file is complete either way)
    assert proc.returncode in (0, 1), proc.stdout[-4000:] + proc.stderr[-4000:]

    runs = load([str(out)])
    assert len(runs.ranks) == 2
    assert set(runs.families) == {"gemm", "rmsnorm", "fa2", "gemm.scale"}
    # fractional axis values stay themselves (they once became integers: two cells, one case)
    scale = runs.family("gemm.scale")
    assert list(scale["alpha"].values) == [1.0, -0.75] and list(scale["beta"].values) == [0.0, 0.5]
    gemm = runs.family("gemm")
    assert list(gemm["shape"].values) == ["32x32x32", "32x32x64"]
    assert set(gemm["status"].values.ravel()) <= {"pass", "fail_tolerance", "fail_nonfinite"}, \
        gemm["message"].values  # every case ran on both ranks

    assert cli.main(["report", str(out), "-o", str(tmp_path / "rep")]) == 0
    for name in ("report.html", "report.md", "gemm_error_vs_K.png", "roofline.png"):
        assert os.path.getsize(tmp_path / "rep" / name) > 0
    js, ju = str(tmp_path / "fleet.json"), str(tmp_path / "fleet.xml")
    rc = cli.main(["fleet", str(out), "--json", js, "--junit", ju])
    res = json.load(open(js))
    assert res["fingerprint"]["disagreements"] == []  # identical emulation on both ranks
    assert sorted(res["fingerprint"]["comparable_ranks"]) == [0, 1]
    assert rc == (1 if res["flagged"] else 0)  # CPU timing of 2 oversubscribed ranks may differ
    assert cli.main(["precision", str(out), "-o", str(tmp_path / "prec")]) == 0
    assert os.path.getsize(tmp_path / "prec" / "precision.html") > 0
    capsys.readouterr()


def test_probe_outcomes_must_agree_within_a_model(tmp_path):
    """tcprobe on 2 ranks (one CPU model): identical outcomes pass the arithmetic check; one
    rank's outcome changed in the file fails both (a tie: no majority), naming the case."""
    import h5py

    from kval_analysis import fleet

    deck = tmp_path / "probes.deck"
    deck.write_text("[tcprobe]\nprobe = align_bits block\n")
    out = tmp_path / "p.h5"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    proc = subprocess.run(["mpirun", "-np", "2", KVAL_BIN, "--backend", "cpu", str(deck), "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert cli.main(["precision", str(out), "-o", str(tmp_path / "prec")]) == 0
    page = json.load(open(tmp_path / "prec" / "precision.json"))
    assert len(page["probes"]) == 2 * 8  # 2 ranks x (2 probes x 2 inputs x 2 instructions)
    assert {p["words"] for p in page["probes"] if p["case"]["probe"] == "block"} == {"block: 1 product per rounding"}
    assert page["summary"] == []  # the probes stay out of the error statistics
    assert "Tensor-core arithmetic" in open(tmp_path / "prec" / "precision.md").read()
    res = fleet.analyse(load([str(out)]))
    assert res["arithmetic"]["disagreements"] == []
    assert len(res["arithmetic"]["measured"]) == 2
    assert {c["state"] for c in res["checks"] if c["check"] == "arithmetic"} == {"pass"}
    with h5py.File(out, "r+") as f:
        outcome = f["tcprobe/outcome"]
        values = outcome[...]
        values[1, 0, 0, 0] += 1
        outcome[...] = values
    res = fleet.analyse(load([str(out)]))
    bad = res["arithmetic"]["disagreements"]
    assert sorted(d["rank"] for d in bad) == [0, 1] and all(d["majority"] is None for d in bad)
    assert bad[0]["case"] == {"probe": "align_bits", "precision": "fp16:fp32", "instruction": "mma"}
    assert res["verdict"] == "FAIL"
