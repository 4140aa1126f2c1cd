#!/bin/bash
# device_check.sh - build kval on the GPU machine and run the fa2bwd family: its test deck,
# compute-sanitizer (memcheck, racecheck, synccheck) over its sanitize deck, the fa2bwd sections
# of DECK (default: inputs/default.deck), and PyTorch's SDPA backward at that deck's main shapes
# (TOKENS tokens of 16 heads, each SEQLEN); a table of every case last.
# OUT: the folder for logs.
#   bash families/fa2bwd/bench/device_check.sh [DECK [TOKENS SEQLEN...]]
#   bash families/fa2bwd/bench/device_check.sh inputs/attention.deck 32768 512 1024 2048 4096 8192 16384
set -u
deck=${1:-inputs/default.deck}
tokens=${2:-16384}
shift $(($# > 2 ? 2 : $#))
seqlens=${*:-2048}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/fa2bwd-out}
mkdir -p "$OUT"
top=$(pwd)
(./bootstrap && mkdir -p build && cd build && ../configure && make src/kval_git.h && make -j16 src/kval) > "$OUT/build.log" 2>&1 ||
  { tail -n 40 "$OUT/build.log"; exit 1; }
grep -A3 "fa2bwd" "$OUT/build.log" | grep -E "registers|spill" | sort | uniq -c | head -20
K="$top/build/src/kval"
dump() {
  PYTHONPATH="$top/analysis" python3 -m kval_analysis export "$1" -o "$1.csv" > /dev/null &&
    python3 - "$1.csv" <<'P'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["family"] != "fa2bwd":
        continue
    tf = r.get("tflops") or ""
    print(f'{r["status"]:<16} {r["variant"]:<10} {r["precision"]} d={r["headdim"]:>3} L={r["seqlen"]:>5} c={r["causal"]} b={r["batch"]} '
          f'{r["dist"]:<12} bound={float(r["max_bound_ratio"] or "nan"):.3g} xref={r["ref_xcheck"]} '
          f'tflops={tf} regs={r["registers"]} {r["message"][:90]}')
P
}
timeout 200 "$K" --backend cuda --only fa2bwd families/fa2bwd/test.deck -o "$OUT/test.h5" > "$OUT/test.log" 2>&1
echo "test.deck rc=$?"; tail -n 3 "$OUT/test.log"; dump "$OUT/test.h5"
for tool in memcheck racecheck synccheck; do
  KVAL_SKIP_CEILINGS=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 "$K" --backend cuda --only fa2bwd \
    families/fa2bwd/sanitize.deck -o "$OUT/sanitize_$tool.h5" > "$OUT/sanitize_$tool.log" 2>&1
  echo "compute-sanitizer $tool on sanitize.deck rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -n 1)"
done
name=$(basename "$deck" .deck)
timeout 300 "$K" --backend cuda --only fa2bwd "$deck" -o "$OUT/$name.h5" > "$OUT/$name.log" 2>&1
echo "$deck rc=$?"; tail -n 3 "$OUT/$name.log"; dump "$OUT/$name.h5"
timeout 150 python3 families/fa2bwd/bench/peers.py --tokens "$tokens" --seqlen $seqlens > "$OUT/peers.csv" 2>&1
cat "$OUT/peers.csv"
