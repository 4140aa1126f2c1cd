"""test_reports.py - `report` and `precision` render on synthetic runs: HTML and Markdown
written, every PNG non-empty and referenced by the HTML (and every referenced image exists),
the verdict first and the expected sections present; two weeks of one fleet show each
physical GPU once; missing families and all-NaN data give notes, not crashes; all-NaN outputs
show as inf and are counted, never as small errors; the precision page says what ran and
fits growth exponents (page, Markdown and JSON); `python -m kval_analysis` works."""
import os
import re
import subprocess
import sys

import json

import h5py
import numpy as np

import synth
from conftest import ANALYSIS
from kval_analysis import cli, growth, plots
from kval_analysis.cases import family_frame

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
    assert re.findall(r"<h2>([^<]*)</h2>", html)[:4] == ["Verdict", "Fingerprint disagreements (1)", "Failed cases (1)",
                                                          "Performance against peers"]
    assert "<div class='verdict FAIL'>VERDICT: FAIL</div>" in html and md.split("\n")[4].startswith("**VERDICT: FAIL**")
    for section in ("Runs", "GPUs (one row per physical GPU)", "Pass/fail per family and precision",
                    "Worst cases by error", "Throughput", "Roofline"):
        assert f"<h2>{section}</h2>" in html or f"<h3>{section}</h3>" in html
        assert section in md
    assert "[gemm]" in html  # the deck text
    assert "bound ratio 1.4" in html and "fail_tolerance" in md
    assert "gpu00" in html and "node02" in html
    assert os.path.getsize(os.path.join(out, "throughput_fa2.csv")) > 0
    assert "<tr class='bad'>" in html
    assert "<div class='scroll'><table>" in html


def test_two_weeks_show_each_gpu_once(make_file, tmp_path):
    week1 = make_file("week1.h5", nranks=4, noise_seed=1, creation_time="2026-11-23T08:00:00Z")
    week2 = make_file("week2.h5", nranks=4, noise_seed=2, slow={3: 1.3})
    out = str(tmp_path / "rep")
    assert cli.main(["report", week1, week2, "-o", out]) == 0
    html = open(os.path.join(out, "report.html")).read()
    verdict = html.split("<h2>Fingerprint")[0]
    assert verdict.count("<tr") == 1 + 4  # header and one row per physical GPU
    assert verdict.count(synth.gpu_uuid("node01", 1)) == 1
    gpus = html.split("<h2>GPUs (one row per physical GPU)</h2>")[1].split("</table>")[0]
    assert gpus.count("<tr>") == 1 + 4 and "<td>2</td>" in gpus  # two runs of every GPU


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
    assert "VERDICT: INCOMPLETE" in html  # every rmsnorm cell not run
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
    assert "## What ran" in md and "Backend cuda; GPUs: NVIDIA H200 x6 on 3 host(s)" in md
    fits = json.load(open(os.path.join(out, "precision.json")))
    assert fits["schema_version"] == 1 and fits["what_ran"]["axes"]["fa2"]["headdim"] == [64, 128]
    fit = next(f for f in fits["fits"] if f["family"] == "gemm" and f["precision"] == "bf16:bf16"
               and f["variant"] == "kval-mma" and f["quantity"] == "rel_l2")
    assert fit["ci_low"] < 0.5 < fit["ci_high"] and fit["consistent_with"] == "0.5"  # synth grows with sqrt(K)
    assert "## Fitted growth laws" in md and "| gemm | bf16:bf16 | normal | kval-mma | rel_l2 | 0.476" in md


