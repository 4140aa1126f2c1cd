#!/usr/bin/env bash
# precision_gpu.sh - conformance and accuracy on the GPU (issue 17, item 1), in one device call:
# builds kval (./bootstrap, configure, make -j16 in build/, incremental when build/ exists), runs
# tests/mutation/study.deck (the fp16:fp16 and bf16:bf16 norms of inputs/precision-study.deck
# at hidden 2048 and 8192, fp32-accumulation cases beside them) on GPU 0 and the same deck on
# the cpu backend (8 ranks), and checks: the GPU run exits 0; its only non-pass cases are
# inaccurate, each with a reduced accumulator and emu_max_ulp 0 (the GPU output equals the cpu
# emulation bit for bit); the GPU and cpu runs give every case the same status; kval-analyze
# precision lists the inaccurate cases as findings; with one bit flipped in every output
# (--inject bitflip@0, a planted bug) the run exits 1 and every finite inaccurate case fails as
# "not the model" (an all-NaN one may stay inaccurate: a flipped NaN payload is still NaN).
# Logs and files under $OUT; a short table last.   bash jobs/precision_gpu.sh
set -uo pipefail
OUT=${OUT:-/tmp/kval-out}
L="$OUT/logs"
mkdir -p "$L"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export PYTHONUNBUFFERED=1 HDF5_USE_FILE_LOCKING=FALSE
top=$(pwd)
export PYTHONPATH="$top/analysis${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
step() { echo "== $(date -u +%T) (+$(($(date +%s) - start)) s) $*"; }
table() { echo "$*" >> "$OUT/table.txt"; }
rc=0
bad() { table "FAIL: $*"; rc=1; }
trap 'echo "== table"; cat "$OUT/table.txt" 2>/dev/null' EXIT
deck="$top/tests/mutation/study.deck"

step build
if [ -x build/src/kval ] && [ -f build/Makefile ]; then
  (cd build && make -j16 src/kval) > "$L/build.log" 2>&1
else
  (./bootstrap && mkdir -p build && cd build && ../configure && make -j16 src/kval) > "$L/build.log" 2>&1
fi || { tail -n 40 "$L/build.log"; table "build: FAILED"; exit 1; }
table "build: ok in $(($(date +%s) - start)) s"
K="$top/build/src/kval"

step "GPU run of study.deck"
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 mpirun -np 1 "$K" --backend cuda --mode split "$deck" -o "$OUT/gpu.h5" --force > "$L/gpu.log" 2>&1
code=$?
grep -E '^kval: [0-9]+ cases split' "$L/gpu.log"
table "gpu run: exit $code (want 0) in $(($(date +%s) - t0)) s: $(sed -n 's/^kval: .* results: \(.*inaccurate\).*/\1/p' "$L/gpu.log")"
[ $code -eq 0 ] || { bad "gpu run exit $code"; grep -E '^kval: (fail_|error)' "$L/gpu.log" | head -n 20; }

step "cpu run of study.deck (8 ranks)"
t0=$(date +%s)
mpirun -np 8 "$K" --backend cpu --mode split "$deck" -o "$OUT/cpu.h5" --force > "$L/cpu.log" 2>&1
code=$?
table "cpu run: exit $code (want 0) in $(($(date +%s) - t0)) s: $(sed -n 's/^kval: .* results: \(.*inaccurate\).*/\1/p' "$L/cpu.log")"
[ $code -eq 0 ] || bad "cpu run exit $code"

step "planted bug: --inject bitflip@0"
CUDA_VISIBLE_DEVICES=0 mpirun -np 1 "$K" --backend cuda --mode split --inject bitflip@0 "$deck" -o "$OUT/bug.h5" --force \
  > "$L/bug.log" 2>&1
code=$?
table "gpu run with a flipped bit per output: exit $code (want 1)"
[ $code -eq 1 ] || bad "bitflip run exit $code"

