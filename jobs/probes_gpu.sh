#!/usr/bin/env bash
# probes_gpu.sh - the tensor-core arithmetic probes on a GPU node, in one device call of under
# two minutes: an Autotools build of kval (src/kval only; incremental in an existing build/), the tcprobe family of
# inputs/precision-study.deck on every GPU (fleet mode: each GPU runs every probe) into
# $OUT/probes.h5, compute-sanitizer memcheck over families/tcprobe/sanitize.deck, and the
# measured outcome of every probe per GPU as a table (printed last; docs/NUMERICS.md's table of
# measured properties is filled from it). Logs under $OUT/logs.
#   bash jobs/probes_gpu.sh            (from the repository root; OUT defaults to /tmp/kval-out)
set -uo pipefail
OUT=${OUT:-/tmp/kval-out}
L="$OUT/logs"
mkdir -p "$L"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
start=$(date +%s)
step() { echo "== $(date -u +%T) (+$(($(date +%s) - start)) s) $*"; }
rc_all=0

step build
if [ -x build/src/kval ] && [ -f build/Makefile ]; then
  (cd build && make -j16 src/kval)
else
  (./bootstrap && mkdir -p build && cd build && ../configure && make -j16 src/kval)
fi > "$L/build.log" 2>&1 ||
  { tail -n 60 "$L/build.log"; echo "build: FAILED"; exit 1; }
K=build/src/kval
ngpu=$(nvidia-smi -L | grep -c '^GPU')

step "stack, spills, local memory (tests/system/check_spills.sh)"
top_srcdir=. top_builddir=build sh tests/system/check_spills.sh > "$L/spills.log" 2>&1
spills_rc=$?
tail -n 2 "$L/spills.log"
[ "$spills_rc" = 0 ] || rc_all=1

step "tcprobe on $ngpu GPU(s), fleet mode"
timeout 120 mpirun -np "$ngpu" "$K" --backend cuda --mode fleet --only tcprobe inputs/precision-study.deck \
  -o "$OUT/probes.h5" --force > "$L/probes.log" 2>&1
probes_rc=$?
tail -n 4 "$L/probes.log"
[ "$probes_rc" = 0 ] || rc_all=1

step "compute-sanitizer memcheck, families/tcprobe/sanitize.deck"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
KVAL_SKIP_CEILINGS=1 timeout 90 "$cs" --tool memcheck --error-exitcode 9 "$K" --backend cuda families/tcprobe/sanitize.deck \
  -o "$OUT/sanitize.h5" --force > "$L/memcheck.log" 2>&1
san_rc=$?
san=$(grep -E "ERROR SUMMARY" "$L/memcheck.log" | tail -n 1)
[ "$san_rc" = 0 ] || rc_all=1

step table
python3 - "$OUT/probes.h5" > "$OUT/table.txt" <<'EOF' || rc_all=1
# One row per probe x input type x instruction, one column per GPU (rank): the outcome code,
# the case's message (the outcome in words, or why it contradicts the model) and its status.
import sys
import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
g = f["tcprobe"]
names = {v: k for k, v in h5py.check_enum_dtype(g["status"].dtype).items()}
ranks = f["ranks"]
dev = [f"rank {r} {ranks['device_name'][i].decode()} {ranks['uuid'][i].decode()[:12]}"
       for i, r in enumerate(ranks["rank"][...])]
axes = [np.char.decode(g[a][...].astype("S")) for a in ("probe", "precision", "instruction")]
outc, msg, st = g["outcome"][...], g["message"][...], g["status"][...]
print("probe          input instr  " + " | ".join(dev))
bad = 0
for i, p in enumerate(axes[0]):
    for j, q in enumerate(axes[1]):
        for k, ins in enumerate(axes[2]):
            cells = []
            for r in range(outc.shape[0]):
                s = names[int(st[r, i, j, k])]
                bad += s != "pass"
                m = msg[r, i, j, k].decode() if isinstance(msg[r, i, j, k], bytes) else str(msg[r, i, j, k])
                cells.append(f"{outc[r, i, j, k]:>3} {s:<14} {m.split(': ', 1)[-1]}")
            print(f"{p:<14} {q[:4]:<5} {ins:<6} " + " | ".join(cells))
same = all((outc[r] == outc[0]).all() for r in range(outc.shape[0]))
print(f"ranks agree on every outcome: {'yes' if same else 'NO'}; cases not passing: {bad}")
sys.exit(0 if same else 1)
EOF
{
  echo "build: ok; check_spills.sh: exit $spills_rc"
  echo "kval --only tcprobe: exit $probes_rc; memcheck: exit $san_rc ($san)"
} >> "$OUT/table.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs
echo "== table ($(($(date +%s) - start)) s)"
cat "$OUT/table.txt"
exit $rc_all
