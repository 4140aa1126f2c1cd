#!/usr/bin/env python3
"""kill_test.py - no finished result is lost when kval is killed. Runs a short 2-rank job on
the cpu backend KILL_RUNS times (default 20) and SIGKILLs it at a random moment (one run in
five during start-up and file creation, the others after a random number of finished
cases): every other run the whole job at once (mpirun and every rank: a node lost), the
others one random rank (mpirun then tears the rest down, SIGTERM then SIGKILL). After each
kill:

- no half-made file at the output path: either no file (killed before it was laid out) or a
  file that opens with h5py and says complete (attribute complete = 1) only when it holds
  every result;
- every cell that holds a result equals the cell of one uninterrupted reference run
  (tests/system/compare_files.py --subset), and every other cell holds fill values, except at
  most one cell per rank whose write the kill cut short (its status is still not_run);
- every case reported finished before the kill survived it: it is in the file or in its
  rank's journal (PATH.journal-<rank>, which --resume merges), with the reference's status
  and fingerprint. The deck sets every tolerance to zero, so each finished case prints a
  fail_tolerance line; kval journals (and syncs) a row before it prints it, so no grace
  period is needed: a line the test has seen means the row is durable, under any load;
- every fifth killed file is finished with --resume and must then equal the reference
  case for case.

Environment (set by make check): KVAL, MPIRUN, top_srcdir; KILL_RUNS, KILL_SEED optional;
KVAL_TEST_FAIL_FAST=1 (tests/mutation/run_mutants.sh) makes 8 runs the default and ends the
test at its first failed run.
Exit 0 pass, 1 fail, 77 skip (kval or h5py missing)."""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import h5py
    from compare_files import Run, compare
    from kvrows import journal_rows
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

KVAL = os.environ.get("KVAL", "")
MPIRUN = os.environ.get("MPIRUN") or "mpirun"
# 20 runs; 8 for the mutation suite (KVAL_TEST_FAIL_FAST=1), whose mutants of the file's
# life fail most runs that kill a laid-out file (one in five kills comes during start-up)
RUNS = int(os.environ.get("KILL_RUNS", "8" if os.environ.get("KVAL_TEST_FAIL_FAST") == "1" else "20"))
SEED = int(os.environ.get("KILL_SEED", str(int(time.time()))))
NRANKS = 2
DECK = """# kill_test deck: small cases, every tolerance zero so that each finished case is printed
[run]
seed = 11
warmup = 0
min_reps = 1
max_reps = 2
time_cap = 0.01
tol_c1 = 0
tol_c2 = 0
tol_abs_floor = 0
tol_rel_floor = 0

[gemm]
variant = kval-mma
precision = fp16:fp32 bf16:fp32 fp16:fp16
layout = nn tn
shape = 320x320x256 256x320x384

[layernorm]
precision = fp16:fp32 bf16:fp32 fp32:fp32
rows = 512
hidden = 2048 4096

[fa2]
precision = fp16:fp32 bf16:fp32
headdim = 64
seqlen = 384 512
causal = 0 1
heads = 2
batch = 1
"""
FINISHED = re.compile(r"^kval: (?:fail_tolerance|fail_nonfinite|error) rank (\d+) .*?: (\w+)\[cell (\d+)\]")


