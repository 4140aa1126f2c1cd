#!/bin/sh
# concurrent_test.sh - jobs that name the same output never clobber each other (cpu backend,
# 2 ranks, the HDF5 flavour of this build):
# - two jobs started together with the same -o: one finishes with exit 0 and a file equal to
#   an uninterrupted run; the other is refused with exit 2 ("appeared while this run was
#   creating it" or "in use") and removes only its own PATH.part-*;
# - while a job runs: --resume of its file and --force onto it are refused with exit 2
#   ("in use by another kval job") and change nothing; the running job then finishes with
#   exit 0, its file complete and equal to the uninterrupted run;
# - a stale PATH.part-* of a killed job is removed by the next run, and one that a live job
#   holds (its lock) is not.
# No timing luck: the refused commands run while the job is alive (checked after each, with
# a deck long enough for that on any machine), and every wait is on a condition with a
# generous deadline.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
"$PYTHON" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_concurrent.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
compare="$top_srcdir/tests/system/compare_files.py"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
two="$MPIRUN -np 2 $KVAL --backend cpu --quiet"

cat >"$tmp/short.deck" <<'EOF'
# concurrent_test: a few short cases
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01
[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32
shape = 128x128x128 192x128x128
EOF
# Long enough that the refused commands below run while it is alive: one tiny case first
# (the file is complete and published then), then cases of seconds each.
cat >"$tmp/long.deck" <<'EOF'
# concurrent_test: a tiny case, then long ones
[run]
warmup = 0
min_reps = 1
max_reps = 1
time_cap = 0.01
[gemm]
variant = kval-mma
precision = fp16:fp32
shape = 64x64x64 1024x1024x1024 1024x1024x1536 1024x1024x2048 1024x1024x2560 1024x1024x3072 1024x1024x3584
EOF
$two "$tmp/short.deck" -o "$tmp/ref_short.h5" >"$tmp/ref_short.log" 2>&1 || { fail "reference run"; cat "$tmp/ref_short.log"; }
$two "$tmp/long.deck" -o "$tmp/ref_long.h5" >"$tmp/ref_long.log" 2>&1 || { fail "long reference run"; cat "$tmp/ref_long.log"; }

# wait_for WHAT CMD...: until CMD succeeds (at most 300 s).
wait_for() {
  what=$1; shift
  n=0
  until "$@"; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { fail "gave up waiting for $what"; return 1; }
    sleep 0.1
  done
}
has_result() { "$PYTHON" -c "import h5py, sys; sys.exit(0 if (h5py.File(sys.argv[1], 'r')['gemm/status'][...] != 0).any() else 1)" "$1" 2>/dev/null; }
alive() { kill -0 "$1" 2>/dev/null; }

# 1: two jobs together, one output.
$two "$tmp/short.deck" -o "$tmp/same.h5" >"$tmp/a.log" 2>&1 &
pa=$!
$two "$tmp/short.deck" -o "$tmp/same.h5" >"$tmp/b.log" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
codes=$(printf "%s\n%s\n" $ra $rb | sort | tr '\n' ' ')
[ "$codes" = "0 2 " ] || fail "two jobs, one -o: exits $ra and $rb, expected one 0 and one 2"
if [ $ra -eq 2 ]; then loser=a; else loser=b; fi
# (a loser that starts after the winner has finished finds the file there: "exists; use --force")
grep -q -e "appeared while this run was creating it" -e "in use by another kval job" -e "exists; use --force" \
  "$tmp/$loser.log" ||
  fail "the refused job does not say why: $(head -c 300 "$tmp/$loser.log")"
"$PYTHON" "$compare" "$tmp/same.h5" "$tmp/ref_short.h5" >"$tmp/same.cmp" || { fail "the winner's file"; cat "$tmp/same.cmp"; }
ls "$tmp"/same.h5.* >/dev/null 2>&1 && fail "left behind: $(ls "$tmp"/same.h5.*)"
[ $rc -ne 0 ] || echo "ok two jobs with one -o: one exit 0 with a correct file, the other exit 2, nothing left over"

# 2: --resume and --force while the job runs.
$two "$tmp/long.deck" -o "$tmp/run.h5" >"$tmp/run.log" 2>&1 &
pr=$!
wait_for "the first result in run.h5" has_result "$tmp/run.h5"
cp "$tmp/run.h5" "$tmp/run.before"
$two "$tmp/long.deck" --resume "$tmp/run.h5" >"$tmp/resume.log" 2>&1; got=$?
alive $pr || fail "the long job ended before the --resume was tried: the test proves nothing"
[ $got -eq 2 ] && grep -q "in use by another kval job" "$tmp/resume.log" ||
  fail "--resume of a running job's file: exit $got: $(head -c 300 "$tmp/resume.log")"
$two --force "$tmp/long.deck" -o "$tmp/run.h5" >"$tmp/force.log" 2>&1; got=$?
alive $pr || fail "the long job ended before the --force was tried: the test proves nothing"
[ $got -eq 2 ] && grep -q "in use by another kval job" "$tmp/force.log" ||
  fail "--force onto a running job's file: exit $got: $(head -c 300 "$tmp/force.log")"
ls "$tmp"/run.h5.part-* >/dev/null 2>&1 && fail "the refused --force left $(ls "$tmp"/run.h5.part-*)"
wait $pr; got=$?
[ $got -eq 0 ] || { fail "the running job: exit $got"; tail -n 5 "$tmp/run.log"; }
"$PYTHON" "$compare" "$tmp/run.h5" "$tmp/ref_long.h5" >"$tmp/run.cmp" || { fail "the running job's file"; cat "$tmp/run.cmp"; }
"$PYTHON" -c "import h5py, sys; sys.exit(int(h5py.File(sys.argv[1], 'r').attrs['complete'] != 1))" "$tmp/run.h5" ||
  fail "the running job's file is not complete"
[ $rc -ne 0 ] || echo "ok --resume and --force on a running job's file: exit 2 each; the job finished, its file correct"

# 3: a stale part of a killed job goes with the next run (a part nobody holds).
: >"$tmp/next.h5.part-0123abcd"
$two "$tmp/short.deck" -o "$tmp/next.h5" >"$tmp/next.log" 2>&1 || fail "run after a stale part: $(tail -n 3 "$tmp/next.log")"
[ ! -e "$tmp/next.h5.part-0123abcd" ] || fail "the stale part was not removed"
[ $rc -ne 0 ] || echo "ok a stale PATH.part-* is removed by the next run"

# 4: a part that a live job holds stays (a helper holds its lock byte, as a job laying it out
# does; POSIX and OFD locks conflict), so the next run with that -o does not take it away.
: >"$tmp/held.h5.part-89abcdef"
"$PYTHON" -c "import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 1 << 62)
open(sys.argv[2], 'w').close()
time.sleep(600)" "$tmp/held.h5.part-89abcdef" "$tmp/held.ready" &
ph=$!
wait_for "the helper's lock" test -e "$tmp/held.ready"
$two "$tmp/short.deck" -o "$tmp/held.h5" >"$tmp/held.log" 2>&1 || fail "run beside a held part: $(tail -n 3 "$tmp/held.log")"
[ -e "$tmp/held.h5.part-89abcdef" ] || fail "the next run removed a part that a live job holds"
kill $ph 2>/dev/null
wait $ph 2>/dev/null
[ $rc -ne 0 ] || echo "ok a PATH.part-* that a live job holds is left to it"
exit $rc
