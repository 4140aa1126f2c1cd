#!/bin/sh
# sticky_gpu.sh - a REAL sticky CUDA error on the cuda backend (--inject sticky@0:3 makes
# src/backends/cuda/fault.cu store through an invalid device address after case 3's kernel ran): on
# 1 rank kval must not hang, must exit nonzero through the fatal path, and the file must hold
# the finished cases, the failing case with status error and a message naming the CUDA error,
# and nothing after it; then --resume --retry-errors on a fresh context finishes the file and
# exits 0. Skips (77) without a GPU or a kval built with CUDA.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIP: no GPU"; exit 77
fi
"$KVAL" --list 2>/dev/null | grep -q '^  cuda ' || { echo "SKIP: kval built without CUDA"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
deck="$top_srcdir/inputs/smoke.deck"
f="$tmp/sticky.h5"
export KVAL_SKIP_CEILINGS=1
timeout 120 "$MPIRUN" -np 1 "$KVAL" --backend cuda --quiet --only layernorm,rmsnorm --inject sticky@0:3 "$deck" \
  -o "$f" >"$tmp/log" 2>&1
code=$?
rc=0
[ "$code" -ne 124 ] || { echo "FAIL: kval hung after the sticky error"; cat "$tmp/log"; exit 1; }
[ "$code" -ne 0 ] || { echo "FAIL: exit 0 after a fatal device error"; rc=1; }
grep -q "runs no more cases after a fatal device error" "$tmp/log" || { echo "FAIL: no message naming the rank"; rc=1; }
grep -Eq "fatal: .*(cudaErrorIllegalAddress|cudaErrorLaunchFailure)" "$tmp/log" ||
  { echo "FAIL: did not end through the fatal path naming the CUDA error"; rc=1; }
[ $rc -eq 0 ] || cat "$tmp/log"
"$PYTHON" - "$f" <<'PY' || rc=1
import sys, h5py
f = h5py.File(sys.argv[1], "r")
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
# plan order: layernorm cells then rmsnorm cells; case 3 is the 4th layernorm cell
ln, rms = f["layernorm/status"][...], f["rmsnorm/status"][...]
flat = ln[0].ravel()
check((flat[:3] == 1).all(), f"the cases before the failure did not pass: {flat[:3]}")
check(flat[3] == 5, f"the failing case has status {flat[3]}, not error")
msg = bytes(f["layernorm/message"][0].ravel()[3])
check(b"cudaErrorIllegalAddress" in msg or b"cudaErrorLaunchFailure" in msg,
      f"the failing case's message does not name the CUDA error: {msg!r}")
check((flat[4:] == 0).all() and (rms[0] == 0).all(), "cases ran after the fatal error")
print("failing case:", msg.rstrip(b"\0").decode(errors="replace"))
sys.exit(0 if ok else 1)
PY
timeout 120 "$MPIRUN" -np 1 "$KVAL" --backend cuda --quiet --only layernorm,rmsnorm --resume "$f" --retry-errors "$deck" \
  >"$tmp/log2" 2>&1 || { echo "FAIL: --resume --retry-errors did not finish the file"; cat "$tmp/log2"; rc=1; }
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$f" --nranks 1 --expect-run || rc=1
[ $rc -eq 0 ] && echo "ok: real sticky CUDA error (exit $code) recorded, rank stopped, no hang, file resumable"
exit $rc
