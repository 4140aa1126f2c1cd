"""test_reports.py - `report` and `precision` render on synthetic runs: HTML and Markdown
written, every PNG non-empty and referenced by the HTML (and every referenced image exists),
expected sections present; missing families and all-NaN data give notes, not crashes;
`python -m kval_analysis` works."""
import os
import re
import subprocess
import sys

import h5py
import numpy as np

from conftest import ANALYSIS
from kval_analysis import cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_page(outdir, stem, expected_pngs):
    html_path, md_path = os.path.join(outdir, f"{stem}.html"), os.path.join(outdir, f"{stem}.md")
    html = open(html_path, encoding="utf-8").read()
    md = open(md_path, encoding="utf-8").read()
    referenced = set(re.findall(r"<img src='([^']+)'", html))
    pngs = {f for f in os.listdir(outdir) if f.endswith(".png")}
    assert pngs == referenced, (pngs ^ referenced)
    for name in pngs:
        with open(os.path.join(outdir, name), "rb") as f:
            assert f.read(8) == PNG_MAGIC and os.path.getsize(os.path.join(outdir, name)) > 5000
        assert f"]({name})" in md
    assert set(expected_pngs) <= pngs, set(expected_pngs) - pngs
    return html, md


def test_report_renders(faulty_file, make_file, tmp_path, capsys):
    other = make_file("other.h5", nranks=2, host_prefix="gpu", failures=[
        ("gemm", {"variant": "kval-mma", "precision": "fp16:fp16", "shape": "256x256x256"}, 1,
         "fail_tolerance", "bound ratio 1.4")])
    out = str(tmp_path / "rep")
    assert cli.main(["report", faulty_file, other, "-o", out]) == 0
    assert "report.html" in capsys.readouterr().out
    html, md = _check_page(out, "report", [
        "fa2_error_vs_seqlen.png", "fa2_throughput_vs_seqlen.png", "gemm_error_vs_K.png",
        "layernorm_error_vs_hidden.png", "rmsnorm_error_vs_hidden.png", "roofline.png", "spread.png"])
    for section in ("Runs", "GPUs (one row per rank)", "Pass/fail per family and precision",
                    "Worst cases by error", "Throughput", "Roofline and rank spread"):
        assert f"<h2>{section}</h2>" in html or f"<h3>{section}</h3>" in html
        assert section in md
    assert "[gemm]" in html  # the deck text
    assert "bound ratio 1.4" in html and "fail_tolerance" in md
    assert "gpu00" in html and "node02" in html
    assert os.path.getsize(os.path.join(out, "throughput_fa2.csv")) > 0
    assert "<tr class='bad'>" in html


def test_report_missing_families_and_all_nan(make_file, tmp_path):
    path = make_file("gemm_only.h5", nranks=2, families=("gemm", "rmsnorm"))
    with h5py.File(path, "a") as f:  # every rmsnorm cell not run
        g = f["rmsnorm"]
        g["status"][...] = np.zeros(g["status"].shape, dtype=np.int8)
        for name in ("time_median", "tflops", "gbps", "intensity", "rel_l2", "max_ulp", "max_bound_ratio"):
            g[name][...] = np.nan
    out = str(tmp_path / "rep")
    assert cli.main(["report", path, "-o", out]) == 0
    html, _ = _check_page(out, "report", ["gemm_error_vs_K.png", "roofline.png", "spread.png"])
    assert "Family fa2 is not in these files" in html
    assert "rmsnorm: no timed case" in html
    assert "rmsnorm: rel_l2 and max_ulp vs hidden: no finite data to plot." in html
    assert not any(f.startswith("rmsnorm") for f in os.listdir(out) if f.endswith(".png"))
    out2 = str(tmp_path / "prec")
    assert cli.main(["precision", path, "-o", out2]) == 0
    html2, _ = _check_page(out2, "precision", ["precision_gemm_growth_K.png"])
    assert "rmsnorm: no error histogram data" in html2


def test_report_cpu_backend_without_matrix_peak(make_file, tmp_path):
    path = make_file("cpu.h5", nranks=2, backend="cpu", families=("gemm",))
    out = str(tmp_path / "rep")
    assert cli.main(["report", path, "-o", out]) == 0
    _, md = _check_page(out, "report", ["roofline.png", "gemm_error_vs_K.png"])
    assert "| gemm | fp16:fp32 | 0 | 12 | 0 | 0 | 6 | 0 |" in md  # cublas skipped on cpu


def test_precision_renders(clean_file, tmp_path):
    out = str(tmp_path / "prec")
    assert cli.main(["precision", clean_file, "-o", out]) == 0
    html, md = _check_page(out, "precision", [
        "precision_gemm_growth_K.png", "precision_fa2_growth_seqlen.png", "precision_fa2_growth_headdim.png",
        "precision_layernorm_growth_hidden.png", "precision_rmsnorm_growth_hidden.png", "precision_gemm_hist.png",
        "precision_fa2_rel_l2_box.png"])
    assert "Which precision is within tolerance where" in md
    table = md.split("## Which precision is within tolerance where")[1].split("###")[0]
    fa2_fp32 = next(line for line in table.splitlines() if line.startswith("| fa2 | fp32:fp32"))
    assert "no case ran" in fa2_fp32
    assert "| gemm | accumulator | fp16:fp32 | fp16:fp16 |" in md
    assert "| gemm | storage | fp16:fp32 | bf16:fp32 |" in md


def test_precision_reports_where_a_precision_fails(make_file, tmp_path):
    fails = [("gemm", {"variant": v, "precision": "bf16:bf16", "shape": "1024x1024x4096"}, r, "fail_tolerance",
              "bound ratio 2") for v in ("kval-mma", "kval-wgmma") for r in range(2)]
    path = make_file("fails.h5", nranks=2, families=("gemm",), failures=fails)
    out = str(tmp_path / "prec")
    assert cli.main(["precision", path, "-o", out]) == 0
    md = open(os.path.join(out, "precision.md")).read()
    row = next(line for line in md.splitlines() if line.startswith("| gemm | bf16:bf16"))
    assert "fails where variant in {kval-mma, kval-wgmma}; shape in {1024x1024x4096}" in row


def test_python_dash_m_entry_point(clean_file, tmp_path):
    env = dict(os.environ, PYTHONPATH=ANALYSIS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "kval_analysis", "fleet", clean_file, "-q"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "kval_analysis", "fleet", str(tmp_path / "x.h5")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "no such file" in proc.stderr
