#!/usr/bin/env bash
# ncu_profile.sh - Nsight Compute over a bench driver's cases on a GPU node, to see what limits
# a kernel: every launch whose kernel name matches REGEX is profiled (the driver runs one
# warm-up and one timed repetition a case), and a table closes the call: duration, DRAM
# throughput (% of peak), achieved occupancy, registers, issue-slot use and the three largest
# warp stall reasons (cycles per issued instruction).
#   bash bench/ncu_profile.sh FAMILY COMMAND REGEX [MAX_LAUNCHES]
#   e.g. bash bench/ncu_profile.sh norm bench 'kv_norm_peeled<__half, \(int\)128, \(int\)4, \(bool\)1>' 8
# (ncu's demangled names spell template arguments as (int)128, (bool)1)
# FAMILY and COMMAND as bench/device_run.sh (families/FAMILY/bench/FAMILY_bench COMMAND);
# MAX_LAUNCHES (default 12) bounds the profiled launches. Environment: OUT (default
# /tmp/kval-ncu): the report ncu.ncu-rep, ncu.csv (its raw page, one row a launch) and
# ncu.log; KVAL_BUILD (default /tmp/kval-bench-build): the build tree, configured and built
# there when the driver is missing (bench/build_drivers.sh, CONFIGURE_ARGS as device_run.sh).
# ncu leaves the clocks alone (--clock-control none). Exit: the driver's or ncu's.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 FAMILY COMMAND REGEX [MAX_LAUNCHES]" >&2; exit 2; }
family=$1 command=$2 regex=$3 max=${4:-12}
OUT=${OUT:-/tmp/kval-ncu}
B=${KVAL_BUILD:-/tmp/kval-bench-build}
mkdir -p "$OUT" "$B"
driver="$B/families/$family/bench/${family}_bench"
if [ ! -x "$driver" ]; then
  . "$ROOT/bench/build_drivers.sh"
  kv_build_drivers "$ROOT" "$B" "families/$family/bench/${family}_bench" > "$OUT/build.log" 2>&1 ||
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
rm -f "$OUT/ncu.ncu-rep"
KVAL_SKIP_CEILINGS=1 "$NCU" --clock-control none -o "$OUT/ncu" --kernel-name-base demangled -k "regex:$regex" --launch-count "$max" \
  --metrics "$metrics" "$driver" "$command" --deck "$ROOT/inputs/default.deck" --set run.warmup=1 \
  --set run.min_reps=1 --set run.max_reps=1 > "$OUT/ncu.log" 2>&1
rc=$?
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
print(f"{'kernel':58} {'us':>7} {'dram%':>6} {'occ%':>5} {'regs':>4} {'issue%':>6} {'cpi':>5}  top stalls (cycles/issue)")
for r in rows[1:]:
    top = sorted(((num(r, k), k) for k in stall), reverse=True)[:3]
    tops = ", ".join(f"{re.sub(r'smsp__average_warps_issue_stalled_|_per_issue_active.ratio', '', k)} {v:.1f}" for v, k in top)
    name = re.sub(r"^void |\(.*$", "", r.get("Kernel Name", "?"))[:58]
    print(f"{name:58} {num(r, 'gpu__time_duration.sum') * scale:7.1f} "
          f"{num(r, 'dram__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} "
          f"{num(r, 'sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f} "
          f"{num(r, 'launch__registers_per_thread'):4.0f} "
          f"{num(r, 'smsp__issue_active.avg.pct_of_peak_sustained_active'):6.1f} "
          f"{num(r, 'smsp__average_warp_latency_per_inst_issued.ratio'):5.1f}  {tops}")
PY
exit $rc
