#!/bin/bash
# fa2_device_run.sh - build, check, sanitize and benchmark the FlashAttention-2 forward kernel
# on a GPU machine with direct nvcc commands (not the project build), and compare it with
# PyTorch's SDPA (flash and cuDNN backends) on the same shapes:
#   1. compile src/cuda/fa2_*.cu and the driver (bench/fa2_driver.cu, bench/fa2_variants*.cu)
#      in parallel with -Xptxas -v; a spill or stack frame in any kval instantiation fails;
#      skipped when $FA2_PREBUILT names a folder holding a built fa2_driver (+ build.log)
#   2. cuobjdump: resource usage and SASS (HMMA, LDSM, LDGSTS present, no LDL/STL)
#   3. fa2_driver info, check (fp64 reference), sanitize under memcheck, racecheck, synccheck
#      and initcheck (small shapes)
#   4. fa2_driver bench, bench/attention_peers.py, fa2_driver variants; table last
# Logs and CSVs go to $OUT (default /tmp/fa2_out).
#   bench/fa2_device_run.sh [--build-only] [--no-variants] [--no-sanitize]
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/fa2_out}
B=${FA2_BUILD:-/tmp/fa2_build}
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT" "$B"
FLAGS="-O3 -std=c++17 --expt-relaxed-constexpr -Xcompiler -fno-fast-math -gencode arch=compute_90a,code=sm_90a -I$ROOT/src -I$ROOT/bench"
KERNELS="fa2_d32 fa2_d64 fa2_d96 fa2_d128 fa2_d256 fa2_wgmma_d64 fa2_wgmma_d128"
HOSTCU="fa2_dispatch fa2_reference"
BENCHCU="fa2_variants_d64 fa2_variants_d128 fa2_variants fa2_driver"
fail() { echo "fa2_device_run: $*" >&2; exit 1; }
build_only=0 variants=1 sanitize=1
for a in "$@"; do
  case $a in
    --build-only) build_only=1 ;;
    --no-variants) variants=0 ;;
    --no-sanitize) sanitize=0 ;;
    *) fail "unknown option $a" ;;
  esac
done

# ---- 1. build ----
if [ -n "${FA2_PREBUILT:-}" ] && [ -x "$FA2_PREBUILT/fa2_driver" ]; then
  B=$FA2_PREBUILT
  echo "build: prebuilt $B/fa2_driver"
  cp "$B/build.log" "$OUT/build.log" 2> /dev/null
else
  start=$(date +%s%N)
  jobs_max=${FA2_JOBS:-$(nproc)} running=0 nfail=0
  for f in $KERNELS $HOSTCU $BENCHCU; do
    src="$ROOT/src/cuda/$f.cu"
    [ -f "$src" ] || src="$ROOT/bench/$f.cu"
    $NVCC $FLAGS -Xptxas -v -c "$src" -o "$B/$f.o" > "$B/$f.ptxas" 2>&1 &
    running=$((running + 1))
    if [ $running -ge "$jobs_max" ]; then wait -n || nfail=$((nfail + 1)); running=$((running - 1)); fi
  done
  while [ $running -gt 0 ]; do wait -n || nfail=$((nfail + 1)); running=$((running - 1)); done
  [ $nfail = 0 ] || { cat "$B"/*.ptxas | grep -v "^ptxas info" | head -40; fail "nvcc failed"; }
  OBJS=""
  for f in $KERNELS $HOSTCU $BENCHCU; do OBJS="$OBJS $B/$f.o"; done
  $NVCC $FLAGS -o "$B/fa2_driver" $OBJS -lcublas > "$B/link.log" 2>&1 || { cat "$B/link.log"; fail "link"; }
  total_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  for f in $KERNELS $HOSTCU $BENCHCU; do echo "== $f"; cat "$B/$f.ptxas"; done > "$B/build.log"
  echo "build: ${total_ms} ms on $(nproc) cores" | tee -a "$B/build.log"
  cp "$B/build.log" "$OUT/build.log"
fi
# every kval instantiation: no stack frame, no spills (variants are reported, not required)
awk '/^== /{f=$2} /bytes stack frame/{ if (f ~ /^fa2_(wgmma_)?d[0-9]/ && $0 !~ /^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/) bad++ } END{exit bad?1:0}' \
  "$OUT/build.log" || fail "kval fa2 kernels spill or use a stack frame (see build.log)"
echo "build: $(awk '/^== /{f=$2} /bytes stack frame/{ if (f ~ /^fa2_(wgmma_)?d[0-9]/) n++ } END{print n}' "$OUT/build.log")" \
  "kval fa2 kernels, none spills"
[ $build_only = 1 ] && exit 0

# ---- 2. SASS ----
if command -v cuobjdump > /dev/null && [ -f "$B/fa2_d128.o" ]; then
  for f in $KERNELS; do
    cuobjdump --dump-sass "$B/$f.o" > "$OUT/$f.sass" 2>&1
    echo "sass $f: $(grep -c HMMA "$OUT/$f.sass") HMMA, $(grep -c HGMMA "$OUT/$f.sass") HGMMA," \
      "$(grep -c LDSM "$OUT/$f.sass") LDSM, $(grep -c LDGSTS "$OUT/$f.sass") LDGSTS, $(grep -c UTMALDG "$OUT/$f.sass") UTMALDG," \
      "$(grep -cE '\b(LDL|STL)\b' "$OUT/$f.sass") LDL/STL"
  done | tee "$OUT/sass.log"
  grep -q " [1-9][0-9]* LDL/STL" "$OUT/sass.log" && fail "local memory in SASS"
  cuobjdump -res-usage "$B/fa2_d128.o" > "$OUT/res_usage_d128.log" 2>&1
  rm -f "$OUT"/fa2_d*.sass
fi

# ---- 3. correctness ----
D="$B/fa2_driver"
"$D" info 2>&1 | tee "$OUT/info.log" || fail "info: local memory"
"$D" check > "$OUT/check.log" 2>&1
check_rc=$?
grep -E "FAIL|reference|check:" "$OUT/check.log" | tail -12
if [ $sanitize = 1 ] && command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck synccheck initcheck; do
    timeout "${FA2_SANITIZE_TIMEOUT:-60}" compute-sanitizer --tool $tool --error-exitcode 9 "$D" sanitize \
      > "$OUT/sanitize_$tool.log" 2>&1
    echo "sanitize $tool: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1)"
  done | tee "$OUT/sanitize.log"
fi

# ---- 4. speed ----
"$D" bench "$OUT/kval_bench.csv" > "$OUT/bench.log" 2>&1 || { tail "$OUT/bench.log"; fail "bench"; }
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/attention_peers.py" --csv "$OUT/peers.csv" --json "$OUT/peers.json" \
  > "$OUT/peers.log" 2>&1 || tail -5 "$OUT/peers.log"
[ $variants = 1 ] && { "$D" variants "$OUT/variants.csv" > "$OUT/variants.log" 2>&1 || tail -5 "$OUT/variants.log"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/bench.log" 2>&1
[ $variants = 1 ] && cat "$OUT/variants.log"
python3 "$ROOT/bench/attention_peers.py" --table "$OUT/kval_bench.csv" "$OUT/peers.csv"
echo "check rc $check_rc; logs in $OUT"
exit $check_rc
