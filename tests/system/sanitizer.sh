#!/bin/sh
# sanitizer.sh - compute-sanitizer's memcheck, racecheck, initcheck and synccheck over the
# GPU test binaries: tests/gpu/test_families_gpu small (a few cases of every family and
# kernel variant with a CUDA implementation, through the cuda backend) and
# tests/gpu/test_errstats_gpu small (the device error statistics). Any reported error fails
# the test. The start-up ceilings (cuBLAS and 2 GiB copies, slow under instrumentation) are
# skipped with KVAL_SKIP_CEILINGS=1. Skips (77) without the binary, without compute-sanitizer
# or without a GPU. Environment: top_builddir (automake), COMPUTE_SANITIZER (default: on the
# PATH).
: "${top_builddir:=.}"
bin="$top_builddir/tests/gpu/test_families_gpu"
if [ ! -x "$bin" ]; then
  echo "sanitizer: $bin not built (CUDA not configured)"
  exit 77
fi
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer)}
if [ -z "$cs" ] || [ ! -x "$cs" ]; then
  echo "sanitizer: compute-sanitizer not found"
  exit 77
fi
KVAL_SKIP_CEILINGS=1
export KVAL_SKIP_CEILINGS
"$bin" small > /dev/null 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  echo "sanitizer: no GPU"
  exit 77
fi
log=${TMPDIR:-/tmp}/sanitizer.$$
trap 'rm -f "$log"' EXIT
status=0
for b in "$bin" "$top_builddir/tests/gpu/test_errstats_gpu"; do
  for tool in memcheck racecheck initcheck synccheck; do
    "$cs" --tool "$tool" --error-exitcode 9 "$b" small > "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -n 1)
    echo "sanitizer: $(basename "$b") $tool rc=$rc $summary"
    if [ $rc -ne 0 ]; then
      grep -E "^=========" "$log" | head -n 40
      tail -n 5 "$log"
      status=1
    fi
  done
done
exit $status