def session_pids(sid):
    """Processes of session sid (mpirun started with start_new_session, and its ranks)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def rank_pids(mpirun_pid):
    return [p for p in session_pids(mpirun_pid) if p != mpirun_pid]


def kill_all(sid):
    for p in session_pids(sid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Job:
    """kval under mpirun in its own session. Each rank writes its stderr straight into a file
    of its own (not through mpirun, which forwards output late), and a thread polls those
    files every few milliseconds, timestamping each line when it appears."""

    def __init__(self, args, log):
        self.lines, self.log = [], log
        wrapper = 'exec "$0" "$@" 2>"%s.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"' % log
        self.proc = subprocess.Popen([MPIRUN, "-np", str(NRANKS), "sh", "-c", wrapper, KVAL, "--backend", "cpu"] + args,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.start = time.monotonic()
        self.stop = False
        self.reader = threading.Thread(target=self._poll, daemon=True)
        self.reader.start()

    def _poll(self):
        offsets, partial = [0] * NRANKS, [b""] * NRANKS
        while True:
            last = self.stop
            for r in range(NRANKS):
                try:
                    with open(f"{self.log}.{r}", "rb") as f:
                        f.seek(offsets[r])
                        data = f.read()
                except OSError:
                    continue
                offsets[r] += len(data)
                chunks = (partial[r] + data).split(b"\n")
                partial[r] = chunks.pop()
                now = time.monotonic() - self.start
                self.lines += [(now, c.decode(errors="replace")) for c in chunks]
            if last:
                return
            time.sleep(0.005)

    def wait(self, timeout=60):
        try:
            _, err = self.proc.communicate(timeout=timeout)
            rc = self.proc.returncode
        except subprocess.TimeoutExpired:
            kill_all(self.proc.pid)
            _, err = self.proc.communicate()
            rc = None
        self.stop = True
        self.reader.join(timeout=5)
        self.lines += [(time.monotonic() - self.start, l) for l in err.splitlines()]
        # Ranks outlive a killed mpirun for a moment (and hold the file's lock until they
        # are gone): end any that is left and wait until none is.
        for _ in range(3000):
            if not session_pids(self.proc.pid):
                break
            kill_all(self.proc.pid)
            time.sleep(0.01)
        return rc

    def finished(self):
        """(seconds since start, rank, family, cell) of every case reported finished."""
        out = []
        for t, line in self.lines:
            m = FINISHED.match(line)
            if m:
                out.append((t, int(m.group(1)), m.group(2), int(m.group(3))))
        return out


def main():
    if not KVAL or not os.access(KVAL, os.X_OK):
        print(f"SKIP: kval binary not found (KVAL={KVAL!r})")
        return 77
    if not shutil.which(MPIRUN):
        print(f"SKIP: {MPIRUN} not found")
        return 77
    tmp = tempfile.mkdtemp(prefix="kval_kill.")
    try:
        return run_trials(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_trials(tmp):
    rng = random.Random(SEED)
    deck = os.path.join(tmp, "kill.deck")
    with open(deck, "w") as f:
        f.write(DECK)
    ref_path = os.path.join(tmp, "ref.h5")
    job = Job([deck, "-o", ref_path], os.path.join(tmp, "ref.log"))
    rc = job.wait()
    if rc != 1:  # every case fails its zero tolerance
        print(f"FAIL: reference run exited {rc}, expected 1")
        print("\n".join(l for _, l in job.lines[-20:]))
        return 1
    ref = Run(ref_path)
    done = job.finished()
    duration = time.monotonic() - job.start
    print(f"kill_test: seed {SEED}, flavour {FLAVOUR}, reference run {duration:.2f} s, {ref.n_results()} results, "
          f"{len(done)} finished-case lines")
    failures = 0
    for i in range(RUNS):
        failures += trial(i, rng, tmp, deck, ref, len(done))
        if failures and os.environ.get("KVAL_TEST_FAIL_FAST") == "1":  # the mutation suite's runs
            break
    print(f"kill_test: {RUNS} killed runs, {failures} failed")
    return 1 if failures else 0


def wait_moment(job, rng, total):
    """Sleep until a random moment of the run: one run in five during start-up and file
    creation, the others after a random number of finished cases (a quarter of them at
    least, so that many must survive) plus a fraction of one."""
    if rng.random() < 0.2:
        time.sleep(rng.uniform(0.0, 0.5))
        return
    target = rng.randrange(max(1, total // 4), total)
    while len(job.finished()) < target and job.proc.poll() is None:
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.1))


def trial(i, rng, tmp, deck, ref, total):
    path = os.path.join(tmp, f"k{i}.h5")
    whole = i % 2 == 0
    job = Job([deck, "-o", path], path + ".log")
    wait_moment(job, rng, total)
    if whole:
        kill_all(job.proc.pid)
        what = "whole job"
    else:
        ranks = rank_pids(job.proc.pid)
        victim = rng.randrange(len(ranks)) if ranks else None
        if victim is not None:
            os.kill(sorted(ranks)[victim], signal.SIGKILL)
        what = f"rank {victim}" if victim is not None else "nothing (the run had ended)"
    killed = time.monotonic() - job.start
    rc = job.wait()
    finished = job.finished()
    n_done = sum(1 for f in finished if f[0] <= killed)
    n_due = len(due_cases(finished, killed))
    label = f"run {i}: SIGKILL {what} at {killed:.2f} s ({n_done} cases finished, {n_due} reported finished in all: each must be in the file or its journal)"
    problems = check_file(path, ref, finished, killed)
    kept = "no file" if not os.path.exists(path) or problems else f"{Run(path).n_results()} results in the file"
    if not problems and os.path.exists(path) and i % 5 == 0:
        problems += check_resume(path, deck, ref)
        kept += ", equal to the reference after --resume"
    if rc is None:
        problems.append("the job hung after the kill (killed after 60 s)")
    for p in problems[:5]:
        print(f"FAIL {label}: {p}")
    if not problems:
        print(f"ok {label}: {kept}")
    return 1 if problems else 0


FLAVOUR = os.environ.get("KV_HDF5_FLAVOUR", "serial")
LOCK_WAIT = 10.0  # seconds a lock left by a dying rank may take to go


def due_cases(finished, killed):
    """Every case whose finished line the test saw, whenever it read it: a rank writes the
    line only after its journal holds the row, so a line it wrote predates its death."""
    return [(killed - t, r, fam, cell) for t, r, fam, cell in finished]


def check_file(path, ref, finished, killed):
    due = due_cases(finished, killed)
    if not os.path.exists(path):
        return [f"no file at {path}, but {len(due)} cases had finished"] if due else []
    # A rank that outlived the session check may still hold the file open until the kernel
    # has finished tearing it down: a failure to open is retried for up to LOCK_WAIT seconds.
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            run = Run(path)
            with h5py.File(path, "r") as f:
                file_id, complete = int(f.attrs["file_id"]), int(f.attrs["complete"])
            break
        except Exception as e:
            if "unable to lock file" in str(e) and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            return [f"the file does not open: {e}"]
    problems = compare(run, ref, subset=True, torn=NRANKS)
    if complete and run.n_results() < ref.n_results():  # readers skip an incomplete file's empty cells
        problems.append(f"the file says complete but holds {run.n_results()} of {ref.n_results()} results")
    journal = {}
    for r in range(NRANKS):
        for row in journal_rows(path, r, file_id):
            journal[(r, row["family"], row["cell"])] = row
            want = ref.families[row["family"]]["data"]
            if (row["status"], row["fingerprint"]) != (want["status"][r].ravel()[row["cell"]],
                                                       want["fingerprint"][r].ravel()[row["cell"]]):
                problems.append(f"journal of rank {r}: {row['family']} cell {row['cell']} differs from the reference")
    for age, r, fam, cell in due:
        status = run.families[fam]["data"]["status"]
        if status[r].ravel()[cell] == 0 and (r, fam, cell) not in journal:
            problems.append(f"{fam} cell {cell} of rank {r} finished {age:.2f} s before the kill but is neither in "
                            "the file nor in its journal")
    return problems


def check_resume(path, deck, ref):
    job = Job([deck, "--resume", path, "--quiet"], path + ".resume.log")
    rc = job.wait()
    if rc != 1:
        return [f"--resume exited {rc}, expected 1: " + " | ".join(l for _, l in job.lines[-5:])]
    return [f"after --resume: {d}" for d in compare(Run(path), ref)]


if __name__ == "__main__":
    sys.exit(main())
