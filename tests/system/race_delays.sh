#!/bin/sh
# race_delays.sh - the mutation suite's gpu-race build (configure --enable-race-delays, which
# compiles the kernels with KVAL_RACE_DELAYS=1) builds on a machine without a GPU, and its delays
# are where families/device/race_delay.cuh says: one instantiation file of every family and
# kernel kind (the norms and decode: __syncthreads; kval-mma GEMM, FA2 forward and backward:
# cp.async waits; kval-wgmma GEMM, FA2 forward and backward: named barriers and mbarriers) is
# compiled to PTX twice, with and without KVAL_RACE_DELAYS, and every kernel that synchronises
# (bar.sync, cp.async.wait_group, mbarrier.try_wait) must hold more nanosleep instructions in
# the first than in the second. A typo in the race path would otherwise show first on a GPU,
# as a gpu-race baseline that does not build. Skips (77) when CUDA is not configured.
# Environment (automake sets them): top_srcdir, top_builddir, NVCC, NVCCFLAGS.
: "${top_srcdir:=.}" "${top_builddir:=.}"
[ -n "${NVCC:-}" ] && command -v "$NVCC" >/dev/null 2>&1 || { echo "SKIP: CUDA not configured"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval-race.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
# the build's flags less its GPU targets and -Xptxas -v (PTX for sm_90a, the kernels' arch)
flags=$(echo "${NVCCFLAGS:-}" | sed 's/-gencode [^ ]*//g; s/-Xptxas -v//g; s/-DKVAL_RACE_DELAYS=1//g')
files="families/norm/inst/norm_fp16.cu families/decode/inst/decode_fp16.cu families/gemm/inst/gemm_mma_fp16.cu
families/fa2/inst/fa2_mma_d64.cu families/fa2bwd/inst/fa2bwd_mma_d64.cu families/gemm/inst/gemm_wgmma_fp16_fp32.cu
families/fa2/inst/fa2_wgmma_d64.cu families/fa2bwd/inst/fa2bwd_wgmma_d64.cu"
# per_kernel PTX: "kernel synchronisations nanosleeps" for every .entry
per_kernel() {
  awk '/\.entry / { name = $0; sub(/.*\.entry[ \t]+/, "", name); sub(/\(.*/, "", name); k[name] = 1 }
       name != "" && /^[ \t]*(bar\.sync|barrier\.sync|cp\.async\.wait_group|mbarrier\.try_wait)/ { s[name]++ }
       name != "" && /^[ \t]*nanosleep/ { n[name]++ }
       END { for (x in k) print x, s[x] + 0, n[x] + 0 }' "$1" | sort
}
rc=0 checked=0
for f in $files; do
  b=$(basename "$f" .cu)
  for mode in plain race; do
    def=; [ $mode = race ] && def=-DKVAL_RACE_DELAYS=1
    # shellcheck disable=SC2086 # flags are words
    "$NVCC" $flags -ptx -arch=sm_90a $def -I"$top_srcdir/src" -I"$top_srcdir" -I"$top_builddir/src" \
      -I"$top_builddir" -DHAVE_CONFIG_H "$top_srcdir/$f" -o "$tmp/$b.$mode.ptx" 2>"$tmp/$b.$mode.log" ||
      { echo "FAIL: $f does not compile ($mode)"; tail -n 20 "$tmp/$b.$mode.log"; rc=1; continue 2; }
    per_kernel "$tmp/$b.$mode.ptx" >"$tmp/$b.$mode.k"
  done
  join "$tmp/$b.plain.k" "$tmp/$b.race.k" >"$tmp/$b.j"
  [ "$(wc -l <"$tmp/$b.j")" -eq "$(wc -l <"$tmp/$b.plain.k")" ] && [ -s "$tmp/$b.j" ] ||
    { echo "FAIL: $f: the two builds hold different kernels (or none)"; rc=1; continue; }
  # fields: kernel, plain syncs, plain sleeps, race syncs, race sleeps
  bad=$(awk '$2 > 0 && $5 <= $3 { print $1 }' "$tmp/$b.j")
  n=$(awk '$2 > 0' "$tmp/$b.j" | wc -l)
  [ "$n" -gt 0 ] || { echo "FAIL: $f: no kernel that synchronises (the parser found none)"; rc=1; }
  [ -z "$bad" ] || { echo "FAIL: $f: kernels without their race delays:"; echo "$bad" | head -n 5; rc=1; }
  checked=$((checked + n))
done
[ $rc -eq 0 ] && echo "ok race delays: $checked synchronising kernels of $(echo $files | wc -w) files hold their delays only in the race build"
exit $rc
