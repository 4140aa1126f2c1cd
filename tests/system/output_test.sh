#!/bin/sh
# output_test.sh - the HDF5 output module end to end, in the flavour this build uses:
# tests/unit/test_output under mpirun with 1, 2 and 4 ranks (create, rounds of writes,
# fingerprints, close, refusal of an existing file, --force, resume and its mismatches, split
# mode), every file it leaves checked with check_layout.py (h5py + xarray) and
# check_layout_h5dump.sh (h5dump), a job killed through the fatal path, the two checkers
# shown to reject files with a detached scale, a filled-in not-run cell or a missing /ranks
# field, and check_layout.py to reject units other than a dataset's name implies, CF
# flag_values off by one and a family parameter other than the deck's. Environment (set by `make check`): top_srcdir, top_builddir, MPIRUN, PYTHON, H5DUMP.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
MPIRUN=${MPIRUN:-mpirun}
PYTHON=${PYTHON:-python3}
H5DUMP=${H5DUMP:-h5dump}
OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
export H5DUMP OMPI_MCA_rmaps_base_oversubscribe
prog=$top_builddir/tests/unit/test_output
layout_version=$(sed -n 's/^#define KV_LAYOUT_VERSION \([0-9]*\)$/\1/p' "$top_srcdir/src/output/internal.h")
layout() { "$PYTHON" "$top_srcdir/tests/system/check_layout.py" "$@"; }
have_h5dump=yes
h5layout() { [ $have_h5dump = no ] || sh "$top_srcdir/tests/system/check_layout_h5dump.sh" "$@"; }

if ! command -v "$H5DUMP" >/dev/null 2>&1; then
  echo "output_test: no h5dump ($H5DUMP): the h5dump layout checks are skipped" >&2
  have_h5dump=no
fi
if [ ! -x "$prog" ]; then
  echo "output_test: $prog is not built" >&2
  exit 99
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kval-output-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect_fail WHAT PATTERN COMMAND...: the command fails and says PATTERN on stderr.
expect_fail() {
  what=$1 pattern=$2
  shift 2
  if "$@" >"$work/out" 2>"$work/err"; then
    fail "$what: accepted"
  elif ! grep -q -- "$pattern" "$work/err"; then
    fail "$what: no '$pattern' in: $(head -n 3 "$work/err")"
  fi
}

for np in 1 2 4; do
  dir=$work/np$np
  mkdir "$dir"
  echo "== test_output with $np rank(s)"
  if ! $MPIRUN -np $np "$prog" "$dir" >"$dir/log" 2>&1; then
    fail "test_output -np $np"
    tail -n 40 "$dir/log" >&2
    continue
  fi
  grep '^--\|checks' "$dir/log"
  grep -q "kval: output file '$dir/out.h5' exists; use --force to overwrite or --resume $dir/out.h5 to continue it" \
    "$dir/log" || fail "-np $np: no clear refusal of the existing file"
  # each refused resume says why, naming both values
  ranks_msg="written by $np ranks, this run has 1"
  [ $np -gt 1 ] || ranks_msg="written with seed 42"
  for pattern in "written with seed 42, this run has seed 43" \
    "written with mode 'fleet', this run has mode 'split'" \
    "first at deck line 2: file has 'headdim = 64 128', this run has 'headdim = 64 256'" \
    "written with backend 'cpu', this run has backend 'cuda'" "the file has no group '/tgemm'" \
    "/tfa/status has length 2 along headdim, this run's plan needs 3" "missing.h5: No such file or directory" \
    "text.h5: not an HDF5 file" "plain.h5: not a kval output file" \
    "layout_version 99, this kval writes layout_version $layout_version" "$ranks_msg"; do
    grep -q -- "$pattern" "$dir/log" || fail "-np $np: no message '$pattern'"
  done
  for f in out split; do
    h5layout "$dir/$f.h5" $np || fail "check_layout_h5dump $f.h5 -np $np"
  done

  echo "== a job with $np rank(s) killed through the fatal path"
  if $MPIRUN -np $np "$prog" --die "$dir" >"$dir/die.log" 2>&1; then
    fail "--die -np $np: the job did not fail"
  fi
  grep -q "simulated failure" "$dir/die.log" || fail "--die -np $np: no fatal report"
  $MPIRUN -np 1 "$prog" --check-died "$dir" $np >"$dir/died.log" 2>&1 || {
    fail "--check-died -np $np"
    cat "$dir/died.log" >&2
  }
  layout "$dir/out.h5" "$dir/split.h5" --nranks $np --expect-run || fail "check_layout finished runs -np $np"
  layout "$dir/fresh.h5" "$dir/died.h5" --nranks $np || fail "check_layout fresh and died files -np $np"
