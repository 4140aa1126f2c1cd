#!/bin/bash
# gemm_device_run.sh - build, check, sanitize and benchmark the GEMM family's CUDA side on a
# GPU machine, with direct nvcc/mpicc commands (not the project build): the kernel files are
# compiled in parallel with -Xptxas -v (spills and ignored setmaxnreg are errors), the wgmma
# objects must contain HGMMA, then bench/gemm_driver runs `check` (every variant, precision,
# layout and tail shape against the fp64 reference), `sanitize` under compute-sanitizer
# (memcheck, racecheck) and `bench` (kval-wgmma, kval-mma and cuBLAS timed side by side).
# Logs go to $OUT (default /tmp/gemm_out); the benchmark table is printed last.
#   bench/gemm_device_run.sh [--build-only]
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gemm_out}
B=${GEMM_BUILD:-/tmp/gemm_build}
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT" "$B"
FLAGS="-O3 -std=c++17 --expt-relaxed-constexpr -Xcompiler -fno-fast-math -gencode arch=compute_90a,code=sm_90a -I$ROOT/src"
KERNELS="gemm_wgmma_f16_f32 gemm_wgmma_bf16_f32 gemm_wgmma_f16_f16 gemm_wgmma_bf16_bf16 gemm_mma_f16 gemm_mma_bf16"
HOSTCU="gemm_cublas gemm_reference gemm_dispatch"
fail() { echo "gemm_device_run: $*" >&2; exit 1; }

# ---- build ----
start=$(date +%s%N)
pids=""
for f in $KERNELS $HOSTCU; do
  $NVCC $FLAGS -Xptxas -v -c "$ROOT/src/cuda/$f.cu" -o "$B/$f.o" > "$B/$f.ptxas" 2>&1 &
  pids="$pids $!"
done
$NVCC $FLAGS -Xptxas -v -c "$ROOT/bench/gemm_driver.cu" -o "$B/gemm_driver.o" > "$B/gemm_driver.ptxas" 2>&1 &
driver_pid=$!
for p in $pids; do wait "$p" || { cat "$B"/*.ptxas; fail "nvcc failed"; }; done
kernels_s=$(( ($(date +%s%N) - start) / 1000000 ))
wait $driver_pid || { cat "$B/gemm_driver.ptxas"; fail "nvcc failed on gemm_driver.cu"; }
cat "$B"/*.ptxas > "$OUT/build.log"
grep -E "spill (stores|loads)" "$OUT/build.log" | grep -vq " 0 bytes spill stores, 0 bytes spill loads" &&
  fail "register spills (see build.log)"
grep -q "C7508\|setmaxnreg ignored" "$OUT/build.log" && fail "setmaxnreg ignored (see build.log)"

HDF5_CFLAGS=$(pkg-config --cflags hdf5-serial 2>/dev/null || pkg-config --cflags hdf5-openmpi 2>/dev/null || echo "-I/usr/include/hdf5/serial")
HDF5_LIBS=$(pkg-config --libs hdf5-serial 2>/dev/null || pkg-config --libs hdf5-openmpi 2>/dev/null || echo "-L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5")
mpicc -std=c11 -O2 -I"$ROOT/src" $HDF5_CFLAGS -c "$ROOT/src/check.c" -o "$B/check.o" || fail "check.c"
mpicc -std=c11 -O2 -I"$ROOT/src" -c "$ROOT/src/dtype.c" -o "$B/dtype.o" || fail "dtype.c"
OBJS=""
for f in $KERNELS $HOSTCU; do OBJS="$OBJS $B/$f.o"; done
$NVCC $FLAGS -o "$B/gemm_driver" "$B/gemm_driver.o" $OBJS "$B/check.o" "$B/dtype.o" \
  -lcublasLt -lcublas $(mpicc --showme:link) $HDF5_LIBS >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; fail "link"; }
total_s=$(( ($(date +%s%N) - start) / 1000000 ))

if command -v cuobjdump > /dev/null; then
  for f in gemm_wgmma_f16_f32 gemm_wgmma_bf16_f32 gemm_wgmma_f16_f16 gemm_wgmma_bf16_bf16; do
    n=$(cuobjdump --dump-sass "$B/$f.o" | grep -c "HGMMA")
    l=$(cuobjdump --dump-sass "$B/$f.o" | grep -cE "\b(LDL|STL)\b")
    echo "sass $f: $n HGMMA, $l LDL/STL" | tee -a "$OUT/build.log"
    [ "$n" -gt 0 ] && [ "$l" -eq 0 ] || fail "$f: no HGMMA or local memory in SASS"
  done
fi
summary="build: family sources ${kernels_s} ms, with driver and link ${total_s} ms, on $(nproc) cores; no spills"
echo "$summary"
[ "${1:-}" = "--build-only" ] && exit 0

# ---- check, sanitize, bench ----
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
timeout 45 "$B/gemm_driver" check > "$OUT/check.log" 2>&1
check_rc=$?
grep FAIL "$OUT/check.log" | head -20
timeout 80 "$B/gemm_driver" bench > "$OUT/bench.log" 2>&1
bench_rc=$?
san=""
if command -v compute-sanitizer > /dev/null; then
  for run in memcheck:sanitize:40 racecheck:race:60; do
    tool=${run%%:*} mode=${run#*:} limit=${run##*:}
    timeout $limit compute-sanitizer --tool $tool --error-exitcode 9 "$B/gemm_driver" ${mode%:*} \
      > "$OUT/sanitize_$tool.log" 2>&1
    san="$san $tool rc=$? ($(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed" "$OUT/sanitize_$tool.log" | tail -2 | tr '\n' ' '));"
  done
fi

echo "$summary"
grep "resources" "$OUT/check.log"
echo "check rc=$check_rc: $(tail -1 "$OUT/check.log")"
echo "sanitizer:$san"
cat "$OUT/gpu.txt"
echo "bench rc=$bench_rc ($(date -u +%Y-%m-%dT%H:%MZ))"
grep -E "^\||validation" "$OUT/bench.log"
[ $check_rc -eq 0 ] && [ $bench_rc -eq 0 ]
