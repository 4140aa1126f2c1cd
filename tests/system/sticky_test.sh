#!/bin/sh
# sticky_test.sh - the fatal path of a device error that leaves the GPU unusable, simulated
# on the cpu backend with --inject sticky@1:3 on 2 ranks: kval must not hang, must exit
# nonzero (3, MPI_Abort), and the file must hold every finished case of both ranks, the
# failing case as status error with its message, nothing after it on that rank, and say it is
# not complete (a fleet file is complete when every rank holds every case); then
# --resume --retry-errors finishes the file and exits 0.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
deck="$top_srcdir/inputs/smoke.deck"
f="$tmp/sticky.h5"
timeout 120 "$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet --only layernorm,rmsnorm --inject sticky@1:3 "$deck" -o "$f" \
  >"$tmp/log" 2>&1
code=$?
rc=0
[ "$code" -ne 124 ] || { echo "FAIL: kval hung after the sticky error"; cat "$tmp/log"; exit 1; }
[ "$code" -ne 0 ] || { echo "FAIL: exit 0 after a fatal device error"; rc=1; }
grep -q "runs no more cases after a fatal device error" "$tmp/log" || { echo "FAIL: no message naming the rank"; rc=1; }
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
check((ln[0] == 1).all() and (rms[0] == 1).all(), "rank 0 lost cases")
flat = ln[1].ravel()
check((flat[:3] == 1).all(), "rank 1's cases before the failure were not kept")
check(flat[3] == 5, f"the failing case has status {flat[3]}, not error")
msg = f["layernorm/message"][1].ravel()[3]
check(b"sticky" in bytes(msg), f"the failing case's message is {msg!r}")
check((flat[4:] == 0).all() and (rms[1] == 0).all(), "rank 1 ran cases after the fatal error")
check(f.attrs["complete"] == 0, "the file reads complete, though rank 1 ran none of its later cases")
sys.exit(0 if ok else 1)
PY
timeout 120 "$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet --only layernorm,rmsnorm --resume "$f" --retry-errors "$deck" \
  >"$tmp/log2" 2>&1 || { echo "FAIL: --resume --retry-errors did not finish the file"; cat "$tmp/log2"; rc=1; }
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$f" --nranks 2 --expect-run || rc=1
[ $rc -eq 0 ] && echo "ok: sticky device error recorded, rank stopped, no hang, file resumable"
exit $rc
