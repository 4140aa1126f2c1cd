#!/bin/sh
# full_disk_test.sh - a full disk never hangs kval and never leaves a half-made file: on a
# 4 MiB tmpfs a 2-rank job whose file needs about 7 MiB ends, in the flavour of this build,
# with exit 3, "No space left on device" in its first line of output, and nothing in the
# directory (no file, no PATH.part-*, no journal); one whose file fits runs to exit 0 there.
# Needs root (mount); skipped (77) with the reason where mounting a tmpfs is not permitted.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_full.XXXXXX") || exit 1
disk=$tmp/disk
mkdir "$disk"
if ! mount -t tmpfs -o size=4M tmpfs "$disk" 2>"$tmp/mount.err"; then
  echo "SKIP: cannot mount a 4 MiB tmpfs to fill ($(head -c 200 "$tmp/mount.err")): needs root and mount rights"
  rm -rf "$tmp"
  exit 77
fi
trap 'umount "$disk"; rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout -k 10 300"; fi

cat >"$tmp/wide.deck" <<'EOF'
# full_disk_test: 4000 cells of one tiny case each
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01
[layernorm]
precision = fp16:fp32
rows = 1..4000 +1
hidden = 8
EOF
cat >"$tmp/small.deck" <<'EOF'
# full_disk_test: a file that fits
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01
[layernorm]
precision = fp16:fp32
rows = 4 8
hidden = 8
EOF

$limit "$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet "$tmp/wide.deck" -o "$disk/w.h5" >"$tmp/wide.log" 2>&1
got=$?
[ "$got" -ne 124 ] && [ "$got" -ne 137 ] || fail "the job on the full disk hung (killed after 300 s)"
[ "$got" -eq 3 ] || fail "full disk: exit $got, expected 3"
head -n 1 "$tmp/wide.log" | grep -q "No space left on device" ||
  fail "full disk: the first line does not give the reason: $(head -n 3 "$tmp/wide.log")"
left=$(ls -A "$disk")
[ -z "$left" ] || fail "full disk: left behind: $left"
[ $rc -ne 0 ] || echo "ok full disk: exit 3, '$(head -n 1 "$tmp/wide.log" | cut -c1-120)...', nothing left"

$limit "$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet "$tmp/small.deck" -o "$disk/s.h5" >"$tmp/small.log" 2>&1
got=$?
[ "$got" -eq 0 ] || { fail "a file that fits: exit $got, expected 0"; tail -n 5 "$tmp/small.log"; }
[ "$(ls -A "$disk")" = "s.h5" ] || fail "a file that fits: the directory holds $(ls -A "$disk" | tr '\n' ' ')"
[ $rc -ne 0 ] || echo "ok a file that fits on the small disk: exit 0, only s.h5 there"
exit $rc
