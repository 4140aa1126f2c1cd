#!/bin/bash
# peers_device_run.sh - kval's attention and norm kernels side by side with their PyTorch
# anchors in one device call (the numbers docs/PERFORMANCE.md quotes): builds the standalone
# drivers with bench/fa2_device_run.sh --build-only and bench/norm_device_run.sh --build-only,
# checks both FA2 variants against the fp64 reference (fa2_driver check), then times
#   fa2_driver bench        kval-wgmma and kval-mma, B * L = 32768, 16 heads
#   attention_peers.py      SDPA flash and cuDNN on the same shapes
#   norm_bench bench        every fitting LayerNorm/RMSNorm variant
#   norm_peers.py           F.layer_norm and F.rms_norm on the same shapes
# and prints both comparison tables last. Everything lands in $OUT/peers.tgz (one file).
#   bash bench/peers_device_run.sh
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/peers_out}
W=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
fail() { echo "peers_device_run: $*" >&2; exit 1; }

OUT=$W/fa2 FA2_BUILD=$W/fa2_build bash "$ROOT/bench/fa2_device_run.sh" --build-only > "$W/fa2_build.log" 2>&1 ||
  { tail -20 "$W/fa2_build.log"; fail "fa2 build"; }
OUT=$W/norm NORM_BUILD=$W/norm_build bash "$ROOT/bench/norm_device_run.sh" --build-only > "$W/norm_build.log" 2>&1 ||
  { tail -20 "$W/norm_build.log"; fail "norm build"; }
D=$W/fa2_build/fa2_driver
N=$W/norm_build/norm_bench
echo "build: $(tail -1 "$W/fa2_build.log"); $(tail -1 "$W/norm_build.log")"

timeout 240 "$D" check > "$W/fa2_check.log" 2>&1
check_rc=$?
echo "fa2_driver check rc $check_rc: $(grep 'check:' "$W/fa2_check.log")"
"$D" info > "$W/fa2_info.log" 2>&1
timeout 200 "$D" bench "$W/fa2_kval.csv" > "$W/fa2_bench.log" 2>&1 || fail "fa2 bench"
timeout 240 python3 "$ROOT/bench/attention_peers.py" --csv "$W/fa2_peers.csv" --json "$W/fa2_peers.json" \
  > "$W/fa2_peers.log" 2>&1 || fail "attention peers"
timeout 60 "$N" bench "$W/norm_kval.json" > "$W/norm_bench.log" 2>&1 || fail "norm bench"
timeout 90 python3 "$ROOT/bench/norm_peers.py" --json "$W/norm_torch.json" --kval "$W/norm_kval.json" \
  > "$W/norm_peers.log" 2>&1 || fail "norm peers"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  > "$W/gpu.csv" 2>&1
date -u +%Y-%m-%dT%H:%MZ > "$W/date.txt"
tar czf "$OUT/peers.tgz" -C "$W" --exclude=fa2_build --exclude=norm_build --exclude=fa2 --exclude=norm .
python3 "$ROOT/bench/attention_peers.py" --table "$W/fa2_kval.csv" "$W/fa2_peers.csv" | grep -E "kernel|2048|4096|8192|16384"
sed -n '/kval variant/,$p' "$W/norm_peers.log"
cat "$W/gpu.csv"
exit $check_rc
