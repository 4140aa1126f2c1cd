#!/bin/sh
# bad_options.sh - malformed command lines given to the real binary (cpu backend): each
# must exit 2 (never crash, hang or start a run), print a message naming the option (or the
# file) and the bad value, and create no output file (nor PATH.part-*, PATH.journal-*). A few run under
# mpirun with 2 ranks: every rank exits 2, without MPI_Abort. tests/unit/test_cli.c checks
# the option parser's messages one by one; this checks the whole program around it.
# (Malformed decks: tests/system/bad_decks.sh with tests/decks/bad/*.deck.)
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_bad_options.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
deck="$top_srcdir/inputs/smoke.deck"
out="$tmp/out.h5"
limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout 60"; fi
checked=0 failures=0
: >"$tmp/exists.h5"

# bad PHRASE ARGS...: kval ARGS (after --backend cpu) exits 2, prints PHRASE, makes no file.
bad() {
  phrase=$1; shift
  checked=$((checked + 1))
  $limit "$@" >"$tmp/log" 2>&1 </dev/null; got=$?
  problem=
  [ "$got" -eq 2 ] || problem="exit $got, expected 2"
  grep -F -q -e "$phrase" "$tmp/log" || problem="${problem:+$problem; }no '$phrase'"
  for f in "$out" "$out".part* "$out".journal* "$tmp/other.h5" "$tmp/other.h5".part* "$tmp/other.h5".journal*; do
    [ ! -e "$f" ] || problem="${problem:+$problem; }created $(basename "$f")"
  done
  rm -f "$out" "$out".part* "$out".journal* "$tmp/other.h5" "$tmp/other.h5".part* "$tmp/other.h5".journal*
  if [ -n "$problem" ]; then
    failures=$((failures + 1))
    echo "FAIL: kval $*: $problem"
    head -c 600 "$tmp/log"
  else
    echo "ok: $(echo "$*" | sed "s|$KVAL|kval|; s|$tmp/||g; s|$top_srcdir/||g"): $phrase"
  fi
}
k="$KVAL --backend cpu"
many_sets=
i=0
while [ $i -le 64 ]; do many_sets="$many_sets --set fa2.heads=2"; i=$((i + 1)); done

