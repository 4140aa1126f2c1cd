"""test_verdicts.py - the edges of the fleet, baseline and precision-study verdicts that a
plausible bug in analysis/ would cross unseen (each test kills one or more `analysis` mutants of
tests/mutation/mutants.tsv, run by tests/mutation/run_analysis_mutants.sh): two GPUs that
disagree are both named (fingerprints, probe outcomes); runs of other parameters are not
compared; a GPU fails on performance only when its whole interval is above the threshold, at the
family-wise level, and (three GPUs or more) as an outlier of its model; an error status is a
failure; a split-mode file that lacks results is incomplete though it says complete; one
element's growth of max_ulp against the baseline is an error change; in the precision study the
median rank stands for a case, a precision that fails reads "fails" even with findings too, the
accumulator comparison runs from the wider accumulator; and the statistics underneath (median
interval, SAME within the noise, failure statuses, growth fits with per-stratum intercepts and
Student's t) on hand-computed values."""
import numpy as np
from scipy import stats as sps

import synth
from kval_analysis import fleet, precision, stats
from kval_analysis.cases import family_frame
from kval_analysis.io import family_axes, failure_mask, load

GEMM_CELL = {"variant": "kval-mma", "precision": "bf16:fp32", "shape": "512x512x1024"}


def _by_rank(res):
    return {g["uuid"]: g["verdict"] for g in res["gpus"]}


def test_two_gpus_that_disagree_are_both_named(make_file):
    # No majority between two GPUs: neither is trusted, both are named (fingerprints computed
    # here only: fp_compare=False writes no fp_agrees).
    path = make_file("two.h5", nranks=2, families=("gemm",), flips=[("gemm", GEMM_CELL, 1)], fp_compare=False)
    res = fleet.analyse(load([path]))
    dis = res["fingerprint"]["disagreements"]
    assert sorted(d["rank"] for d in dis) == [0, 1]
    assert all(d["majority"] is None and d["source"] == "computed" for d in dis)
    assert res["verdict"] == "FAIL" and set(_by_rank(res).values()) == {"FAIL"}


def test_runs_of_other_parameters_are_not_compared(make_file):
    # Two nodes ran the same cells with another alpha: their outputs differ by design.
    a = make_file("a.h5", nranks=2, host_prefix="a", families=("gemm",))
    b = make_file("b.h5", nranks=2, host_prefix="b", families=("gemm",), params={"gemm": {"alpha": 2.0}})
    res = fleet.analyse(load([a, b]))
    assert res["fingerprint"]["disagreements"] == [] and res["verdict"] == "PASS"
    # the same second run with the first one's parameters but another bit on one GPU is found
    c = make_file("c.h5", nranks=2, host_prefix="c", families=("gemm",), flips=[("gemm", GEMM_CELL, 0)])
    res = fleet.analyse(load([a, b, c]))
    assert [(d["host"], d["agreeing_ranks"]) for d in res["fingerprint"]["disagreements"]] == [("c00", 3)]


def test_two_gpus_with_other_probe_outcomes_are_both_named(make_file):
    cell = {"precision": "fp16:fp32", "rows": 1024, "hidden": 256, "dist": "normal"}
    path = make_file("probe.h5", nranks=2, families=("rmsnorm",), outcomes=[("rmsnorm", cell, 1, 3)])
    res = fleet.analyse(load([path]))
    dis = res["arithmetic"]["disagreements"]
    assert sorted((d["rank"], d["outcome"], d["majority"]) for d in dis) == [(0, 0, None), (1, 3, None)]
    assert res["verdict"] == "FAIL"
    # three GPUs: the odd one alone, against the majority outcome
    path = make_file("probe3.h5", nranks=3, families=("rmsnorm",), outcomes=[("rmsnorm", cell, 2, 3)])
    dis = fleet.analyse(load([path]))["arithmetic"]["disagreements"]
    assert [(d["rank"], d["outcome"], d["majority"]) for d in dis] == [(2, 3, 0)]


def test_a_gpu_fails_only_when_its_whole_interval_is_above_the_threshold(make_file):
    # Two GPUs, the second 1.5 % slower with run-to-run noise: its interval straddles 1.02.
    path = make_file("straddle.h5", nranks=2, families=("gemm", "layernorm"), slow={1: 1.015}, jitter=0.02,
                     noise_seed=7)
    res = fleet.analyse(load([path]))
    g = next(x for x in res["performance"]["gpus"] if x["rank"] == 1)
    assert g["ratio_low"] < 1.02 < g["ratio_high"], "the case this test is about: an interval across 1 + slow"
    assert not g["flagged"] and res["verdict"] == "PASS"
    # 5 % slower: the whole interval above 1.02 fails it
    path = make_file("slow.h5", nranks=2, families=("gemm", "layernorm"), slow={1: 1.05}, jitter=0.02, noise_seed=7)
    g = next(x for x in fleet.analyse(load([path]))["performance"]["gpus"] if x["rank"] == 1)
    assert g["ratio_low"] > 1.02 and g["flagged"]


