#!/bin/sh
# check_spills.sh - no kernel of kval may use a stack frame, spill registers or use local
# memory. For every object built from a .cu file of src/ and families/, the build's own ptxas
# report (OBJ.o.ptxas, written by the .cu.o rule of Makefile.am with -Xptxas -v) must read "0
# bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in every "Function properties"
# block and hold no "wgmma.mma_async instructions are serialized" (ptxas's C7514: a kernel
# whose asynchronous tensor-core groups ptxas had to wait for at once, so the overlap the
# kernel was written for is gone). Where an object has no report at least as new as itself (built by another rule), every
# object is read with `cuobjdump -res-usage` instead (STACK:0 and LOCAL:0 for every function),
# and where cuobjdump is missing too, each .cu is compiled again with -Xptxas -v. Before
# reading anything the test checks its own parser on a report with a spill (it must fail) and
# one without. Fails naming each offending kernel; skips (77) when CUDA is not configured.
# Environment (automake sets the first two): top_srcdir, top_builddir, CUOBJDUMP, NVCC,
# NVCCFLAGS (the last two default to the values in $top_builddir/Makefile).
: "${top_srcdir:=.}" "${top_builddir:=.}"

# the CUDA sources of the build (tests and bench drivers aside), and their objects
sources=$(cd "$top_srcdir" && find src families -name '*.cu' ! -path '*/bench/*' | sort)
objs=
for cu in $sources; do
  o="$top_builddir/${cu%.cu}.o"
  [ -f "$o" ] && objs="$objs $o"
done
if [ -z "$objs" ]; then
  echo "check_spills: no CUDA objects under $top_builddir (CUDA not configured or not built)"
  exit 77
fi
log=${TMPDIR:-/tmp}/check_spills.$$
trap 'rm -f "$log"' EXIT

# ptxas_report NAME < REPORT: every "Function properties" block must say 0 bytes of stack frame
# and spills; prints each offending function and the count checked; nonzero when any offends.
ptxas_report() {
  awk -v src="$1" '
    /Function properties for / { name = $NF; next }
    /wgmma.mma_async instructions are serialized/ { printf "check_spills: %s: %s\n", src, $0; bad++; next }
    /bytes stack frame/ {
      n++
      if ($0 !~ /^[ \t]*0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/) {
        printf "check_spills: %s: %s: %s\n", src, name, $0; bad++
      }
    }
    END { printf "check_spills: %s: %d functions checked\n", src, n; exit bad ? 1 : 0 }'
}

# the parser itself: a spilling kernel must fail it, a clean one pass
spill='ptxas info    : Function properties for _Z6kernelv
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads'
clean='ptxas info    : Function properties for _Z6kernelv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads'
serial="ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions reading accumulator registers of a wgmma between start and end of the pipeline stage in the function '_Z6kernelv'
$clean"
if printf '%s\n' "$spill" | ptxas_report self-check > /dev/null || printf '%s\n' "$serial" | ptxas_report self-check > /dev/null ||
  ! printf '%s\n' "$clean" | ptxas_report self-check > /dev/null; then
  echo "check_spills: the report parser does not tell a spilling or serialized kernel from a clean one"
  exit 1
fi

reports=1
for o in $objs; do
  # a report older than its object belongs to an earlier build of it
  [ -f "$o.ptxas" ] && [ ! "$o.ptxas" -ot "$o" ] || reports=
done
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump)}
if [ -n "$reports" ]; then
  echo "check_spills: reading the build's ptxas reports (OBJ.o.ptxas)"
  for o in $objs; do
    ptxas_report "$o" < "$o.ptxas" || fail=1
  done
elif [ -n "$cuobjdump" ] && [ -x "$cuobjdump" ]; then
  # Lines " Function NAME:" are followed by "REG:n STACK:n SHARED:n LOCAL:n ...".
  for o in $objs; do
    "$cuobjdump" -res-usage "$o" > "$log" 2>&1 || { echo "check_spills: $cuobjdump -res-usage $o failed"; cat "$log"; exit 1; }
    # an object of host code only (no Function lines) passes; Function lines without a
    # resource line mean the format changed, which fails
    awk -v obj="$o" '
      /^[ \t]*Function / { name = $2; sub(/:$/, "", name); nf++; next }
      /STACK:/ {
        stack = $0; sub(/.*STACK:/, "", stack); sub(/[^0-9].*/, "", stack)
        local = $0; sub(/.*LOCAL:/, "", local); sub(/[^0-9].*/, "", local)
        n++
        if (stack + 0 != 0 || local + 0 != 0) { printf "check_spills: %s: %s: STACK %s LOCAL %s\n", obj, name, stack, local; bad++ }
      }
      END { printf "check_spills: %s: %d functions checked\n", obj, n; exit bad ? 1 : (n < nf ? 2 : 0) }' "$log"
    rc=$?
    [ $rc -eq 2 ] && { echo "check_spills: unexpected cuobjdump -res-usage format for $o"; cat "$log"; exit 1; }
    [ $rc -ne 0 ] && fail=1
  done
else
  if [ -z "${NVCC:-}" ] || [ -z "${NVCCFLAGS:-}" ]; then
    mk="$top_builddir/Makefile"
    NVCC=${NVCC:-$(sed -n 's/^NVCC = //p' "$mk" 2> /dev/null)}
    NVCCFLAGS=${NVCCFLAGS:-$(sed -n 's/^NVCCFLAGS = //p' "$mk" 2> /dev/null)}
  fi
  [ -n "$NVCC" ] || { echo "check_spills: neither cuobjdump nor nvcc known"; exit 77; }
  for cu in $sources; do
    cu="$top_srcdir/$cu"
    # shellcheck disable=SC2086
    "$NVCC" $NVCCFLAGS -Xptxas -v -I"$top_srcdir/src" -I"$top_srcdir" -I"$top_builddir/src" -I"$top_builddir" \
      -DHAVE_CONFIG_H -c -o /dev/null "$cu" > "$log" 2>&1 || { echo "check_spills: $NVCC failed on $cu"; cat "$log"; exit 1; }
    ptxas_report "$cu" < "$log" || fail=1
  done
fi
[ -z "${fail:-}" ] && echo "check_spills: no stack frames, spills, local memory or serialized wgmma" && exit 0
exit 1
