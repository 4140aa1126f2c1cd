#!/bin/sh
# sections_test.sh - named family sections [FAMILY.NAME] end to end on the cpu backend with 2
# ranks: a deck with [gemm], [gemm.tails] and [rmsnorm.odd] writes one group per section
# (attribute family = the family), every group passes check_layout.py, the two gemm sections
# draw different inputs for the same cell, --only and --set reach a named section, --resume of
# a finished file needs the same sections (--only leaving one out is refused), and kval-analyze
# report and fleet read the file. Environment (set by `make check`): KVAL, top_srcdir, MPIRUN, PYTHON.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
export PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
cat >"$tmp/s.deck" <<'DECK'
[run]
seed = 5
warmup = 0
min_reps = 2
max_reps = 2
[gemm]
variant = kval-mma
precision = fp16:fp32
shape = 64x64x64
[gemm.tails]
variant = kval-mma
precision = fp16:fp32
shape = 64x64x64 33x17x100
alpha = 0.5
beta = 0 1
[rmsnorm.odd]
precision = fp16:fp32
rows = 9
hidden = 37
DECK
f="$tmp/s.h5"
"$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet "$tmp/s.deck" -o "$f" >"$tmp/log" 2>&1 || { fail "run: exit $?"; cat "$tmp/log"; }
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$f" --nranks 2 --expect-run >"$tmp/layout.log" 2>&1 ||
  { fail "check_layout"; cat "$tmp/layout.log"; }
"$PYTHON" - "$f" <<'PY' || rc=1
import sys, h5py
f = h5py.File(sys.argv[1], "r")
groups = sorted(k for k in f if isinstance(f[k], h5py.Group) and k != "ranks")
ok = groups == ["gemm", "gemm.tails", "rmsnorm.odd"]
ok = ok and [f[g].attrs["family"] for g in groups] == ["gemm", "gemm", "rmsnorm"]
ok = ok and f["gemm.tails"]["status"].shape == (2, 1, 1, 1, 2, 1, 1, 2, 1, 1, 1) and (f["gemm.tails"]["status"][...] == 1).all()
# cell 0 of both gemm sections is 64x64x64 fp16:fp32 nn normal, alpha 1 vs 0.5: fresh inputs per section
ok = ok and f["gemm"]["fingerprint"][0].ravel()[0] != f["gemm.tails"]["fingerprint"][0].ravel()[0]
if not ok:
    print("FAIL: groups", groups, [dict(f[g].attrs).get("family") for g in groups], f["gemm.tails"]["status"].shape)
    sys.exit(1)
print("ok groups: gemm, gemm.tails (family gemm), rmsnorm.odd (family rmsnorm)")
PY
"$KVAL" --backend cpu --dry-run --only gemm.tails --set gemm.tails.beta=1 "$tmp/s.deck" >"$tmp/dry.log" 2>&1 ||
  fail "--dry-run --only gemm.tails: exit $?"
grep -q '^\[gemm.tails\] 2 cells' "$tmp/dry.log" && [ "$(grep -c '^\[' "$tmp/dry.log")" -eq 1 ] ||
  { fail "--only gemm.tails: not that section alone"; cat "$tmp/dry.log"; }
grep -q '^  beta  *1$' "$tmp/dry.log" || fail "--set gemm.tails.beta=1 did not replace beta"
"$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet "$tmp/s.deck" --resume "$f" >"$tmp/resume.log" 2>&1 ||
  { fail "--resume of the finished file: exit $?"; cat "$tmp/resume.log"; }
"$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet --only gemm.tails,rmsnorm.odd "$tmp/s.deck" --resume "$f" >"$tmp/fewer.log" 2>&1
code=$?
[ $code -eq 2 ] && grep -q "holds family /gemm, which this run does not plan" "$tmp/fewer.log" ||
  { fail "--resume --only gemm.tails,rmsnorm.odd: exit $code, expected 2"; cat "$tmp/fewer.log"; }
# Two cpu-backend ranks on a loaded test machine differ in speed by more than fleet's 2 %
# (CI flagged one on these 2-repetition cases): the timing rule is set out of reach, so
# fleet judges what this file is about (it reads every section, fingerprints, failures).
"$PYTHON" -m kval_analysis fleet "$f" -q --slow 1000 --z 1e6 || fail "kval-analyze fleet: exit $?"
"$PYTHON" -m kval_analysis report "$f" -o "$tmp/report" >"$tmp/report.log" 2>&1 || { fail "report: exit $?"; tail "$tmp/report.log"; }
grep -q 'gemm.tails' "$tmp/report/report.md" 2>/dev/null || fail "the report does not name gemm.tails"
[ $rc -eq 0 ] && echo "ok sections: groups, inputs, --only/--set, --resume, analysis"
exit $rc
