#!/bin/bash
# decode_gpu.sh - the decode family (paged-KV decode attention) checked and timed on one GPU in
# one call, from the repo root of a fresh copy: build (bootstrap, configure, make of kval, the
# GPU test and the bench driver), tests/gpu/test_families_gpu on families/decode/test.deck
# alone, kval on attention.deck's short decode sections and fleet.deck's 8-bit KV caches
# ([decode.kv8]), compute-sanitizer memcheck (and with RACECHECK=1 racecheck) of
# families/decode/sanitize.deck, decode_bench against PyTorch (bench/peers.py).
# Logs and CSVs under $OUT (default /tmp/decode-gpu); a table last: every step with its exit
# status and seconds, then kval's GB/s beside the measured copy ceiling and the PyTorch peers.
# DEADLINE (default 150) bounds the whole call: each step's limit is cut to what is left.
set -u
OUT=${OUT:-/tmp/decode-gpu}
mkdir -p "$OUT"
ROOT=$(pwd)
B=${KVAL_BUILD:-/tmp/kval-decode-build}
DEADLINE=${DEADLINE:-150}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# ranks unbound (Open MPI binds each of 1-2 ranks to one core): the cross-check's CPU
# reference gets the rank's share of the cores
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export top_srcdir="$ROOT"
: > "$OUT/steps.txt"

. "$ROOT/jobs/gpu_steps.sh" # step NAME LIMIT CMD...

# The build as one command (timeout runs commands, not shell functions).
BUILD="cd '$ROOT' && { [ -x configure ] || ./bootstrap; } && mkdir -p '$B' && cd '$B' &&
  { [ -f Makefile ] || '$ROOT/configure'; } && make -j16 src/kval tests/gpu/test_families_gpu families/decode/bench/decode_bench"

# The family decks of families/decode alone (test_families_gpu globs $top_srcdir/families/*/).
mkdir -p "$OUT/decks/families/decode"
cp "$ROOT/families/decode/test.deck" "$ROOT/families/decode/sanitize.deck" "$OUT/decks/families/decode/"

step build 75 bash -c "$BUILD" || { cat "$OUT/steps.txt"; tail -30 "$OUT/build.log"; exit 1; }
step gpu_test 30 env top_srcdir="$OUT/decks" "$B/tests/gpu/test_families_gpu"
step kval 40 "$B/src/kval" --backend cuda --only decode.paths,decode.dist,decode.tails,decode.pages,decode.contig,decode.qlen \
  "$ROOT/inputs/attention.deck" -o "$OUT/attention-decode.h5"
step kval_kv8 20 "$B/src/kval" --backend cuda --only decode.kv8 "$ROOT/inputs/fleet.deck" -o "$OUT/fleet-kv8.h5"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step memcheck 25 env top_srcdir="$OUT/decks" KVAL_SKIP_CEILINGS=1 "$CS" --tool memcheck --error-exitcode 9 \
  "$B/tests/gpu/test_families_gpu" small
[ "${RACECHECK:-0}" = 1 ] && step racecheck 25 env top_srcdir="$OUT/decks" KVAL_SKIP_CEILINGS=1 "$CS" --tool racecheck \
  --error-exitcode 9 "$B/tests/gpu/test_families_gpu" small
step bench 30 env KVAL_SKIP_CEILINGS=1 "$B/families/decode/bench/decode_bench" all --csv "$OUT/decode_bench.csv" \
  --set run.time_cap=0.1
step peers 30 python3 "$ROOT/families/decode/bench/peers.py" --csv "$OUT/decode_peers.csv" --json "$OUT/decode_peers.json"

python3 - "$OUT" <<'PY'
import csv, os, re, sys
out = sys.argv[1]
def text(name):
    p = os.path.join(out, name)
    return open(p, errors="replace").read() if os.path.exists(p) else ""
print("\n== decode on the GPU: steps (exit status 0 = pass; 77 = no GPU; 124 = out of time)")
for line in text("steps.txt").splitlines():
    print("  %-14s rc %-4s %s s" % tuple((line.split(None, 2) + ["", ""])[:3]))
t = text("gpu_test.log")
m = re.search(r"copy (\d+) GB/s", t)
copy = float(m.group(1)) if m else None
fails = [l for l in t.splitlines() if l.startswith("FAIL")]
print("  gpu_test: %s; copy ceiling %s GB/s" % ("%d FAIL lines" % len(fails) if fails else "no FAIL line",
                                                 int(copy) if copy else "?"))
for l in fails[:5]:
    print("    " + l[:160])
k = [l for l in text("kval.log").splitlines() if "passed" in l and "failed" in l]
print("  kval attention.deck (decode sections): " + (k[-1].split("kval: ", 1)[-1] if k else "no summary line"))
for tool in ("memcheck", "racecheck")[: 2 if os.path.exists(os.path.join(out, "racecheck.log")) else 1]:
    s = [l for l in text(tool + ".log").splitlines() if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l]
    print("  %s: %s" % (tool, s[-1].strip() if s else "no summary line"))
rows = {}
key = ("precision", "kv_type", "headdim", "page_size", "ctx_len", "batch", "q_heads", "kv_heads")
for f in ("decode_bench.csv", "decode_peers.csv"):
    p = os.path.join(out, f)
    if not os.path.exists(p):
        continue
    for r in csv.DictReader(open(p)):
        if r.get("family") != "decode" or not r.get("gbps"):
            continue
        rows.setdefault(tuple(r.get(c) or ("storage" if c == "kv_type" else "") for c in key), {})[r["backend"]] = r
print("\n  %-9s %-7s %3s %4s %6s %3s %6s | %8s %6s %7s | %9s %8s %s" % ("prec", "kv", "d", "page", "ctx", "B", "Hq/Hkv",
      "kval GB/s", "%copy", "verdict", "gather+sdpa", "sdpa", "speedup vs gather+sdpa, sdpa"))
for k2, by in rows.items():
    kv = by.get("kval") or by.get("kval-contiguous")
    if not kv:
        continue
    for name in ("kval", "kval-contiguous"):
        if name not in by:
            continue
        r = by[name]
        g, s = by.get("gather+sdpa"), by.get("sdpa")
        gb = float(r["gbps"])
        pct = "%5.1f%%" % (100 * gb / copy) if copy else "   ?"
        ratio = " ".join("%.2fx" % (float(p["ms"]) / float(r["ms"])) for p in (g, s) if p)
        print("  %-9s %-7s %3s %4s %6s %3s %3s/%-2s | %8.0f %6s %7s | %9s %8s %s" % (
            k2[0], k2[1], k2[2], k2[3], k2[4], k2[5], k2[6], k2[7], gb, pct,
            r.get("verdict", "")[:7] + ("" if name == "kval" else "*"),
            g["gbps"] if g else "", s["gbps"] if s else "", ratio))
print("  (* contiguous block table; GB/s = kval's byte count over the median for every backend)")
PY
