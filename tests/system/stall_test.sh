#!/bin/sh
# stall_test.sh - rank 0 notices a rank that stopped (SIGSTOP) and names it with its host,
# device and case (cpu backend, 2 ranks, the HDF5 flavour of this build):
# - [run] on_stall = wait: the warning appears, the job goes on waiting; once the rank is
#   continued (SIGCONT) it finishes with exit 0 and a file equal to an uninterrupted run;
# - on_stall = abort: the job ends with exit 3 naming the stalled rank; --resume then
#   finishes the file (the journals give back what the stalled rank had finished);
# - no warning names a rank silent for less than stall_timeout, and no message names rank 0
#   (the judge of the others' reports) as silent.
# The deadline is stall_timeout = 2 s; the test waits for the warning itself (up to 300 s),
# not for a time, so a loaded machine only makes it slower.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
"$PYTHON" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_stall.XXXXXX") || exit 1
stopped=
trap '[ -z "$stopped" ] || kill -CONT $stopped 2>/dev/null; rm -rf "$tmp"' EXIT
compare="$top_srcdir/tests/system/compare_files.py"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()

cat >"$tmp/stall.deck" <<'EOF'
# stall_test: 16 short cases per rank
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01
stall_timeout = 2
[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32
shape = 256x256x256 320x256x256 384x256x256 448x256x256 512x256x256 576x256x256 640x256x256 704x256x256
EOF
$MPIRUN -np 2 "$KVAL" --backend cpu --quiet "$tmp/stall.deck" -o "$tmp/ref.h5" >"$tmp/ref.log" 2>&1 ||
  { fail "reference run"; cat "$tmp/ref.log"; exit 1; }

# rank_pid RANK: the pid of that kval rank of the job under test (its OMPI_COMM_WORLD_RANK).
rank_pid() {
  for p in $(pgrep -f "$KVAL --backend cpu --set run.on_stall="); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return 0; }
  done
  return 1
}
# wait_for WHAT CMD...: until CMD succeeds (at most 300 s).
wait_for() {
  what=$1; shift
  n=0
  until "$@"; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { fail "gave up waiting for $what"; return 1; }
    sleep 0.1
  done
}
started() { grep -qs "cases on 2 ranks" "$1"; } # -s: the job may not have opened its log yet
# Rank 0 names rank 1 from its reports (rank 1 stopped in a case) or, when it is itself stuck
# in a collective write rank 1 never joins, from its watchdog (rank 1 is the one not done).
# The device is the CPU's model name on the cpu backend, which may hold parentheses
# ("Intel(R) Xeon(R) Processor").
NAMED='(rank 1 \(host [^,]*, device .*\) has not reported progress for [0-9]+ s: it is still in|rank 0 has waited [0-9]+ s inside a step every rank takes together.* it is rank 1 \(host )'
warned() { grep -Eq "warning: $NAMED" "$1"; }

for mode in wait abort; do
  log=$tmp/$mode.log
  $MPIRUN -np 2 "$KVAL" --backend cpu --set run.on_stall=$mode "$tmp/stall.deck" -o "$tmp/$mode.h5" >"$log" 2>&1 &
  job=$!
  wait_for "the $mode job to start its cases" started "$log"
  pid=$(rank_pid 1) || { fail "$mode: no rank 1 process"; wait $job; continue; }
  kill -STOP "$pid" && stopped=$pid
  if [ $mode = wait ]; then
    wait_for "the stall warning" warned "$log"
    kill -CONT "$pid"; stopped=
    wait $job; got=$?
    [ $got -eq 0 ] || { fail "wait: exit $got after the rank went on"; tail -n 5 "$log"; }
    "$PYTHON" "$compare" "$tmp/wait.h5" "$tmp/ref.h5" >"$tmp/wait.cmp" || { fail "wait: the file"; cat "$tmp/wait.cmp"; }
    [ $rc -ne 0 ] || echo "ok on_stall = wait: '$(grep -Eo "$NAMED.{0,80}" "$log" | head -n 1)...', then exit 0, file complete"
  else
    wait $job; got=$?
    kill -CONT "$pid" 2>/dev/null; stopped=
    [ $got -eq 3 ] || { fail "abort: exit $got, expected 3"; tail -n 5 "$log"; }
    grep -Eq "$NAMED.*on_stall = abort: ending the job" "$log" || fail "abort: no message naming rank 1: $(head -c 400 "$log")"
    $MPIRUN -np 2 "$KVAL" --backend cpu --quiet "$tmp/stall.deck" --resume "$tmp/abort.h5" >"$tmp/resume.log" 2>&1 ||
      { fail "abort: --resume"; tail -n 5 "$tmp/resume.log"; }
    "$PYTHON" "$compare" "$tmp/abort.h5" "$tmp/ref.h5" >"$tmp/abort.cmp" || { fail "abort: the resumed file"; cat "$tmp/abort.cmp"; }
    [ $rc -ne 0 ] || echo "ok on_stall = abort: exit 3 naming rank 1; --resume completes the file"
  fi
done
# A rank is named only after stall_timeout s of silence (plus twice its case's estimate): no
# warning of either job gives a shorter silence.
limit=$(sed -n 's/^stall_timeout = //p' "$tmp/stall.deck")
for mode in wait abort; do
  early=$(grep -Eo 'has not reported progress for [0-9]+ s' "$tmp/$mode.log" | awk -v t="$limit" '$6 < t' | head -n 1)
  [ -z "$early" ] || fail "$mode: a rank named before stall_timeout = $limit s: '$early'"
done
[ $rc -ne 0 ] || echo "ok every warning follows at least stall_timeout = $limit s of silence"
# Rank 0 judges the others' reports and never its own: a message naming rank 0 as silent is the
# checker's bug (the wait job runs past stall_timeout, so such a bug shows there).
for f in ref wait abort resume; do
  ! grep -q 'rank 0 (host .* has not reported progress' "$tmp/$f.log" ||
    fail "$f: rank 0 named as silent: $(grep -m 1 -o 'rank 0 (host .* has not reported progress for [0-9]* s' "$tmp/$f.log")"
done
[ $rc -ne 0 ] || echo "ok no message names rank 0 as silent"
exit $rc
