#!/bin/bash
# run_mutants.sh - kval's mutation suite: plants each mutant of tests/mutation/mutants.tsv (one
# small semantic bug in a kernel, reference, statistic or the harness) in a scratch copy of the
# source tree, rebuilds src/kval incrementally, runs kval on a deck and records whether kval
# flagged it. Killed: kval reported a case with a failing status (fail_tolerance,
# fail_nonfinite, fail_nondeterministic, fail_out_of_bounds, fail_bias, fail_timing) or error
# (a hang counts only when kval's watchdog names it: exit 3 with "timeout"), or kval's self-test
# of its checker failed before any case (exit 3, src/run/selftest.c), or - for a mutant with
# tests (mutants.tsv's seventh field: a bug in what a run records or counts, which the run
# itself cannot see) - one of those `make check` tests failed (FAIL or ERROR) in the mutated
# tree (they run first, with KVAL_TEST_FAIL_FAST=1; the deck's run only when they all pass). A
# mutant that does not build, or makes kval exit 2 (input refused), is broken, not killed; one
# whose `from` text does not occur exactly once is stale and stops the script before anything
# is built.
#
#   tests/mutation/run_mutants.sh [--kind cpu|gpu|cpu-gap|gpu-study|gpu-race|all] [--deck DECK] [--backend cpu|cuda]
#       [--jobs N] [--make-jobs N] [--only ID,...] [--deadline SECONDS] [--timeout SECONDS]
#       [--results FILE] [--compile-only] [--configure-args 'ARGS'] [--kval-args 'ARGS'] [--per-family] [--keep]
#
# --kind cpu (default): the cpu backend, inputs/smoke.deck, configured --with-cuda=no.
# --kind gpu: the cuda backend, inputs/fleet.deck (its path sections reach every kernel path;
#   about half a minute per run), KVAL_SKIP_CEILINGS=1 and --set run.watchdog=10 (a hung mutant is named in 10 s).
# --kind gpu-study: the cuda backend, tests/mutation/study.deck: reduced-accumulation cases that
#   are inaccurate on a healthy GPU (conformant, outside their fp64 bound), where a kernel bug
#   must fail the case as not the model instead of hiding in the inaccuracy.
# --kind gpu-race: the cuda backend, tests/mutation/race.deck, a build configured
#   --enable-race-delays (every barrier, cp.async wait and mbarrier wait left after a random delay per warp): a
#   missing barrier whose race the shipped shapes never show as a wrong result must show under
#   the delays (the baseline, unmutated, passes under them).
# --jobs N: N scratch copies build mutants in parallel (make -j --make-jobs each, default
#   cores / N); kval runs one at a time (one GPU). A run stops (SIGTERM, kval stops cleanly) at
#   its first failing case or after --timeout seconds (default 60 cpu, 120 cuda).
# --deadline S: no mutant starts after S seconds from the start; those left are reported as
#   not run. --compile-only: build every mutant, run none (checks that they apply and compile).
# --configure-args: extra configure arguments (e.g. "--with-hdf5=serial"); --kval-args: extra
#   kval arguments. --per-family: a mutant in families/<f>/ runs only the families defined there
#   (`--only` of the kv_family_<name> definitions in families/<f>/*.c: norm -> layernorm,rmsnorm),
#   so a long deck (default.deck) reaches the mutated family without the others' minutes;
#   mutants outside families/ run it whole. The baseline (the unmutated build must pass what the
#   mutants run: the union of their families, else the whole deck) runs while the first mutants
#   build; the union of the selected mutants' tests runs once on an unmutated copy of the build
#   tree, and must pass, before any of them judges a mutant. Results: a table on stdout, a TSV
#   in --results (default $OUT/mutation-results.tsv when OUT is set, else
#   ./mutation-results-KIND.tsv), and the line
#   "mutants: K killed of N (S survived: ids; B broken: ids)". Exit 0 only when every selected
#   mutant ran and was killed; 1 otherwise; 2 for usage errors, stale mutants or a failing
#   unmutated baseline run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tsv="$here/mutants.tsv"
kind=cpu deck= backend= jobs=1 make_jobs= only= deadline=0 timeout= results= compile_only=0
configure_args= kval_args= keep=0 per_family=0
die() { echo "run_mutants.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --kind|--deck|--backend|--jobs|--make-jobs|--only|--deadline|--timeout|--results|--configure-args|--kval-args)
      [ $# -ge 2 ] || die "$1 needs a value"
      v=$2; o=${1#--}; o=${o//-/_}; printf -v "$o" '%s' "$v"; shift 2 ;;
    --compile-only) compile_only=1; shift ;;
    --keep) keep=1; shift ;;
    --per-family) per_family=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
