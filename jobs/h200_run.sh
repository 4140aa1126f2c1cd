#!/usr/bin/env bash
# h200_run.sh - the integrated kval run on a GPU node, in one device call with a deadline:
# Autotools build, `make check` (the GPU tests tests/gpu/test_errstats_gpu, sticky_gpu.sh and
# test_families_gpu over families/<f>/test.deck, tests/system/check_spills.sh and
# sanitizer.sh, the CPU tests), then inputs/fleet.deck on every GPU in fleet mode (distinct
# UUIDs, fingerprints must agree), the same with an injected bitflip on the last rank (kval and
# kval-analyze fleet must name it), optionally the bench (bench/device_run.sh all on GPU 0,
# in the same build tree), and inputs/default.deck on one GPU until the deadline (a SIGTERM at
# the deadline leaves a resumable file), an injected hang (the watchdog must end it with exit 3),
# and the judge's margins of both files (jobs/run_stats.py). Logs and files go to $OUT; a short
# table is printed last.
#   bash jobs/h200_run.sh [SECONDS] [bench]      (default 560)
# KVAL_FLEET_RUNS=N runs fleet.deck N times in all (clean runs counted: false failures);
# jobs/healthcheck.sh -n is timed (the health level's 60 s); default.deck's phase times
# (jobs/phase_times.py) close the run.
# KVAL_RUN_DEFAULT=0 leaves out default.deck (and its phase times and report).
# KVAL_RUN_CHECK=0 leaves out `make check` (a fleet re-check on another node kind), and
# KVAL_CHECK_TESTS="T1 T2 ..." runs only those tests of it (the GPU ones, say);
# `bench` as the second argument, or KVAL_RUN_BENCH=1, runs the bench with KVAL_BENCH_SECONDS
# of the budget (default 300; its CSV files, logs and tables under $OUT/bench).
set -uo pipefail
budget=${1:-560}
[ "${2:-}" = bench ] && KVAL_RUN_BENCH=1
bench=${KVAL_RUN_BENCH:-0}
bench_s=0
[ "$bench" = 1 ] && bench_s=${KVAL_BENCH_SECONDS:-300}
start=$(date +%s)
OUT=${OUT:-/tmp/kval-out}
L="$OUT/logs"
mkdir -p "$L"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
top=$(pwd)
export PYTHONPATH="$top/analysis${PYTHONPATH:+:$PYTHONPATH}"
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "== $(date -u +%T) (+$(($(date +%s) - start)) s) $*"; }
finish() {
  tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
  echo "== table"
  cat "$OUT/table.txt" 2>/dev/null
}
trap finish EXIT
table() { echo "$*" >> "$OUT/table.txt"; }

ngpu=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$L/gpus.csv"
table "GPUs: $ngpu ($(sed -n 2p "$L/gpus.csv" | cut -d, -f2))"

step build
(./bootstrap && mkdir -p build && cd build && ../configure && make -j16) > "$L/build.log" 2>&1 ||
  { tail -n 60 "$L/build.log"; table "build: FAILED"; exit 1; }
grep -A7 'configured:' "$L/build.log"
table "build: ok in $(($(date +%s) - start)) s"
K="$top/build/src/kval"

check_s=$(( $(left) - 330 - bench_s ))
if [ "${KVAL_RUN_CHECK:-1}" = 1 ] && [ "$check_s" -lt 60 ]; then
  table "make check: skipped (${check_s} s left for it; a larger budget, or KVAL_BENCH_SECONDS)"
elif [ "${KVAL_RUN_CHECK:-1}" = 1 ]; then
  step make check
  (cd build && timeout -s TERM "$check_s" make -j12 check ${KVAL_CHECK_TESTS:+TESTS="$KVAL_CHECK_TESTS"}) > "$L/check.log" 2>&1
  grep -E '^(PASS|FAIL|SKIP|ERROR):' "$L/check.log"
  cp build/test-suite.log "$L/" 2>/dev/null
  for f in build/tests/gpu/*.log build/tests/system/sanitizer.log build/tests/system/check_spills.log \
    build/families/*/test_*.log build/families/testkit/*.log; do
    [ -f "$f" ] && cp "$f" "$L/$(echo "$f" | tr / _)"
  done
  table "make check: $(sed -n 's/^# PASS: *//p' build/test-suite.log) pass, $(sed -n 's/^# FAIL: *//p' build/test-suite.log) fail, $(sed -n 's/^# SKIP: *//p' build/test-suite.log) skip"
fi

step "fleet.deck on $ngpu GPUs (fleet mode)"
timeout -s TERM 120 mpirun -np "$ngpu" "$K" inputs/fleet.deck -o "$OUT/fleet.h5" > "$L/fleet.log" 2>&1
code=$?
tail -n 3 "$L/fleet.log"
python3 tests/system/check_layout.py "$OUT/fleet.h5" --nranks "$ngpu" --expect-run > "$L/fleet_layout.log" 2>&1 && lay=ok || lay=FAILED
uuids=$(python3 -c "import h5py,sys; f=h5py.File(sys.argv[1]); u=[x.decode() if isinstance(x,bytes) else x for x in f['ranks/uuid'][:]]; print(len(set(u)), 'distinct of', len(u))" "$OUT/fleet.h5" 2>&1)
python3 -m kval_analysis fleet "$OUT/fleet.h5" > "$L/fleet_analysis.txt" 2>&1; acode=$?
table "fleet.deck x$ngpu: exit $code, layout $lay, UUIDs $uuids, kval-analyze fleet exit $acode ($(grep -c MISMATCH "$L/fleet.log") mismatches)"

