#!/bin/sh
# check_spills.sh - no kernel of kval may use a stack frame, spill registers or use local
# memory. For every object built from a .cu file of src/ and families/, `cuobjdump -res-usage`
# must report STACK:0 and LOCAL:0 for every function; where cuobjdump is missing (the CPU
# machines have only nvcc), each such .cu is compiled again with -Xptxas -v and every "Function
# properties" block must read "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads".
# Fails naming each offending kernel; skips (77) when CUDA is not configured.
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

cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump)}
if [ -n "$cuobjdump" ] && [ -x "$cuobjdump" ]; then
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
    awk -v src="$cu" '
      /Function properties for / { name = $NF; next }
      /bytes stack frame/ {
        n++
        if ($0 !~ /^[ \t]*0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/) {
          printf "check_spills: %s: %s: %s\n", src, name, $0; bad++
        }
      }
      END { printf "check_spills: %s: %d functions checked\n", src, n; exit bad ? 1 : 0 }' "$log" || fail=1
  done
fi
[ -z "${fail:-}" ] && echo "check_spills: no stack frames, spills or local memory" && exit 0
exit 1
