#!/bin/bash
# gemm_gpu.sh - the gemm family checked and timed on one GPU in one or two calls, from the repo
# root of a fresh copy: build (bootstrap, configure, make of kval, the GPU test and the bench
# driver in $KVAL_BUILD), then
#   PHASE a: check_spills.sh, tests/gpu/test_families_gpu on families/gemm/test.deck alone,
#            compute-sanitizer memcheck and racecheck of families/gemm/sanitize.deck, kval on
#            inputs/fleet.deck, gemm_bench ladder-fp8 and bench (cuBLAS/cuBLASLt in kval itself);
#   PHASE b: tests/mutation/run_mutants.sh --kind gpu on fleet.deck (--per-family) for the gpu
#            mutants in $MUTANTS (default: every gpu mutant whose id names fp8);
#   PHASE all (the default): both.
# Logs and CSVs under $OUT (default /tmp/gemm-gpu); a table last: every step with its exit
# status and seconds, the run and test summaries, the bench tables against cuBLAS.
# DEADLINE (default 570) bounds the whole call: each step's limit is cut to what is left.
set -u
OUT=${OUT:-/tmp/gemm-gpu}
mkdir -p "$OUT"
ROOT=$(pwd)
B=${KVAL_BUILD:-$ROOT/build-gemm-gpu}
DEADLINE=${DEADLINE:-570}
PHASE=${PHASE:-all}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export top_srcdir="$ROOT"
: >> "$OUT/steps.txt"

. "$ROOT/jobs/gpu_steps.sh" # step NAME LIMIT CMD...

BUILD="cd '$ROOT' && { [ -x configure ] || ./bootstrap; } && mkdir -p '$B' && cd '$B' &&
  { [ -f Makefile ] || '$ROOT/configure'; } && make -j16 src/kval tests/gpu/test_families_gpu families/gemm/bench/gemm_bench"
step build 200 bash -c "$BUILD" || { cat "$OUT/steps.txt"; tail -30 "$OUT/build.log"; exit 1; }

# The family decks of families/gemm alone (test_families_gpu globs $top_srcdir/families/*/).
mkdir -p "$OUT/decks/families/gemm"
cp "$ROOT/families/gemm/test.deck" "$ROOT/families/gemm/sanitize.deck" "$OUT/decks/families/gemm/"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ "$PHASE" = all ] || [ "$PHASE" = a ]; then
  step spills 60 env top_srcdir="$ROOT" top_builddir="$B" sh "$ROOT/tests/system/check_spills.sh"
  step gpu_test 60 env top_srcdir="$OUT/decks" "$B/tests/gpu/test_families_gpu"
  for tool in memcheck racecheck; do
    step "$tool" 60 env top_srcdir="$OUT/decks" KVAL_SKIP_CEILINGS=1 "$CS" --tool "$tool" --error-exitcode 9 \
      "$B/tests/gpu/test_families_gpu" small
  done
  step fleet 60 "$B/src/kval" --backend cuda "$ROOT/inputs/fleet.deck" -o "$OUT/fleet.h5"
  for cmd in ladder-fp8 bench; do
    step "gemm_$cmd" 150 env KVAL_SKIP_CEILINGS=1 "$B/families/gemm/bench/gemm_bench" "$cmd" \
      --deck "$ROOT/inputs/default.deck" --csv "$OUT/gemm_$cmd.csv"
  done
fi
if [ "$PHASE" = all ] || [ "$PHASE" = b ]; then
  fp8=$(awk -F'\t' '$5 == "gpu" && $1 ~ /fp8/ { printf "%s%s", sep, $1; sep = "," }' "$ROOT/tests/mutation/mutants.tsv")
  step mutants 400 bash "$ROOT/tests/mutation/run_mutants.sh" --kind gpu --deck inputs/fleet.deck --per-family \
    --jobs 4 --make-jobs 4 --timeout 90 --results "$OUT/mutants.tsv" --only "${MUTANTS:-$fp8}"
fi

echo "== steps (name rc seconds)"
cat "$OUT/steps.txt"
grep -h "^kval: .* cases" "$OUT/fleet.log" 2>/dev/null
grep -h "checks, " "$OUT/gpu_test.log" 2>/dev/null | tail -n 1
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" 2>/dev/null | sort | uniq -c
grep -h "^mutants:" "$OUT/mutants.log" 2>/dev/null
for f in gemm_ladder-fp8 gemm_bench; do
  [ -s "$OUT/$f.csv" ] && python3 "$ROOT/bench/side_by_side.py" "$OUT/$f.csv" --ratio-to cublas
done
awk '$2 != 0 { bad = 1 } END { exit bad }' "$OUT/steps.txt"
