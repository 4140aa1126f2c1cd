#!/bin/bash
# norm_device_run.sh - build, check, sanitize and benchmark the LayerNorm/RMSNorm kernels and
# the cuda backend on a GPU machine, with direct nvcc/mpicc commands (not the project build;
# the families without a CUDA side in this build are compiled without HAVE_CUDA). The .cu
# files are compiled in parallel with -Xptxas -v (any stack frame or spill is an error), then:
#   norm_bench gen     device generator bit for bit against the host one
#   norm_bench device  identity, NVML telemetry, start-up ceilings
#   norm_bench bench   every fitting variant timed; bench/norm_peers.py times PyTorch at the
#                      same shapes and prints the comparison
#   norm_bench check   every precision, norm, shape and kernel variant against the GPU fp64
#                      reference, outputs poisoned
#   tests/gpu/test_cuda_families   the cuda backend end to end (deck -> plan -> run_case)
#   tests/check_spills.sh          on these objects, and on a planted local-memory kernel
#   tests/sanitizer.sh             memcheck/racecheck/initcheck/synccheck over the test binary,
#                                  and memcheck/racecheck over `norm_bench check small`
# Logs go to $OUT (default /tmp/norm_out; 8 files); the tables are printed last. Each step's
# time limit is cut to what is left of NORM_DEADLINE seconds (default 185) from the start, and
# steps with under 5 s left are skipped (reported as rc=skipped), so the run ends in time.
#   bench/norm_device_run.sh [--build-only]
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/norm_out}
B=${NORM_BUILD:-/tmp/norm_build}
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$NVCC")")")}
mkdir -p "$OUT" "$B"
FLAGS="-O3 -std=c++17 --expt-relaxed-constexpr -Xcompiler -fno-fast-math -gencode arch=compute_90a,code=sm_90a -I$ROOT/src"
CU="generate norm_fp16 norm_bf16 norm_fp32 norm_dispatch norm_reference norm_launch"
fail() { echo "norm_device_run: $*" >&2; exit 1; }
DEADLINE=${NORM_DEADLINE:-185}
# run a step under `timeout` with at most $1 seconds and what is left of the deadline
limited() {
  local want=$1 left=$((DEADLINE - SECONDS))
  shift
  [ "$left" -lt 5 ] && return 125
  [ "$left" -lt "$want" ] && want=$left
  timeout "$want" "$@"
}