runs=${KVAL_FLEET_RUNS:-1}
if [ "$runs" -gt 1 ]; then
  step "fleet.deck $((runs - 1)) more times (false failures)"
  clean=$([ "$code" = 0 ] && echo 1 || echo 0)
  for i in $(seq 2 "$runs"); do
    timeout -s TERM 120 mpirun -np "$ngpu" "$K" inputs/fleet.deck -o "$OUT/fleet$i.h5" > "$L/fleet$i.log" 2>&1 &&
      clean=$((clean + 1)) || { tail -n 5 "$L/fleet$i.log"; python3 jobs/run_stats.py "$OUT/fleet$i.h5" > "$L/fleet${i}_stats.txt" 2>&1; }
    grep -h 'rank 0 time:' "$L/fleet$i.log"
    rm -f "$OUT/fleet$i.h5"
  done
  table "fleet.deck x$ngpu repeated: $clean of $runs runs clean (exit 0)"
fi

step "jobs/healthcheck.sh (inputs/health.deck on every GPU, -n: no drain)"
t0=$(date +%s.%N)
KVAL="$K" timeout -s TERM 90 bash jobs/healthcheck.sh -n -o "$OUT/health" -t 60 > "$L/health.log" 2>&1
code=$?
table "healthcheck.sh x$ngpu: exit $code (0 expected) in $(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))") s (limit 60)"

step "injected bitflip on rank $((ngpu - 1))"
timeout -s TERM 60 mpirun -np "$ngpu" "$K" --only layernorm,gemm --set "gemm.shape=4096x4096x4096" \
  --inject "bitflip@$((ngpu - 1)):0" inputs/fleet.deck -o "$OUT/flip.h5" > "$L/flip.log" 2>&1
code=$?
python3 -m kval_analysis fleet "$OUT/flip.h5" > "$L/flip_analysis.txt" 2>&1; acode=$?
named=$(grep -c "FINGERPRINT MISMATCH.*rank $((ngpu - 1))" "$L/flip.log")
table "bitflip@$((ngpu - 1)): kval exit $code (1 expected), mismatch lines naming rank $((ngpu - 1)): $named, kval-analyze fleet exit $acode (1 expected)"

python3 jobs/run_stats.py "$OUT/fleet.h5" > "$OUT/fleet_stats.txt" 2>&1

step "injected hang on rank 0 (the watchdog, 5 s)"
t0=$(date +%s)
timeout -s TERM 90 mpirun -np 1 "$K" --only layernorm --set run.watchdog=5 --inject hang@0:1 inputs/fleet.deck \
  -o "$OUT/hang.h5" > "$L/hang.log" 2>&1
code=$?
table "hang@0:1: kval exit $code (3 expected) after $(( $(date +%s) - t0 )) s, timeout lines: $(grep -c 'timeout: ' "$L/hang.log")"

if [ "$bench" = 1 ]; then
  step "bench/device_run.sh all ($bench_s s)"
  t=$(( bench_s < $(left) - 60 ? bench_s : $(left) - 60 ))
  if [ "$t" -gt 30 ]; then
    CUDA_VISIBLE_DEVICES=0 OUT="$OUT/bench" KVAL_BUILD="$top/build" BENCH_DEADLINE=$(( t - 10 )) \
      timeout -s TERM "$t" bash bench/device_run.sh all > "$L/bench.log" 2>&1
    code=$?
    sed -n '/^== summary/,$p' "$L/bench.log"
    table "bench/device_run.sh all: exit $code; $(grep -h '^== summary' "$L/bench.log" | cut -c4-)"
  else
    table "bench: skipped ($(left) s left)"
  fi
fi

[ "${KVAL_RUN_DEFAULT:-1}" = 1 ] || { table "default.deck: not run (KVAL_RUN_DEFAULT=0)"; exit 0; }
step "default.deck on 1 GPU until the deadline"
t=$(( $(left) - 25 ))
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 timeout -s TERM "$t" mpirun -np 1 "$K" inputs/default.deck -o "$OUT/default.h5" > "$L/default.log" 2>&1
code=$?
tail -n 4 "$L/default.log"
table "default.deck x1: exit $code after $(( $(date +%s) - t0 )) s ($(grep -E 'passed,' "$L/default.log" | tail -n1))"
python3 jobs/run_stats.py "$OUT/default.h5" > "$OUT/default_stats.txt" 2>&1; cat "$OUT/default_stats.txt"
grep -h 'rank 0 time:' "$L/default.log" | tee -a "$OUT/table.txt"
python3 jobs/phase_times.py "$OUT/default.h5" > "$OUT/default_phases.txt" 2>&1; cat "$OUT/default_phases.txt"
python3 -m kval_analysis report "$OUT/default.h5" -o "$OUT/report" > "$L/report.log" 2>&1 &&
  tar czf "$OUT/report.tgz" -C "$OUT" report && rm -rf "$OUT/report"
exit 0