step "statuses"
python3 - "$OUT/gpu.h5" "$OUT/cpu.h5" "$OUT/bug.h5" > "$L/statuses.txt" 2>&1 <<'PY'
import sys, h5py, numpy as np
def cases(path):
    out = {}
    with h5py.File(path, "r") as f:
        for fam in ("layernorm", "rmsnorm"):
            g = f[fam]
            names = {v: k for k, v in h5py.check_enum_dtype(g["status"].dtype).items()}
            a = g.attrs["axes"]
            axes = (a.decode() if isinstance(a, bytes) else str(a)).split(",")
            vals = [[v.decode() if isinstance(v, bytes) else v for v in g[a][...]] for a in axes]
            st, emu, nan = g["status"][...], g["emu_max_ulp"][...], g["n_nan"][...]
            msg = g["message"][...] if "message" in g else None
            for idx in np.ndindex(st.shape[1:]):
                ranks = [r for r in range(st.shape[0]) if names[int(st[(r,) + idx])] != "not_run"]
                if not ranks:
                    continue
                r = ranks[0]
                key = (fam,) + tuple(str(vals[i][j]) for i, j in enumerate(idx))
                m = msg[(r,) + idx] if msg is not None else b""
                out[key] = (names[int(st[(r,) + idx])], float(emu[(r,) + idx]), int(nan[(r,) + idx]),
                            m.decode() if isinstance(m, bytes) else str(m))
    return out
gpu, cpu, bug = (cases(p) for p in sys.argv[1:4])
ok = True
def no(msg):
    global ok
    ok = False
    print("FAIL:", msg)
print(f"{'case':60s} {'gpu':12s} {'cpu':12s} {'emu_max_ulp':>11s} {'bitflip':14s}")
for key, (st, emu, nan, msg) in sorted(gpu.items()):
    print(f"{' '.join(key)[:60]:60s} {st:12s} {cpu.get(key, ('-',))[0]:12s} {emu:11.3g} {bug.get(key, ('-',))[0]:14s}")
    reduced = not key[1].endswith(":fp32")
    if st not in ("pass", "inaccurate"):
        no(f"{key}: gpu {st}: {msg}")
    if st == "inaccurate" and (not reduced or emu != 0):
        no(f"{key}: inaccurate with accumulator {key[1]}, emu_max_ulp {emu}")
    if cpu.get(key, ("-",))[0] != st:
        no(f"{key}: gpu {st}, cpu {cpu.get(key, ('-',))[0]}")
    b = bug.get(key, ("-", 0, 0, ""))
    if st == "inaccurate" and nan == 0 and not (b[0].startswith("fail") and "not the model" in b[3]):
        no(f"{key}: planted bug gives {b[0]}: {b[3]}")
n = sum(v[0] == "inaccurate" for v in gpu.values())
print(f"{n} inaccurate of {len(gpu)} cases on the GPU")
if n == 0:
    no("no case is inaccurate: the deck no longer shows the finding")
sys.exit(0 if ok else 1)
PY
code=$?
cat "$L/statuses.txt"
table "statuses (gpu only pass/inaccurate, inaccurate = reduced accum + emu_max_ulp 0, gpu == cpu, planted bug fails): $([ $code -eq 0 ] && echo ok || echo FAILED)"
[ $code -eq 0 ] || rc=1

step "kval-analyze precision"
python3 -m kval_analysis precision "$OUT/gpu.h5" -o "$OUT/precision" > "$L/precision.log" 2>&1 || bad "kval-analyze precision"
python3 - "$OUT/precision/precision.json" "$OUT/gpu.h5" <<'PY' > "$L/findings.txt" 2>&1
import sys, json
d = json.load(open(sys.argv[1]))
n = len(d["findings"])
fails = sum(r["fail"] for r in d["summary"])
print(f"findings {n}, failed cases {fails}")
sys.exit(0 if n > 0 and fails == 0 else 1)
PY
code=$?
table "precision page: $(cat "$L/findings.txt" | tail -n 1) ($([ $code -eq 0 ] && echo ok || echo FAILED))"
[ $code -eq 0 ] || rc=1
table "total: $(($(date +%s) - start)) s; $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
