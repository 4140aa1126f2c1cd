#!/bin/sh
# signal_test.sh - SIGTERM and SIGINT stop kval cleanly (cpu backend): the current case is
# finished, the file is flushed and closed, kval says the file is resumable and exits 143
# (SIGTERM) or 130 (SIGINT); the interrupted file holds only results equal to an
# uninterrupted run, and --resume completes it into a file equal, case for case, to that
# run. Covered: one rank (SIGTERM, SIGINT, a signal right after the file appears), two
# ranks under mpirun with every rank signalled (what srun does at the time limit), the case
# in flight being finished, and a second signal abandoning it at once.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
"$PYTHON" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_signal.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
compare="$top_srcdir/tests/system/compare_files.py"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()

cat >"$tmp/short.deck" <<'EOF'
# signal_test: about 26 short cases per rank
[run]
seed = 5
warmup = 0
min_reps = 1
max_reps = 2
time_cap = 0.01

[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32 fp16:fp16
layout = nn tn
shape = 320x320x256 256x320x384

[layernorm]
precision = fp16:fp32 bf16:fp32 fp32:fp32
rows = 512
hidden = 2048 4096

[fa2]
precision = fp16:fp32 bf16:fp32
headdim = 64
seqlen = 384 512
causal = 0 1
heads = 2
batch = 1
EOF
cat >"$tmp/long.deck" <<'EOF'
# signal_test: one tiny case, then one that takes seconds
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01

[gemm]
variant = kval-mma
precision = fp16:fp32
shape = 64x64x64 4096x2048x1024
EOF

# start NAME CMD...: run CMD in the background, output in $tmp/NAME.log, pid in $pid.
start() { name=$1; shift; "$@" >"$tmp/$name.log" 2>&1 & pid=$!; }
# wait_file PATH: until PATH exists (at most 30 s).
wait_file() { n=0; while [ ! -e "$1" ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n + 1)); done; }
# finish PID: wait for it; its exit status in $status.
finish() { wait "$1"; status=$?; }
expect_status() { # WANT WHAT
  [ "$status" -eq "$1" ] || { fail "$2: exit $status, expected $1"; tail -n 5 "$tmp/$name.log"; }
}
# interrupted NAME FILE SIGNAL: the log says the file is resumable; the file holds only
# correct results (at least MIN of them) compared with REF.
check_interrupted() { # NAME FILE SIGNAL REF MIN
  grep -q "interrupted by $3: .*--resume $2" "$tmp/$1.log" || fail "$1: no 'interrupted by $3 ... --resume $2' message"
  "$PYTHON" "$compare" --subset --min-results "$5" "$2" "$4" >"$tmp/$1.cmp" || { fail "$1: interrupted file"; head -n 8 "$tmp/$1.cmp"; }
  "$PYTHON" -c "import h5py, sys; sys.exit(int(h5py.File(sys.argv[1], 'r').attrs['complete'] != $6))" "$2" ||
    fail "$1: attribute complete is not $6"
}
check_resumed() { # NAME FILE REF WANT_EXIT CMD...
  n=$1 f=$2 ref=$3 want=$4; shift 4
  "$@" --resume "$f" >"$tmp/$n.resume.log" 2>&1; got=$?
  [ "$got" -eq "$want" ] || { fail "$n: --resume exit $got, expected $want"; tail -n 5 "$tmp/$n.resume.log"; }
  "$PYTHON" "$compare" "$f" "$ref" >"$tmp/$n.cmp" || { fail "$n: resumed file differs from the uninterrupted run"; head -n 8 "$tmp/$n.cmp"; }
  [ $rc -ne 0 ] || echo "ok $n: $(cat "$tmp/$n.cmp")"
}