case "$kind" in cpu|cpu-gap) : "${backend:=cpu}" "${deck:=inputs/smoke.deck}" ;;
  gpu|all) : "${backend:=cuda}" "${deck:=inputs/fleet.deck}" ;;
  gpu-study) : "${backend:=cuda}" "${deck:=tests/mutation/study.deck}" ;;
  gpu-race) : "${backend:=cuda}" "${deck:=tests/mutation/race.deck}" ;;
  *) die "--kind must be cpu, gpu, cpu-gap, gpu-study, gpu-race or all, got '$kind'" ;; esac
case "$backend" in cpu) : "${timeout:=60}" ;; cuda) : "${timeout:=120}" ;;
  *) die "--backend must be cpu or cuda, got '$backend'" ;; esac
for n in "$jobs" "$deadline" "$timeout" ${make_jobs:+"$make_jobs"}; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "--jobs, --make-jobs, --deadline and --timeout take whole numbers, got '$n'"
done
[ "$jobs" -ge 1 ] || die "--jobs must be at least 1"
cores=$(nproc 2>/dev/null || echo 2)
: "${make_jobs:=$(( cores / jobs > 0 ? cores / jobs : 1 ))}"
[ -n "$results" ] || results=${OUT:+$OUT/mutation-results.tsv}
[ -n "$results" ] || results=$PWD/mutation-results-$kind.tsv
case "$deck" in /*) ;; *) deck="$src/$deck" ;; esac
[ -r "$deck" ] || die "deck '$deck' is not readable"
MPIRUN=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
start=$(date +%s)

# the selected mutants, checked against the source tree before anything is built
py() { "${PYTHON:-python3}" "$here/mutate.py" "$@"; }
# (the analysis kind is run_analysis_mutants.sh's: no kval run judges it)
mapfile -t sel < <(py list "$tsv" --kind "$kind" ${only:+--only "$only"} | awk -F'\t' '$3 != "analysis"') || exit 2
[ ${#sel[@]} -gt 0 ] || die "no mutant of kind '$kind'${only:+ among --only $only}"
py check "$tsv" "$src" --kind "$kind" ${only:+--only "$only"} || die "stale mutants (above): update $tsv"

# one scratch copy of the tree (git's files, tracked and untracked-not-ignored, else all of it)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kval-mutants.XXXXXX") || die "cannot make a scratch directory"
cleanup() { [ "$keep" = 1 ] && echo "scratch kept: $scratch" >&2 || rm -rf "$scratch"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/copy_tree.sh"
mkdir "$scratch/s0" && copy_tree "$src" "$scratch/s0" || die "copying $src failed"
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
export KVAL_GIT_COMMIT="$commit-mutants"
log() { echo "run_mutants.sh: $*" >&2; }
cfg=(--with-cuda=auto)
[ "$backend" = cpu ] && cfg=(--with-cuda=no)
[ "$kind" = gpu-race ] && cfg+=(--enable-race-delays)
eval "extra=($configure_args)"
log "base build in $scratch/s0 (configure ${extra[*]} ${cfg[*]}; make -j$cores src/kval)"
(cd "$scratch/s0" && { [ -x configure ] || ./bootstrap; } && ./configure "${extra[@]}" "${cfg[@]}" &&
   make src/kval_git.h && make -j"$cores" src/kval) >"$scratch/base-build.log" 2>&1 ||
  { tail -n 30 "$scratch/base-build.log" >&2; die "the unmutated tree does not build (log above)"; }
for ((k = 1; k < jobs; k++)); do cp -a "$scratch/s0" "$scratch/s$k" || die "copying the build tree failed"; done

eval "kargs=($kval_args)"
run_env=()
if [ "$backend" = cuda ]; then run_env=(KVAL_SKIP_CEILINGS=1); kargs=(--set run.watchdog=10 "${kargs[@]}"); fi

# families_of FILE: the --only list of the families defined in FILE's family directory (empty
# outside families/ or without --per-family).
families_of() {
  local d
  [ "$per_family" = 1 ] || return 0
  case "$1" in families/*/*) d=${1#families/}; d=${d%%/*} ;; *) return 0 ;; esac
  sed -n 's/^const kv_family kv_family_\([a-z0-9_]*\) = .*/\1/p' "$src/families/$d"/*.c 2>/dev/null | paste -sd, -
}

# run_kval DIR LOG [ARGS...]: kval on the deck in DIR (with the extra kval ARGS), stopped (SIGTERM) at its first failing case or
# after the timeout; prints "rc check": kval's exit code and the status that flagged it ("-"
# when none, "deadline" when the timeout stopped a run without a failing case, "cut" when
# --deadline shortened the run below the timeout and stopped it: not run, not survived).
run_kval() {
  local dir=$1 logf=$2 limit=$timeout left pid rc t0 line check=- stopped=0 cut=0
  shift 2
  if [ "$deadline" -gt 0 ]; then
    left=$(( deadline - ($(date +%s) - start) ))
    [ "$left" -lt "$limit" ] && limit=$left cut=1
  fi
  [ "$limit" -lt 10 ] && limit=10
  rm -f "$dir/mutant.h5"
  (cd "$dir" && exec env "${run_env[@]}" "$MPIRUN" -np 1 src/kval --backend "$backend" "$deck" -o mutant.h5 \
     "${kargs[@]}" "$@") >"$logf" 2>&1 &
  pid=$!
  t0=$(date +%s)
  # SIGTERM goes to the kval rank (mpirun's child), so that mpirun returns kval's own exit code
  stop_rank() { local kids; kids=$(pgrep -P "$pid"); [ -n "$kids" ] && kill -TERM $kids 2>/dev/null; }
  while kill -0 "$pid" 2>/dev/null; do
    if grep -qE '^kval: (fail_[a-z_]+|error) rank [0-9]+ ' "$logf"; then stop_rank; break; fi
    if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then stopped=1; stop_rank; break; fi
    sleep 0.2
  done
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null && sleep 2 && kill -KILL "$pid" 2>/dev/null
  wait "$pid"; rc=$?
  line=$(grep -m1 -E '^kval: (fail_[a-z_]+|error) rank [0-9]+ ' "$logf")
  if [ -n "$line" ]; then
    check=$(echo "$line" | awk '{print $2}')
    if [ "$check" = error ]; then
      case "$line" in *timeout*) check=error:timeout ;; *harness:*) check=error:harness ;; esac
    fi
  elif [ "$rc" = 3 ] && grep -q 'timeout' "$logf"; then
    check=error:timeout
  elif [ "$rc" = 3 ] && grep -q 'the self-test of the checker failed' "$logf"; then
    check=error:self-test
  elif [ "$stopped" = 1 ] && [ "$cut" = 1 ]; then
    check=cut
  elif [ "$stopped" = 1 ]; then
    check=deadline
  fi
  echo "$rc $check"
}

# run_tests DIR TESTS...: the `make check` tests in build tree DIR (only their own programs
# built); prints the first that failed (FAIL or ERROR), "-" when all passed or skipped, or
# "broken" when none ran (a test program that does not build).
run_tests() {
  local dir=$1 t res first=- ran=0
  shift
  for t in "$@"; do rm -f "$dir/${t%.*}.log" "$dir/${t%.*}.trs"; done # else make keeps a script test's old result
  # a copied build tree's Makefile still names s0: the tests must run this tree's kval; and
  # under make check (cpu_mutants.sh) the outer make's TEST_LOGS, inherited through MAKEFLAGS,
  # would replace TESTS and run cpu_mutants.sh again, recursively: a make of its own
  # (KVAL_TEST_FAIL_FAST=1: a system test that honours it stops at its first failed check)
  (cd "$dir" && env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL KVAL_TEST_FAIL_FAST=1 \
     make -j"$make_jobs" check TESTS="$*" check_PROGRAMS= abs_top_builddir="$dir" abs_top_srcdir="$dir") \
    >"$dir/mutant-tests.log" 2>&1
  for t in "$@"; do
    res=$(sed -n 's/^:test-result: //p' "$dir/${t%.*}.trs" 2>/dev/null | head -n 1)
    [ -n "$res" ] && ran=1
    case "$res" in FAIL|ERROR) [ "$first" = - ] && first=${t##*/} ;; esac
  done
  [ "$ran" = 1 ] && echo "$first" || echo broken
}

