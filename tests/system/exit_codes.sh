#!/bin/sh
# exit_codes.sh - the documented exit codes: 0 all passed, 1 a case failed validation
# (--inject nan / scale / bitflip) or fingerprints disagree while every case passed, 2 usage or
# input errors (bad option, missing deck, existing output without --force), each with a clear
# message and no output file left.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
deck="$top_srcdir/inputs/smoke.deck"
rc=0
expect() { # code, description, command...
  want=$1; what=$2; shift 2
  "$@" >"$tmp/out" 2>&1; got=$?
  if [ "$got" -ne "$want" ]; then echo "FAIL: $what: exit $got, expected $want"; cat "$tmp/out"; rc=1
  else echo "ok: $what (exit $got)"; fi
}
expect 0 "clean run" "$KVAL" --backend cpu --quiet --only layernorm "$deck" -o "$tmp/ok.h5"
expect 2 "existing output without --force" "$KVAL" --backend cpu --quiet --only layernorm "$deck" -o "$tmp/ok.h5"
grep -q "exists" "$tmp/out" || { echo "FAIL: no 'exists' message"; rc=1; }
expect 0 "--force overwrites" "$KVAL" --backend cpu --quiet --force --only layernorm "$deck" -o "$tmp/ok.h5"
expect 2 "unknown option" "$KVAL" --frobnicate "$deck"
expect 2 "bad --mode" "$KVAL" --mode sideways "$deck"
expect 2 "missing deck" "$KVAL" --backend cpu "$tmp/no-such.deck" -o "$tmp/missing.h5"
[ ! -e "$tmp/missing.h5" ] || { echo "FAIL: output created for a missing deck"; rc=1; }
expect 2 "bad --set" "$KVAL" --backend cpu --set "fa2.headdim=sixty" "$deck" -o "$tmp/badset.h5"
[ ! -e "$tmp/badset.h5" ] || { echo "FAIL: output created for a bad --set"; rc=1; }
expect 1 "--inject nan fails validation" "$KVAL" --backend cpu --quiet --only rmsnorm --inject nan@0:0 "$deck" -o "$tmp/nan.h5"
grep -q "fail_nonfinite" "$tmp/out" || { echo "FAIL: nan injection not reported as fail_nonfinite"; rc=1; }
expect 1 "--inject scale fails validation" "$KVAL" --backend cpu --quiet --only rmsnorm --set "rmsnorm.precision=fp32:fp32" --inject scale@0:0 "$deck" -o "$tmp/scale.h5"
grep -q "fail_tolerance" "$tmp/out" || { echo "FAIL: scale injection not reported as fail_tolerance"; rc=1; }
expect 1 "--inject bitflip on rank 1 is a fingerprint disagreement" "$MPIRUN" -np 2 "$KVAL" --backend cpu --quiet --only gemm --inject bitflip@1:0 "$deck" -o "$tmp/flip.h5"
grep -q "FINGERPRINT MISMATCH.*rank 1" "$tmp/out" || { echo "FAIL: bitflip on rank 1 not named"; cat "$tmp/out"; rc=1; }
# a disagreement alone: a 1e-3 scale of rank 1's fp16-accumulation output changes bits within the
# reduced accumulator's tolerance, so every case passes and only the comparison fails the job
printf '[rmsnorm]\nprecision = fp16:fp16\nrows = 64\nhidden = 128\n' >"$tmp/fp.deck"
expect 1 "a fingerprint disagreement with every case passed" "$MPIRUN" -np 2 "$KVAL" --backend cpu --inject scale@1 "$tmp/fp.deck" -o "$tmp/fp.h5"
grep -q "2 passed.* 0 failed.* 2 fingerprint disagreements" "$tmp/out" || { echo "FAIL: not 2 passed, 0 failed, 2 disagreements"; cat "$tmp/out"; rc=1; }
exit $rc
