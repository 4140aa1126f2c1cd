#!/bin/sh
# health_test.sh - the health level and the operator's week on a real Slurm started here
# (tests/system/slurm_cluster.sh: slurm_start / slurm_stop). jobs/healthcheck.sh is run the
# way slurmd runs a HealthCheckProgram (as root on the node, outside a job), on the cpu
# backend: a healthy node passes the shipped health.deck's cases (each timed once) on one rank,
# stays idle and its metrics say 1 for its GPU; with 3 ranks (a majority names the faulty one) an injected
# bitflip with -n prints the drain command and leaves the node idle; without -n it drains the node with a reason naming the one faulty GPU, and the metrics say 0 for it; a
# missing kval or an unreadable deck (exit 2) never drains; a run that cannot end within -t
# drains with a reason. The health deck's time on the cpu backend is printed (not asserted: no wall-clock
# luck). Then README.md's operator's-week block runs exactly as written (fleet.sh twice
# with -W, the verdict, healthcheck.sh with metrics, a drain rehearsal and the resume). Only the
# healthy run uses inputs/health.deck; the faults and the week run a small deck (DECK and
# KVAL_HEALTH_DECK), so the test's time does not grow with the shipped deck.
# Skips (77) only without root or without the slurm-wlm/munge packages.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the Slurm test starts daemons and needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch scontrol; do
  command -v $b >/dev/null 2>&1 || [ -x /usr/sbin/$b ] || { echo "SKIP: $b not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
. "$top_srcdir/tests/system/slurm_cluster.sh"
tmp=$(mktemp -d /tmp/kval-health.XXXXXX)
chmod 755 "$tmp"
cleanup() { scancel --user=root >/dev/null 2>&1; slurm_stop "$tmp/cluster"; rm -rf "$tmp"; }
trap cleanup EXIT
slurm_start "$tmp/cluster" || exit 1
unset SLURM_JOB_ID SLURM_JOBID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# No time limit that a loaded machine could reach (the production default is 50 s): the speed of
# the test machine must not decide a verdict (the -t test below sets its own).
export KVAL PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}" NRANKS=3 KVAL_HEALTH_DIR="$tmp/health" \
  KVAL_HEALTH_LIMIT=3600
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
hc="$top_srcdir/jobs/healthcheck.sh"
node=$(sinfo -h -N -o %N | head -n 1)
# The node's state without sinfo's flags: a resumed node reads "idle*" until slurmd next
# reports to slurmctld, which is not what this test is about.
state() { sinfo -h -n "$node" -o '%T' | head -n 1 | tr -d '*~#!%$@^-'; }
reason() { sinfo -h -n "$node" -o '%E' | head -n 1; }
uuid_of() { "$PYTHON" -c "import h5py, sys; u = h5py.File(sys.argv[1], 'r')['ranks/uuid'][int(sys.argv[2])]; print(u.decode() if isinstance(u, bytes) else u)" "$@"; }

# 1. A healthy node: the shipped health.deck's cases on one cpu-backend rank (three ranks on two
# loaded cores spin in MPI's waits for the slowest, many times longer), each timed once without
# warm-up: on the cpu backend a repetition runs the emulation again, and its time judges nothing
# here (the 743 cases took 465 s with the deck's own warm-up and 2 - 5 repetitions in a CI run).
mkdir -p "$tmp/prom"
t0=$(date +%s)
KVAL_ARGS="--set run.warmup=0 --set run.min_reps=1 --set run.max_reps=1" NRANKS=1 \
  bash "$hc" -N "$node" -m "$tmp/prom/kval.prom" >"$tmp/ok.log" 2>&1; code=$?
