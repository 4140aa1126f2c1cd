#!/bin/sh
# slurm_test.sh - the Slurm scripts under a real one-node Slurm started here: submits
# jobs/kval.sbatch (2 ranks, srun --mpi=pmix), jobs/fleet.sh (one job per node plus the
# dependent analysis job) and jobs/precision-study.sbatch with the cpu backend and tiny
# decks, waits with bounded loops, and checks the HDF5 files and analysis outputs. Then a
# time-limit rehearsal: the warning signal to a running kval.sbatch job must leave a resumable file,
# and the requeued job must finish it with --resume. Skips (77) only without root or
# without the slurm-wlm/munge packages.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the Slurm test starts daemons and needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch; do
  command -v $b >/dev/null 2>&1 || [ -x /usr/sbin/$b ] || { echo "SKIP: $b not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
. "$top_srcdir/tests/system/slurm_cluster.sh"
tmp=$(mktemp -d /tmp/kval-slurm.XXXXXX)
chmod 755 "$tmp"
cleanup() { scancel --user=root >/dev/null 2>&1; slurm_stop "$tmp/cluster"; rm -rf "$tmp"; }
trap cleanup EXIT
slurm_start "$tmp/cluster" || exit 1
unset SLURM_JOB_ID SLURM_JOBID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export KVAL PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

cat > "$tmp/tiny.deck" <<'DECK'
[run]
warmup = 0
min_reps = 2
max_reps = 3
time_cap = 0.02
[layernorm]
precision = fp16:fp32 bf16:fp32
rows = 32
hidden = 128 256
[gemm]
variant = kval-mma
precision = fp16:fp32
shape = 32x32x64
DECK

wait_jobs() { # bounded wait until the queue is empty
  i=0
  while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do
    i=$((i + 1)); [ $i -le 240 ] || { echo "jobs still queued after 120 s:"; squeue; return 1; }
    sleep 0.5
  done
}

# 1. kval.sbatch: 2 ranks on one node.
mkdir -p "$tmp/single"
cd "$tmp/single" || exit 1
id=$(sbatch --parsable --ntasks=2 --overcommit --time=00:05:00 \
       --export=ALL,DECK="$tmp/tiny.deck",OUTDIR="$tmp/single",BACKEND=cpu "$top_srcdir/jobs/kval.sbatch") || fail "sbatch kval.sbatch"
wait_jobs || fail "kval.sbatch did not finish"
f="$tmp/single/kval-$id.h5"
if [ -f "$f" ]; then
  "$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$f" --nranks 2 --expect-run || fail "layout of $f"
  grep -q "kval exited 0" "$tmp/single/kval-$id.out" || { fail "kval.sbatch job log"; cat "$tmp/single/kval-$id.out"; }
  echo "ok: kval.sbatch job $id wrote $f"
else
  fail "kval.sbatch wrote no $f"; cat "$tmp/single"/*.out
fi

# 2. fleet.sh: one job per node and the dependent analysis job.
node=$(sinfo -h -N -o %N | head -n 1)
bash "$top_srcdir/jobs/fleet.sh" -w "$node" -g 0 -o "$tmp/fleet" -d "$tmp/tiny.deck" -t 00:05:00 -- --overcommit \
  >"$tmp/fleet.log" 2>&1 || { fail "fleet.sh"; cat "$tmp/fleet.log"; }
wait_jobs || fail "fleet jobs did not finish"
ls "$tmp/fleet"/kval-*.h5 >/dev/null 2>&1 || fail "fleet campaign wrote no HDF5 file"
for out in fleet.txt fleet.json fleet-junit.xml report/report.html; do
  [ -s "$tmp/fleet/$out" ] || { fail "fleet analysis did not write $out"; cat "$tmp/fleet"/*.out 2>/dev/null; }
done
grep -q "<testsuite" "$tmp/fleet/fleet-junit.xml" 2>/dev/null || fail "fleet JUnit XML has no testsuite"
[ $rc -eq 0 ] && echo "ok: fleet.sh campaign and its analysis job"

# 3. precision-study.sbatch: split mode, then the precision analysis.
mkdir -p "$tmp/prec"
cd "$tmp/prec" || exit 1
pid=$(sbatch --parsable --ntasks=2 --overcommit --time=00:05:00 \
        --export=ALL,DECK="$tmp/tiny.deck",OUTDIR="$tmp/prec",BACKEND=cpu,ANALYSIS="$top_srcdir/analysis" \
        "$top_srcdir/jobs/precision-study.sbatch") || fail "sbatch precision-study.sbatch"
wait_jobs || fail "precision job did not finish"
[ -f "$tmp/prec/precision-$pid.h5" ] || { fail "precision study wrote no file"; cat "$tmp/prec"/*.out; }
ls "$tmp/prec/precision-$pid"/*.html >/dev/null 2>&1 || { fail "precision study wrote no report"; cat "$tmp/prec"/*.out; }
[ $rc -eq 0 ] && echo "ok: precision-study.sbatch"

# 4. Time limit: Slurm's warning signal (USR1) to the batch shell stops kval (exit 143, file resumable); the job
#    requeues itself and the rerun completes the same file with --resume.
cat > "$tmp/long.deck" <<'DECK'
[run]
warmup = 0
min_reps = 3
max_reps = 3
time_cap = 10
[fa2]
precision = fp16:fp32 bf16:fp32 fp16:fp16 bf16:bf16
headdim = 64
seqlen = 256 320 384 448 512
causal = 0 1
batch = 1
heads = 8
DECK
mkdir -p "$tmp/requeue"
cd "$tmp/requeue" || exit 1
rid=$(sbatch --parsable --ntasks=2 --overcommit --time=00:05:00 \
        --export=ALL,DECK="$tmp/long.deck",OUTDIR="$tmp/requeue",BACKEND=cpu "$top_srcdir/jobs/kval.sbatch")
i=0
while [ ! -f "$tmp/requeue/kval-$rid.h5" ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
sleep 1
scancel --batch --signal=USR1 "$rid"   # what --signal=B:USR1@120 sends before the time limit
# Slurm holds a requeued job back until the first run's credential has expired (reason
# BeginTime; the test cluster sets cred_expire=10 s, so this takes seconds, not minutes).
wait_jobs || fail "requeued job did not finish"
log="$tmp/requeue/kval-$rid.out"
grep -q "kval exited 143" "$log" || { fail "SIGTERM did not end kval with 143"; cat "$log"; }
grep -q "requeueing" "$log" || fail "the job did not requeue itself"
"$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$tmp/requeue/kval-$rid.h5" --nranks 2 --expect-run ||
  { fail "the resumed file is not complete"; cat "$log"; }
[ $rc -eq 0 ] && echo "ok: time-limit signal, requeue and --resume"
exit $rc
