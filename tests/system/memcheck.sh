#!/bin/sh
# memcheck.sh - valgrind's memcheck over kval's host code: the plan and estimate of every
# family by name (--dry-run of default.deck for the cuda backend: every family's cost() and
# the cross-check's row rule) and a cpu-backend run of smoke.deck's fa2bwd and layernorm
# sections (runner, reference sampling, error statistics, judge, HDF5 writer). Any read of
# uninitialised memory, invalid access or bad free with a frame in kval itself fails; errors
# wholly inside the MPI, PMIx, hwloc or HDF5 libraries, and leaks, are not kval's and are not
# counted. (An uninitialised kv_cost field once sized every cross-check at random, unseen by
# every other test.) Exit 77 when valgrind is missing (apt-get install valgrind).
set -u
: "${KVAL:?}" "${top_srcdir:?}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not installed (apt-get install valgrind)"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
rc=0
n=0
vg() { # vg NAME ARGS...: kval under memcheck, its errors in NAME.xml
  name=$1
  shift
  valgrind --tool=memcheck --track-origins=yes --leak-check=no --xml=yes --xml-file="$name.xml" \
    "$KVAL" "$@" >"$name.log" 2>&1 || { echo "FAIL: $name: kval exited $? under valgrind"; tail -n 20 "$name.log"; rc=1; }
  n=$((n + 1))
}
vg dryrun --dry-run --backend cuda "$top_srcdir/inputs/default.deck"
vg cpurun --backend cpu --only fa2bwd,layernorm "$top_srcdir/inputs/smoke.deck" -o run.h5
python3 - "$KVAL" dryrun.xml cpurun.xml <<'PY' || rc=1
import os
import sys
import xml.etree.ElementTree as ET

kval = os.path.basename(sys.argv[1])
bad = 0
for path in sys.argv[2:]:
    for err in ET.parse(path).getroot().iter("error"):
        kind = err.findtext("kind")
        frames = err.find("stack").findall("frame")
        if kind.startswith("Leak_") or not any(os.path.basename(f.findtext("obj") or "") == kval for f in frames):
            continue
        bad += 1
        print(f"FAIL: {path}: {kind}: {err.findtext('what') or err.findtext('xwhat/text')}")
        for f in frames[:8]:
            print(f"    {f.findtext('fn')} ({f.findtext('file')}:{f.findtext('line')})")
print(f"memcheck: {bad} error(s) in kval's own code")
sys.exit(1 if bad else 0)
PY
[ "$rc" = 0 ] && echo "PASS: memcheck clean over $n kval runs"
exit "$rc"
