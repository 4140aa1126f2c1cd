#!/bin/sh
# resume_test.sh - --resume FILE (cpu backend, 2 ranks): a rerun with the same deck runs only
# the cases whose status is not_run (and error ones with --retry-errors), writing into the
# same file, and the result equals, case for case, one uninterrupted run with the same seed
# (tests/system/compare_files.py: statuses, messages, fingerprints, error statistics and the fleet
# fingerprint comparison; timings ignored), in fleet and split mode. The exit code of a
# resumed run covers the results it kept. A different deck, --set, [run] setting, seed,
# rank count, mode or family set, a missing or non-HDF5 file and contradictory options are
# each a clear error: exit 2, a message naming the difference, and the file left untouched.
# Interrupted files are made here by resetting the later half of every rank's cells of a
# finished file to not_run, exactly as an interrupted run leaves them (kill_test.py and
# signal_test.sh resume files of really interrupted runs).
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
"$PYTHON" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_resume.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
compare="$top_srcdir/tests/system/compare_files.py"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()

deck="$tmp/resume.deck"
cat >"$deck" <<'EOF'
# resume_test deck
[run]
seed = 9
warmup = 0
min_reps = 1
max_reps = 2
time_cap = 0.01

[fa2]
precision = fp16:fp32 bf16:fp32
headdim = 64
seqlen = 96 128
causal = 0 1
heads = 2
batch = 1

[gemm]
variant = cublas kval-mma
precision = fp16:fp32 fp16:fp16
layout = nn tn
shape = 96x64x80

[rmsnorm]
precision = fp16:fp32 fp32:fp32
rows = 64
hidden = 256 320

[fa2bwd]
precision = fp16:fp32 bf16:fp32
headdim = 64
seqlen = 70
causal = 0 1
batch = 1
heads = 2
EOF

