#!/bin/bash
# run_analysis_mutants.sh - the analysis mutants of tests/mutation/mutants.tsv (kind analysis:
# one small bug in analysis/'s verdicts, statistics, readers or reports, the code that tells a
# fleet operator which GPU is slow or computes other bits, and anyone what ran how well): each
# planted in a scratch copy of the source tree (its suite also reads rules from the C headers),
# killed when analysis/'s pytest suite fails on it (pytest exit 1; the run stops at the first
# failing test). A mutant whose suite cannot run (pytest exit 2-5: an import or
# collection error) is broken, not killed; one whose `from` text does not occur exactly once is
# stale and stops the script first.
#
#   tests/mutation/run_analysis_mutants.sh [--only ID,...] [--jobs N] [--results FILE]
#
# --jobs N: N mutants at a time (default 2). KVAL (a built src/kval) is passed on as KVAL_BIN, so
# test_kval_bin.py runs too; without it that test skips. Results: a table on stdout, a TSV in
# --results (default ./mutation-results-analysis.tsv), and the line "mutants: K killed of N (S
# survived: ids; B broken: ids)". Exit 0 only when every selected mutant was killed; 1
# otherwise; 2 for usage errors, stale mutants or an unmutated suite that fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tsv="$here/mutants.tsv"
only= jobs=2 results=$PWD/mutation-results-analysis.tsv
die() { echo "run_analysis_mutants.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --only|--jobs|--results) [ $# -ge 2 ] || die "$1 needs a value"; printf -v "${1#--}" '%s' "$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs takes a whole number of at least 1, got '$jobs'"
PY=${PYTHON:-python3}
py() { "$PY" "$here/mutate.py" "$@"; }
mapfile -t sel < <(py list "$tsv" --kind analysis ${only:+--only "$only"}) || exit 2
[ ${#sel[@]} -gt 0 ] || die "no mutant of kind 'analysis'${only:+ among --only $only}"
py check "$tsv" "$src" --kind analysis ${only:+--only "$only"} || die "stale mutants (above): update $tsv"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kval-analysis-mutants.XXXXXX") || die "cannot make a scratch directory"
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
start=$(date +%s)

# suite DIR LOG [TEST...]: analysis/'s pytest suite in the copy DIR, stopping at the first
# failure; its exit code. The tests given (a mutant's: pytest node ids of the tests written
# against it) run first, then test_verdicts.py and test_report_verdicts.py (the edges of the
# verdicts and of what the reports show: seconds), the rest (two minutes on CI's machine) only
# when those pass; every test runs once.
suite() {
  local dir=$1 log=$2 t fast=(analysis/tests/test_verdicts.py analysis/tests/test_report_verdicts.py) skip=()
  shift 2
  for t in "$@"; do skip+=("--deselect=$t"); done
  (cd "$dir" && export KVAL_BIN=${KVAL:-} MPLBACKEND=Agg &&
     { [ $# -eq 0 ] || "$PY" -m pytest -x -q -p no:cacheprovider "$@"; } &&
     "$PY" -m pytest -x -q -p no:cacheprovider "${skip[@]}" "${fast[@]}" &&
     "$PY" -m pytest -x -q -p no:cacheprovider "${skip[@]}" "${fast[@]/#/--ignore=}" analysis/tests) >"$log" 2>&1
}
. "$here/copy_tree.sh"
mkdir -p "$scratch/base" && copy_tree "$src" "$scratch/base" || die "copying $src failed"
suite "$scratch/base" "$scratch/base.log" ||
  { tail -n 20 "$scratch/base.log" >&2; die "the unmutated analysis suite fails (log above): fix that first"; }

# one mutant (id, kind, its tests): a fresh copy of the tree, the mutant applied, the suite run
# (its tests first); one result line
one() {
  local id=$1 mk=$2 dir="$scratch/m.$1" t0 rc killed check tests
  read -ra tests <<<"$3"
  t0=$(date +%s)
  cp -a "$scratch/base" "$dir"
  if ! py apply "$tsv" "$id" "$dir" 2>"$dir.apply"; then
    printf '%s\t%s\t-\tbroken\tstale\t0\n' "$id" "$mk"; return
  fi
  suite "$dir" "$dir.log" "${tests[@]}"; rc=$?
  case $rc in
    0) killed=no check=- ;;
    1) killed=yes check=$(grep -m1 -oE '^FAILED [^ ]+' "$dir.log" | sed 's/^FAILED //; s/.*analysis\/tests\///') ;;
    *) killed=broken check="pytest-exit-$rc" ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$mk" "$rc" "$killed" "${check:-failed}" $(( $(date +%s) - t0 ))
  rm -rf "$dir"
}
: >"$scratch/results"
for row in "${sel[@]}"; do
  IFS=$'\t' read -r id _ mk tests <<<"$row"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  one "$id" "$mk" "$tests" >>"$scratch/results" &
done
wait
{
  printf 'id\tkind\texit\tkilled\tcheck\tseconds\n'
  for row in "${sel[@]}"; do
    IFS=$'\t' read -r id _ <<<"$row"
    awk -F'\t' -v id="$id" '$1 == id' "$scratch/results"
  done
} >"$scratch/results.tsv"
mkdir -p "$(dirname "$results")" && cp "$scratch/results.tsv" "$results"
column -t -s $'\t' "$scratch/results.tsv" 2>/dev/null || cat "$scratch/results.tsv"
ids() { awk -F'\t' -v w="$1" 'NR > 1 && $4 == w {printf "%s%s", s, $1; s = ","}' "$scratch/results.tsv"; }
count() { [ -z "$1" ] && echo 0 || echo "$1" | tr ',' '\n' | wc -l; }
n=${#sel[@]} killed=$(awk -F'\t' 'NR > 1 && $4 == "yes"' "$scratch/results.tsv" | wc -l)
survived=$(ids no) broken=$(ids broken)
echo "mutants: $killed killed of $n ($(count "$survived") survived: ${survived:-none}; $(count "$broken") broken: ${broken:-none}) [analysis, pytest, $(( $(date +%s) - start )) s, results in $results]"
[ "$killed" = "$n" ]