secs=$(($(date +%s) - t0))
[ $code -eq 0 ] || { fail "healthy node: exit $code"; cat "$tmp/ok.log"; }
[ "$(state)" = idle ] || fail "healthy node: state $(state), expected idle"
[ "$(grep -c '^kval_gpu_ok{.*} 1$' "$tmp/prom/kval.prom" 2>/dev/null)" -eq 1 ] || fail "healthy node: kval_gpu_ok is not 1 for its GPU"
ls "$tmp/prom"/*.tmp.* >/dev/null 2>&1 && fail "metrics: a temporary file was left behind"
echo "ok healthy node: exit 0, idle, metrics 1 per GPU ($(sed -n 's/.*healthy (\(.*\))$/\1/p' "$tmp/ok.log"); $secs s in all)"

# The shipped health deck ran above; the faults, the drain and README's week run a small deck
# (seconds where health.deck takes minutes on 2 loaded cores), through the same scripts.
printf '[run]\nwarmup = 1\nmin_reps = 2\nmax_reps = 5\ntime_cap = 0.01\n[gemm]\nvariant = kval-mma\nshape = 64x64x64 136x264x200\n[layernorm]\nrows = 257\nhidden = 64 1027\n' \
  >"$tmp/small.deck"
export KVAL_HEALTH_DECK="$tmp/small.deck"

# 2. A faulty GPU, dry run: the command is printed, the node stays idle.
KVAL_ARGS="--inject bitflip@1" bash "$hc" -n -N "$node" -m "$tmp/prom/kval.prom" >"$tmp/dry.log" 2>&1; code=$?
uuid1=$(uuid_of "$tmp/health/kval-health-$node.h5" 1)
[ $code -eq 1 ] || fail "dry run: exit $code, expected 1"
grep -q "dry run: scontrol update nodename=$node state=drain reason=\"kval: .* on GPU $uuid1\"" "$tmp/dry.log" ||
  { fail "dry run: no drain command naming $uuid1"; cat "$tmp/dry.log"; }
[ "$(state)" = idle ] || fail "dry run drained the node ($(state))"
grep -q "^kval_gpu_ok{.*uuid=\"$uuid1\".*} 0$" "$tmp/prom/kval.prom" || fail "metrics: kval_gpu_ok of $uuid1 is not 0"
[ "$(grep -c '^kval_gpu_ok{.*} 1$' "$tmp/prom/kval.prom")" -eq 2 ] || fail "metrics: the two healthy GPUs are not 1"
[ $rc -ne 0 ] || echo "ok dry run: exit 1, drain command naming $uuid1, node idle, metrics 0 for it"

# 3. The same fault drains the node; the reason names the GPU.
KVAL_ARGS="--inject bitflip@1" bash "$hc" -N "$node" >"$tmp/drain.log" 2>&1; code=$?
[ $code -eq 1 ] || { fail "drain: exit $code, expected 1"; cat "$tmp/drain.log"; }
case $(state) in drain*|drained*) ;; *) fail "drain: state $(state), expected drained" ;; esac
case $(reason) in "kval: "*"fingerprint disagreements on GPU $uuid1") echo "ok drain: $(state), reason '$(reason)'" ;;
  *) fail "drain: reason '$(reason)'" ;; esac
scontrol update nodename="$node" state=resume
[ "$(state)" = idle ] || fail "resume: state $(state)"

# 4. A broken check never drains; a run past its time limit does.
KVAL=/nonexistent/kval bash "$hc" -N "$node" >"$tmp/nokval.log" 2>&1; code=$?
[ $code -eq 2 ] && [ "$(state)" = idle ] || fail "missing kval: exit $code, state $(state) (expected 2, idle)"
bash "$hc" -N "$node" -d "$tmp/missing.deck" >"$tmp/nodeck.log" 2>&1; code=$?
[ $code -eq 2 ] && [ "$(state)" = idle ] || fail "missing deck: exit $code, state $(state) (expected 2, idle)"
printf '[run]\nmin_reps = 3\nmax_reps = 2\n[gemm]\n' >"$tmp/bad.deck"
bash "$hc" -N "$node" -d "$tmp/bad.deck" >"$tmp/baddeck.log" 2>&1; code=$?
[ $code -eq 2 ] && [ "$(state)" = idle ] || fail "bad deck: exit $code, state $(state) (expected 2, idle)"
# a run that cannot end within 1 s: 1000 timed repetitions of an emulated 512^3 GEMM
printf '[run]\nwarmup = 0\nmin_reps = 1000\nmax_reps = 1000\nrse_target = 0\ntime_cap = 3600\n[gemm]\nvariant = kval-mma\nshape = 512x512x512\nprecision = fp16:fp32\n' >"$tmp/long.deck"
bash "$hc" -N "$node" -d "$tmp/long.deck" -t 1 >"$tmp/slow.log" 2>&1; code=$?
[ $code -eq 1 ] && [ "$(reason)" = "kval: health check did not finish in 1 s" ] ||
  { fail "time limit: exit $code, reason '$(reason)'"; cat "$tmp/slow.log"; }
scontrol update nodename="$node" state=resume
[ $rc -ne 0 ] || echo "ok broken checks leave the node alone (exit 2); a run past -t drains it"

# 5. README's operator's week, exactly as written.
# The resumed node reads idle* (not responding) until its slurmd next reports; fleet.sh rightly
# gives such a node no job, so the block starts once the node answers again.
node_answers() { [ "$(sinfo -h -n "$node" -o '%t' | head -n 1)" = idle ]; }
slurm_wait_for 600 "node $node to answer after its resume" node_answers || fail "node $node does not answer"
mkdir -p "$tmp/week" && cd "$tmp/week" || exit 1
ln -s "$top_srcdir/jobs" jobs && ln -s "$top_srcdir/inputs" inputs
sed -n '/^<!-- operator-week: begin/,/^<!-- operator-week: end/p' "$top_srcdir/README.md" | sed '1,2d;$d' | sed '$d' >week.sh
[ "$(wc -l <week.sh)" -ge 8 ] || fail "README: no operator-week block"
P=test G=0 DECK="$tmp/small.deck" NODE="$node" PROM="$tmp/prom" sh -e week.sh >week.log 2>&1 || { fail "README block: exit $?"; tail -n 30 week.log; }
grep -q "^VERDICT: " week.log || fail "README block: no verdict printed"
grep -q "fleet.sh: analysis -> job [0-9]* finished" week.log || fail "README block: fleet.sh -W did not wait"
[ -s week48/fleet-junit.xml ] && [ -s week49/report/report.html ] || fail "README block: no campaign outputs"
grep -q "^kval_gpu_ok" week.log || fail "README block: no metrics shown"
grep -q "kval: .* on GPU" week.log || fail "README block: the rehearsal's drain reason is not shown"
[ "$(state)" = idle ] || fail "README block: the node was not resumed ($(state))"
[ $rc -ne 0 ] || echo "ok README operator's week: $(grep -c . week.log) lines of output, node idle again"
exit $rc
