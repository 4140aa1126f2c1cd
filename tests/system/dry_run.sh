#!/bin/sh
# dry_run.sh - --dry-run prints the plan (cases per rank, estimated cost, skipped
# combinations with their reasons) for 1 and 2 ranks in both modes, and writes no file.
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
[ $rc -eq 0 ] && echo "ok: dry run"
exit $rc
