#!/usr/bin/env bash
# ncu_profile.sh - Nsight Compute over a bench driver's cases, or over a kval run of a deck, on a
# GPU node, to see what limits a kernel: every launch whose kernel name matches REGEX is
# profiled (one warm-up and one timed repetition a case; the watchdog at 600 s, since ncu
# replays each profiled launch), and a table closes the call:
# duration, DRAM throughput and SM throughput (% of peak), the busiest tensor pipe (% of its
# peak: mma.sync's hmma, wgmma's gmma), achieved occupancy, registers, dynamic shared memory,
# issue-slot use and the three largest warp stall reasons (cycles per issued instruction).
#   bash bench/ncu_profile.sh FAMILY COMMAND REGEX [MAX_LAUNCHES]
#   bash bench/ncu_profile.sh kval DECK REGEX [MAX_LAUNCHES]
#   e.g. bash bench/ncu_profile.sh norm bench 'kv_norm_peeled<__half, \(int\)128, \(int\)4, \(bool\)1>' 8
#        bash bench/ncu_profile.sh kval inputs/smoke.deck 'fa2_wgmma_kernel' 4
# (ncu's demangled names spell template arguments as (int)128, (bool)1)
# FAMILY and COMMAND as bench/device_run.sh (families/FAMILY/bench/FAMILY_bench COMMAND, with
# inputs/default.deck's [run] settings); `kval DECK` profiles src/kval over DECK's cases (any
# shape a deck can name; the file it writes is dropped). MAX_LAUNCHES (default 12) bounds the
# profiled launches. Environment: OUT (default /tmp/kval-ncu): the report ncu.ncu-rep, ncu.csv
# (its raw page, one row a launch) and ncu.log; KVAL_BUILD (default /tmp/kval-bench-build): the
# build tree, configured and built there when the program is missing (bench/build_drivers.sh,
# CONFIGURE_ARGS as device_run.sh). ncu leaves the clocks alone (--clock-control none).
# Exit: the program's or ncu's.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 FAMILY COMMAND REGEX [MAX_LAUNCHES]" >&2; exit 2; }
family=$1 command=$2 regex=$3 max=${4:-12}
OUT=${OUT:-/tmp/kval-ncu}
B=${KVAL_BUILD:-/tmp/kval-bench-build}
mkdir -p "$OUT" "$B"
if [ "$family" = kval ]; then
  [ -f "$command" ] || { echo "ncu_profile: no deck '$command'" >&2; exit 2; }
  target=src/kval
  args=("$(cd "$(dirname "$command")" && pwd)/$(basename "$command")" -o "$OUT/ncu-run.h5")
else
  target=families/$family/bench/${family}_bench
  args=("$command" --deck "$ROOT/inputs/default.deck")
fi
driver="$B/$target"
if [ ! -x "$driver" ]; then
  . "$ROOT/bench/build_drivers.sh"
  kv_build_drivers "$ROOT" "$B" "$target" > "$OUT/build.log" 2>&1 ||
    { tail -n 30 "$OUT/build.log"; echo "ncu_profile: build failed" >&2; exit 1; }
fi
NCU=$(command -v ncu)
for n in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do [ -n "$NCU" ] || { [ -x "$n" ] && NCU=$n; }; done
[ -n "$NCU" ] || { echo "ncu_profile: no ncu on this machine" >&2; exit 77; }
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
metrics=$metrics,launch__occupancy_limit_registers,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics=$metrics,smsp__average_warp_latency_per_inst_issued.ratio
metrics=$metrics,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
rm -f "$OUT/ncu.ncu-rep" "$OUT/ncu-run.h5"
KVAL_SKIP_CEILINGS=1 "$NCU" --clock-control none -o "$OUT/ncu" --kernel-name-base demangled -k "regex:$regex" --launch-count "$max" \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
  --metrics "$metrics" "$driver" "${args[@]}" --set run.warmup=1 --set run.min_reps=1 --set run.max_reps=1 --set run.watchdog=600 \
  > "$OUT/ncu.log" 2>&1
rc=$?
rm -f "$OUT/ncu-run.h5"
"$NCU" --import "$OUT/ncu.ncu-rep" --csv --page raw > "$OUT/ncu.csv" 2>> "$OUT/ncu.log" || rc=1
python3 - "$OUT/ncu.csv" <<'PY'
import csv, io, re, sys
text = open(sys.argv[1]).read()
start = text.find('"ID"')
if start < 0:
    sys.exit("ncu_profile: no profile rows (see ncu.log)")
rows = list(csv.DictReader(io.StringIO(text[start:])))
units = rows[0]
def num(r, k):
    try:
        return float(str(r.get(k, "nan")).replace(",", ""))
    except ValueError:
        return float("nan")
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(
    units.get("gpu__time_duration.sum"), float("nan"))
stall = [k for k in units if re.match(r"smsp__average_warps_issue_stalled_(.*)_per_issue_active\.ratio$", k)]
# the tensor pipes' utilisation metrics the sections collected (names differ by architecture)
tensor = [k for k in units if re.match(r"sm__pipe_tensor_op_\w*cycles_active\.avg\.pct_of_peak_sustained_active$", k)]
print(f"{'kernel':58} {'us':>7} {'dram%':>6} {'sm%':>5} {'tens%':>5} {'occ%':>5} {'regs':>4} {'smemKB':>6} "
      f"{'issue%':>6} {'cpi':>5}  top stalls (cycles/issue)")
for r in rows[1:]:
    top = sorted(((num(r, k), k) for k in stall), reverse=True)[:3]
    tops = ", ".join(f"{re.sub(r'smsp__average_warps_issue_stalled_|_per_issue_active.ratio', '', k)} {v:.1f}" for v, k in top)
    tens = max((num(r, k) for k in tensor), default=float("nan"))
    # the demangled name less "void " and its parameter list (the last parenthesised group)
    name = re.sub(r"^void |\((?:[^()]|\([^()]*\))*\)$", "", r.get("Kernel Name", "?"))[:58]
    smem = num(r, "launch__shared_mem_per_block_dynamic")
    print(f"{name:58} {num(r, 'gpu__time_duration.sum') * scale:7.1f} "
          f"{num(r, 'dram__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} "
          f"{num(r, 'sm__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f} {tens:5.1f} "
          f"{num(r, 'sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f} "
          f"{num(r, 'launch__registers_per_thread'):4.0f} {smem / 1024:6.1f} "
          f"{num(r, 'smsp__issue_active.avg.pct_of_peak_sustained_active'):6.1f} "
          f"{num(r, 'smsp__average_warp_latency_per_inst_issued.ratio'):5.1f}  {tops}")
PY
exit $rc
