"""test_report_verdicts.py - the edges of what kval-analyze shows besides the fleet verdict that
a plausible bug in analysis/ would cross unseen (each test kills one or more `analysis` mutants
of tests/mutation/mutants.tsv, run by tests/mutation/run_analysis_mutants.sh): the report's
banner and verdict table keep an incomplete GPU apart from a failing one, its worst-cases table
lists a failure first whatever its bound ratio and shows a case on the rank where it
failed, its summary counts results (not cells), its
slowdowns are percent and its times microseconds; the export keeps a named deck section apart;
runs of other seeds are not compared bit for bit; growth fits leave out exact zeros and error
cases; the probe table shows every GPU's outcome with its status; numbers keep their digits,
Markdown cells their columns and HTML tables their rows; JUnit and the text report name an
incomplete GPU, mark a flip on the GPU of a second file, and time cases in seconds."""
import re
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pandas as pd

import synth
from kval_analysis import cli, export, fleet, growth, precision, probes, report
from kval_analysis.cases import family_frame
from kval_analysis.document import Document, format_value
from kval_analysis.io import family_axes, load

GEMM_CELL = {"variant": "kval-mma", "precision": "bf16:fp32", "shape": "512x512x1024"}
GEMM_CASE = "variant=kval-mma precision=bf16:fp32 layout=nn shape=512x512x1024 dist=normal"


