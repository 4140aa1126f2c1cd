#!/bin/bash
# healthcheck.sh - kval's health level for Slurm: run inputs/health.deck on every GPU of this
# node (one rank per GPU, fleet mode, so the GPUs are also compared bit for bit), write
# node_exporter metrics, and when kval finds a fault drain the node with a reason naming the
# GPU(s):  scontrol update nodename=NODE state=drain reason="kval: ...".
# Suitable as Slurm's HealthCheckProgram (slurm.conf: HealthCheckProgram=/path/jobs/healthcheck.sh,
# HealthCheckInterval=...), as an NHC check, or in an epilog: it runs as root on the node outside
# a job, uses mpirun (not srun), and stops kval after -t seconds (Slurm kills a health check at 60).
#
# Usage: jobs/healthcheck.sh [-n] [-N NODE] [-m METRICS_FILE] [-o DIR] [-t SECONDS] [-d DECK]
#   -n  dry run: print the scontrol command that would drain the node, do not drain
#   -N  the node's Slurm name (default: hostname -s)
#   -m  node_exporter textfile metrics (e.g. /var/lib/node_exporter/textfile_collector/kval.prom)
#   -o  directory for the last run's HDF5 file and log (default $KVAL_HEALTH_DIR or /var/tmp/kval-health)
#   -t  time limit of the kval run in seconds (default $KVAL_HEALTH_LIMIT or 50)
#   -d  deck (default $KVAL_HEALTH_DECK or inputs/health.deck beside this script)
# Environment: KVAL (default build/src/kval of the checkout), MPIRUN (default mpirun), NRANKS
#   (default: the node's GPUs; 2 on the cpu backend of a node without GPUs), KVAL_ARGS (extra kval
#   options, e.g. KVAL_ARGS="--inject bitflip@1" to rehearse a drain), KVAL_HEALTH_DECK (the deck
#   when -d is not given).
# Exit: 0 healthy; 1 a fault was found and the node drained (with -n: would be); 2 usage or
#   configuration error (kval missing, bad deck or option): the node is left alone, so a broken
#   check never drains a fleet; 3 scontrol failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dry="" node="" metrics="" dir=${KVAL_HEALTH_DIR:-/var/tmp/kval-health} limit=${KVAL_HEALTH_LIMIT:-50}
deck=${KVAL_HEALTH_DECK:-$top/inputs/health.deck}
while getopts "nN:m:o:t:d:h" opt; do
  case $opt in
    n) dry=1 ;; N) node=$OPTARG ;; m) metrics=$OPTARG ;; o) dir=$OPTARG ;; t) limit=$OPTARG ;; d) deck=$OPTARG ;;
    h) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "healthcheck.sh: bad option (see -h)" >&2; exit 2 ;;
  esac
done
case $limit in ''|*[!0-9]*) echo "healthcheck.sh: -t needs whole seconds, got '$limit'" >&2; exit 2 ;; esac
node=${node:-$(hostname -s)}
kval=${KVAL:-$top/build/src/kval}
[ -x "$kval" ] || { echo "healthcheck.sh: no kval binary at $kval (set KVAL)" >&2; exit 2; }
[ -r "$deck" ] || { echo "healthcheck.sh: deck '$deck' not readable" >&2; exit 2; }
mkdir -p "$dir" || exit 2
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 HDF5_USE_FILE_LOCKING=FALSE
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}

ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); fi
if [ "$ngpu" -gt 0 ]; then backend=cuda nranks=${NRANKS:-$ngpu}; else backend=cpu nranks=${NRANKS:-2}; fi
out="$dir/kval-health-$node.h5" log="$dir/kval-health-$node.log"
start=$(date +%s)
# shellcheck disable=SC2086
timeout -s TERM -k 5 "$limit" "${MPIRUN:-mpirun}" -np "$nranks" "$kval" --backend "$backend" --quiet --force \
  ${metrics:+--metrics "$metrics"} ${KVAL_ARGS:-} "$deck" -o "$out" >"$log" 2>&1
code=$?
secs=$(($(date +%s) - start))

# The GPUs kval names: failed cases ("kval: fail_... rank R host H (UUID): ...") and the
# per-rank fingerprint lines ("kval: FINGERPRINT MISMATCH: rank R (host H, MODEL UUID): ...").
gpus=$( { sed -n 's/^kval: \(fail_[a-z_]*\|error\) rank [0-9]* host [^ ]* (\([^)]*\)).*/\2/p' "$log"
          sed -n 's/^kval: FINGERPRINT MISMATCH: rank [0-9]* (host [^,]*, .* \([^ )]*\)):.*/\1/p' "$log"; } |
        sort | uniq -c | sort -rn | awk '{printf "%s%s", sep, $2; sep=","}')
summary=$(sed -n 's/^kval: .*[^0-9]\([0-9]* passed, .*\)$/\1/p' "$log" | tail -n 1)
count() { printf '%s\n' "$summary" | sed -n "s/.*[^0-9]\([0-9][0-9]*\) $1.*/\1/p"; }
found=""
for what in "failed:failed cases" "errors:error cases" "fingerprint disagreements:fingerprint disagreements"; do
  n=$(count "${what%%:*}")
  [ -z "$n" ] || [ "$n" -eq 0 ] || found="${found:+$found, }$n ${what#*:}"
done
case $code in
  0) echo "healthcheck.sh: $node healthy ($nranks $backend rank(s), ${secs} s: $summary)"; exit 0 ;;
  1) reason="kval: ${found:-validation failed} on GPU ${gpus:-?}" ;;
  2) echo "healthcheck.sh: kval refused its input (exit 2), node $node left alone:" >&2; tail -n 5 "$log" >&2; exit 2 ;;
  124|137|143) reason="kval: health check did not finish in ${limit} s" ;;
  *) reason="kval: runtime error (exit $code): $(grep -m 1 -E 'error|failed' "$log" | cut -c1-120)" ;;
esac
reason=$(printf '%s' "$reason" | tr -d '"' | cut -c1-200)
echo "healthcheck.sh: $node: $reason (log $log)"
if [ -n "$dry" ]; then
  echo "healthcheck.sh: dry run: scontrol update nodename=$node state=drain reason=\"$reason\""
  exit 1
fi
scontrol update nodename="$node" state=drain reason="$reason" || { echo "healthcheck.sh: scontrol failed" >&2; exit 3; }
echo "healthcheck.sh: drained $node"
exit 1
