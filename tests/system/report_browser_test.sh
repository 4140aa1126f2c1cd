#!/bin/sh
# report_browser_test.sh - the report page in a real headless browser (Debian's chromium):
# the pages of (1) a real 4-rank run with a flipped bit on rank 1 and of (2) a synthetic
# campaign of 128 GPUs (16 files, one slow GPU, one flipped bit) are loaded at a 1280-pixel
# window with tests/system/check_page.js, which checks that the verdict is the first section
# and on the first screen, that the page is not wider than the window (every table scrolls
# in its own box), and that every image loaded; then screenshots are taken into the build
# directory (tests/report-run.png, tests/report-fleet128.png) for a person to look at.
# Skips (77) only where no chromium is installed (apt-get install chromium).
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${top_builddir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
browser=""
for b in chromium chromium-browser google-chrome; do command -v $b >/dev/null 2>&1 && { browser=$b; break; }; done
[ -n "$browser" ] || { echo "SKIP: no headless browser (apt-get install chromium)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_browser.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH="$top_srcdir/analysis${PYTHONPATH:+:$PYTHONPATH}"
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
# The browser's own profile and crash dumps in the temporary directory; no sandbox as root.
run_browser() {
  HOME="$tmp" timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$tmp/profile" --window-size=1280,1600 --virtual-time-budget=10000 "$@" 2>>"$tmp/browser.log"
}
check() { # NAME DIR: measure DIR/report.html, screenshot it into the build directory
  name=$1 dir=$2
  cp "$dir/report.html" "$dir/measured.html"
  printf '<script>\n%s\n</script>\n' "$(cat "$top_srcdir/tests/system/check_page.js")" >>"$dir/measured.html"
  title=$(run_browser --dump-dom "file://$dir/measured.html" | sed -n 's:.*<title>\(.*\)</title>.*:\1:p')
  case $title in
    PAGE-OK*) echo "ok $name: $title" ;;
    *) fail "$name: ${title:-no result from the browser}"; tail -n 5 "$tmp/browser.log" ;;
  esac
  run_browser --screenshot="$top_builddir/tests/report-$name.png" "file://$dir/report.html" >/dev/null
  [ -s "$top_builddir/tests/report-$name.png" ] || fail "$name: no screenshot"
}

$MPIRUN -np 4 "$KVAL" --backend cpu --quiet --inject bitflip@1 "$top_srcdir/inputs/smoke.deck" -o "$tmp/run.h5" \
  >"$tmp/kval.log" 2>&1
[ -f "$tmp/run.h5" ] || { fail "kval wrote no file"; cat "$tmp/kval.log"; exit 1; }
"$PYTHON" -m kval_analysis report "$tmp/run.h5" -o "$tmp/run" >/dev/null || fail "report of the real run"
grep -q "VERDICT: FAIL" "$tmp/run/report.html" || fail "real run: the page has no FAIL verdict"
# the page counts what kval counted: one disagreement per case of the flipped rank
n=$("$PYTHON" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); print(sum(int((f[g]['fp_agrees'][1] == 0).sum()) for g in f if isinstance(f[g], h5py.Group) and 'fp_agrees' in f[g]))" "$tmp/run.h5")
[ "${n:-0}" -gt 0 ] && grep -q "Fingerprint disagreements ($n)" "$tmp/run/report.html" ||
  fail "real run: the page does not count the file's $n disagreements of rank 1"
check run "$tmp/run"

"$PYTHON" - "$tmp" "$top_srcdir/analysis/tests" <<'PY' || fail "synthetic campaign"
import sys
sys.path.insert(0, sys.argv[2])
import synth
for n in range(16):
    synth.write_kval_file(f"{sys.argv[1]}/fleet-{n:02d}.h5", nranks=8, gpus_per_host=8, host_prefix=f"gpu{n:02d}-",
                          families=("gemm", "layernorm"), noise_seed=n, gpu_spread=0.004,
                          slow={3: 1.25} if n == 5 else None,
                          flips=[("gemm", {"variant": "kval-mma", "shape": "512x512x1024"}, 6)] if n == 9 else ())
PY
"$PYTHON" -m kval_analysis report "$tmp"/fleet-*.h5 -o "$tmp/fleet" >/dev/null || fail "report of the campaign"
check fleet128 "$tmp/fleet"
exit $rc
