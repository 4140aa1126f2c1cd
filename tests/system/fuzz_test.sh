#!/bin/sh
# fuzz_test.sh - bounded libFuzzer runs of the input parsers, with AddressSanitizer and
# UndefinedBehaviorSanitizer: tests/fuzz/fuzz_deck.c (deck parser, --set, plan builder;
# seeds: every deck of tests/decks and inputs/) and tests/fuzz/fuzz_cli.c (option parser,
# --inject parsing). Any crash, leak, undefined behaviour, input slower than 10 s, or broken
# message contract (see the targets) fails the test and prints the input. The targets are
# compiled here with clang through the MPI wrapper (check.c needs mpi.h and hdf5.h).
# FUZZ_SECONDS (default 20) bounds each target; both run at once. FUZZ_SEED fixes the seed.
# Exit 77 (skip) when clang cannot link -fsanitize=fuzzer (Debian: apt-get install clang
# libclang-rt-14-dev).
set -u
: "${top_srcdir:?}"
CLANG=${CLANG:-clang}
MPICC=${MPICC:-mpicc}
seconds=${FUZZ_SECONDS:-20}
seed=${FUZZ_SEED:-$(date +%s)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_fuzz.XXXXXX") && trap 'rm -rf "$tmp"' EXIT

command -v "$CLANG" >/dev/null 2>&1 || { echo "SKIP: $CLANG not found (apt-get install clang libclang-rt-14-dev)"; exit 77; }
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$tmp/probe.c"
"$CLANG" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" >"$tmp/probe.log" 2>&1 ||
  { echo "SKIP: $CLANG cannot link -fsanitize=fuzzer (apt-get install libclang-rt-14-dev)"; cat "$tmp/probe.log"; exit 77; }

if [ -z "${HDF5_CFLAGS+x}" ]; then
  flavour=hdf5-serial
  [ "${KV_HDF5_FLAVOUR:-serial}" = parallel ] && flavour=hdf5-openmpi
  HDF5_CFLAGS=$(pkg-config --cflags "$flavour") HDF5_LIBS=$(pkg-config --libs "$flavour") ||
    { echo "FAIL: pkg-config $flavour (set HDF5_CFLAGS and HDF5_LIBS)"; exit 1; }
fi
s="$top_srcdir/src" f="$top_srcdir/families" # the families: their library sources, no tests
cc() { # OUT SOURCES...: the MPI wrapper with clang as its compiler
  out=$1; shift
  OMPI_CC=$CLANG MPICH_CC=$CLANG "$MPICC" -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$s" -I"$top_srcdir" $HDF5_CFLAGS -o "$tmp/$out" "$@" $HDF5_LIBS -lm >"$tmp/$out.build" 2>&1 ||
    { echo "FAIL: cannot build $out"; cat "$tmp/$out.build"; exit 1; }
}
common="$s/core/check.c $s/core/escape.c $s/core/dtype.c $s/run/inject.c $s/numerics/halfprec.c $s/numerics/fp8.c"
cc fuzz_deck "$top_srcdir/tests/fuzz/fuzz_deck.c" $common "$s/input/deck.c" "$s/input/plan.c" "$s/input/plan_values.c" "$s/input/plan_assign.c" "$s/input/estimate.c" \
  $(find "$f" -name '*.c' ! -name 'test_*' ! -path '*/testkit/*' ! -path '*/bench/*' | sort) "$s/numerics/errstats.c" "$s/numerics/tolerance.c" "$s/numerics/fingerprint.c"
cc fuzz_cli "$top_srcdir/tests/fuzz/fuzz_cli.c" $common "$s/input/cli.c"

# Seeds: every deck we have (bad ones included) and a few command lines.
mkdir -p "$tmp/deck" "$tmp/cli"
cp "$top_srcdir"/tests/decks/bad/*.deck "$top_srcdir"/tests/decks/good/*.deck "$top_srcdir"/inputs/*.deck "$tmp/deck/"
printf '[fa2]\nheads = 2\n\001fa2.seqlen=64..256 x2\001run.seed=3' >"$tmp/deck/with_sets"
printf -- '--backend\0cpu\0--set\0fa2.seqlen=1024 2048\0-o\0out.h5\0inputs/smoke.deck' >"$tmp/cli/run"
printf -- '--inject\0bitflip@1:0\0--inject=nan@0\0--mode=split\0--only\0fa2,gemm\0d.deck' >"$tmp/cli/inject"
printf -- '--resume\0f.h5\0--retry-errors\0--seed\0018446744073709551615\0-q\0d.deck' >"$tmp/cli/resume"
printf -- '--help\0--list\0--version\0--dry-run\0--force\0--\0-d.deck' >"$tmp/cli/flags"

fuzz() { # NAME EXTRA...
  name=$1; shift
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$tmp/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -seed="$seed" \
    -print_final_stats=1 -artifact_prefix="$tmp/$name-" "$@" "$tmp/${name#fuzz_}" >"$tmp/$name.log" 2>&1
}
echo "fuzz_test: $seconds s per target, seed $seed"
fuzz fuzz_deck -dict="$top_srcdir/tests/fuzz/deck.dict" & deck_pid=$!
fuzz fuzz_cli & cli_pid=$!
rc=0
for t in deck cli; do
  if [ $t = deck ]; then wait $deck_pid; else wait $cli_pid; fi
  st=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/fuzz_$t.log")
  if [ "$st" -ne 0 ]; then
    rc=1
    echo "FAIL: fuzz_$t found a problem (exit $st) after ${runs:-?} inputs; its report:"
    grep -v '^"' "$tmp/fuzz_$t.log" | tail -n 40
  else
    echo "ok fuzz_$t: ${runs:-?} inputs in $seconds s, no crash, leak, undefined behaviour, hang or broken message"
  fi
done
exit $rc