def test_a_broad_spread_of_speeds_is_no_outlier(make_file):
    # Six GPUs from 3 % faster to 5 % slower, evenly spread: the slowest one's interval lies
    # above 1.02, but among its model it is no outlier (robust z <= 3.5), so nothing fails.
    speeds = {0: 0.97, 1: 0.985, 2: 1.0, 3: 1.01, 4: 1.03, 5: 1.05}
    path = make_file("spread.h5", nranks=6, families=("gemm", "layernorm"), slow=speeds, noise_seed=3)
    res = fleet.analyse(load([path]))
    g = next(x for x in res["performance"]["gpus"] if x["rank"] == 5)
    assert g["ratio_low"] > 1.02 and g["median_z"] <= 3.5, "the case this test is about"
    assert not any(x["flagged"] for x in res["performance"]["gpus"])
    # one GPU 30 % slower among five equal ones is both: it fails
    path = make_file("outlier.h5", nranks=6, families=("gemm", "layernorm"), slow={5: 1.3}, noise_seed=3)
    flagged = [x["rank"] for x in fleet.analyse(load([path]))["performance"]["gpus"] if x["flagged"]]
    assert flagged == [5]


def test_intervals_are_family_wise(make_file):
    # G GPUs judged at once: each interval at 1 - 0.01 / G, in the fleet and against a baseline.
    base = make_file("w1.h5", nranks=6, families=("gemm",), noise_seed=1)
    cur = make_file("w2.h5", nranks=6, families=("gemm",), noise_seed=2)
    res = fleet.analyse(load([cur]), load([base]))
    want = 1 - 0.01 / 6
    assert [g["level"] for g in res["performance"]["gpus"]] == [want] * 6
    assert [g["level"] for g in res["baseline"]["gpus"]] == [want] * 6
    assert fleet.interval_level(fleet.FleetOptions(), 1) == 0.99


def test_an_error_status_is_a_failure(make_file):
    cell = {"precision": "fp16:fp32", "rows": 1024, "hidden": 4096, "dist": "offset"}
    path = make_file("err.h5", nranks=2, families=("layernorm",),
                     failures=[("layernorm", cell, 1, "error", "harness: reference rows disagree")])
    res = fleet.analyse(load([path]))
    assert [(f["rank"], f["status"]) for f in res["failures"]] == [(1, "error")]
    checks = {(c["rank"], c["check"]): c["state"] for c in res["checks"]}
    assert checks[(1, "failures")] == "fail" and checks[(0, "failures")] == "pass" and res["verdict"] == "FAIL"
    # against a week where it passed: a new failure
    base = make_file("base.h5", nranks=2, families=("layernorm",), noise_seed=5)
    res = fleet.analyse(load([path]), load([base]))
    assert [(n["uuid"], n["status"], n["base_status"]) for n in res["baseline"]["new_failures"]] == \
        [(synth.gpu_uuid("node00", 1), "error", "pass")]


def test_a_split_file_without_all_results_is_incomplete(make_file):
    # Split mode: each cell on one rank; some never ran, yet the file's attribute says complete.
    path = make_file("split.h5", nranks=3, mode="split", families=("gemm",), missing=0.2, complete=1)
    res = fleet.analyse(load([path]))
    f = res["completeness"]["files"][0]
    assert f["complete"] and f["missing_results"] > 0
    assert res["verdict"] == "INCOMPLETE"
    assert {c["state"] for c in res["checks"] if c["check"] == "completeness"} == {"incomplete"}


def test_one_elements_error_growth_is_an_error_change(make_file):
    # max_ulp of one case grows 4x against the baseline while rel_l2 stays: one far-off element.
    cell = {"precision": "bf16:fp32", "rows": 1024, "hidden": 1024, "dist": "normal"}
    base = make_file("w1.h5", nranks=2, families=("rmsnorm",))
    cur = make_file("w2.h5", nranks=2, families=("rmsnorm",), ulp_outliers=[("rmsnorm", cell, 0, 4.0)])
    res = fleet.analyse(load([cur]), load([base]))
    ch = res["baseline"]["error_changes"]
    assert [(c["uuid"], c["case"]["hidden"]) for c in ch] == [(synth.gpu_uuid("node00", 0), 1024)]
    assert ch[0]["max_ulp"] == 4 * ch[0]["base_max_ulp"] and ch[0]["rel_l2"] == ch[0]["base_rel_l2"]
    states = {c["rank"]: c["state"] for c in res["checks"] if c["check"] == "baseline"}
    assert states == {0: "fail", 1: "pass"}