# Mutants grouped by file (consecutive mutants of one file rebuild once), files dealt to slots.
declare -A slot_of
nfile=0
for row in "${sel[@]}"; do
  IFS=$'\t' read -r id file k <<<"$row"
  [ -n "${slot_of[$file]:-}" ] || { slot_of[$file]=$(( nfile % jobs )); nfile=$((nfile + 1)); }
done
lock="$scratch/device.lock"
: >"$lock"

# The baseline, a run of the unmutated build: a deck that already fails makes every "kill"
# meaningless. It covers what the mutant runs cover: with --per-family and every selected
# mutant in families/, only the union of their families; else the whole deck. It holds the
# device lock while the slots build their first mutants, and a slot runs kval only after it passed.
baseline_only= whole=0
for row in "${sel[@]}"; do
  IFS=$'\t' read -r _ file _ <<<"$row"
  f=$(families_of "$file")
  [ -n "$f" ] || { whole=1; break; }
  baseline_only="$baseline_only${baseline_only:+,}$f"
done
[ "$whole" = 1 ] && baseline_only=
baseline_only=$(echo "$baseline_only" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
if [ "$compile_only" = 0 ]; then
  exec {bfd}>"$lock"
  flock "$bfd"
fi

# slot K: its mutants in turn; one result line each in $scratch/results.K
run_slot() {
  local k=$1 dir="$scratch/s$1" row id file mk tests t0 rc check killed out fams failed
  [ -n "${bfd:-}" ] && exec {bfd}>&-
  exec {lfd}>"$lock"
  for row in "${sel[@]}"; do
    IFS=$'\t' read -r id file mk tests <<<"$row"
    [ "${slot_of[$file]}" = "$k" ] || continue
    if [ "$deadline" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$deadline" ]; then
      printf '%s\t%s\t-\tnot-run\tdeadline\t0\n' "$id" "$mk" >>"$scratch/results.$k"; continue
    fi
    if [ "$(cat "$scratch/baseline.status" 2>/dev/null)" = failed ]; then
      printf '%s\t%s\t-\tnot-run\tbaseline\t0\n' "$id" "$mk" >>"$scratch/results.$k"; continue
    fi
    t0=$(date +%s)
    out="$scratch/log.$id"
    cp "$dir/$file" "$out.orig"
    if ! py apply "$tsv" "$id" "$dir" 2>"$out.apply"; then
      cat "$out.apply" >&2
      printf '%s\t%s\t-\tbroken\tstale\t0\n' "$id" "$mk" >>"$scratch/results.$k"; continue
    fi
    if ! (cd "$dir" && make -j"$make_jobs" src/kval) >"$out.build" 2>&1; then
      rc=- check=build killed=broken
      log "mutant $id does not build: $(grep -m1 -E 'error' "$out.build")"
    elif [ "$compile_only" = 1 ]; then
      rc=- check=built killed=-
    else
      fams=$(families_of "$file")
      rc=- check=- killed=no
      # a mutant with tests (a bug the deck's run is not expected to see): its tests first, and
      # the deck's run only when they all pass
      if [ -n "$tests" ]; then
        while [ ! -s "$scratch/tests.status" ]; do sleep 1; done
        if [ "$(cat "$scratch/tests.status")" != passed ]; then
          killed=not-run check=tests-baseline
        else
          # shellcheck disable=SC2086 # the tests are space-separated names
          failed=$(run_tests "$dir" $tests)
          cp "$dir/mutant-tests.log" "$out.tests"
          case "$failed" in -) ;; broken) killed=broken check=tests-build ;; *) killed=yes check="test:$failed" ;; esac
        fi
      fi
      if [ "$killed" = no ]; then
        flock "$lfd"
        if [ "$(cat "$scratch/baseline.status")" != passed ]; then
          flock -u "$lfd"
          cp "$out.orig" "$dir/$file"
          printf '%s\t%s\t-\tnot-run\tbaseline\t0\n' "$id" "$mk" >>"$scratch/results.$k"; continue
        fi
        read -r rc check < <(run_kval "$dir" "$out.run" ${fams:+--only "$fams"})
        flock -u "$lfd"
        case "$check" in fail_*|error*) killed=yes ;; cut) killed=not-run ;; esac
        [ "$rc" = 2 ] && killed=broken check=input-refused
        [ "$killed" = no ] && [ "$rc" != 0 ] && [ "$check" = - ] && check="crash(rc=$rc)"
      fi
    fi
    cp "$out.orig" "$dir/$file" # restored, with a new time stamp: the next make rebuilds what it touched
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$mk" "$rc" "$killed" "$check" $(( $(date +%s) - t0 )) \
      >>"$scratch/results.$k"
    log "$id: $killed ($check, exit $rc, $(( $(date +%s) - t0 )) s)"
  done
}
pids=()
[ "$compile_only" = 0 ] && { mkdir -p "$scratch/base/src" && cp "$scratch/s0/src/kval" "$scratch/base/src/" ||
  die "copying the unmutated kval failed"; }