def test_precision_compares_the_parts_of_an_output(make_file, tmp_path):
    path = make_file("bwd.h5", nranks=2, families=("fa2bwd",))
    out = str(tmp_path / "prec")
    assert cli.main(["precision", path, "-o", out]) == 0
    md = open(os.path.join(out, "precision.md")).read()
    table = md.split("### Errors of each part of an output")[1].split("\n#")[0]
    rows = {tuple(c.strip() for c in line.split("|")[1:4]): [c.strip() for c in line.split("|")[4:-1]]
            for line in table.splitlines() if line.startswith("| fa2bwd")}
    assert set(rows) == {("fa2bwd", p, part) for p in ("fp16:fp32", "bf16:fp32") for part in ("dq", "dk", "dv")}
    assert rows[("fa2bwd", "bf16:fp32", "dq")][0] == "16"  # cases: 8 cells on 2 ranks
    dq, dv = float(rows[("fa2bwd", "bf16:fp32", "dq")][1]), float(rows[("fa2bwd", "bf16:fp32", "dv")][1])
    assert abs(dv / dq - 0.5) < 1e-3  # synth.PART_ERROR
    result = json.load(open(os.path.join(out, "precision.json")))
    parts = result["parts"]
    assert len(parts) == 6 and {p["part"] for p in parts} == {"dq", "dk", "dv"}
    fit = {(f["family"], f["precision"]): f["exponent"] for f in result["fits"] if f["quantity"] == "rel_l2"}
    for part in ("dq", "dk", "dv"):  # each part fitted apart; synth scales the whole's error per part
        assert abs(fit[(f"fa2bwd ({part})", "bf16:fp32")] - fit[("fa2bwd", "bf16:fp32")]) < 1e-9


def test_all_nan_outputs_are_never_small_errors(make_file, tmp_path):
    cell = {"precision": "fp16:fp16", "hidden": 4096, "dist": "offset"}
    path = make_file("nan.h5", nranks=2, families=("layernorm",), all_nan=[("layernorm", cell)])
    with h5py.File(path, "a") as f:
        f.attrs["command_line"] = "kval --set 'layernorm.hidden=256 1024 4096' deck -o nan.h5"
    out = str(tmp_path / "prec")
    assert cli.main(["precision", path, "-o", out]) == 0
    md = open(os.path.join(out, "precision.md")).read()
    row = next(line for line in md.splitlines() if line.startswith("| layernorm | fp16:fp16 | fp16 | fp16 |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[5:9] == ["5", "1", "0", "1"] and cells[11] == "inf" and cells[13] == "inf"  # pass, fail, inaccurate, non-finite
    ladder = next(line for line in md.splitlines() if line.startswith("| layernorm | fp16:fp16 | 6 |"))
    assert ladder.split("|")[4].strip() == "0.1667"  # the non-finite fraction; never counted as <= 1e-6
    assert "--set: layernorm.hidden=256 1024 4096" in md
    fit = next(line for line in md.splitlines() if line.startswith("| layernorm | fp16:fp16 | offset | rel_l2"))
    assert fit.split("|")[-4].strip() == "1"  # left out as non-finite
    rep = str(tmp_path / "rep")
    assert cli.main(["report", path, "-o", rep]) == 0
    worst = open(os.path.join(rep, "report.md")).read().split("## Worst cases by error")[1]
    nan_row = next(line for line in worst.splitlines() if "fail_nonfinite" in line)
    stats_cells = [c.strip() for c in nan_row.split("fail_nonfinite")[1].split("|")]
    assert stats_cells.count("inf") == 7 and "0" not in stats_cells[:-3]  # every error statistic inf, none 0


def test_facets_and_colours_are_page_wide(clean_file):
    from kval_analysis.io import load
    runs = load([clean_file])
    fa2 = family_frame(runs.family("fa2"))
    assert growth._facets(fa2, "seqlen") == ["headdim"] and growth._facets(fa2, "headdim") == []
    assert growth._facets(family_frame(runs.family("layernorm")), "hidden") == ["dist"]
    assert plots.precision_color("bf16:fp32") == plots.PRECISION_COLORS["bf16:fp32"]
    assert plots.precision_color("fp8:fp32") == plots.precision_color("fp8:fp32")


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
