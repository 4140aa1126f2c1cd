#!/bin/sh
# hang_test.sh - the watchdog: --inject hang@R:3 makes case 3 of rank R a kernel that never
# finishes (real on the cuda backend, src/backends/cuda/fault.cu; simulated on the cpu
# backend). kval must name the timeout, stop that rank through the deferred fatal path and
# exit 3 well before the test's time limit; the file must hold every finished case of every
# rank, case 3 as status error with a message that says timeout, nothing after it on that
# rank; then --resume --retry-errors finishes the file and exits 0.
# HANG_BACKEND=cpu (default: 2 ranks, the hang on rank 1) or cuda (1 rank, tests/gpu/hang_gpu.sh).
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
backend=${HANG_BACKEND:-cpu}
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
if [ "$backend" = cuda ]; then
  np=1 rank=0
else
  np=2 rank=1
fi
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
deck="$top_srcdir/inputs/smoke.deck"
f="$tmp/hang.h5"
export KVAL_SKIP_CEILINGS=1
start=$(date +%s)
timeout 300 "$MPIRUN" -np $np "$KVAL" --backend "$backend" --quiet --only layernorm,rmsnorm \
  --set run.watchdog=5 --inject "hang@$rank:3" "$deck" -o "$f" >"$tmp/log" 2>&1
code=$?
took=$(($(date +%s) - start))
rc=0
[ "$code" -ne 124 ] || { echo "FAIL: kval hung past the watchdog (300 s)"; cat "$tmp/log"; exit 1; }
[ "$code" -eq 3 ] || { echo "FAIL: exit $code after a timeout, expected 3"; rc=1; }
grep -q "timeout: " "$tmp/log" || { echo "FAIL: no line naming the timeout"; rc=1; }
grep -q "runs no more cases after a fatal device error" "$tmp/log" || { echo "FAIL: no message naming the rank"; rc=1; }
[ $rc -eq 0 ] || cat "$tmp/log"
"$PYTHON" - "$f" "$rank" <<'PY' || rc=1
import sys, h5py
f = h5py.File(sys.argv[1], "r")
hung = int(sys.argv[2])
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
# plan order: layernorm cells then rmsnorm cells; case 3 is the 4th layernorm cell
ln, rms = f["layernorm/status"][...], f["rmsnorm/status"][...]
for r in range(ln.shape[0]):
    if r != hung:
        check((ln[r] == 1).all() and (rms[r] == 1).all(), f"rank {r} lost cases")
flat = ln[hung].ravel()
check((flat[:3] == 1).all(), f"rank {hung}'s cases before the hang were not kept: {flat[:3]}")
check(flat[3] == 5, f"the hung case has status {flat[3]}, not error")
msg = bytes(f["layernorm/message"][hung].ravel()[3])
check(b"timeout" in msg, f"the hung case's message does not say timeout: {msg!r}")
check((flat[4:] == 0).all() and (rms[hung] == 0).all(), f"rank {hung} ran cases after the hang")
print("hung case:", msg.rstrip(b"\0").decode(errors="replace"))
sys.exit(0 if ok else 1)
PY
timeout 300 "$MPIRUN" -np $np "$KVAL" --backend "$backend" --quiet --only layernorm,rmsnorm --set run.watchdog=5 --resume "$f" \
  --retry-errors "$deck" >"$tmp/log2" 2>&1 || { echo "FAIL: --resume --retry-errors did not finish the file"; cat "$tmp/log2"; rc=1; }
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$f" --nranks $np --expect-run || rc=1
[ $rc -eq 0 ] && echo "ok: $backend hang named by the watchdog, exit 3 after $took s, file resumable"
exit $rc
