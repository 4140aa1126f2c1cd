#!/bin/sh
# hang_gpu.sh - the watchdog against a REAL kernel that never finishes on the cuda backend
# (tests/system/hang_test.sh with HANG_BACKEND=cuda). Skips (77) without a GPU or a kval
# built with CUDA.
set -u
: "${KVAL:?}" "${top_srcdir:?}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIP: no GPU"; exit 77
fi
"$KVAL" --list 2>/dev/null | grep -q '^  cuda ' || { echo "SKIP: kval built without CUDA"; exit 77; }
HANG_BACKEND=cuda exec sh "$top_srcdir/tests/system/hang_test.sh"
