#!/bin/sh
# mpi_smoke.sh - end to end on the cpu backend: inputs/smoke.deck with 1, 2 and 4 MPI
# ranks; every run exits 0 and writes one file that passes the layout checks (h5py/xarray
# and h5dump) with one /ranks row per rank and every valid case run.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
rc=0
for np in 1 2 4; do
  out="$tmp/smoke-$np.h5"
  "$MPIRUN" -np "$np" "$KVAL" --backend cpu --quiet "$top_srcdir/inputs/smoke.deck" -o "$out" >"$tmp/log-$np" 2>&1
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "FAIL: -np $np exited $code"; cat "$tmp/log-$np"; rc=1; continue
  fi
  if ! "$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$out" --nranks "$np" --expect-run; then
    echo "FAIL: layout check of -np $np"; rc=1
  fi
  if [ -z "${H5DUMP:-}" ] && ! command -v h5dump >/dev/null 2>&1; then
    echo "note: h5dump not installed (Debian/Ubuntu: hdf5-tools): h5dump layout check not run"
  elif ! sh "$top_srcdir/tests/system/check_layout_h5dump.sh" "$out" "$np"; then
    echo "FAIL: h5dump layout check of -np $np"; rc=1
  fi
  echo "ok: -np $np"
done
exit $rc
