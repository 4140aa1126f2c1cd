#!/bin/sh
# coverage_test.sh - the shipped decks reach every kernel path: `kval --dry-run` lists, per
# family, every tag its dispatcher can take (kv_family.path_tag: each instantiation, tails,
# grids, load/store paths, alpha/beta, input distributions) against the tags of the planned
# cases (kv_family.path, from the rules the dispatchers call). fleet.deck, default.deck and
# health.deck must reach all of them on the cuda backend (planned by name: no GPU needed), and the cases'
# tags must be exactly the declared ones (no tag a family forgot to declare); a deck without
# [gemm.scale] must be reported as missing alpha and beta, one without scale_b as missing FP8's
# scale of B; default.deck's named path sections
# must be fleet.deck's, verbatim; without [gemm.waves] the persistent GEMM's second tile (and
# without [gemm.fp8wide] the wide FP8 tile) and
# with one sequence health.deck's decode batch index, with as many heads as sequences fa2's
# and fa2bwd's sequence strides must be reported missing; smoke.deck must
# reach the cpu emulation's branches on the cpu backend. Environment (set by `make check`):
# KVAL, top_srcdir.
set -u
: "${KVAL:?}" "${top_srcdir:?}"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
for d in fleet default health; do
  "$KVAL" --backend cuda --dry-run --verbose "$top_srcdir/inputs/$d.deck" >"$tmp/$d.out" 2>"$tmp/$d.err" ||
    { fail "$d.deck: --dry-run exit $?"; cat "$tmp/$d.err"; continue; }
  line=$(grep '^kernel paths:' "$tmp/$d.out")
  n=$(printf '%s\n' "$line" | sed -n 's/^kernel paths: every one of the \([0-9]*\) reached.*/\1/p')
  if [ -z "$n" ] || [ "$n" -lt 200 ]; then
    fail "$d.deck: not every kernel path reached: $line"; grep '^paths of' "$tmp/$d.out" | grep -v ': all '
    continue
  fi
  used=$(sed -n 's/^path .* => //p' "$tmp/$d.out" | tr ' ' '\n' | sort -u | grep -c .)
  [ "$used" -eq "$n" ] || fail "$d.deck: the cases take $used distinct tags, the families declare $n"
  [ $rc -ne 0 ] || echo "ok $d.deck: all $n kernel paths reached ($(grep -c '^path ' "$tmp/$d.out") cases)"
done
# default.deck and health.deck carry fleet.deck's named path sections ([FAMILY.NAME]) verbatim,
# comments aside, so a mutant fleet.deck's path cases kill meets the same cases in both.
named() { sed 's/#.*//; s/[[:space:]]*$//' "$1" | awk '/^\[/ { keep = index($0, ".") > 0 } keep && NF'; }
named "$top_srcdir/inputs/fleet.deck" >"$tmp/fleet.named"
for d in default health; do
  named "$top_srcdir/inputs/$d.deck" >"$tmp/$d.named"
  if cmp -s "$tmp/fleet.named" "$tmp/$d.named" && [ -s "$tmp/fleet.named" ]; then
    echo "ok $d.deck has fleet.deck's $(grep -c '^\[' "$tmp/fleet.named") path sections verbatim"
  else
    fail "the named sections of $d.deck and fleet.deck differ:"; diff "$tmp/fleet.named" "$tmp/$d.named" | head -n 20
  fi
done
# missing WHAT DECK TAG...: the dry run of DECK (a shipped deck with a gap cut in) must report
# each TAG not reached in its family's line: the check can fail.
missing() {
  what=$1 deck=$2
  shift 2
  "$KVAL" --backend cuda --dry-run "$deck" >"$deck.out" 2>&1
  for t in "$@"; do
    grep "^paths of ${t%%:*}:" "$deck.out" | grep -q "not reached: .*$t" || fail "$what: $t not reported missing"
  done
}
# Without [gemm.scale] nothing has alpha != 1 or beta != 0.
sed '/^\[gemm.scale\]/,/^$/d' "$top_srcdir/inputs/fleet.deck" >"$tmp/noscale.deck"
missing "without [gemm.scale]" "$tmp/noscale.deck" gemm:kval-wgmma:alpha gemm:kval-mma:beta gemm:cublas:alpha
grep -q '^kernel paths: .* not reached' "$tmp/noscale.deck.out" || fail "without [gemm.scale]: no 'not reached' summary"
# With scale_b left at 1 no FP8 case shows a dropped scale of B.
sed '/^scale_b = /d' "$top_srcdir/inputs/fleet.deck" >"$tmp/noscaleb.deck"
missing "without scale_b" "$tmp/noscaleb.deck" gemm:kval-wgmma:fp8:scale-b gemm:cublas:fp8:scale-b
# Without [gemm.waves], [gemm.fp8waves] and [gemm.fp8wide] no CTA of kval-wgmma's mid, small or
# FP8 tiles goes round its persistent tile loop again, and nothing runs the wide FP8 tile.
sed '/^\[gemm.waves\]/,/^$/d; /^\[gemm.fp8waves\]/,/^$/d; /^\[gemm.fp8wide\]/,/^$/d' "$top_srcdir/inputs/fleet.deck" >"$tmp/nowaves.deck"
missing "without [gemm.waves]" "$tmp/nowaves.deck" gemm:kval-wgmma:tile128x128:second-tile \
  gemm:kval-wgmma:tile64x128:second-tile gemm:kval-wgmma:fp8:tile128x128:second-tile \
  gemm:kval-wgmma:fp8:tile128x256 gemm:kval-wgmma:fp8:tile128x256:second-tile