# the selected mutants' tests, once, on an unmutated copy of the build tree
all_tests=$(printf '%s\n' "${sel[@]}" | cut -f4 | tr ' ' '\n' | sed '/^$/d' | sort -u | paste -sd' ' -)
if [ "$compile_only" = 0 ] && [ -n "$all_tests" ]; then
  cp -a "$scratch/s0" "$scratch/tests" || die "copying the build tree failed"
  (
    # shellcheck disable=SC2086
    failed=$(run_tests "$scratch/tests" $all_tests)
    [ "$failed" = - ] && echo passed >"$scratch/tests.status" || echo "failed $failed" >"$scratch/tests.status"
  ) &
  tests_pid=$!
else
  echo passed >"$scratch/tests.status"
fi
for ((k = 0; k < jobs; k++)); do : >"$scratch/results.$k"; run_slot "$k" & pids+=($!); done
if [ "$compile_only" = 0 ]; then
  read -r brc bcheck < <(run_kval "$scratch/base" "$scratch/baseline.log" ${baseline_only:+--only "$baseline_only"})
  [ "$brc" = 0 ] && echo passed >"$scratch/baseline.status" || echo failed >"$scratch/baseline.status"
  flock -u "$bfd"
  exec {bfd}>&-
  if [ "$brc" != 0 ]; then
    wait "${pids[@]}"
    tail -n 20 "$scratch/baseline.log" >&2
    die "the unmutated kval does not pass $deck${baseline_only:+ (--only $baseline_only)} (exit $brc, $bcheck):" \
      "fix that first (log above)"
  fi
  log "baseline: $deck${baseline_only:+ (--only $baseline_only)} passes on the unmutated build" \
    "($(( $(date +%s) - start )) s so far)"
