#!/bin/sh
# slurm_kval.sh - kval's checks shared by the Slurm tests; sourced after slurm_cluster.sh, with
# KVAL, top_srcdir and PYTHON set and a cluster started. Each check prints "ok: ..." or
# "FAIL: ..." (with the job's log) and returns 0 or 1.
#   kval_decks DIR             DIR/tiny.deck (seconds in all), DIR/study.deck (a precision study
#                              whose bf16:bf16 rmsnorm at hidden 8192 is inaccurate) and DIR/long.deck (36 fa2 cases of
#                              about 0.1 s each per rank: long enough to be interrupted mid-run)
#   kval_job_ok JOB DIR N      JOB ended COMPLETED, its log says "kval exited 0" and DIR/kval-JOB.h5
#                              is a finished file of N ranks (check_layout.py --expect-run)
#   kval_ranks FILE            "host:local_rank:device_index" of every /ranks row, in rank order
#   kval_catching JOB N        JOB's batch shell catches SIGUSR1 and N kval ranks of its step 0
#                              catch SIGTERM (their handlers are installed: /proc/PID/status)
#   kval_requeue_rehearsal DIR N SBATCH_OPTION...   the time-limit path of jobs/kval.sbatch

kval_decks() {
  cat > "$1/tiny.deck" <<'DECK'
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
  cat > "$1/study.deck" <<'DECK'
[rmsnorm]
precision = bf16:fp32 bf16:bf16
rows = 8
hidden = 1024 8192
DECK
  cat > "$1/long.deck" <<'DECK'
[run]
warmup = 0
min_reps = 3
max_reps = 3
time_cap = 10
[fa2]
precision = fp16:fp32 bf16:fp32 fp16:fp16 bf16:bf16
headdim = 64
seqlen = 256 320 384
causal = 0 1
batch = 1
heads = 4
DECK
}

kval_job_ok() {
  kj_state=$(slurm_state "$1") kj_log="$2/kval-$1.out"
  [ "$kj_state" = COMPLETED ] || { echo "FAIL: job $1 ended $kj_state"; cat "$kj_log"; return 1; }
  grep -q "kval exited 0" "$kj_log" || { echo "FAIL: job $1: no 'kval exited 0' in its log"; cat "$kj_log"; return 1; }
  "$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$2/kval-$1.h5" --nranks "$3" --expect-run ||
    { echo "FAIL: job $1: layout of $2/kval-$1.h5"; return 1; }
}

kval_ranks() {
  "$PYTHON" -c 'import sys, h5py
g = h5py.File(sys.argv[1], "r")["ranks"]
s = lambda v: v.decode() if isinstance(v, bytes) else str(v)
print(" ".join(f"{s(h)}:{l}:{d}" for h, l, d in zip(g["host"][()], g["local_rank"][()], g["device_index"][()])))' "$1"
}

# Signal mask test: bit n-1 of SigCgt is signal n (SIGUSR1 10: 0x200, SIGTERM 15: 0x4000).
kval_catches() {
  kc=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
  [ -n "$kc" ] && [ $((0x${kc#????????} & $2)) -ne 0 ]
}

kval_catching() {
  kc_shell=0 kc_ranks=0
  for kp in $(slurm_pids "${SLURM_CONF%/slurm.conf}"); do
    grep -qszxF "SLURM_JOB_ID=$1" "/proc/$kp/environ" || continue
    kc_cmd=$(tr '\0' ' ' < "/proc/$kp/cmdline" 2>/dev/null)
    case $kc_cmd in
      */slurm_script*) kval_catches "$kp" 0x200 && kc_shell=1 ;;
      "$KVAL "*) grep -qszxF "SLURM_STEP_ID=0" "/proc/$kp/environ" && kval_catches "$kp" 0x4000 &&
                   kc_ranks=$((kc_ranks + 1)) ;;
    esac
  done
  [ $kc_shell -eq 1 ] && [ $kc_ranks -eq "$2" ]
}

kval_started() { { [ -f "$2" ] && kval_catching "$1" "$3"; } || slurm_ended "$1"; }
kval_requeued() { [ "$(slurm_restarts "$1")" -ge 1 ] 2>/dev/null || slurm_ended "$1"; }

# kval_requeue_rehearsal DIR N SBATCH_OPTION...: jobs/kval.sbatch on long.deck with N ranks; once
# its file exists and every handler is installed, the warning signal Slurm sends before the time
# limit (--signal=B:USR1@120) goes to the batch shell: kval must stop with 143 leaving a resumable
# file, the job must requeue itself, and the rerun must finish the same file with --resume. The
# time limit (30 min) lies beyond every wait, so Slurm's own warning never interrupts the rerun.
kval_requeue_rehearsal() {
  rq_dir=$1 rq_n=$2; shift 2
  mkdir -p "$rq_dir" && cd "$rq_dir" || return 1
  rq_id=$(sbatch --parsable "$@" --time=00:30:00 \
            --export=ALL,DECK="$KVAL_DECKS/long.deck",OUTDIR="$rq_dir",BACKEND=cpu "$top_srcdir/jobs/kval.sbatch") ||
    { echo "FAIL: sbatch of the requeue job"; return 1; }
  rq_log="$rq_dir/kval-$rq_id.out" rq_f="$rq_dir/kval-$rq_id.h5"
  slurm_wait_job "$rq_id" "$rq_log" kval_started "$rq_id" "$rq_f" "$rq_n" || { echo "FAIL: requeue job never started"; return 1; }
  slurm_ended "$rq_id" && { echo "FAIL: requeue job $rq_id ended before it could be signalled"; cat "$rq_log"; return 1; }
  scancel --batch --signal=USR1 "$rq_id" || { echo "FAIL: scancel --batch --signal=USR1 $rq_id"; return 1; }
  # Slurm holds a requeued job back until the first run's credential has expired (reason
  # BeginTime; the test cluster sets cred_expire=10 s).
  slurm_wait_job "$rq_id" "$rq_log" kval_requeued "$rq_id" || { echo "FAIL: job $rq_id neither requeued nor ended"; return 1; }
  if ! grep -q "kval exited 143" "$rq_log"; then
    echo "FAIL: the warning signal did not stop kval with 143 (job $rq_id: $(slurm_state "$rq_id"))"
    grep -q "kval exited 0" "$rq_log" &&
      echo "      the first run finished all of long.deck before the signal reached it: the deck is too short here"
    cat "$rq_log"; return 1
  fi
  slurm_wait_job "$rq_id" "$rq_log" slurm_ended "$rq_id" || { echo "FAIL: requeued job $rq_id did not end"; return 1; }
  grep -q "requeueing" "$rq_log" || { echo "FAIL: job $rq_id did not requeue itself"; cat "$rq_log"; return 1; }
  grep -q "kval: --resume: " "$rq_log" || { echo "FAIL: the rerun of job $rq_id did not --resume"; cat "$rq_log"; return 1; }
  [ "$(slurm_restarts "$rq_id")" = 1 ] || { echo "FAIL: job $rq_id restarted $(slurm_restarts "$rq_id") times"; return 1; }
  kval_job_ok "$rq_id" "$rq_dir" "$rq_n" || return 1
  echo "ok: time-limit signal, requeue and --resume ($rq_n ranks: $*); first run: $(grep -m 1 'interrupted' "$rq_log")"
}