# health.deck with one sequence in its decode sections has no case whose sequence index matters.
awk '/^\[/ { dec = index($0, "[decode") == 1 } dec && /^batch = / { $0 = "batch = 1" } 1' "$top_srcdir/inputs/health.deck" >"$tmp/onebatch.deck"
missing "health.deck with batch 1 in its decode sections" "$tmp/onebatch.deck" decode:batch=many
# health.deck with as many heads as sequences in [fa2.cross] and [fa2bwd.dist] has no case where
# a sequence's stride written with the batch count for the heads' is wrong.
awk '/^\[/ { sec = ($1 == "[fa2.cross]" || $1 == "[fa2bwd.dist]") } sec && /^heads = / { $0 = "heads = 2" } 1' \
  "$top_srcdir/inputs/health.deck" >"$tmp/squarebh.deck"
missing "health.deck with 2 sequences of 2 heads" "$tmp/squarebh.deck" fa2:kval-wgmma:batch-stride \
  fa2:kval-mma:batch-stride fa2bwd:kval-mma:batch-stride
# smoke.deck on the cpu backend: the branches of the emulations (the cpu backend's kernels).
"$KVAL" --backend cpu --dry-run --verbose "$top_srcdir/inputs/smoke.deck" >"$tmp/smoke.out" 2>&1 || fail "smoke.deck: --dry-run"
for t in fa2:kval-mma:q-tail fa2:kval-mma:k-tail fa2:kval-mma:k-blocks fa2:kval-wgmma:q-tail fa2:kval-wgmma:k-tail fa2:kval-wgmma:k-blocks \
  fa2:kval-mma:d64:fp16:fp32:causal fa2:kval-mma:d64:bf16:bf16:full \
  gemm:kval-mma:m-tail gemm:kval-mma:n-tail gemm:kval-mma:k-tail gemm:kval-mma:alpha gemm:kval-mma:beta gemm:kval-mma:fp16:fp32:nt gemm:kval-mma:fp16:fp32:tn \
  gemm:kval-wgmma:alpha gemm:kval-wgmma:beta gemm:kval-wgmma:fp8:scale-a gemm:kval-wgmma:fp8:scale-b \
  layernorm:fp16:fp32:peeled-8x1 layernorm:fp16:fp16:serial layernorm:rows-tail \
  rmsnorm:fp16:fp32:peeled-8x1 rmsnorm:bf16:bf16:serial rmsnorm:rows-tail \
  decode:single decode:split decode:ctx-tail decode:slab-tail decode:warps-idle decode:rows-partial decode:dist=large_logits \
  decode:kv-scale=single decode:kv-scale=combine decode:batch=many \
  fa2:kval-mma:batch-stride fa2:kval-wgmma:batch-stride fa2bwd:kval-mma:batch-stride \
  fa2:kval-mma:cross fa2:kval-wgmma:cross fa2:kval-mma:dist=uniform fa2:kval-wgmma:dist=large_logits \
  gemm:kval-mma:dist=near_max gemm:kval-wgmma:dist=uniform layernorm:dist=offset rmsnorm:dist=offset \
  layernorm:large-eps rmsnorm:large-eps; do
  sed -n 's/^path .* => //p' "$tmp/smoke.out" | tr ' ' '\n' | grep -qx "$t" || fail "smoke.deck (cpu): no case takes $t"
done
[ $rc -eq 0 ] && echo "ok coverage: fleet.deck, default.deck and health.deck reach every kernel path; smoke.deck the emulations' branches"
exit $rc