fi
wait "${pids[@]}"
if [ -n "${tests_pid:-}" ]; then
  wait "$tests_pid"
  if [ "$(cat "$scratch/tests.status")" != passed ]; then
    tail -n 20 "$scratch/tests/mutant-tests.log" >&2
    die "the unmutated tree does not pass the mutants' tests ($(cut -d' ' -f2- "$scratch/tests.status")): fix that" \
      "first (log above)"
  fi
  log "tests baseline: $all_tests pass on the unmutated tree"
fi

# results in the order of the TSV
{
  printf 'id\tkind\texit\tkilled\tcheck\tseconds\n'
  for row in "${sel[@]}"; do
    IFS=$'\t' read -r id _ <<<"$row"
    cat "$scratch"/results.* | awk -F'\t' -v id="$id" '$1 == id'
  done
} >"$scratch/results.tsv"
mkdir -p "$(dirname "$results")" && cp "$scratch/results.tsv" "$results"
column -t -s $'\t' "$scratch/results.tsv" 2>/dev/null || cat "$scratch/results.tsv"
n=${#sel[@]}
ids() { awk -F'\t' -v w="$1" 'NR > 1 && $4 == w {printf "%s%s", s, $1; s = ","}' "$scratch/results.tsv"; }
killed=$(awk -F'\t' 'NR > 1 && $4 == "yes"' "$scratch/results.tsv" | wc -l)
survived=$(ids no) broken=$(ids broken) notrun=$(ids not-run)
count() { [ -z "$1" ] && echo 0 || echo "$1" | tr ',' '\n' | wc -l; }
if [ "$compile_only" = 1 ]; then
  echo "mutants: $(( n - $(count "$broken") - $(count "$notrun") )) built of $n ($(count "$broken") broken: ${broken:-none}${notrun:+; $(count "$notrun") not run (deadline): $notrun})"
  [ -z "$broken$notrun" ]; exit $?
fi
echo "mutants: $killed killed of $n ($(count "$survived") survived: ${survived:-none}; $(count "$broken") broken: ${broken:-none}${notrun:+; $(count "$notrun") not run (deadline): $notrun}) [$kind, $backend backend, $(basename "$deck"), $(( $(date +%s) - start )) s, results in $results]"
[ "$killed" = "$n" ]
