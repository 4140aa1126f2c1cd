#!/bin/sh
# slurm_test.sh - the Slurm scripts under a real one-node Slurm started here (slurm_cluster.sh):
# submits jobs/kval.sbatch (2 ranks of one CPU each, srun --mpi=pmix), jobs/fleet.sh (one
# job per node plus the dependent analysis job) and jobs/precision-study.sbatch (a study with inaccurate findings:
# COMPLETED; with a failed case: FAILED) with the cpu backend and tiny decks,
# and checks the HDF5 files and analysis outputs. Then the time-limit rehearsal: the warning
# signal to a running kval.sbatch job must leave a resumable file, and the requeued job must
# finish it with --resume. Every wait is on a condition (a job's state, a file, installed signal
# handlers) and fails only when the job stops making progress, so load slows it, never breaks it.
# Skips (77) only without root or without the slurm-wlm/munge packages.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the Slurm test starts daemons and needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch; do
  command -v $b >/dev/null 2>&1 || [ -x /usr/sbin/$b ] || { echo "SKIP: $b not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
. "$top_srcdir/tests/system/slurm_cluster.sh"
. "$top_srcdir/tests/system/slurm_kval.sh"
tmp=$(mktemp -d /tmp/kval-slurm.XXXXXX)
chmod 755 "$tmp"
cleanup() { slurm_stop "$tmp/cluster"; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
slurm_start "$tmp/cluster" 1 || exit 1
unset SLURM_JOB_ID SLURM_JOBID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export KVAL PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}"
KVAL_DECKS=$tmp
kval_decks "$tmp"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()

# 1. kval.sbatch: 2 ranks on one node.
slurm_step "1. kval.sbatch"
mkdir -p "$tmp/single"
cd "$tmp/single" || exit 1
id=$(sbatch --parsable --ntasks=2 --cpus-per-task=1 --time=00:30:00 \
       --export=ALL,DECK="$tmp/tiny.deck",OUTDIR="$tmp/single",BACKEND=cpu "$top_srcdir/jobs/kval.sbatch") || fail "sbatch kval.sbatch"
slurm_wait_job "$id" "$tmp/single/kval-$id.out" slurm_ended "$id" || fail "kval.sbatch did not finish"
kval_job_ok "$id" "$tmp/single" 2 && echo "ok: kval.sbatch job $id wrote $tmp/single/kval-$id.h5" || rc=1

# 2. fleet.sh: one job per node and the dependent analysis job.
slurm_step "2. fleet.sh"
bash "$top_srcdir/jobs/fleet.sh" -p test -g 0 -o "$tmp/fleet" -d "$tmp/tiny.deck" -t 00:30:00 \
  >"$tmp/fleet.log" 2>&1 || { fail "fleet.sh"; cat "$tmp/fleet.log"; }
aid=$(sed -n 's/^fleet.sh: analysis -> job \([0-9]*\).*/\1/p' "$tmp/fleet.log")
[ -n "$aid" ] && slurm_wait_job "$aid" "$tmp/fleet/analyze-$aid.out" slurm_ended "$aid" || fail "fleet jobs did not finish"
ls "$tmp/fleet"/kval-*.h5 >/dev/null 2>&1 || fail "fleet campaign wrote no HDF5 file"
for out in fleet.txt fleet.json fleet-junit.xml report/report.html; do
  [ -s "$tmp/fleet/$out" ] || { fail "fleet analysis did not write $out"; cat "$tmp/fleet"/*.out 2>/dev/null; }
done
grep -q "<testsuite" "$tmp/fleet/fleet-junit.xml" 2>/dev/null || fail "fleet JUnit XML has no testsuite"
[ $rc -eq 0 ] && echo "ok: fleet.sh campaign and its analysis job"

# 3. precision-study.sbatch: split mode, then the precision analysis. A study whose only
#    findings are inaccurate cases completes (exit 0); one with a failed case (a bit flipped in
#    rank 0's outputs) ends FAILED, its report still written.
slurm_step "3. precision-study.sbatch"
mkdir -p "$tmp/prec"
cd "$tmp/prec" || exit 1
prec_job() { # KVAL_ARGS: the study's job id
  sbatch --parsable --ntasks=2 --time=00:30:00 \
    --export=ALL,DECK="$tmp/study.deck",OUTDIR="$tmp/prec",BACKEND=cpu,ANALYSIS="$top_srcdir/analysis",KVAL_ARGS="$1" \
    "$top_srcdir/jobs/precision-study.sbatch"
}
for want in COMPLETED FAILED; do
  args=; [ $want = FAILED ] && args="--inject bitflip@0"
  pid=$(prec_job "$args") || { fail "sbatch precision-study.sbatch"; continue; }
  slurm_wait_job "$pid" "$tmp/prec/kval-precision-$pid.out" slurm_ended "$pid" || fail "precision job did not finish"
  [ -f "$tmp/prec/precision-$pid.h5" ] || { fail "precision study wrote no file"; cat "$tmp/prec"/*.out; }
  ls "$tmp/prec/precision-$pid"/*.html >/dev/null 2>&1 || { fail "precision study wrote no report"; cat "$tmp/prec"/*.out; }
  state=$(slurm_state "$pid")
  [ "$state" = $want ] || { fail "precision study${args:+ with $args} ended $state, expected $want"; cat "$tmp/prec/kval-precision-$pid.out"; }
  [ $want = COMPLETED ] && { grep -q "^| rmsnorm | precision=bf16:bf16 .*equals the emulation" "$tmp/prec/precision-$pid/precision.md" ||
    fail "the precision report does not list the inaccurate case as a finding"; }
done
[ $rc -eq 0 ] && echo "ok: precision-study.sbatch (exit 0 with inaccurate findings, FAILED with a failed case)"

# 4. Time limit: Slurm's warning signal (USR1) to the batch shell stops kval (exit 143, file
#    resumable); the job requeues itself and the rerun completes the same file with --resume.
slurm_step "4. time-limit warning, requeue, --resume"
kval_requeue_rehearsal "$tmp/requeue" 2 --ntasks=2 || rc=1
slurm_step "done"
exit $rc
