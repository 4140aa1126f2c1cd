#!/usr/bin/env bash
# local.sh - build kval and run the validation job on this machine, without Slurm: one MPI
# rank per local GPU with the cuda backend, or the cpu backend when there is no GPU.
# Installs what the main job needs and lacks first (jobs/install-deps.sh main: a node that has
# the tools installs nothing and needs no network; KVAL_NO_INSTALL=1 skips it).
#
# Environment (all optional):
#   DECK        deck to run      (default: inputs/default.deck with GPUs, inputs/smoke.deck without)
#   OUTDIR      output directory (default: results/)
#   NRANKS      MPI ranks        (default: number of GPUs, or 2 on the cpu backend)
#   MODE        fleet | split    (default: fleet)
#   BUILD_DIR   build directory  (default: build/)
#   KVAL_ARGS   extra kval options, e.g. "--only fa2 --seed 3"
#   KVAL_NO_INSTALL=1  do not run install-deps.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
outdir=${OUTDIR:-$top/results}
mode=${MODE:-fleet}

[ "${KVAL_NO_INSTALL:-0}" = 1 ] || bash "$top/jobs/install-deps.sh" main

if [ ! -x "$build/src/kval" ] || [ "$top/configure.ac" -nt "$build/config.status" ]; then
  (cd "$top" && ./bootstrap)
  mkdir -p "$build"
  (cd "$build" && "$top/configure")
fi
make -C "$build" -j"$(nproc)"

ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
if [ "$ngpu" -gt 0 ]; then
  backend=cuda; deck=${DECK:-$top/inputs/default.deck}; nranks=${NRANKS:-$ngpu}
else
  backend=cpu; deck=${DECK:-$top/inputs/smoke.deck}; nranks=${NRANKS:-2}
  echo "local.sh: no GPU found: running $deck on the cpu backend"
fi
mkdir -p "$outdir"
out="$outdir/kval-$(hostname -s)-$(date -u +%Y%m%d-%H%M%S).h5"
export OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "local.sh: mpirun -np $nranks kval --backend $backend --mode $mode $deck -o $out"
set +e
# shellcheck disable=SC2086
mpirun -np "$nranks" "$build/src/kval" --backend "$backend" --mode "$mode" ${KVAL_ARGS:-} "$deck" -o "$out"
code=$?
set -e
echo "local.sh: kval exited $code (0 all passed, 1 validation failures, 2 input error, 3 runtime error); file: $out"
if PYTHONPATH="$top/analysis${PYTHONPATH:+:$PYTHONPATH}" python3 -m kval_analysis report "$out" -o "${out%.h5}-report" \
     >/dev/null; then
  echo "local.sh: report in ${out%.h5}-report/report.html"
else
  echo "local.sh: no report (the Python packages of analysis/ are missing: jobs/install-deps.sh installs them)"
fi
exit $code
