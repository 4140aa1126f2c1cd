#!/bin/sh
# slurm_multinode.sh - kval across nodes under a real Slurm of four emulated nodes (n1..n4, one
# slurmd each, 2 CPUs and 2 fake GPUs per node; slurm_cluster.sh), cpu backend, small decks:
#  1. sbatch --nodes=2 --ntasks-per-node=2 jobs/kval.sbatch (smoke.deck): one file of 4 ranks written by ranks
#     of two nodes (this build's HDF5 flavour), /ranks naming 2 nodes with local ranks 0-1 each;
#  2. the per-node GPU binding through Slurm's gres (fake GPUs, KVAL_TEST_FAKE_GPUS=1): with
#     --gpus-per-node=2 each node's ranks take devices 0 and 1; with --gpus-per-node=1 the second
#     rank of each node is a clear error naming its node, and no file is written (a bad
#     KVAL_TEST_FAKE_GPUS value, or no GPU list, is an error too);
#  3. the time-limit warning, requeue and --resume of a 2-node job;
#  4. jobs/fleet.sh over the 4-node partition with --inject bitflip set through the job
#     environment on n2 only, and n3 crashed mid-run (its slurmd and processes killed, the node
#     marked down): 4 node jobs and the analysis job, whose verdict names n2's flipped rank and
#     reports n3 as missing results, never as healthy;
#  5. jobs/fleet.sh again with n3 down: no job there, and the analysis reports n3 missing.
# Every wait is on a condition and fails only when a job stops making progress. Skips (77) only
# without root or without the slurm-wlm/munge packages.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the Slurm test starts daemons and needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch; do
  command -v $b >/dev/null 2>&1 || [ -x /usr/sbin/$b ] || { echo "SKIP: $b not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
. "$top_srcdir/tests/system/slurm_cluster.sh"
. "$top_srcdir/tests/system/slurm_kval.sh"
tmp=$(mktemp -d /tmp/kval-slurm4.XXXXXX)
chmod 755 "$tmp"
cleanup() { slurm_stop "$tmp/cluster"; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
slurm_start "$tmp/cluster" 4 || exit 1
unset SLURM_JOB_ID SLURM_JOBID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export KVAL PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}"
KVAL_DECKS=$tmp
kval_decks "$tmp"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
mkdir -p "$tmp/jobs"
cd "$tmp/jobs" || exit 1
submit() { # NAME DECK SBATCH_OPTION... -> job id (jobs/kval.sbatch, cpu backend)
  sm=$1 sd=$2; shift 2
  sbatch --parsable "$@" --time=00:30:00 --job-name="$sm" \
    --export=ALL,DECK="$sd",OUTDIR="$tmp/jobs",BACKEND=cpu${FAKE:+,KVAL_TEST_FAKE_GPUS=$FAKE} \
    "$top_srcdir/jobs/kval.sbatch"
}
nodes_of() { scontrol show hostnames "$(scontrol show job -o "$1" | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p')" | paste -sd' ' -; }
h5attr() { "$PYTHON" -c 'import sys, h5py; v = h5py.File(sys.argv[1], "r").attrs[sys.argv[2]]
print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"; }

# 1-2. Two nodes in one job; the per-node GPU binding (the three jobs run side by side).
slurm_step "1-2. two nodes in one job; the per-node GPU binding"
two=$(FAKE="" submit two "$top_srcdir/inputs/smoke.deck" --nodes=2 --ntasks-per-node=2) || fail "sbatch of the 2-node job"
if [ "$SLURM_FAKE_GPUS" -eq 1 ]; then
  gpus=$(FAKE=1 submit gpus "$tmp/tiny.deck" --nodes=2 --ntasks-per-node=2 --gpus-per-node=2) || fail "sbatch --gpus-per-node=2"
  over=$(FAKE=1 submit over "$tmp/tiny.deck" --nodes=2 --ntasks-per-node=2 --gpus-per-node=1) || fail "sbatch --gpus-per-node=1"
else
  gpus="" over=""
  echo "SKIP (part): no fake GPUs (mknod failed): the --gpus-per-node binding is not exercised"
fi
# The test-only switch itself: a bad value, and no GPU list, are errors of the backend (exit 3).
fake_bad() { # PHRASE CUDA_VISIBLE_DEVICES KVAL_TEST_FAKE_GPUS
  (unset CUDA_VISIBLE_DEVICES; [ -n "$2" ] && export CUDA_VISIBLE_DEVICES="$2"
   KVAL_TEST_FAKE_GPUS=$3 "$KVAL" --backend cpu --quiet "$tmp/tiny.deck" -o "$tmp/fake.h5") >"$tmp/fake.log" 2>&1
  fb=$?
  [ $fb -eq 3 ] && grep -qF "$1" "$tmp/fake.log" && [ ! -e "$tmp/fake.h5" ] ||
    { fail "KVAL_TEST_FAKE_GPUS=$3: exit $fb, expected 3 and '$1'"; cat "$tmp/fake.log"; }
}
fake_bad "KVAL_TEST_FAKE_GPUS must be 0 or 1, got 'yes'" "0,1" yes
fake_bad "local rank 0 of 1 sees no GPU (CUDA_VISIBLE_DEVICES unset)" "" 1
for j in $two $gpus $over; do
  slurm_wait_job "$j" "$tmp/jobs/kval-$j.out" slurm_ended "$j" || fail "job $j did not end"
done
if kval_job_ok "$two" "$tmp/jobs" 4; then
  set -- $(nodes_of "$two")
  want="$1:0:-1 $1:1:-1 ${2:-?}:0:-1 ${2:-?}:1:-1" got=$(kval_ranks "$tmp/jobs/kval-$two.h5")
  [ $# -eq 2 ] && [ "$got" = "$want" ] || fail "2-node job: /ranks host:local_rank:device_index '$got', expected '$want'"
  [ "$(h5attr "$tmp/jobs/kval-$two.h5" slurm_nodes)" = "$(scontrol show job -o "$two" | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p')" ] ||
    fail "2-node job: slurm_nodes attribute"
  flavour=$(h5attr "$tmp/jobs/kval-$two.h5" hdf5_flavour)
  [ -z "${KV_HDF5_FLAVOUR:-}" ] || [ "$flavour" = "$KV_HDF5_FLAVOUR" ] || fail "2-node job wrote $flavour HDF5, build is $KV_HDF5_FLAVOUR"
  [ $rc -eq 0 ] && echo "ok: sbatch --nodes=2 --ntasks-per-node=2: one $flavour-HDF5 file, /ranks $got"
else
  rc=1
fi
if [ -n "$gpus" ]; then
  if kval_job_ok "$gpus" "$tmp/jobs" 4; then
    set -- $(nodes_of "$gpus")
    want="$1:0:0 $1:1:1 ${2:-?}:0:0 ${2:-?}:1:1" got=$(kval_ranks "$tmp/jobs/kval-$gpus.h5")
    [ "$got" = "$want" ] && echo "ok: --gpus-per-node=2: each node's ranks bound to its fake GPUs 0 and 1" ||
      fail "--gpus-per-node=2: /ranks '$got', expected '$want'"
  else
    rc=1
  fi
  log="$tmp/jobs/kval-$over.out" n_err=0
  for n in $(nodes_of "$over"); do
    grep -q "host $n: local rank 1 of 2 has no GPU: 1 rank already uses the 1 visible device (CUDA_VISIBLE_DEVICES='0'); start at most 1 rank per node" "$log" &&
      n_err=$((n_err + 1))
  done
  if [ "$(slurm_state "$over")" = FAILED ] && grep -q "kval exited 3" "$log" && [ $n_err -eq 2 ] && [ ! -e "$tmp/jobs/kval-$over.h5" ]; then
    echo "ok: --gpus-per-node=1 with 2 ranks per node: exit 3, the error names each node, no file"
  else
    fail "--gpus-per-node=1: expected a failed job (kval exited 3), an error naming each of its nodes and no file"; cat "$log"
  fi
fi

# 3. The time-limit path of a 2-node job.
slurm_step "3. the time-limit path of a 2-node job"
kval_requeue_rehearsal "$tmp/requeue" 4 --nodes=2 --ntasks-per-node=2 || rc=1

# 4. The fleet campaign over the partition: kval behind a wrapper that adds --inject (from the job
#    environment) on the node KVAL_INJECT_NODE names; n3 crashes mid-run.
slurm_step "4. fleet campaign: bitflip on n2, n3 crashed"
cat > "$tmp/kval-inject" <<EOF
#!/bin/sh
# kval with --inject \$KVAL_INJECT on node \$KVAL_INJECT_NODE, unchanged on every other node
[ "\${SLURMD_NODENAME:-}" = "\${KVAL_INJECT_NODE:-}" ] && exec "$KVAL" --inject "\$KVAL_INJECT" "\$@"
exec "$KVAL" "\$@"
EOF
chmod 755 "$tmp/kval-inject"
KVAL="$tmp/kval-inject" KVAL_INJECT_NODE=n2 KVAL_INJECT=bitflip@1 \
  bash "$top_srcdir/jobs/fleet.sh" -p test -g 0 -o "$tmp/fleet" -d "$tmp/long.deck" -t 00:30:00 >"$tmp/fleet.log" 2>&1 ||
  { fail "fleet.sh"; cat "$tmp/fleet.log"; }
job_of() { sed -n "s/^fleet.sh: node $2 -> job \([0-9]*\).*/\1/p" "$1"; }
aid=$(sed -n 's/^fleet.sh: analysis -> job \([0-9]*\).*/\1/p' "$tmp/fleet.log")
j3=$(job_of "$tmp/fleet.log" n3)
[ "$(grep -c '^fleet.sh: node n[1-4] -> job ' "$tmp/fleet.log")" -eq 4 ] && [ -n "$aid" ] ||
  { fail "fleet.sh did not submit 4 node jobs and the analysis job"; cat "$tmp/fleet.log"; }
file_or_end() { [ -f "$1" ] || slurm_ended "$2"; }
slurm_wait_job "$j3" "$tmp/fleet/kval-$j3.out" file_or_end "$tmp/fleet/kval-$j3.h5" "$j3" || fail "n3's job never started"
if slurm_ended "$j3"; then
  fail "n3's job ended ($(slurm_state "$j3")) before the node could be crashed"
else
  slurm_crash_node "$tmp/cluster" n3 || fail "crashing n3"
fi
for n in n1 n2 n3 n4; do
  j=$(job_of "$tmp/fleet.log" $n)
  slurm_wait_job "$j" "$tmp/fleet/kval-$j.out" slurm_ended "$j" || fail "fleet job $j ($n) did not end"
done
slurm_wait_job "$aid" "$tmp/fleet/analyze-$aid.out" slurm_ended "$aid" || fail "the analysis job did not end"
states=$(for n in n1 n2 n3 n4; do printf '%s:%s ' $n "$(slurm_state "$(job_of "$tmp/fleet.log" $n)")"; done)
[ "$states" = "n1:COMPLETED n2:FAILED n3:NODE_FAIL n4:COMPLETED " ] ||
  fail "fleet node jobs ended '$states' (n2 exits 1 on its own flipped bit, n3 lost its node)"
verdict() { # FILE.json EXPR: print EXPR over the analysis result r
  "$PYTHON" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
js="$tmp/fleet/fleet.json"
if [ -s "$js" ]; then
  [ "$(verdict "$js" 'sorted({d["host"] for d in r["fingerprint"]["disagreements"]})')" = "['n2']" ] &&
    [ "$(verdict "$js" 'sorted({d["rank"] for d in r["fingerprint"]["disagreements"]})')" = \
      "$(verdict "$js" '[x["rank"] for x in r["checks"] if x["host"] == "n2" and x["check"] == "fingerprint" and x["state"] == "fail"]')" ] ||
    fail "the fingerprint verdict does not name n2 alone: $(verdict "$js" 'r["fingerprint"]["disagreements"][:2]')"
  [ "$(verdict "$js" '[(d["host"], d["state"]) for d in r["missing"]]')" = "[('n3', 'incomplete')]" ] ||
    fail "n3 is not reported missing: $(verdict "$js" 'r["missing"]')"
  [ "$(verdict "$js" 'sorted(x["rank"] for x in r["checks"] if x["host"] == "n3" and x["check"] == "completeness" and x["state"] == "incomplete")')" = \
    "$(verdict "$js" 'r["missing"][0]["ranks"] if len(r["missing"]) == 1 and len(r["missing"][0]["ranks"]) == 2 else None')" ] ||
    fail "n3's two ranks are not incomplete"
  [ "$(verdict "$js" 'r["flagged"]')" = True ] && grep -q "^VERDICT: FAIL" "$tmp/fleet/fleet.txt" &&
    grep -A4 "== Nodes with missing results" "$tmp/fleet/fleet.txt" | grep -q "^n3 .* incomplete" || fail "fleet.txt verdict"
else
  fail "the analysis wrote no fleet.json"; cat "$tmp/fleet"/analyze-*.out
fi
[ $rc -eq 0 ] && echo "ok: fleet.sh over 4 nodes: 4 jobs + analysis; verdict names n2 (bitflip) and reports n3 (crashed) missing"

# 5. A fleet campaign with n3 down from the start: no job there, n3 missing in the verdict.
slurm_step "5. fleet campaign with n3 down"
bash "$top_srcdir/jobs/fleet.sh" -p test -g 0 -o "$tmp/fleet2" -d "$tmp/tiny.deck" -t 00:30:00 >"$tmp/fleet2.log" 2>&1 ||
  { fail "fleet.sh with n3 down"; cat "$tmp/fleet2.log"; }
aid=$(sed -n 's/^fleet.sh: analysis -> job \([0-9]*\).*/\1/p' "$tmp/fleet2.log")
grep -q "^fleet.sh: node n3 is down.*: no job there" "$tmp/fleet2.log" && [ -z "$(job_of "$tmp/fleet2.log" n3)" ] ||
  { fail "fleet.sh submitted to the down node n3"; cat "$tmp/fleet2.log"; }
[ -n "$aid" ] && slurm_wait_job "$aid" "$tmp/fleet2/analyze-$aid.out" slurm_ended "$aid" || fail "second analysis job"
js="$tmp/fleet2/fleet.json"
# The campaign's "GPUs" are cpu-backend ranks sharing this machine's cores with whatever other
# test runs beside it, so their performance comparison is luck and is not judged here: every
# other check passes but n3's completeness, and the verdict is INCOMPLETE - or FAIL exactly when
# a performance check failed.
not_perf='sorted({(x["host"], x["check"], x["state"]) for x in r["checks"] if x["state"] != "pass" and x["state"] != "skipped" and x["check"] != "performance"})'
want_verdict='"FAIL" if any(x["check"] == "performance" and x["state"] == "fail" for x in r["checks"]) else "INCOMPLETE"'
if [ -s "$js" ] && [ "$(verdict "$js" '[(d["host"], d["state"]) for d in r["missing"]]')" = "[('n3', 'missing')]" ] &&
   [ "$(verdict "$js" 'len(r["fingerprint"]["disagreements"])')" = 0 ] &&
   [ "$(verdict "$js" "$not_perf")" = "[('n3', 'completeness', 'incomplete')]" ] &&
   [ "$(verdict "$js" 'r["verdict"]')" = "$(verdict "$js" "$want_verdict")" ]; then
  echo "ok: fleet.sh with n3 down: 3 jobs + analysis; n3 reported missing"
else
  fail "fleet.sh with n3 down: verdict"; cat "$tmp/fleet2"/analyze-*.out
fi
slurm_step "done"
exit $rc
