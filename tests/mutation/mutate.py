#!/usr/bin/env python3
"""mutate.py - reads tests/mutation/mutants.tsv and applies one mutant to a tree (the helper of
run_mutants.sh).

  mutate.py list  TSV [--kind K] [--only ID,...]   selected mutants: "id<TAB>file<TAB>kind<TAB>tests" lines
  mutate.py check TSV ROOT [--kind K] [--only ...] every selected mutant's `from` occurs exactly
                                                   once in ROOT/file (else exit 1, naming it)
  mutate.py apply TSV ID ROOT                      substitute mutant ID in ROOT/file, in place

TSV format (mutants.tsv's header says the same): id, file, from, to, kind, description and,
optionally, tests (space-separated: for a cpu or cpu-gap mutant the `make check` tests that
must fail on a mutant the deck's run does not flag; for an analysis mutant the tests of
analysis/tests/ written against it, pytest node ids, which its suite runs first), tab separated; in from/to `\\n` is a newline, `\\t` a tab, `\\\\` a
backslash; `#` starts a comment line. Every error names TSV:line and the mutant."""
import os
import sys

KINDS = ("cpu", "gpu", "cpu-gap", "gpu-study", "gpu-race", "analysis")


def unescape(s, where):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if nxt not in ("n", "t", "\\"):
                sys.exit(f"{where}: unknown escape '\\{nxt}' (only \\n, \\t and \\\\)")
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read(tsv):
    mutants, seen = [], {}
    with open(tsv, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            where = f"{tsv}:{lineno}"
            fields = line.split("\t")
            if len(fields) not in (6, 7):
                sys.exit(f"{where}: {len(fields)} tab-separated fields, want 6 or 7 (id, file, from, to, kind, "
                         "description[, tests])")
            mid, path, frm, to, kind, desc = fields[:6]
            tests = fields[6].split() if len(fields) == 7 else []
            if len(fields) == 7 and (not tests or kind not in ("cpu", "cpu-gap", "analysis")):
                sys.exit(f"{where}: mutant {mid}: tests need a cpu, cpu-gap or analysis mutant and at least one test")
            if mid in seen:
                sys.exit(f"{where}: mutant id '{mid}' already used at line {seen[mid]}")
            if kind not in KINDS:
                sys.exit(f"{where}: mutant {mid}: kind '{kind}' is not one of {', '.join(KINDS)}")
            frm, to = unescape(frm, f"{where}: mutant {mid}: from"), unescape(to, f"{where}: mutant {mid}: to")
            if not frm or frm == to:
                sys.exit(f"{where}: mutant {mid}: empty 'from' or 'to' equal to 'from'")
            seen[mid] = lineno
            mutants.append(dict(id=mid, file=path, frm=frm, to=to, kind=kind, desc=desc, tests=tests, where=where))
    return mutants


def select(mutants, kind, only):
    if only:
        ids = [x for x in only.split(",") if x]
        known = {m["id"] for m in mutants}
        unknown = [x for x in ids if x not in known]
        if unknown:
            sys.exit(f"--only: unknown mutant id(s): {', '.join(unknown)}")
        mutants = [m for m in mutants if m["id"] in ids]
    if kind and kind != "all":
        mutants = [m for m in mutants if m["kind"] == kind]
    return mutants


def occurrences(root, m):
    try:
        with open(f"{root}/{m['file']}", encoding="utf-8") as f:
            return f.read().count(m["frm"]), None
    except OSError as e:
        return 0, str(e)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("list", "check", "apply"):
        sys.exit(__doc__)
    cmd, tsv, rest = argv[1], argv[2], argv[3:]
    opts = {"--kind": None, "--only": None}
    pos = []
    while rest:
        a = rest.pop(0)
        if a in opts:
            if not rest:
                sys.exit(f"mutate.py: {a} needs a value")
            opts[a] = rest.pop(0)
        else:
            pos.append(a)
    mutants = read(tsv)
    if cmd == "list":
        for m in select(mutants, opts["--kind"], opts["--only"]):
            print(f"{m['id']}\t{m['file']}\t{m['kind']}\t{' '.join(m['tests'])}")
        return 0
    if cmd == "check":
        if len(pos) != 1:
            sys.exit("usage: mutate.py check TSV ROOT [--kind K] [--only IDS]")
        bad = 0
        for m in select(mutants, opts["--kind"], opts["--only"]):
            n, err = occurrences(pos[0], m)
            if n != 1:
                bad += 1
                why = err if err else f"its 'from' text occurs {n} times (must be exactly once)"
                print(f"{m['where']}: STALE mutant {m['id']}: {m['file']}: {why}", file=sys.stderr)
            for t in m["tests"] if m["kind"] == "analysis" else []:
                path, _, name = t.partition("::")
                ok = path.startswith("analysis/tests/test_") and os.path.isfile(f"{pos[0]}/{path}")
                if ok and name:
                    with open(f"{pos[0]}/{path}", encoding="utf-8") as f:
                        ok = f"def {name.split('[')[0]}(" in f.read()
                if not ok:
                    bad += 1
                    print(f"{m['where']}: STALE mutant {m['id']}: test '{t}' is not a test of the tree "
                          "(analysis/tests/test_*.py[::test_name])", file=sys.stderr)
        return 1 if bad else 0
    if len(pos) != 2:
        sys.exit("usage: mutate.py apply TSV ID ROOT")
    mid, root = pos
    found = [m for m in mutants if m["id"] == mid]
    if not found:
        sys.exit(f"{tsv}: no mutant '{mid}'")
    m = found[0]
    n, err = occurrences(root, m)
    if n != 1:
        sys.exit(f"{m['where']}: STALE mutant {mid}: {m['file']}: " + (err or f"'from' occurs {n} times"))
    path = f"{root}/{m['file']}"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(m["frm"], m["to"], 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
