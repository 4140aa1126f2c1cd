#!/bin/sh
# clients_test.sh - a real kval file (2 ranks, cpu backend, every family, skipped cells with
# their messages, one flipped output bit) opened with every client its readers use: Debian's
# `ncdump -h` must list status (the named enum case_status), message and gemm's numeric M, N, K
# in every group; tests/system/check_clients.py reads everything with h5py, netCDF4-python and
# xarray (netcdf4 and h5netcdf engines) and checks the CF description (units with udunits2).
# Skips (77) only where ncdump or the Python clients are not installed (jobs/install-deps.sh
# installs them).
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
command -v ncdump >/dev/null 2>&1 || { echo "SKIP: ncdump not installed (apt-get install netcdf-bin)"; exit 77; }
"$PYTHON" -c "import h5py, netCDF4, xarray, h5netcdf" 2>/dev/null ||
  { echo "SKIP: netCDF4, h5netcdf or xarray missing (jobs/install-deps.sh installs them)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_clients.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()

$MPIRUN -np 2 "$KVAL" --backend cpu --quiet --inject bitflip@1:0 "$top_srcdir/inputs/smoke.deck" -o "$tmp/c.h5" \
  >"$tmp/kval.log" 2>&1
[ $? -eq 1 ] || { fail "kval with an injected bitflip did not exit 1"; tail -n 20 "$tmp/kval.log"; }
ncdump -h "$tmp/c.h5" >"$tmp/header" 2>"$tmp/ncdump.err" || { fail "ncdump -h failed"; cat "$tmp/ncdump.err"; }
grep -q ':Conventions = "CF-1' "$tmp/header" || fail "ncdump: no CF Conventions"
grep -q 'byte enum case_status {not_run = 0, pass = 1' "$tmp/header" || fail "ncdump: no enum type case_status"
for g in fa2 gemm layernorm rmsnorm; do
  sed -n "/^group: $g {/,/} \/\/ group $g/p" "$tmp/header" >"$tmp/$g.cdl"
  grep -q "case_status status(rank, " "$tmp/$g.cdl" || fail "ncdump: /$g has no status variable"
  grep -q "string message(rank, " "$tmp/$g.cdl" || fail "ncdump: /$g has no message variable"
  grep -q 'status:_FillValue = not_run' "$tmp/$g.cdl" || fail "ncdump: /$g/status has no _FillValue"
done
for c in M N K; do
  grep -q "int64 $c(shape)" "$tmp/gemm.cdl" || fail "ncdump: /gemm has no numeric coordinate $c(shape)"
done
grep -q 'time_median:units = "s"' "$tmp/gemm.cdl" && grep -q 'tflops:units = "1e12 s-1"' "$tmp/gemm.cdl" &&
  grep -q 'temperature:units = "degC"' "$tmp/gemm.cdl" || fail "ncdump: UDUNITS units missing"
[ $rc -ne 0 ] || echo "ok ncdump -h: status, message, M/N/K and CF attributes in every group"
"$PYTHON" "$top_srcdir/tests/system/check_clients.py" "$tmp/c.h5" || fail "check_clients.py"
exit $rc