bad "unknown option '--frobnicate'" $k --frobnicate "$deck" -o "$out"
bad "unknown option '-x'" $k -x "$deck" -o "$out"
bad "unknown option '--frobnicate'" $k --list --frobnicate
bad "--backend: invalid value 'gpu' (expected cuda, cpu or auto)" $KVAL --backend=gpu "$deck" -o "$out"
bad "--backend: missing value" $KVAL "$deck" -o "$out" --backend
bad "--mode: invalid value 'sideways' (expected fleet or split)" $k --mode sideways "$deck" -o "$out"
bad "--only: invalid value ''" $k --only= "$deck" -o "$out"
bad "--only: invalid value 'fa2,,gemm'" $k --only fa2,,gemm "$deck" -o "$out"
bad "--only: unknown family 'bogus'" $k --only gemm,bogus "$deck" -o "$out"
bad "--set: invalid value 'fa2.seqlen' (expected SECTION.KEY=VALUES" $k --set fa2.seqlen "$deck" -o "$out"
bad "--set:1:13: error: not an integer" $k --set "fa2.headdim=sixty" "$deck" -o "$out"
bad "--set:1:1: error: unknown section [nosuch]" $k --set "nosuch.key=1" "$deck" -o "$out"
bad "--set: too many overrides (expected at most 64" $k $many_sets "$deck" -o "$out"
bad "--seed: invalid value '-1'" $k --seed -1 "$deck" -o "$out"
bad "--seed: invalid value '18446744073709551616'" $k --seed 18446744073709551616 "$deck" -o "$out"
bad "--seed: invalid value ''" $k --seed= "$deck" -o "$out"
bad "--inject: invalid value 'flip@0'" $k --inject flip@0 "$deck" -o "$out"
bad "--inject: invalid value 'bitflip@1:x'" $k --inject bitflip@1:x "$deck" -o "$out"
bad "--inject nan@5: rank 5 does not exist" $k --inject nan@5 "$deck" -o "$out"
bad "--dry-run: takes no value" $k --dry-run=yes "$deck"
bad "--force: takes no value" $k --force=1 "$deck" -o "$out"
bad "-o: empty file name" $k -o "" "$deck"
bad "unexpected argument" $k "$deck" "$deck" -o "$out"
bad "missing DECK" $k -o "$out"
bad "--resume: missing value" $k "$deck" --resume
bad "--retry-errors needs --resume FILE" $k --retry-errors "$deck" -o "$out"
bad "--force and --resume exclude each other" $k --resume "$tmp/exists.h5" --force "$deck"
bad "name different files" $k --resume "$tmp/exists.h5" -o "$tmp/other.h5" "$deck"
bad "output file '$tmp/exists.h5' exists; use --force" $k "$deck" -o "$tmp/exists.h5"
bad "is a directory; give a file name with -o" $k --force "$deck" -o "$tmp"
bad "cannot read the deck: Is a directory" $k "$tmp" -o "$out"
bad "cannot open the deck: No such file or directory" $k "$tmp/none.deck" -o "$out"
# Outputs that are not regular files, or are the input, are refused even with --force and
# left as they are; a deck that is not a regular file is refused at once (a FIFO used to
# block kval forever; `limit` above catches a hang).
mkfifo "$tmp/fifo"
ln -s "$tmp/exists.h5" "$tmp/link.h5"
cp "$deck" "$tmp/deck.deck" && ln "$tmp/deck.deck" "$tmp/deck.hardlink"
bad "output file '/dev/null' is a character device, not a regular file" $k --force "$deck" -o /dev/null
[ -c /dev/null ] || { failures=$((failures + 1)); echo "FAIL: /dev/null is no longer a character device"; }
bad "output file '$tmp/fifo' is a FIFO (named pipe), not a regular file" $k --force "$deck" -o "$tmp/fifo"
bad "output file '$tmp/link.h5' is a symbolic link, not a regular file" $k --force "$deck" -o "$tmp/link.h5"
bad "output file '$tmp/deck.deck' is the deck '$tmp/deck.deck'" $k --force "$tmp/deck.deck" -o "$tmp/deck.deck"
bad "output file '$tmp/deck.hardlink' is the deck" $k --force "$tmp/deck.deck" -o "$tmp/deck.hardlink"
cmp -s "$deck" "$tmp/deck.deck" || { failures=$((failures + 1)); echo "FAIL: the deck was written over"; }
bad "the deck is a FIFO (named pipe), not a regular file" $k "$tmp/fifo" -o "$out"
bad "the deck is a character device, not a regular file" $k /dev/zero -o "$out"
bad "output file '/dev/null' is a character device, not a regular file: kval writes only regular files (give another file name with --resume)" $k "$deck" --resume /dev/null
# --dry-run refuses what the run would refuse.
bad "output file '$tmp/exists.h5' exists; use --force" $k --dry-run "$deck" -o "$tmp/exists.h5"
bad "output file '/dev/null' is a character device" $k --dry-run --force "$deck" -o /dev/null
bad "--resume $tmp/none.h5: No such file or directory" $k --dry-run "$deck" --resume "$tmp/none.h5"
# What the user typed is shown escaped: a right-to-left override is \u{202e}, never raw.
bad "--mode: invalid value 'fleet\u{202e}'" $k --mode "$(printf 'fleet\342\200\256')" "$deck" -o "$out"
if grep -q "$(printf '\342\200\256')" "$tmp/log"; then failures=$((failures + 1)); echo "FAIL: a raw U+202E in the message"; fi
bad "output file '$tmp/exists.h5\u{200b}' is a directory" $k "$deck" -o "$(mkdir "$tmp/exists.h5$(printf '\342\200\213')" && printf '%s' "$tmp/exists.h5")$(printf '\342\200\213')"

# Two ranks: every rank agrees and exits 2.
bad "--set:1:13: error: not an integer" $MPIRUN -np 2 $k --set "fa2.headdim=sixty" "$deck" -o "$out"
bad "--inject nan@2: rank 2 does not exist" $MPIRUN -np 2 $k --inject nan@2 "$deck" -o "$out"
bad "output file '$tmp/exists.h5' exists; use --force" $MPIRUN -np 2 $k "$deck" -o "$tmp/exists.h5"

echo "bad_options.sh: $checked command lines, $failures failures"
[ "$failures" -eq 0 ]
