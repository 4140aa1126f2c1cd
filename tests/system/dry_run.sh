#!/bin/sh
# dry_run.sh - --dry-run prints the plan (cases per rank, estimated cost, skipped
# combinations with their reasons) for 1 and 2 ranks in both modes, and writes no file; the
# cpu estimate is measured on this CPU, the split assignment is not; the mutation suite's GPU
# decks plan.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
rc=0
for mode in fleet split; do
  "$MPIRUN" -np 2 "$KVAL" --dry-run --mode "$mode" "$top_srcdir/inputs/default.deck" -o plan.h5 >out 2>&1 || {
    echo "FAIL: --dry-run --mode $mode exited nonzero"; cat out; rc=1; }
  grep -q "rank 1" out || { echo "FAIL: no per-rank line for rank 1 in $mode mode"; cat out; rc=1; }
  grep -qi "skipped" out || { echo "FAIL: no skipped-combination summary in $mode mode"; cat out; rc=1; }
  [ ! -e plan.h5 ] || { echo "FAIL: --dry-run created plan.h5"; rc=1; }
  ls kval-*.h5 >/dev/null 2>&1 && { echo "FAIL: --dry-run created a default output file"; rc=1; }
done
# The cpu backend's estimates are measured on this CPU (one probe case per family), the
# cuda backend's are the H200's; split mode's assignment keeps the model's constant rates,
# so two dry runs assign the same number of cases to every rank.
for i in 1 2; do
  "$MPIRUN" -np 3 "$KVAL" --dry-run --backend cpu --mode split "$top_srcdir/inputs/smoke.deck" >"cpu$i" 2>&1 ||
    { echo "FAIL: --dry-run --backend cpu: exit $?"; cat "cpu$i"; rc=1; }
done
grep -q "at cpu backend rates measured on this CPU: .*gemm x [0-9.]*" cpu1 ||
  { echo "FAIL: the cpu estimate does not say it was measured on this CPU"; grep "wall time" cpu1; rc=1; }
counts() { grep '^rank [0-9]*: [0-9]* cases' "$1" | cut -d, -f1; }
[ "$(counts cpu1)" = "$(counts cpu2)" ] ||
  { echo "FAIL: two dry runs assign different case counts to the ranks"; grep '^rank' cpu1 cpu2; rc=1; }
"$KVAL" --dry-run --backend cuda "$top_srcdir/inputs/smoke.deck" >cuda 2>&1 ||
  { echo "FAIL: --dry-run --backend cuda: exit $?"; cat cuda; rc=1; }
grep -q "at H200 rates" cuda || { echo "FAIL: the cuda estimate does not say H200 rates"; grep "wall time" cuda; rc=1; }
# The decks that run only where a GPU is (the mutation suite's, the profiler's): their plans
# must hold here (a typo would otherwise show first on the GPU, as a broken baseline).
for d in tests/mutation/race.deck tests/mutation/study.deck bench/targets.deck; do
  n=$(basename "$d" .deck)
  "$KVAL" --dry-run --backend cuda "$top_srcdir/$d" >"$n" 2>&1 ||
    { echo "FAIL: --dry-run --backend cuda $d: exit $?"; cat "$n"; rc=1; }
  grep -q '^rank 0: [1-9][0-9]* cases' "$n" || { echo "FAIL: $d plans no case"; cat "$n"; rc=1; }
done
[ $rc -eq 0 ] && echo "ok: dry run"
exit $rc