done

echo "== the checkers reject broken files"
src=$work/np2
if [ -f "$src/out.h5" ]; then
  expect_fail "fresh.h5 (nothing run) as a finished run" "complete is 0" \
    layout "$src/fresh.h5" --nranks 2 --expect-run
  expect_fail "out.h5 with the wrong rank count" "nranks 2, expected 3" layout "$src/out.h5" --nranks 3
  cp "$src/out.h5" "$work/detached.h5"
  cp "$src/fresh.h5" "$work/filled.h5"
  cp "$src/out.h5" "$work/noranks.h5"
  for b in units flags param; do cp "$src/out.h5" "$work/$b.h5"; done
  $PYTHON - "$work" <<'EOF' || fail "cannot prepare the broken files"
import sys, h5py, numpy as np
w = sys.argv[1]
with h5py.File(w + "/units.h5", "r+") as f:
    f["ranks/copy_gbps"].attrs["units"] = "byte s-1"
    f["tfa/time_min"].attrs["units"] = "ms"
with h5py.File(w + "/flags.h5", "r+") as f:
    f["tnorm/status"].attrs["flag_values"] = np.arange(1, len(f["tnorm/status"].attrs["flag_values"]) + 1, dtype=np.int8)
with h5py.File(w + "/param.h5", "r+") as f:
    f.attrs["deck_text"] = f.attrs["deck_text"].replace("[tfa]\n", "[tfa]\nsoftmax_scale = 0.5\n")
with h5py.File(w + "/detached.h5", "r+") as f:
    d = f["tfa/max_abs"]
    for i, name in enumerate(["rank"] + f["tfa"].attrs["axes"].split(",")):
        d.dims[i].detach_scale(f["tfa/" + name])
with h5py.File(w + "/filled.h5", "r+") as f:
    f["tnorm/time_min"][0, 0, 1] = 1.0
with h5py.File(w + "/noranks.h5", "r+") as f:
    del f["ranks/uuid"]
EOF
  expect_fail "broken files (check_layout)" "/tfa/max_abs: dimension 0 attached to \[\]" \
    layout "$work/detached.h5" "$work/filled.h5" "$work/noranks.h5" --nranks 2
  for pattern in "/tnorm/time_min: 1 not-run cells do not hold the fill value" "/ranks: dataset uuid missing"; do
    grep -q -- "$pattern" "$work/err" || fail "check_layout did not report '$pattern'"
  done
  expect_fail "units, flags and a parameter (check_layout)" "/ranks/copy_gbps: units 'byte s-1', expected '1e9 byte s-1'" \
    layout "$work/units.h5" "$work/flags.h5" "$work/param.h5" --nranks 2
  for pattern in "/tfa/time_min: units 'ms', expected 's'" "/tnorm/status: flag_values \[ 1" \
                 "/tfa: parameter softmax_scale is 0.125, the deck sets 0.5"; do
    grep -q -- "$pattern" "$work/err" || fail "check_layout did not report '$pattern'"
  done
  if [ $have_h5dump = yes ]; then
    expect_fail "detached scale (h5dump)" "/tfa/max_abs: no DIMENSION_LIST" h5layout "$work/detached.h5" 2
    expect_fail "missing /ranks field (h5dump)" "/ranks: dataset uuid missing" h5layout "$work/noranks.h5" 2
  fi
else
  fail "no file from the 2-rank run to break"
fi

if [ $failures -gt 0 ]; then
  echo "output_test: $failures failure(s)" >&2
  exit 1
fi
echo "output_test: all passed"
exit 0
