#!/usr/bin/env bash
# device_run.sh - kval's bench on a GPU node in one call: configure (once) and make the bench
# drivers, run them (every row a kval case run, timed and validated as the job does it, with
# the [run] settings of inputs/default.deck) and the PyTorch peers (timed by the same method,
# bench/peer_timing.py), and print the side-by-side tables last (bench/side_by_side.py).
#   bash bench/device_run.sh fa2|gemm|norm|decode|all
#   fa2   families/fa2/bench/fa2_bench bench and ladder, families/fa2/bench/peers.py (SDPA)
#   gemm  families/gemm/bench/gemm_bench bench, ladder and ladder-fp8 (the peer is cuBLAS, variant cublas)
#   norm  families/norm/bench/norm_bench bench and configs, families/norm/bench/peers.py (and
#         norm_bench sweep with BENCH_SWEEP=1: the choice's size buckets against every configuration)
#   decode families/decode/bench/decode_bench bench and pages, families/decode/bench/peers.py
# Environment: OUT (default /tmp/kval-bench): the CSV files and logs; KVAL_BUILD (default
# /tmp/kval-bench-build): the build tree, configured there (CONFIGURE_ARGS) unless it already
# holds a Makefile; BENCH_DEADLINE (default 560): seconds for the whole call, each step's time
# limit cut to what is left and a step with under 10 s left skipped (rc=skipped); a driver
# stopped by its limit leaves the rows it finished in its CSV. BENCH_QUICK=1: the bench rows and
# the peers only (no ladder, configs or pages sweeps): the side-by-side check in a short call. Exit 0 when every step ran and
# every bench case passed (peers without PyTorch do not count).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kval-bench}
B=${KVAL_BUILD:-/tmp/kval-bench-build}
DEADLINE=${BENCH_DEADLINE:-560}
mkdir -p "$OUT" "$B"
B=$(cd "$B" && pwd)
export PYTHONUNBUFFERED=1 top_srcdir=$ROOT
case "${1:-}" in
  fa2 | gemm | norm | decode) families=$1 ;;
  all) families="fa2 gemm norm decode" ;;
  *) echo "usage: $0 fa2|gemm|norm|decode|all" >&2; exit 2 ;;
esac
SECONDS=0
status=0
summary=()
step() { echo "== [+${SECONDS} s] $*"; }
# limited SECONDS_WANTED CMD...: run CMD under timeout with at most what is left of the deadline
limited() {
  local want=$1 left=$((DEADLINE - SECONDS))
  shift
  [ "$left" -lt 10 ] && return 125
  [ "$left" -lt "$want" ] && want=$left
  timeout -s TERM "$want" "$@"
}
record() { # RC NAME: 125 is a step the deadline left out, 77 one without a GPU or PyTorch
  local rc=$1 name=$2
  case $rc in
    0) ;;
    125) rc=skipped status=1 ;;
    77) rc="77 (no GPU or no PyTorch)" ;;
    *) status=1 ;;
  esac
  summary+=("$name rc=$rc")
}

step "build in $B"
. "$ROOT/bench/build_drivers.sh"
targets=""
for f in $families; do targets="$targets families/$f/bench/${f}_bench"; done
# shellcheck disable=SC2086
kv_build_drivers "$ROOT" "$B" $targets > "$OUT/build.log" 2>&1 ||
  { tail -n 40 "$OUT/build.log"; echo "device_run: build failed (see $OUT/build.log)"; exit 1; }
grep -A8 'configured:' "$OUT/build.log" | head -n 9
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  > "$OUT/gpu.csv" 2>&1
date -u +%Y-%m-%dT%H:%MZ >> "$OUT/gpu.csv"

# drive FAMILY COMMAND LIMIT [SKIP_CEILINGS]: one command of the family's driver, its CSV and
# log under $OUT; the first command of a driver measures the device's ceilings, the later ones
# leave them out (KVAL_SKIP_CEILINGS=1: they are not part of a bench row)
drive() {
  local f=$1 cmd=$2 want=$3 skip=${4:-0}
  step "$f bench $cmd"
  KVAL_SKIP_CEILINGS=$skip limited "$want" "$B/families/$f/bench/${f}_bench" "$cmd" --deck "$ROOT/inputs/default.deck" \
    --csv "$OUT/${f}_$cmd.csv" > "$OUT/${f}_$cmd.log" 2>&1
  local rc=$?
  head -n 2 "$OUT/${f}_$cmd.log"
  grep -E '^bench:' "$OUT/${f}_$cmd.log"
  record "$rc" "${f}_bench $cmd"
}
peers() {
  local f=$1 want=$2
  step "$f PyTorch peers"
  limited "$want" python3 "$ROOT/families/$f/bench/peers.py" --deck "$ROOT/inputs/default.deck" \
    --csv "$OUT/${f}_peers.csv" --json "$OUT/${f}_peers.json" > "$OUT/${f}_peers.log" 2>&1
  local rc=$?
  tail -n 1 "$OUT/${f}_peers.log"
  record "$rc" "$f peers.py"
}

quick=${BENCH_QUICK:-0}
for f in $families; do
  [ "$quick" = 1 ] && case $f in fa2 | norm | decode) drive "$f" bench 150; peers "$f" 120; continue ;;
    gemm) drive gemm bench 120; continue ;; esac
  case $f in
    fa2) drive fa2 bench 180; drive fa2 ladder 150 1; peers fa2 120 ;;
    gemm) drive gemm bench 120; drive gemm ladder 150 1; drive gemm ladder-fp8 60 1 ;;
    norm) drive norm bench 60; drive norm configs 120 1; peers norm 60
      [ "${BENCH_SWEEP:-0}" = 1 ] && drive norm sweep 200 1 ;;
    decode) drive decode bench 60; drive decode pages 40 1; peers decode 60 ;;
  esac
done

echo "== summary (+${SECONDS} s): ${summary[*]}; logs and CSV files in $OUT"
cat "$OUT/gpu.csv"
# table CSV [PEERS_CSV] [side_by_side.py options]: kval's rows (and the peers' where they ran)
table() {
  local files=("$1")
  shift
  [ -s "${files[0]}" ] || return 0
  case ${1:-} in *.csv) [ -s "$1" ] && files+=("$1"); shift ;; esac
  python3 "$ROOT/bench/side_by_side.py" "${files[@]}" "$@"
}
for f in $families; do
  case $f in
    fa2)
      table "$OUT/fa2_bench.csv" "$OUT/fa2_peers.csv" --ratio-to sdpa-flash --ratio-to sdpa-cudnn
      table "$OUT/fa2_ladder.csv" ;;
    gemm) table "$OUT/gemm_bench.csv" --ratio-to cublas; table "$OUT/gemm_ladder.csv" --ratio-to cublas
      table "$OUT/gemm_ladder-fp8.csv" --ratio-to cublas ;;
    norm) table "$OUT/norm_bench.csv" "$OUT/norm_peers.csv" --ratio-to torch --ratio-to copy; table "$OUT/norm_configs.csv" --best
      table "$OUT/norm_sweep.csv" --best --ratio-to kval ;;
    decode) table "$OUT/decode_bench.csv" "$OUT/decode_peers.csv" --ratio-to gather+sdpa --ratio-to sdpa --ratio-to copy; table "$OUT/decode_pages.csv" ;;
  esac
done
exit $status
