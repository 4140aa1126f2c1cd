#!/usr/bin/env python3
"""estimate_test.py - --dry-run's wall-time estimate is good enough to pick a Slurm --time.

- cpu backend: for each deck below, the estimate is within +-30 % of what the run costs. The
  run's cost is measured as the CPU time (user + system) of the kval process and its
  children, not its wall time: the estimate is of a rank with a core of its own (the decks
  fix the repetitions, rse_target = 0, so no stop rule depends on noise). --dry-run measures
  the cost model's rates on this CPU (src/run/calibrate.c), so the estimate holds on a
  slower machine or one whose cores are shared, as the CI's are; CPU time of the same run
  still varies by tens of percent on a loaded VM, so each deck is estimated and run TRIES
  times in turn and the median of the ratios is judged.
- cuda backend (planned by name, any build): the shipped decks are estimated within +-30 %
  of what one H200 took for them (docs/PERFORMANCE.md, "Whole-job numbers"; 2026-12-03):
  default.deck 998 cases in 54.8 s of rank time (tree of be0d127), fleet.deck 754 cases in
  19.0 s of rank time and health.deck through jobs/healthcheck.sh in 8.5 s (tree of 6f44fc4,
  `jobs/h200_run.sh`; 58 cases fewer than now: be0d127 added the split-K shapes).
- the estimate and the suggested --time are printed for people ("4 min 05 s",
  --time=HH:MM:SS), never as raw seconds.
Environment (set by make check): KVAL, top_srcdir. Exit 0 pass, 1 fail, 77 skip."""
import os
import re
import resource
import subprocess
import sys
import tempfile

KVAL = os.environ.get("KVAL", "")
TOP = os.environ.get("top_srcdir", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOLERANCE = 0.30
TRIES = 5
H200_SECONDS = {"default.deck": 54.8, "fleet.deck": 19.0, "health.deck": 8.5}

FIXED = """[run]
warmup = 1
min_reps = 3
max_reps = 3
rse_target = 0
time_cap = 10
"""
DECKS = {
    "all_families": FIXED + """
[fa2]
variant = kval-mma
precision = fp16:fp32 bf16:bf16
headdim = 64 128
seqlen = 128 384
causal = 0 1
batch = 1
heads = 2
[gemm]
variant = kval-mma
precision = fp16:fp32 fp16:fp16
shape = 256x256x256 512x256x384
[layernorm]
precision = fp16:fp32 fp32:fp32 bf16:bf16
rows = 1024
hidden = 1024 2048
[rmsnorm]
precision = bf16:fp32 fp32:fp32
rows = 2048
hidden = 1024
""",
    "sampled_reference": FIXED + """cpu_ref_budget = 1e7
sample_rows = 16
[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32
shape = 768x512x512 512x1024x256
[fa2]
variant = kval-mma
precision = fp16:fp32
headdim = 64
seqlen = 512
causal = 0
batch = 1
heads = 4
""",
}


def dry_run(args):
    out = subprocess.run([KVAL, "--dry-run"] + args, capture_output=True, text=True)
    m = re.search(r"estimated wall time: (\S+(?: \S+)*?) \(([\d.]+) s at .*--time=(\S+) ", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"--dry-run {' '.join(args)}: exit {out.returncode}: {out.stdout[-300:]} "
                           f"{out.stderr[-300:]}")
    return m.group(1), float(m.group(2)), m.group(3)


def main():
    if not KVAL or not os.access(KVAL, os.X_OK):
        print(f"SKIP: kval binary not found (KVAL={KVAL!r})")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kval_estimate.") as tmp:
        for name, text in DECKS.items():
            deck = os.path.join(tmp, name + ".deck")
            with open(deck, "w") as f:
                f.write(text)
            tries, codes = [], set()
            for i in range(TRIES):
                shown, est, slurm = dry_run(["--backend", "cpu", deck])
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                run = subprocess.run([KVAL, "--backend", "cpu", "--quiet", "--force", deck, "-o",
                                      os.path.join(tmp, name + ".h5")], capture_output=True, text=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                tries.append((est / cpu, est, cpu, shown, slurm))
                codes.add(run.returncode)
            ratio, est, cpu, shown, slurm = sorted(tries)[TRIES // 2]
            ok = codes == {0} and abs(ratio - 1) <= TOLERANCE
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'} {name}: estimated {shown} ({est:.2f} s, --time={slurm}), the run took "
                  f"{cpu:.2f} s of CPU time (exit {sorted(codes)}): median ratio of {TRIES} {ratio:.2f} "
                  f"(all: {' '.join(f'{t[0]:.2f}' for t in tries)})")
        for deck, measured in H200_SECONDS.items():
            shown, est, slurm = dry_run(["--backend", "cuda", os.path.join(TOP, "inputs", deck)])
            ok = abs(est / measured - 1) <= TOLERANCE and re.fullmatch(r"\d\d:\d\d:\d\d", slurm)
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'} {deck} on the cuda backend: estimated {shown} ({est:.1f} s, "
                  f"--time={slurm}), measured on an H200: {measured:.1f} s: ratio {est / measured:.2f}")
    print(f"estimate_test: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