def test_median_interval_order_statistics():
    # n = 20 at 95 %: [x_(6), x_(15)] covers 1 - 2 P(Bin(20, 1/2) <= 5) = 0.9586; [x_(7), x_(14)]
    # only 0.8847. n = 5 has no pair at 95 %: [min, max].
    assert stats.median_ci(np.arange(1.0, 21.0), 0.95) == (10.5, 6.0, 15.0)
    assert stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0], 0.95) == (3.0, 1.0, 5.0)
    # n = 100 at 99 %: k = 37 (coverage 0.9934; k = 38: 0.9880), [x_(37), x_(64)]
    assert stats.median_ci(np.arange(1.0, 101.0), 0.99)[1:] == (37.0, 64.0)


def test_compare_states_against_the_noise():
    ratio = [1.03, 0.97, 1.03, 0.95, 1.2, 1.0]
    width = [0.04, 0.04, 0.01, 0.01, 0.1, np.nan]
    assert list(stats.compare_state(ratio, width, 0.05)) == ["SAME", "SAME", "SLOW", "FAST", "AMBIGUOUS", "AMBIGUOUS"]


def test_failure_statuses():
    st = ["error", "fail_tolerance", "fail_bias", "fail_nondeterministic", "pass", "inaccurate", "skipped", "not_run"]
    assert list(failure_mask(st)) == [True, True, True, True, False, False, False, False]


def _summary(path):
    runs = load([path])
    frames = {n: (family_frame(ds), family_axes(ds)) for n, ds in runs.families.items()}
    return precision.summary_table(frames, precision._typical(frames)), frames


def test_the_median_rank_stands_for_a_case(make_file):
    # One case fails on two of three GPUs: the study counts it failed (the best GPU does not speak for it).
    cell = {"precision": "bf16:fp32", "rows": 1024, "hidden": 4096, "dist": "normal"}
    fails = [("rmsnorm", cell, r, "fail_tolerance", "bound ratio 1.5") for r in (0, 2)]
    summary, _ = _summary(make_file("maj.h5", nranks=3, families=("rmsnorm",), failures=fails))
    row = summary[summary["precision"] == "bf16:fp32"].iloc[0]
    assert row["fail"] == 1 and row["within tolerance"].startswith("fails")


def test_a_precision_that_fails_reads_fails_beside_its_findings(make_file):
    fp16 = {"precision": "fp16:fp16", "rows": 1024, "dist": "normal"}
    marks = [("layernorm", dict(fp16, hidden=4096), r, "fail_tolerance", "bound ratio 2") for r in range(2)]
    marks += [("layernorm", dict(fp16, hidden=256), r, "inaccurate", "outside the bound, within the model")
              for r in range(2)]
    summary, _ = _summary(make_file("both.h5", nranks=2, families=("layernorm",), failures=marks))
    row = summary[summary["precision"] == "fp16:fp16"].iloc[0]
    assert (row["fail"], row["inaccurate"]) == (1, 1)
    assert row["within tolerance"] == "fails where hidden in {4096}; dist in {normal}"


def test_the_accumulator_comparison_starts_from_the_wider_accumulator(make_file):
    _, frames = _summary(make_file("acc.h5", nranks=2, families=("gemm",)))
    pairs = precision.pair_table(frames, precision._typical(frames))
    acc = pairs[pairs["effect"] == "accumulator"]
    assert sorted(zip(acc["baseline"], acc["compared"])) == [("bf16:fp32", "bf16:bf16"), ("fp16:fp32", "fp16:fp16")]
    assert (acc["median ratio"] > 1).all()  # the narrower accumulator's error is the larger


def test_growth_fit_with_strata_and_t_interval():
    # Two strata, each exactly sqrt(x), over different x and ten times apart (the larger x the
    # smaller level, as a deck's larger shapes in a better-conditioned setting): per-stratum
    # intercepts give 0.5 exactly; one intercept would fit a flatter law.
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    y = np.sqrt(x) * np.repeat([10.0, 1.0], 4)
    fit = stats.growth_fit(x, y, strata=np.repeat(["a", "b"], 4))
    assert abs(fit["exponent"] - 0.5) < 1e-12 and fit["strata"] == 2 and fit["dof"] == 5
    # One stratum, four noisy points: the interval is Student's t (2 degrees of freedom) times the
    # slope's standard error, as scipy's linregress computes them on the logs.
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = np.array([1.0, 1.5, 1.9, 3.1])
    fit = stats.growth_fit(x, y)
    lr = sps.linregress(np.log(x), np.log(y))
    half = sps.t.ppf(0.975, 2) * lr.stderr
    assert abs(fit["exponent"] - lr.slope) < 1e-12
    assert abs(fit["low"] - (lr.slope - half)) < 1e-12 and abs(fit["high"] - (lr.slope + half)) < 1e-12
