#!/bin/sh
# layout_test.sh - a kval file as the job writes it, checked fast: smoke.deck's GEMM and decode
# sections on the cpu backend with 2 ranks (GEMM's numeric M, N, K coordinates, plan-skipped
# cells, a family parameter the deck sets: decode.kv8's k_scale and v_scale, the [run] seed and
# repetitions) and check_layout.py over the file. mpi_smoke.sh checks every family's file at 1,
# 2 and 4 ranks; this one is the quick check the mutation suite's layout mutants name
# (tests/mutation/mutants.tsv, `tests` field). Environment (set by `make check`): KVAL,
# top_srcdir, MPIRUN, PYTHON.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet "$top_srcdir/inputs/smoke.deck" --only gemm,decode -o "$tmp/l.h5" \
  >"$tmp/log" 2>&1 || { echo "FAIL: kval exited $?"; cat "$tmp/log"; exit 1; }
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$tmp/l.h5" --nranks 2 --expect-run ||
  { echo "FAIL: layout check"; exit 1; }
echo "ok: layout of a 2-rank gemm and decode file"
