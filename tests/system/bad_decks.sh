#!/bin/sh
# bad_decks.sh - runs the kval binary on every malformed deck of tests/decks/bad and checks
# that it exits 2, prints the expected "DECK:LINE:COL: error: ..." message (the deck's last
# line, "# expect: LINE:COL: phrase", or "# expect: : phrase" for errors without a position),
# and creates no output file; a missing deck must fail the same way, naming the path and
# the system's reason. As controls, every deck of tests/decks/good must pass
# --dry-run (exit 0, no file), and a bad --set must fail like a bad deck line.
# The binary is $KVAL, else ../src/kval or src/kval from the build directory; exit 77
# (skip) when it has not been built.

here=$(cd "$(dirname "$0")" && pwd)
kval=${KVAL:-}
if [ -z "$kval" ]; then
  for candidate in ../src/kval src/kval; do
    if [ -x "$candidate" ]; then kval=$candidate; break; fi
  done
fi
if [ -z "$kval" ] || [ ! -x "$kval" ]; then
  echo "SKIP: kval binary not found (set KVAL or build src/kval)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_bad_decks.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0
checked=0

fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}

# A deck the parser wrongly accepts would start a whole CPU run: cap each run.
limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout 60"; fi

# run_kval NAME ARGS...: run kval with -o $tmp/NAME.h5, stdout/stderr into $tmp/NAME.{out,err}.
run_kval() {
  name=$1
  shift
  $limit "$kval" --backend cpu -o "$tmp/$name.h5" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
  status=$?
}

# expect_failure NAME WHERE PHRASE: exit 2, "WHERE: error:" and PHRASE on stderr, no file.
expect_failure() {
  name=$1 where=$2 phrase=$3
  before=$failures
  checked=$((checked + 1))
  [ "$status" -eq 2 ] || fail "$name: exit status $status, expected 2"
  grep -F -q -e "$where: error:" "$tmp/$name.err" || fail "$name: no '$where: error:' in: $(head -c 400 "$tmp/$name.err")"
  grep -F -q -e "$phrase" "$tmp/$name.err" || fail "$name: no '$phrase' in: $(head -c 400 "$tmp/$name.err")"
  [ ! -e "$tmp/$name.h5" ] || fail "$name: created an output file"
  [ "$failures" -ne "$before" ] || echo "ok $name: $where: $phrase"
}

for deck in "$here"/../decks/bad/*.deck; do
  name=$(basename "$deck" .deck)
  expect=$(sed -n 's/^# expect: //p' "$deck" | tail -n 1)
  if [ -z "$expect" ]; then
    fail "$name: no '# expect:' line"
    continue
  fi
  position=${expect%%: *}
  phrase=${expect#*: }
  if [ -n "$position" ]; then where="$deck:$position"; else where="$deck"; fi
  run_kval "$name" "$deck"
  expect_failure "$name" "$where" "$phrase"
done

missing="$tmp/no_such.deck"
run_kval missing_deck "$missing"
expect_failure missing_deck "$missing" "No such file or directory"

good="$here/../decks/good/all_defaults.deck"
run_kval set_factor --set "fa2.seqlen=128..4096 x1" "$good"
expect_failure set_factor "--set:1:22" "range factor must be an integer >= 2"
run_kval set_key --set "gemm.shapes=64x64x64" "$good"
expect_failure set_key "--set:1:6" "unknown key 'shapes' in [gemm]"
run_kval set_value --set "fa2.headdim=64 1000" "$good"
expect_failure set_value "--set:1:16" "value out of range of fa2.headdim (got '1000'"

for deck in "$here"/../decks/good/*.deck; do
  name=good_$(basename "$deck" .deck)
  before=$failures
  checked=$((checked + 1))
  run_kval "$name" --dry-run "$deck"
  [ "$status" -eq 0 ] || fail "$name: --dry-run exit status $status: $(head -c 400 "$tmp/$name.err")"
  [ ! -e "$tmp/$name.h5" ] || fail "$name: --dry-run created an output file"
  [ "$failures" -ne "$before" ] || echo "ok $name: --dry-run passes"
done

echo "bad_decks.sh: $checked runs, $failures failures"
[ "$failures" -eq 0 ]