one="$KVAL --backend cpu"
two="$MPIRUN -np 2 $KVAL --backend cpu"
$one --quiet "$tmp/short.deck" -o "$tmp/ref1.h5" >"$tmp/ref1.log" 2>&1 || { fail "reference run"; cat "$tmp/ref1.log"; exit 1; }
$two --quiet "$tmp/short.deck" -o "$tmp/ref2.h5" >"$tmp/ref2.log" 2>&1 || { fail "2-rank reference run"; cat "$tmp/ref2.log"; exit 1; }
$one --quiet "$tmp/long.deck" -o "$tmp/reflong.h5" >"$tmp/reflong.log" 2>&1 || { fail "long reference run"; exit 1; }

# 1-2: one rank, SIGTERM then SIGINT in the middle of the run.
for sig in TERM INT; do
  name=single_$sig
  start "$name" $one "$tmp/short.deck" -o "$tmp/$name.h5"
  wait_file "$tmp/$name.h5"; sleep 0.7
  kill -"$sig" "$pid"; finish "$pid"
  if [ $sig = TERM ]; then expect_status 143 "$name"; else expect_status 130 "$name"; fi
  check_interrupted "$name" "$tmp/$name.h5" "SIG$sig" "$tmp/ref1.h5" 1 0
  check_resumed "$name" "$tmp/$name.h5" "$tmp/ref1.h5" 0 $one --quiet "$tmp/short.deck"
done

# 3: a signal as soon as the file exists (it may come before the first case).
name=at_creation
start "$name" $one "$tmp/short.deck" -o "$tmp/$name.h5"
wait_file "$tmp/$name.h5"
kill -TERM "$pid"; finish "$pid"
expect_status 143 "$name"
check_interrupted "$name" "$tmp/$name.h5" SIGTERM "$tmp/ref1.h5" 0 0
check_resumed "$name" "$tmp/$name.h5" "$tmp/ref1.h5" 0 $one --quiet "$tmp/short.deck"

# 4: two ranks under mpirun, every rank signalled as srun does at the time limit.
name=two_ranks
start "$name" $two "$tmp/short.deck" -o "$tmp/$name.h5"
wait_file "$tmp/$name.h5"; sleep 1
ranks=$(pgrep -P "$pid")
[ -n "$ranks" ] || fail "$name: no rank processes found under mpirun $pid"
kill -TERM $ranks; finish "$pid"
expect_status 143 "$name"
check_interrupted "$name" "$tmp/$name.h5" SIGTERM "$tmp/ref2.h5" 1 0
check_resumed "$name" "$tmp/$name.h5" "$tmp/ref2.h5" 0 $two --quiet "$tmp/short.deck"

# 5: the case in flight is finished: a signal during the long case still records it.
name=finish_case
start "$name" $one "$tmp/long.deck" -o "$tmp/$name.h5"
wait_file "$tmp/$name.h5"; sleep 1
kill -TERM "$pid"; finish "$pid"
expect_status 143 "$name"
check_interrupted "$name" "$tmp/$name.h5" SIGTERM "$tmp/reflong.h5" 2 1

# 6: a second signal abandons the case in flight at once; the file keeps the first case.
name=second_signal
start "$name" $one "$tmp/long.deck" -o "$tmp/$name.h5"
wait_file "$tmp/$name.h5"; sleep 1
kill -TERM "$pid"; sleep 0.2
t0=$(date +%s.%N)
kill -TERM "$pid" 2>/dev/null; finish "$pid"
late=$("$PYTHON" -c "import sys, time; print(time.time() - float(sys.argv[1]) > 1.0)" "$t0")
[ "$late" = False ] || fail "$name: kval went on for more than 1 s after the second SIGTERM"
! grep -q "interrupted by" "$tmp/$name.log" || fail "$name: the second signal did not stop kval at once"
"$PYTHON" "$compare" --subset --min-results 1 "$tmp/$name.h5" "$tmp/reflong.h5" >"$tmp/$name.cmp" ||
  { fail "$name: file after the second signal"; head -n 8 "$tmp/$name.cmp"; }
check_resumed "$name" "$tmp/$name.h5" "$tmp/reflong.h5" 0 $one --quiet "$tmp/long.deck"

exit $rc