def _md_rows(md, first):
    """The cells of the Markdown table rows whose first cell is `first`."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in md.splitlines()
            if line.startswith(f"| {first} |")]


def _junit(path):
    return {s.get("name"): s for s in ET.parse(path).getroot().iter("testsuite")}


def _failures(suite):
    return [(tc.get("classname"), tc.get("name")) for tc in suite.iter("testcase") if tc.find("failure") is not None]


def test_an_incomplete_gpu_reads_incomplete_in_a_large_fleet(make_file):
    # 17 complete GPUs and one whose run never reached some cells: more GPUs than the verdict
    # table lists in full, so it shows the GPUs that need attention.
    full = make_file("full.h5", nranks=17, gpus_per_host=8, families=("rmsnorm",))
    cut = make_file("cut.h5", nranks=1, host_prefix="cut", families=("rmsnorm",), missing=0.3)
    runs = load([full, cut])
    res = fleet.analyse(runs)
    verdicts = [g["verdict"] for g in res["gpus"]]
    assert len(verdicts) > report.MAX_VERDICT_ROWS and (verdicts.count("INCOMPLETE"), verdicts.count("PASS")) == (1, 17)
    doc = Document("t")
    report._verdict_section(doc, runs, res)
    md = doc.markdown()
    assert "18 GPU(s) in 2 file(s) (cuda backend): 0 fail, 1 incomplete." in md
    assert "17 GPU(s) pass every check" in md
    rows = _md_rows(md, "INCOMPLETE")
    assert len(rows) == 1 and rows[0][1] == "cut00" and rows[0][5] == synth.gpu_uuid("cut00", 0)


def test_the_worst_cases_list_a_failure_first_whatever_its_bound_ratio(make_file):
    # A harness error on the case with the smallest bound ratio of 24: 20 passing cases rank
    # above it by bound ratio.
    cell = {"precision": "fp16:fp16", "rows": 1024, "hidden": 4096, "dist": "offset"}
    path = make_file("err.h5", nranks=1, families=("layernorm",),
                     failures=[("layernorm", cell, 0, "error", "harness: reference rows disagree")])
    frames = report._frames(load([path]))
    frame = frames["layernorm"][0]
    err = frame.loc[frame["status"] == "error", "max_bound_ratio"]
    assert len(err) == 1 and (frame["max_bound_ratio"] > err.iloc[0]).sum() >= 20, "the case this test is about"
    doc = Document("t")
    report._worst_section(doc, frames)
    rows = _md_rows(doc.markdown(), "layernorm")
    assert len(rows) == 20 and rows[0][4:6] == ["error", "harness: reference rows disagree"]


def test_the_worst_cases_show_a_case_on_the_rank_where_it_failed(make_file):
    # Two ranks; the case ends in error on rank 0 and passes on rank 1 with a larger bound
    # ratio: the table must show it where it failed, not as passed.
    cell = {"precision": "fp16:fp16", "rows": 1024, "hidden": 4096, "dist": "offset"}
    path = make_file("err2.h5", nranks=2, families=("layernorm",),
                     failures=[("layernorm", cell, 0, "error", "harness: reference rows disagree")])
    with h5py.File(path, "r+") as f:
        f["layernorm/max_bound_ratio"][1] = f["layernorm/max_bound_ratio"][1] * 1.5
    frames = report._frames(load([path]))
    frame = frames["layernorm"][0]
    mask = np.ones(len(frame), dtype=bool)
    for axis, value in cell.items():
        mask &= frame[axis].astype(str).to_numpy() == str(value)
    case = frame[mask].set_index("rank")
    assert list(case["status"]) == ["error", "pass"], "the case this test is about"
    assert case.loc[1, "max_bound_ratio"] > case.loc[0, "max_bound_ratio"], "its passing rank ranks higher by ratio"
    doc = Document("t")
    report._worst_section(doc, frames)
    rows = _md_rows(doc.markdown(), "layernorm")
    assert rows[0][3:6] == ["0", "error", "harness: reference rows disagree"]


def test_the_summary_counts_results_not_cells(make_file):
    runs = load([make_file("fa2.h5", nranks=2, families=("fa2",))])
    frames = report._frames(runs)
    assert (frames["fa2"][0]["status"] == "skipped").sum() == 2 * 12  # fp32 storage: skipped on both ranks
    doc = Document("t")
    report._summary(doc, runs, frames)
    assert "fa2: 36 valid case(s), 12 skipped; 72 (rank, case) result(s), 0 failure(s)." in doc.markdown()


def test_the_performance_table_shows_slowdowns_in_percent(make_file, tmp_path):
    runs = load([make_file("slow.h5", nranks=2, families=("gemm", "layernorm"), slow={1: 1.3})])
    res = fleet.analyse(runs)
    g = next(x for x in res["performance"]["gpus"] if x["rank"] == 1)
    assert g["flagged"] and 1.25 < g["median_ratio"] < 1.35
    doc = Document("t")
    report._performance_section(doc, runs, res, str(tmp_path))
    md = doc.markdown()
    header = next(line for line in md.splitlines() if line.startswith("| verdict |"))
    column = [c.strip() for c in header.split("|")[1:-1]].index("median slowdown")
    (row,) = _md_rows(md, "FAIL")
    assert row[column] == f"{100 * (g['median_ratio'] - 1):+.1f}%" and row[column].startswith("+3")


def test_throughput_times_are_microseconds(make_file, tmp_path):
    runs = load([make_file("t.h5", nranks=2, families=("rmsnorm",))])
    frames = report._frames(runs)
    report._throughput_section(Document("t"), frames, str(tmp_path))
    axes = frames["rmsnorm"][1]
    table = pd.read_csv(tmp_path / "throughput_rmsnorm.csv").set_index(axes).sort_index()
    seconds = frames["rmsnorm"][0].groupby(axes)["time_median"].median().sort_index()
    assert np.allclose(table["time_us"].to_numpy(), seconds.to_numpy() * 1e6, rtol=1e-12)


def test_the_export_keeps_a_named_section_apart(make_file):
    # A deck's [gemm.scale] section: the group /gemm.scale, family gemm, the same case axes as /gemm.
    path = make_file("sec.h5", nranks=2, families=("gemm", "gemm.scale"), params={"gemm.scale": {"alpha": 2.0}})
    runs = load([path])
    assert runs.family("gemm.scale").attrs["family"] == "gemm", "the case this test is about"
    table = export.export_frame(runs)
    assert table["family"].value_counts().to_dict() == {"gemm": 72, "gemm.scale": 72}


def test_runs_of_other_seeds_are_not_compared(make_file):
    a = make_file("a.h5", nranks=2, host_prefix="a", families=("gemm",))
    b = make_file("b.h5", nranks=2, host_prefix="b", families=("gemm",), seed=7)
    runs = load([a, b])
    fp = runs.family("gemm")["fingerprint"]
    assert bool((fp.isel(rank=0) != fp.isel(rank=2)).all()), "other inputs, other bits: the case this test is about"
    res = fleet.analyse(runs)
    assert res["fingerprint"]["disagreements"] == [] and res["verdict"] == "PASS"


def test_a_fit_leaves_out_zero_errors_and_error_cases(make_file):
    # bf16:fp32 fa2: 12 cases; one exact (rel_l2 = 0) and one ended with a harness error whose
    # statistics kval still wrote: 10 points.
    zero = {"precision": "bf16:fp32", "headdim": 64, "seqlen": 1024, "causal": 0}
    err = {"precision": "bf16:fp32", "headdim": 128, "seqlen": 2048, "causal": 1}
    path = make_file("fit.h5", nranks=2, families=("fa2",),
                     failures=[("fa2", err, r, "error", "harness: reference rows disagree") for r in range(2)])
    with h5py.File(path, "a") as f:
        f["fa2/rel_l2"][:, 1, 0, 1, 0, 0, 0, 0] = 0.0
    runs = load([path])
    frames = {n: (family_frame(ds), family_axes(ds)) for n, ds in runs.families.items()}
    typical = precision._typical(frames)
    w = typical["fa2"][typical["fa2"]["precision"] == "bf16:fp32"]
    assert len(w) == 12 and (w["rel_l2"] == 0).sum() == 1
    assert np.isfinite(w.loc[w["status"] == "error", "rel_l2"]).all(), "an error case with statistics"
    fits = growth.fit_table(typical, frames)
    row = fits[(fits["family"] == "fa2") & (fits["precision"] == "bf16:fp32") & (fits["quantity"] == "rel_l2")].iloc[0]
    assert (row["points"], row["left_out_zero"], row["left_out_nonfinite"]) == (10, 1, 0)
    assert np.isfinite(row["exponent"])


def test_the_probe_table_shows_every_gpu_outcome_with_its_status(make_file):
    # Two GPUs of one node: one measures another outcome on one case, the other fails another case.
    cell = {"precision": "fp16:fp32", "rows": 1024, "hidden": 256, "dist": "normal"}
    bad = {"precision": "bf16:fp32", "rows": 1024, "hidden": 1024, "dist": "offset"}
    path = make_file("probe.h5", nranks=2, families=("rmsnorm",), outcomes=[("rmsnorm", cell, 1, 3)],
                     failures=[("rmsnorm", bad, 0, "fail_tolerance", "align: 13 bits, the model says 14")])
    runs = load([path])
    assert probes.probe_families(runs) == ["rmsnorm"] and set(runs.ranks["host"]) == {"node00"}
    table, records = probes.probe_table(runs)
    gpus = [c for c in table.columns if c not in ["family"] + list(cell)]
    assert len(table) == 24 and len(gpus) == 2 and len(records) == 48

    def row(case):
        return table[np.logical_and.reduce([table[a] == str(v) for a, v in case.items()])].iloc[0]

    assert sorted(row(cell)[gpus]) == ["outcome 0", "outcome 3"]
    assert sorted(row(bad)[gpus]) == ["13 bits, the model says 14 (fail_tolerance)", "outcome 0"]


def test_numbers_keep_their_digits():
    values = (2.4e-4, 1.5e6, 0.25, 0.0, np.inf, np.nan)
    assert [format_value(v) for v in values] == ["2.400e-04", "1.500e+06", "0.25", "0", "inf", "-"]


def test_markdown_cells_keep_their_columns():
    doc = Document("t")
    doc.table(pd.DataFrame({"message": ["bound | ratio 1.4"], "status": ["fail_tolerance"]}))
    assert _md_rows(doc.markdown(), "bound \\| ratio 1.4") == [["bound \\| ratio 1.4", "fail_tolerance"]]


def test_html_tables_show_rows_up_to_their_own_limit():
    doc = Document("t")
    doc.table(pd.DataFrame({"case": range(100)}))
    html = doc.html()
    assert html.count("<tr>") == 1 + 100 and "more rows not shown" not in html
    assert "(60 more rows in the HTML report)" in doc.markdown()


def test_junit_and_the_text_report_name_an_incomplete_gpu(make_file, tmp_path, capsys):
    path = make_file("cut.h5", nranks=2, families=("rmsnorm",), missing=0.3)
    ju = str(tmp_path / "cut.xml")
    assert cli.main(["fleet", path, "--junit", ju]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "VERDICT: INCOMPLETE (2 of 2 GPU(s) fail or are incomplete)"
    assert [line.split()[:2] for line in lines[1:3]] == [["INCOMPLETE", "node00"]] * 2
    suites = _junit(ju)
    assert len(suites) == 2 and all(("kval.fleet", "completeness") in _failures(s) for s in suites.values())


def test_junit_marks_a_flip_on_the_gpu_of_a_second_file_and_times_in_seconds(make_file, tmp_path):
    a = make_file("a.h5", nranks=2, host_prefix="a", families=("gemm",))
    b = make_file("b.h5", nranks=2, host_prefix="b", families=("gemm",), flips=[("gemm", GEMM_CELL, 0)])
    runs = load([a, b])
    res = fleet.analyse(runs)
    assert [(d["rank"], d["host"]) for d in res["fingerprint"]["disagreements"]] == [(2, "b00")]
    ju = str(tmp_path / "f.xml")
    assert cli.main(["fleet", a, b, "--junit", ju, "-q"]) == 1
    suites = _junit(ju)
    assert ("kval.gemm", GEMM_CASE) in _failures(suites[f"b00 {synth.gpu_uuid('b00', 0)}"])
    first = suites[f"a00 {synth.gpu_uuid('a00', 0)}"]
    assert _failures(first) == []
    case = next(tc for tc in first.iter("testcase") if tc.get("name") == GEMM_CASE)
    seconds = float(runs.family("gemm")["time_median"].sel(rank=0, layout="nn", dist="normal", **GEMM_CELL))
    assert abs(float(case.get("time")) - seconds) < 1e-9
