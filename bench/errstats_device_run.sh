#!/usr/bin/env bash
# errstats_device_run.sh - issue #4 on a GPU node, in one device call: build kval with the
# device error statistics (src/cuda/errstats_gpu.cu) and the real sticky fault
# (src/cuda/fault.cu), run tests/gpu/test_errstats_gpu (GPU vs host statistics, then its
# bench: large gemm/fa2/layernorm cases with host vs device statistics, timed),
# tests/gpu/sticky_gpu.sh, tests/gpu/test_cuda_families small, compute-sanitizer memcheck
# over test_errstats_gpu small, a timed kval run of a large part of inputs/default.deck, and
# racecheck over test_errstats_gpu small when the time budget ($BUDGET, 170 s) allows.
# STEPS=tests: only the build, test_errstats_gpu (without its bench) and sticky_gpu.sh.
# Logs go to $OUT; a short table is printed last.
#   bash bench/errstats_device_run.sh [TREE.tar]
# TREE.tar (optional): the source tree to build (e.g. `git archive HEAD` when the working
# tree holds other engineers' unfinished files); this task's files are copied over it from
# the working tree. The two .cu files and the test are compiled by hand and added to
# libkval.a until Makefile.am lists them. KVAL_GIT_COMMIT stamps the build.
set -uo pipefail
start=$(date +%s)
budget=${BUDGET:-170} # seconds: the optional last step (racecheck) runs only within it
steps=${STEPS:-all}   # all, or tests: build, test_errstats_gpu (no bench) and sticky_gpu.sh only
OUT=${OUT:-/tmp/errstats-out}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export KVAL_GIT_COMMIT=${KVAL_GIT_COMMIT:-unknown} PYTHONUNBUFFERED=1
here=$(pwd)
table() { echo "$*" >> "$OUT/table.txt"; }
step() { echo "== +$(($(date +%s) - start)) s: $*"; }
trap 'echo "== table"; cat "$OUT/table.txt" 2>/dev/null' EXIT
mine="src/backend.h src/backend_cuda.c src/runner.c src/inject.c src/inject.h src/cuda/kval_cuda.h
  src/cuda/errstats_gpu.cu src/cuda/fault.cu tests/gpu/test_errstats_gpu.c tests/gpu/sticky_gpu.sh"

step "source tree"
top=$here
if [ $# -ge 1 ]; then
  top=/tmp/errstats-tree
  rm -rf "$top" && mkdir -p "$top" && tar xf "$1" -C "$top" || { table "tree: FAILED"; exit 1; }
  for f in $mine; do cp "$here/$f" "$top/$f"; done
fi
cd "$top" || exit 1

step "build"
B="$top/build-errstats"
(./bootstrap && mkdir -p "$B" && cd "$B" && ../configure --with-hdf5=serial && make src/kval_git.h &&
  make -j16 src/libkval.a) > "$OUT/build.log" 2>&1 ||
  { tail -n 40 "$OUT/build.log"; table "build: FAILED"; exit 1; }
cd "$B" || exit 1
var() { sed -n "s/^$1 = //p" Makefile; }
for f in errstats_gpu fault; do
  $(var NVCC) $(var NVCCFLAGS) -I../src -Isrc -DHAVE_CONFIG_H -I. -c -o src/cuda/$f.o ../src/cuda/$f.cu \
    >> "$OUT/build.log" 2>&1 || { table "build: $f.cu FAILED"; tail -n 20 "$OUT/build.log"; exit 1; }
done
grep -A2 "errstats_gpu\|fault_kernel" "$OUT/build.log" | grep -E "stack|registers" | sort | uniq -c | head
ar rs src/libkval.a src/cuda/errstats_gpu.o src/cuda/fault.o >> "$OUT/build.log" 2>&1
# the archive is newer than its members now: make only links
make -j16 src/kval tests/gpu/test_cuda_families >> "$OUT/build.log" 2>&1 ||
  { tail -n 20 "$OUT/build.log"; table "build: link FAILED"; exit 1; }
$(var CC) $(var KV_CFLAGS) -Wall -Wextra -O2 -I../src -Isrc -I. -DHAVE_CONFIG_H $(var HDF5_CFLAGS) $(var CUDA_CFLAGS) \
  -o tests/gpu/test_errstats_gpu ../tests/gpu/test_errstats_gpu.c src/libkval.a $(var CUDA_LIBS) $(var HDF5_LIBS) -lm \
  >> "$OUT/build.log" 2>&1 || { tail -n 20 "$OUT/build.log"; table "build: test FAILED"; exit 1; }
table "build: ok in $(($(date +%s) - start)) s ($(grep -c 'warning' "$OUT/build.log") warnings in the log)"
export KVAL="$B/src/kval" top_srcdir="$top" top_builddir="$B"

mode=bench
[ "$steps" = all ] || mode=
step "test_errstats_gpu $mode"
KVAL_SKIP_CEILINGS=1 timeout 120 tests/gpu/test_errstats_gpu $mode > "$OUT/errstats.log" 2>&1
rc=$?
grep -E "^FAIL|checks|^   " "$OUT/errstats.log" | head -40
table "test_errstats_gpu $mode: rc=$rc, $(tail -n 1 "$OUT/errstats.log")"
sed -n '/large cases/,$p' "$OUT/errstats.log" | grep '^   ' >> "$OUT/table.txt"

step "sticky_gpu.sh"
timeout 90 sh ../tests/gpu/sticky_gpu.sh > "$OUT/sticky.log" 2>&1
rc=$?
tail -n 5 "$OUT/sticky.log"
table "sticky_gpu.sh: rc=$rc $(tail -n 1 "$OUT/sticky.log")"
[ "$steps" = all ] || exit 0

step "test_cuda_families small"
KVAL_SKIP_CEILINGS=1 timeout 60 tests/gpu/test_cuda_families small > "$OUT/families.log" 2>&1
rc=$?
table "test_cuda_families small: rc=$rc, $(tail -n 1 "$OUT/families.log")"

step "memcheck test_errstats_gpu small"
KVAL_SKIP_CEILINGS=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 tests/gpu/test_errstats_gpu small \
  > "$OUT/memcheck.log" 2>&1
rc=$?
table "memcheck test_errstats_gpu small: rc=$rc $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -n 1)"

step "kval: gemm 8192x8192x8192 of inputs/default.deck"
t0=$(date +%s.%N)
timeout 90 mpirun -np 1 "$KVAL" --backend cuda --only gemm --set gemm.shape=8192x8192x8192 ../inputs/default.deck -o "$OUT/gemm.h5" \
  > "$OUT/kval_gemm.log" 2>&1
rc=$?
t1=$(date +%s.%N)
tail -n 3 "$OUT/kval_gemm.log"
table "kval --only gemm --set gemm.shape=8192x8192x8192 default.deck: exit $rc, wall $(python3 -c "print(f'{$t1-$t0:.1f}')") s"

left=$((budget - ($(date +%s) - start)))
if [ $left -gt 40 ]; then
  step "racecheck test_errstats_gpu small ($left s left)"
  KVAL_SKIP_CEILINGS=1 timeout $((left - 10)) compute-sanitizer --tool racecheck --error-exitcode 9 \
    tests/gpu/test_errstats_gpu small > "$OUT/racecheck.log" 2>&1
  rc=$?
  table "racecheck test_errstats_gpu small: rc=$rc $(grep 'SUMMARY' "$OUT/racecheck.log" | tail -n 1)"
fi
table "total: $(($(date +%s) - start)) s"