# reset FILE MODE: MODE truncate: the later half of every rank's valid cells back to
# not_run with fill values; MODE error: three of those cells to status error with a
# message, as a backend failure leaves them. The fleet comparison goes back to its fill
# and `complete` to 0, as after an interruption.
reset() {
  "$PYTHON" - "$1" "$2" "$top_srcdir/tests/system" <<'EOF'
import sys
import h5py
import numpy as np
path, mode = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import kvrows
fill = {"fingerprint": 0, "checksum": 0, "hist": 0, "message": b"", "fp_agrees": 2, "fp_distinct": 0,
        "fp_majority": 0}
with h5py.File(path, "r+") as f:
    f.attrs["complete"] = 0
    for name, g in f.items():
        if name == "ranks" or not isinstance(g, h5py.Group):  # /case_status is the named status type
            continue
        status = g["status"][...]
        flat = status.reshape(status.shape[0], -1)
        pick = np.zeros(flat.shape, bool)
        pick[:, flat.shape[1] // 2:] = True
        pick &= flat != 4
        if mode == "error":
            keep = np.argwhere(pick)[:3]
            pick[:] = False
            pick[tuple(keep.T)] = True
        pick = pick.reshape(status.shape)
        for dname, ds in g.items():
            if dname in ("fp_distinct", "fp_majority"):
                ds[...] = 0
                continue
            if ds.shape[:status.ndim] != status.shape or dname == "status":
                continue
            data = ds[...]
            data[pick] = fill.get(dname, np.nan if data.dtype.kind == "f" else -1)
            ds[...] = data
        status[pick] = 5 if mode == "error" else 0
        g["status"][...] = status
        if mode == "error":
            msg = g["message"][...]
            msg[pick] = b"simulated backend error"
            g["message"][...] = msg
            sums = g["checksum"][...]
            sums[pick] = kvrows.group_checksums(g)[pick]  # as kval writes an error row
            g["checksum"][...] = sums
EOF
}

two="$MPIRUN -np 2 $KVAL --backend cpu --quiet"
# run NAME WANT CMD...: CMD must exit WANT; output in $tmp/NAME.log.
run() {
  n=$1 want=$2; shift 2
  "$@" >"$tmp/$n.log" 2>&1; got=$?
  [ "$got" -eq "$want" ] || { fail "$n: exit $got, expected $want"; tail -n 5 "$tmp/$n.log"; }
}
same() { # NAME FILE REF
  "$PYTHON" "$compare" "$2" "$3" >"$tmp/$1.cmp" || { fail "$1: differs from the uninterrupted run"; head -n 8 "$tmp/$1.cmp"; return; }
  echo "ok $1: $(cat "$tmp/$1.cmp")"
}

run ref 0 $two "$deck" -o "$tmp/ref.h5"
run ref_split 0 $two --mode split "$deck" -o "$tmp/ref_split.h5"
run ref_fail 1 $two --inject nan@1:2 "$deck" -o "$tmp/ref_fail.h5"

# Fleet mode: the later half of the cells is rerun; nothing else is touched.
cp "$tmp/ref.h5" "$tmp/half.h5" && reset "$tmp/half.h5" truncate
"$PYTHON" "$compare" --subset "$tmp/half.h5" "$tmp/ref.h5" >/dev/null || fail "the truncated file is not a subset"
run resume_fleet 0 $MPIRUN -np 2 $KVAL --backend cpu "$deck" --resume "$tmp/half.h5"
grep -q "results kept from the file" "$tmp/resume_fleet.log" || fail "resume_fleet: no 'results kept' message"
same resume_fleet "$tmp/half.h5" "$tmp/ref.h5"

# Split mode.
cp "$tmp/ref_split.h5" "$tmp/half_split.h5" && reset "$tmp/half_split.h5" truncate
run resume_split 0 $two --mode split "$deck" --resume "$tmp/half_split.h5"
same resume_split "$tmp/half_split.h5" "$tmp/ref_split.h5"

# A kept failure still decides the exit code (1), though the rerun cases all pass.
cp "$tmp/ref_fail.h5" "$tmp/half_fail.h5" && reset "$tmp/half_fail.h5" truncate
run resume_kept_failure 1 $two "$deck" --resume "$tmp/half_fail.h5"
same resume_kept_failure "$tmp/half_fail.h5" "$tmp/ref_fail.h5"

# A complete file: nothing to run, the file stays equal.
cp "$tmp/ref.h5" "$tmp/complete.h5"
run resume_complete 0 $two "$deck" --resume "$tmp/complete.h5"
same resume_complete "$tmp/complete.h5" "$tmp/ref.h5"

# Cases with status error are kept (exit 3) unless --retry-errors reruns them.
cp "$tmp/ref.h5" "$tmp/errors.h5" && reset "$tmp/errors.h5" error
run resume_keeps_errors 3 $two "$deck" --resume "$tmp/errors.h5"
"$PYTHON" -c "
import sys, h5py, numpy as np
groups = [g for k, g in h5py.File(sys.argv[1], 'r').items() if isinstance(g, h5py.Group) and k != 'ranks']
n = sum(int(np.count_nonzero(g['status'][...] == 5)) for g in groups)
sys.exit(0 if n == 3 * len(groups) else 1)" "$tmp/errors.h5" || fail "resume without --retry-errors did not keep the 3 error cells of each family"
run resume_retry_errors 0 $two "$deck" --resume "$tmp/errors.h5" --retry-errors
same resume_retry_errors "$tmp/errors.h5" "$tmp/ref.h5"

# Incompatible reruns: exit 2, a message naming the difference, the file untouched (a
# one-rank file, so that most of these start without mpirun).
one="$KVAL --backend cpu --quiet"
run ref1 0 $one "$deck" -o "$tmp/ref1.h5"
cp "$tmp/ref1.h5" "$tmp/target.h5" && reset "$tmp/target.h5" truncate && cp "$tmp/target.h5" "$tmp/target.orig"
sed 's/^seqlen = 96 128/seqlen = 96 128  # edited/' "$deck" >"$tmp/edited.deck"
echo "not an HDF5 file" >"$tmp/text.h5"
refuse() { # NAME PHRASE CMD...
  n=$1 phrase=$2; shift 2
  run "$n" 2 "$@"
  grep -F -q -e "$phrase" "$tmp/$n.log" || fail "$n: no '$phrase' in: $(head -c 300 "$tmp/$n.log")"
  cmp -s "$tmp/target.h5" "$tmp/target.orig" || { fail "$n: the file was modified"; cp "$tmp/target.orig" "$tmp/target.h5"; }
  [ $rc -ne 0 ] || echo "ok $n: exit 2, '$phrase'"
}
t="$tmp/target.h5"
refuse other_deck "the deck differs from the one that wrote the file, first at deck line 12" $one "$tmp/edited.deck" --resume "$t"
refuse other_axis_values "value 2 of fa2.seqlen is 128 in the file, this run has 160" $one --set "fa2.seqlen=96 160" "$deck" --resume "$t"
refuse other_axis_length "along seqlen" $one --set "fa2.seqlen=96 128 160" "$deck" --resume "$t"
refuse other_param "fa2.scale = 0, this run has 0.5" $one --set "fa2.scale=0.5" "$deck" --resume "$t"
refuse other_real_axis "value 1 of gemm.alpha is 1 in the file, this run has 2" $one --set "gemm.alpha=2" "$deck" --resume "$t"
refuse other_run_setting "the file has 'max_reps=2', this run has 'max_reps=3'" $one --set "run.max_reps=3" "$deck" --resume "$t"
refuse other_seed "written with seed 9, this run has seed 10" $one --seed 10 "$deck" --resume "$t"
refuse other_ranks "written by 1 ranks, this run has 2" $two "$deck" --resume "$t"
refuse other_mode "mode 'fleet', this run has mode 'split'" $one --mode split "$deck" --resume "$t"
refuse other_families "the file holds family /fa2, which this run does not plan" $one --only gemm,rmsnorm "$deck" --resume "$t"
refuse missing_file "No such file or directory" $one "$deck" --resume "$tmp/none.h5"
refuse not_hdf5 "not an HDF5 file" $one "$deck" --resume "$tmp/text.h5"
refuse resume_and_output "name different files" $one "$deck" --resume "$t" -o "$tmp/other.h5"
refuse resume_and_force "--force and --resume exclude each other" $one "$deck" --resume "$t" --force
refuse retry_without_resume "--retry-errors needs --resume FILE" $one "$deck" --retry-errors -o "$tmp/x.h5"
[ ! -e "$tmp/x.h5" ] && [ ! -e "$tmp/other.h5" ] && [ ! -e "$tmp/none.h5" ] || fail "a refused run created a file"
# Damaged rows are never kept: a status outside the enum, a plan-skipped cell made "pass", a
# changed fingerprint, statistic or part statistic (the row checksum) refuses the file, naming the row.
# damage NAME PHRASE PYTHON: PYTHON edits the copy f (h5py, r+) of the target; the resume
# must exit 2 saying PHRASE and leave the damaged file as it was.
damage() {
  n=$1 phrase=$2 edit=$3
  cp "$tmp/target.orig" "$tmp/$n.h5"
  "$PYTHON" -c "
import h5py, numpy as np
with h5py.File('$tmp/$n.h5', 'r+') as f:
    g = [f[k] for k in f if isinstance(f[k], h5py.Group) and k != 'ranks' and (f[k]['status'][...] == 1).any()][0]  # a family with a kept pass
    s = g['status'][...]
    kept = np.argwhere(s == 1)[0]
    gs = f['gemm']  # cublas is skipped by the plan on the cpu backend
    ss = gs['status'][...]
    skip = np.argwhere(ss == 4)[0]
    $edit
" 2>"$tmp/$n.py.err" || { fail "$n: cannot damage the file: $(tail -n 2 "$tmp/$n.py.err")"; return; }
  cp "$tmp/$n.h5" "$tmp/$n.damaged"
  run "$n" 2 $one "$deck" --resume "$tmp/$n.h5"
  grep -F -q -e "$phrase" "$tmp/$n.log" || fail "$n: no '$phrase' in: $(head -c 400 "$tmp/$n.log")"
  cmp -s "$tmp/$n.h5" "$tmp/$n.damaged" || fail "$n: the refused file was modified"
  [ $rc -ne 0 ] || echo "ok $n: exit 2, '$phrase'"
}
# the first value past the statuses: the count of names in kv_status_name's table (src/core/dtype.c)
nstatus=$(sed -n '/names\[KV_NSTATUS\] = {/,/};/p' "$top_srcdir/src/core/dtype.c" | grep -o '"[a-z_]*"' | wc -l)
for v in "$nstatus" 127 200; do # the byte itself (statuses are 0..nstatus-1): 200 is int8 -56
  damage "status_$v" "): not a status of this kval" "s[tuple(kept)] = np.uint8($v).view(np.int8); g['status'].id.write(h5py.h5s.ALL, h5py.h5s.ALL, s)"
done
# a valid status that is not the one recorded: the row's checksum no longer matches
damage status_pass_made_bias "do not match its checksum" "s[tuple(kept)] = 8; g['status'].id.write(h5py.h5s.ALL, h5py.h5s.ALL, s)"
damage skipped_made_pass "the plan skips this cell" "ss[tuple(skip)] = 1; gs['status'][...] = ss"
damage fingerprint_changed "do not match its checksum" "d = g['fingerprint'][...]; d[tuple(kept)] ^= 1; g['fingerprint'][...] = d"
damage statistic_changed "do not match its checksum" "d = g['max_ulp'][...]; d[tuple(kept)] += 1; g['max_ulp'][...] = d"
damage part_statistic_changed "do not match its checksum" "b = f['fa2bwd']; k = tuple(np.argwhere(b['status'][...] == 1)[0]); d = b['part_stats'][...]; d[k + (1, 2)] *= 2; b['part_stats'][...] = d"
damage no_checksums "has no 'checksum' dataset" "del gs['checksum']"

# ... and the untouched file still resumes.
run resume_after_refusals 0 $one "$deck" --resume "$t"
same resume_after_refusals "$t" "$tmp/ref1.h5"

# Never overwrite without --force or --resume (also in exit_codes.sh, here with 2 ranks).
cp "$tmp/ref.h5" "$tmp/exists.h5" && cp "$tmp/ref.h5" "$tmp/exists.orig"
refuse_exist() { run no_overwrite 2 "$@"; cmp -s "$tmp/exists.h5" "$tmp/exists.orig" || fail "an existing file was changed"; }
refuse_exist $two "$deck" -o "$tmp/exists.h5"
grep -q "exists; use --force" "$tmp/no_overwrite.log" || fail "no 'exists; use --force' message"
[ $rc -ne 0 ] || echo "ok no_overwrite: exit 2 and the file is unchanged"
exit $rc
