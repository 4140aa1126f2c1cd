#!/usr/bin/env bash
# run-all.sh - the README's test command: the test dependencies (jobs/install-deps.sh test),
# bootstrap, then build and test in two out-of-tree builds, one per HDF5 flavour: `make check`
# in the parallel one (with the CUDA objects when nvcc is present), `make check-flavour` (the
# tests the flavour can change, Makefile.am) in the serial one without CUDA; and print the
# combined "N passed, N failed" line last.
# Exit status is nonzero when any test failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# What the tests use besides the main job (Slurm, munge, clang, both HDF5 flavours, analysis/'s
# packages), installed where missing (KVAL_NO_INSTALL=1 skips it).
[ "${KVAL_NO_INSTALL:-0}" = 1 ] || bash "$top/jobs/install-deps.sh" test || { echo "0 passed, 1 failed"; exit 1; }
(cd "$top" && ./bootstrap) || { echo "0 passed, 1 failed"; exit 1; }

pass=0; fail=0; skip=0; status=0
run_build() { # name, make target (check, or check-flavour: Makefile.am), configure args...
  local name=$1 target=$2; shift 2
  local dir="$top/build-$name"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "=== $name build: configure $*"
  if ! (cd "$dir" && "$top/configure" "$@" >configure.out 2>&1); then
    tail -n 30 "$dir/configure.out"; fail=$((fail + 1)); status=1; return
  fi
  grep -A8 'configured:' "$dir/configure.out" || true
  if ! (cd "$dir" && make -j"$jobs" >make.out 2>&1); then
    grep -E 'error|Error' "$dir/make.out" | head -n 40; fail=$((fail + 1)); status=1; return
  fi
  [ "$target" = check ] || echo "=== $name build: make $target (the tests the HDF5 flavour can change; the others ran above)"
  (cd "$dir" && make -j"$jobs" "$target" >check.out 2>&1) || status=1
  grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):' "$dir/check.out" | sed "s/^/[$name] /"
  for f in $(grep -lE '^:test-result: (FAIL|ERROR)' "$dir"/tests/*.trs "$dir"/tests/*/*.trs 2>/dev/null); do
    echo "----- $name: ${f%.trs}.log (last 40 lines)"; tail -n 40 "${f%.trs}.log"
  done
  local log="$dir/test-suite.log"
  if [ -f "$log" ]; then
    pass=$((pass + $(sed -n 's/^# PASS: *//p' "$log" | head -n1)))
    fail=$((fail + $(sed -n 's/^# FAIL: *//p' "$log" | head -n1) + $(sed -n 's/^# ERROR: *//p' "$log" | head -n1)))
    skip=$((skip + $(sed -n 's/^# SKIP: *//p' "$log" | head -n1)))
  else
    fail=$((fail + 1))
  fi
}

run_build parallel check --with-hdf5=parallel
run_build serial check-flavour --with-hdf5=serial --with-cuda=no
echo "$pass passed, $fail failed, $skip skipped"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
