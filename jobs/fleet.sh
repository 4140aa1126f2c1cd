#!/usr/bin/env bash
# fleet.sh - submit the fleet campaign: one kval job per node (each writes its own file,
# fleet mode, every GPU of the node one rank), then one analysis job that waits for all
# of them (--dependency=afterany) and runs `kval-analyze fleet` over every file, against
# an optional baseline, writing a text verdict, JSON and JUnit XML, plus a report.
# Every node of the campaign is expected by the analysis (--expect-hosts): a node that is
# down, drained or not responding gets no job (it would pend forever and hold back the
# analysis), node jobs are not requeued (--no-requeue: a job that lost its node ends, its
# file stays incomplete), and the verdict flags such nodes as missing results.
#
# Usage: jobs/fleet.sh [-p PARTITION | -w NODE[,NODE...]] [-g GPUS_PER_NODE] [-o DIR]
#                      [-b 'BASELINE_GLOB'] [-d DECK] [-t TIME] [-W] [-- extra sbatch options]
#   -p  take every node of this partition (sinfo)      -w  explicit node list
#   -g  GPUs (= ranks) per node (default 8; 0 runs the cpu backend with 2 ranks per node)
#   -o  campaign directory (default results/fleet-<date>)   -b  baseline files (quoted glob)
#   -d  deck (default inputs/fleet.deck)                    -t  time limit per job (default 00:30:00)
#   -W  wait for the analysis job and exit with its status (0 VERDICT PASS, 1 FAIL or INCOMPLETE)
# Prints the job ids; the verdict is in DIR/fleet.txt (first line), DIR/fleet.json, DIR/fleet-junit.xml.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
partition="" nodes="" gpus=8 outdir="" baseline="" deck="$top/inputs/fleet.deck" tlimit=00:30:00 wait=""
while getopts "p:w:g:o:b:d:t:Wh" opt; do
  case $opt in
    p) partition=$OPTARG ;; w) nodes=$OPTARG ;; g) gpus=$OPTARG ;; o) outdir=$OPTARG ;;
    b) baseline=$OPTARG ;; d) deck=$OPTARG ;; t) tlimit=$OPTARG ;; W) wait=--wait ;;
    h) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "fleet.sh: bad option (see -h)" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
outdir=${outdir:-$top/results/fleet-$(date -u +%Y%m%d-%H%M%S)}
[ -r "$deck" ] || { echo "fleet.sh: deck '$deck' not readable" >&2; exit 2; }
case $gpus in ''|*[!0-9]*) echo "fleet.sh: -g needs a number, got '$gpus'" >&2; exit 2 ;; esac
if [ -z "$nodes" ]; then
  [ -n "$partition" ] || { echo "fleet.sh: give -p PARTITION or -w NODES" >&2; exit 2; }
  nodes=$(sinfo -h -N -p "$partition" -o '%N' | sort -u | paste -sd, -)
  [ -n "$nodes" ] || { echo "fleet.sh: partition '$partition' has no nodes" >&2; exit 2; }
fi
IFS=, read -r -a node_array <<<"$nodes"
usable=()
for node in "${node_array[@]}"; do
  state=$(sinfo -h -N -n "$node" -o '%T' | sed -n 1p) || { echo "fleet.sh: sinfo failed for node $node" >&2; exit 1; }
  case $state in
    '') echo "fleet.sh: node '$node' is not known to Slurm" >&2; exit 2 ;;
    *'*'|down*|drain*|fail*|maint*|inval*|unknown*|future*)
      echo "fleet.sh: node $node is $state: no job there; the analysis reports it missing" ;;
    *) usable+=("$node") ;;
  esac
done
[ ${#usable[@]} -gt 0 ] || { echo "fleet.sh: none of the nodes $nodes can run a job" >&2; exit 1; }
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)       # the jobs run in other directories: absolute paths
deck=$(cd "$(dirname "$deck")" && pwd)/$(basename "$deck")
case $baseline in ''|/*) ;; *) baseline="$PWD/$baseline" ;; esac

if [ "$gpus" -gt 0 ]; then
  per_node=(--ntasks-per-node="$gpus" --gpus-per-node="$gpus") backend=cuda
else
  per_node=(--ntasks-per-node=2) backend=cpu
fi
ids=()
for node in "${usable[@]}"; do
  id=$(sbatch --parsable --nodes=1 --nodelist="$node" "${per_node[@]}" --time="$tlimit" --no-requeue \
        --job-name="kval-fleet-$node" --output="$outdir/kval-%j.out" "$@" \
        --export=ALL,DECK="$deck",OUTDIR="$outdir",MODE=fleet,BACKEND="$backend" "$top/jobs/kval.sbatch")
  ids+=("${id%%;*}")
  echo "fleet.sh: node $node -> job ${id%%;*}"
done

base_args=""
[ -z "$baseline" ] || base_args="--baseline $baseline"
analyze="PYTHONPATH=$top/analysis\${PYTHONPATH:+:\$PYTHONPATH} python3 -m kval_analysis"
dep=$(IFS=:; echo "${ids[*]}")
echo "fleet.sh: analysis after ${#ids[@]} node jobs, expecting ${#node_array[@]} nodes; results in $outdir"
set +e
# shellcheck disable=SC2086
aid=$(sbatch --parsable $wait --nodes=1 --ntasks=1 --time=00:15:00 --job-name=kval-fleet-analyze \
       --dependency="afterany:$dep" --output="$outdir/analyze-%j.out" "$@" \
       --wrap="cd '$outdir' && $analyze fleet kval-*.h5 $base_args --expect-hosts '$nodes' --json fleet.json --junit fleet-junit.xml > fleet.txt; code=\$?; cat fleet.txt; $analyze report kval-*.h5 -o report; exit \$code")
code=$?
set -e
echo "fleet.sh: analysis -> job ${aid%%;*}${wait:+ finished (exit $code): $(head -n 1 "$outdir/fleet.txt" 2>/dev/null)}"
[ -z "$wait" ] || exit $code
[ $code -eq 0 ] || exit $code
