#!/bin/sh
# metrics_test.sh - `kval --metrics FILE`: a directory that does not exist is a usage error
# (exit 2, no output file, nothing run); a 3-rank run with a flipped bit on rank 1 writes the
# textfile-collector metrics atomically (no FILE.tmp.* left, every series with HELP and TYPE,
# one sample per GPU with host, gpu, uuid, pci_bus_id, serial and model labels) with
# kval_gpu_ok 0 and the disagreement count for rank 1 only, kval_run_exit_code 1; a single
# rank has no peer, so its median slowdown is NaN.
set -u
: "${KVAL:?}" "${top_srcdir:?}" "${MPIRUN:=mpirun}" "${PYTHON:=python3}"
[ -x "$KVAL" ] || { echo "SKIP: $KVAL not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kval_metrics.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
cat >"$tmp/m.deck" <<'DECK'
[run]
warmup = 0
min_reps = 2
max_reps = 2
time_cap = 0.01
[rmsnorm]
precision = fp16:fp32 bf16:fp32
rows = 16
hidden = 64 100
DECK

"$KVAL" --backend cpu --metrics "$tmp/nodir/k.prom" "$tmp/m.deck" -o "$tmp/x.h5" >"$tmp/bad.log" 2>&1; code=$?
[ $code -eq 2 ] && [ ! -e "$tmp/x.h5" ] && grep -q "kval: --metrics $tmp/nodir/k.prom: directory '$tmp/nodir' is not writable" "$tmp/bad.log" ||
  { fail "--metrics into a missing directory: exit $code"; cat "$tmp/bad.log"; }

$MPIRUN -np 3 "$KVAL" --backend cpu --quiet --inject bitflip@1 --metrics "$tmp/k.prom" "$tmp/m.deck" -o "$tmp/f.h5" \
  >"$tmp/run.log" 2>&1; code=$?
[ $code -eq 1 ] || { fail "bitflip run: exit $code, expected 1"; tail -n 5 "$tmp/run.log"; }
ls "$tmp"/k.prom.tmp.* >/dev/null 2>&1 && fail "a temporary metrics file was left behind"
"$PYTHON" - "$tmp/k.prom" "$tmp/f.h5" <<'PY' || fail "metrics content"
import re, sys
import h5py
text = open(sys.argv[1]).read()
uuids = [u.decode() if isinstance(u, bytes) else u for u in h5py.File(sys.argv[2], "r")["ranks/uuid"][()]]
samples, typed = {}, set()
for line in text.splitlines():
    if line.startswith("# TYPE "):
        typed.add(line.split()[2])
        continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'(\w+)(\{(.*)\})? (\S+)', line)
    assert m, f"not Prometheus text format: {line!r}"
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
    samples.setdefault(m.group(1), {})[labels.get("uuid")] = float(m.group(4))
    if m.group(1).startswith("kval_gpu_"):
        assert set(labels) == {"host", "gpu", "uuid", "pci_bus_id", "serial", "model"}, labels
assert set(samples) == typed, (set(samples), typed)
assert samples["kval_gpu_ok"] == {uuids[0]: 1, uuids[1]: 0, uuids[2]: 1}, samples["kval_gpu_ok"]
dis = samples["kval_gpu_fingerprint_disagreements"]
assert dis[uuids[1]] == 4 and dis[uuids[0]] == dis[uuids[2]] == 0, dis
assert samples["kval_run_exit_code"][None] == 1 and samples["kval_run_complete"][None] == 1
assert all(v > 0 for v in samples["kval_gpu_median_slowdown"].values())
assert all(v > 1e9 for v in samples["kval_gpu_last_run_timestamp_seconds"].values())
print("ok metrics: %d series, kval_gpu_ok 0 for rank 1 (%s) only" % (len(samples), uuids[1]))
PY
"$KVAL" --backend cpu --quiet --metrics "$tmp/one.prom" "$tmp/m.deck" -o "$tmp/one.h5" >"$tmp/one.log" 2>&1 ||
  fail "single rank with --metrics: exit $?"
grep -q '^kval_gpu_median_slowdown{.*} NaN$' "$tmp/one.prom" || fail "single rank: median slowdown is not NaN"
grep -q '^kval_gpu_ok{.*} 1$' "$tmp/one.prom" || fail "single rank: kval_gpu_ok is not 1"
exit $rc