# ---- build ----
SECONDS=0
pids=""
for f in $CU; do
  $NVCC $FLAGS -Xptxas -v -c "$ROOT/src/cuda/$f.cu" -o "$B/$f.o" > "$B/$f.ptxas" 2>&1 &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || { cat "$B"/*.ptxas; fail "nvcc failed"; }; done
cat "$B"/*.ptxas > "$OUT/build.log"
kernels=$(grep -c "Compiling entry function" "$OUT/build.log")
grep -A1 "Function properties" "$OUT/build.log" | grep -E "bytes stack frame" |
  grep -vq "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" && fail "stack frame or spills (see build.log)"

HDF5_CFLAGS=$(pkg-config --cflags hdf5-serial 2>/dev/null || pkg-config --cflags hdf5 2>/dev/null || echo "-I/usr/include/hdf5/serial")
HDF5_LIBS=$(pkg-config --libs hdf5-serial 2>/dev/null || pkg-config --libs hdf5 2>/dev/null || echo "-L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5")
CFLAGS="-std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -ffp-contract=off -Wall -Wextra -I$ROOT/src -I$CUDA_HOME/include"
mpicc $CFLAGS $HDF5_CFLAGS -c "$ROOT/src/check.c" -o "$B/check.o" || fail "check.c"
for f in dtype binding nvml cuda_identity cuda_ceilings numerics/halfprec; do
  mpicc $CFLAGS -c "$ROOT/src/$f.c" -o "$B/$(basename $f).o" 2>> "$OUT/build.log" || fail "$f.c"
done
OBJS=""
for f in generate norm_fp16 norm_bf16 norm_fp32 norm_dispatch norm_reference; do OBJS="$OBJS $B/$f.o"; done
$NVCC $FLAGS -o "$B/norm_bench" "$ROOT/bench/norm_bench.cu" $OBJS "$B"/{check,dtype,binding,nvml,cuda_identity,cuda_ceilings,halfprec}.o \
  -lcublas -ldl $(mpicc --showme:link) $HDF5_LIBS >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; fail "link"; }
# the backend test: the core, the families (only the norms with HAVE_CUDA), the cuda backend;
# other people's half-written files may break it: then it is reported and skipped
TB="$B/test"
mkdir -p "$TB/tests/gpu" "$TB/src/cuda"
for f in $CU; do cp "$B/$f.o" "$TB/src/cuda/"; done
CORE="check dtype deck plan plan_assign family binding backend backend_cpu timing backend_cuda cuda_harness
  cuda_identity cuda_ceilings nvml numerics/halfprec numerics/errstats numerics/tolerance numerics/fingerprint
  families/common families/norm families/norm_ref families/gemm families/gemm_emulate families/fa2
  families/fa2_emulate families/fa2_ref"
for f in $CORE; do
  def=-DHAVE_CUDA
  case $f in families/gemm* | families/fa2*) def="" ;; esac
  echo "mpicc $CFLAGS $HDF5_CFLAGS $def -c $ROOT/src/$f.c -o $TB/$(echo $f | tr / _).o"
done | xargs -P "$(nproc)" -I{} sh -c "{} 2>> $OUT/build.log" && {
  mpicc $CFLAGS -DHAVE_CUDA -o "$TB/tests/gpu/test_cuda_families" "$ROOT/tests/gpu/test_cuda_families.c" "$TB"/*.o \
    "$TB"/src/cuda/*.o -L"$CUDA_HOME/lib64" -lcublas -lcudart -lstdc++ -ldl $HDF5_LIBS -lm >> "$OUT/build.log" 2>&1
} || echo "norm_device_run: the backend test did not build (see build.log); skipped"
total_s=$SECONDS
if command -v cuobjdump > /dev/null; then
  for f in norm_fp16 norm_bf16 norm_fp32; do
    l=$(cuobjdump --dump-sass "$B/$f.o" | grep -cE "\b(LDL|STL)\b")
    v=$(cuobjdump --dump-sass "$B/$f.o" | grep -cE "LDG[.A-Z0-9_]*\.128")
    echo "sass $f: $l LDL/STL, $v 128-bit global loads" | tee -a "$OUT/build.log"
    [ "$l" -eq 0 ] || fail "$f: local memory in SASS"
  done
fi
summary="build: $kernels kernels, no stack frames or spills, ${total_s}s on $(nproc) cores"
echo "$summary"
[ "${1:-}" = "--build-only" ] && exit 0

# ---- run (each step's summary printed as it finishes; the tables last) ----
step() { echo "[$SECONDS s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/misc.log" 2>&1
limited 20 "$B/norm_bench" gen >> "$OUT/misc.log" 2>&1; gen_rc=$?
step "gen rc=$gen_rc: $(tail -1 "$OUT/misc.log")"
limited 15 "$B/norm_bench" device >> "$OUT/misc.log" 2>&1; dev_rc=$?
step "device rc=$dev_rc: $(tail -3 "$OUT/misc.log" | head -2 | tr '\n' ' ')"
limited 40 "$B/norm_bench" bench "$B/kval_norm.json" > "$OUT/bench.log" 2>&1; bench_rc=$?
step "bench rc=$bench_rc ($(date -u +%Y-%m-%dT%H:%MZ))"
PYTHONUNBUFFERED=1 limited 45 python3 "$ROOT/bench/norm_peers.py" --json "$OUT/torch_norm.json" \
  --kval "$B/kval_norm.json" > "$OUT/peers.log" 2>&1; peers_rc=$?
step "peers rc=$peers_rc"
limited 60 "$B/norm_bench" check > "$OUT/check.log" 2>&1; check_rc=$?
step "check rc=$check_rc: $(grep -c FAIL "$OUT/check.log") FAIL lines; $(tail -1 "$OUT/check.log")"
grep FAIL "$OUT/check.log" | head -10
limited 40 "$TB/tests/gpu/test_cuda_families" > "$OUT/backend.log" 2>&1; test_rc=$?
step "backend test rc=$test_rc: $(grep -c ^FAIL "$OUT/backend.log") FAIL lines; $(tail -1 "$OUT/backend.log")"
grep -E "^FAIL|^   " "$OUT/backend.log" | head -12
{
  cuobjdump -res-usage "$B/norm_fp32.o" | head -12
  top_builddir="$TB" top_srcdir="$ROOT" CUOBJDUMP=$(command -v cuobjdump) sh "$ROOT/tests/check_spills.sh"
  echo "check_spills rc=$?"
  printf '__global__ void planted(float *x, int k) { float a[64]; for (int i = 0; i < 64; i++) a[(i * k) & 63] = x[i]; x[threadIdx.x] = a[k & 63]; }\n' > "$B/planted.cu"
  $NVCC -gencode arch=compute_90a,code=sm_90a -O3 -c -o "$TB/src/cuda/planted.o" "$B/planted.cu"
  top_builddir="$TB" top_srcdir="$ROOT" CUOBJDUMP=$(command -v cuobjdump) sh "$ROOT/tests/check_spills.sh"
  echo "check_spills with the planted kernel rc=$? (must be 1)"
  rm -f "$TB/src/cuda/planted.o"
} >> "$OUT/misc.log" 2>&1
step "spills: $(grep -E "check_spills.*rc=" "$OUT/misc.log" | tr '\n' ' ')"
for tool in memcheck racecheck; do
  limited 25 compute-sanitizer --tool $tool --error-exitcode 9 "$B/norm_bench" check small > "$B/san_$tool.log" 2>&1
  rc=$?
  echo "norm_bench $tool rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$B/san_$tool.log" | tail -1)" | tee -a "$OUT/san.log"
done
limited 110 env top_builddir="$TB" sh "$ROOT/tests/sanitizer.sh" >> "$OUT/san.log" 2>&1; san_rc=$?
step "tests/sanitizer.sh rc=$san_rc: $(grep "rc=" "$OUT/san.log" | tr '\n' ' ')"

echo "$summary"
head -2 "$OUT/misc.log"
grep -E "yes \|$|FAIL" "$OUT/bench.log"
sed -n '/kval variant/,$p' "$OUT/peers.log"
[ $gen_rc -eq 0 ] && [ $dev_rc -eq 0 ] && [ $check_rc -eq 0 ] && [ $bench_rc -eq 0 ] && [ $test_rc -eq 0 ]
