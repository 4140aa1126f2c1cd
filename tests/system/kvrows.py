"""kvrows.py - kval's canonical row bytes (src/output/row.c) in Python, for the tests: the
row checksum of every cell of a family group (XXH64, vectorised over cells with numpy) and
the records of the per-rank journals PATH.journal-<rank> (src/output/journal.c).

  row checksum = XXH64(status int8, fingerprint u64, message 96 bytes, the float64 and then
                 the int64 fields of src/core/result.h in X-macro order, hist u64 x 20, the
                 part statistics float64 x KV_MAX_PARTS x KV_N_PART_STATS, NaN past the
                 family's parts), every number little-endian
  journal record = "KVJOURN1", file_id u64, fields hash u64, row bytes u32, rank u32,
                 family name 16 bytes, cell u64, the row, XXH64 of all of that u64
"""
import os
import re

import numpy as np

P1, P2, P3, P4, P5 = (np.uint64(x) for x in (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                             0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5))
MESSAGE_LEN, HIST_BINS, HEADER, MAGIC = 96, 20, 56, b"KVJOURN1"


def result_fields():
    """Names of the float64 and int64 fields from src/core/result.h (the X-macro lists), with
    the phases of src/core/timing.h (KV_PHASES, a dataset each) where result.h expands them."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "core")
    text = open(os.path.join(here, "result.h")).read()
    timing = open(os.path.join(here, "timing.h")).read()
    phases = re.findall(r"P\(X, \w+, (\w+),", re.search(r"#define KV_PHASES\(P, X\)(.*?)\n\s*\n", timing, re.S).group(1))
    out = []
    for macro in ("KV_RESULT_DOUBLES", "KV_RESULT_INTS"):
        body = re.search(r"#define %s\(X\)(.*?)\n\s*\n" % macro, text, re.S).group(1)
        names = []
        for m in re.finditer(r"\bX\((\w+),|\bKV_PHASES\(KV_RESULT_PHASE, X\)", body):
            names.extend([m.group(1)] if m.group(1) else phases)
        out.append(names)
    return out


def part_layout():
    """KV_MAX_PARTS (src/family.h) and the names of KV_PART_STATS (src/core/result.h)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    max_parts = int(re.search(r"#define KV_MAX_PARTS (\d+)", open(os.path.join(src, "family.h")).read()).group(1))
    text = open(os.path.join(src, "core", "result.h")).read()
    body = re.search(r"#define KV_PART_STATS\(X\)(.*?)\n\s*\n", text, re.S).group(1)
    return max_parts, re.findall(r"\bX\((\w+),", body)


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc, w):
    return _rotl(acc + w * P2, 31) * P1


def xxh64(rows):
    """XXH64 (seed 0) of every row of a 2-D uint8 array (all rows of one length)."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n, length = rows.shape
    with np.errstate(over="ignore"):
        words = lambda off: rows[:, off:off + 8].copy().view("<u8")[:, 0].astype(np.uint64)
        p = 0
        if length >= 32:
            v = [np.full(n, P1 + P2), np.full(n, P2), np.zeros(n, np.uint64), np.full(n, np.uint64(0) - P1)]
            while length - p >= 32:
                v = [_round(v[i], words(p + 8 * i)) for i in range(4)]
                p += 32
            h = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
            for lane in v:
                h = (h ^ _round(np.zeros(n, np.uint64), lane)) * P1 + P4
        else:
            h = np.full(n, P5)
        h = h + np.uint64(length)
        while length - p >= 8:
            h = _rotl(h ^ _round(np.zeros(n, np.uint64), words(p)), 27) * P1 + P4
            p += 8
        if length - p >= 4:
            w = rows[:, p:p + 4].copy().view("<u4")[:, 0].astype(np.uint64)
            h = _rotl(h ^ (w * P1), 23) * P2 + P3
            p += 4
        while p < length:
            h = _rotl(h ^ (rows[:, p].astype(np.uint64) * P5), 11) * P1
            p += 1
        h ^= h >> np.uint64(33)
        h *= P2
        h ^= h >> np.uint64(29)
        h *= P3
        return h ^ (h >> np.uint64(32))


def row_bytes(status, fingerprint, message, doubles, ints, hist, parts_values):
    """Canonical bytes of n rows: arrays of n values (message: n x 96 bytes, doubles/ints:
    lists of n-arrays in result.h order, hist: n x 20, parts_values: n x (KV_MAX_PARTS x
    KV_N_PART_STATS), NaN past the family's parts)."""
    n = len(status)
    cols = [np.asarray(status, "<i1").reshape(n, 1).view(np.uint8),
            np.asarray(fingerprint, "<u8").reshape(n, 1).view(np.uint8),
            np.frombuffer(b"".join(bytes(m).ljust(MESSAGE_LEN, b"\0") for m in message), np.uint8).reshape(n, -1)]
    cols += [np.asarray(d, "<f8").reshape(n, 1).view(np.uint8) for d in doubles]
    cols += [np.asarray(i, "<i8").reshape(n, 1).view(np.uint8) for i in ints]
    cols.append(np.asarray(hist, "<u8").reshape(n, HIST_BINS).view(np.uint8))
    cols.append(np.ascontiguousarray(parts_values, "<f8").reshape(n, -1).view(np.uint8))
    return np.concatenate(cols, axis=1)


def group_checksums(g):
    """The checksum every cell of an h5py family group must hold, as [rank, cells]."""
    doubles, ints = result_fields()
    shape = g["status"].shape
    n = int(np.prod(shape))
    flat = lambda name: g[name][()].reshape(n)
    max_parts, stats = part_layout()
    parts = np.full((n, max_parts, len(stats)), np.nan)
    if "part_stats" in g:
        have = g["part_stats"][()].reshape(n, -1, len(stats))
        parts[:, :have.shape[1], :] = have
    rows = row_bytes(flat("status"), flat("fingerprint"), g["message"][()].reshape(n),
                     [flat(d) for d in doubles], [flat(i) for i in ints], g["hist"][()].reshape(n, HIST_BINS), parts)
    return xxh64(rows).reshape(shape)


def fields_hash():
    doubles, ints = result_fields()
    max_parts, stats = part_layout()
    names = ",".join(["status", "fingerprint", "message"] + doubles + ints + ["hist"] +
                     ["part_" + s for s in stats]).encode()
    return int(xxh64(np.frombuffer(names, np.uint8).reshape(1, -1))[0]) ^ HIST_BINS ^ (max_parts << 32)


def journal_rows(path, rank, file_id):
    """The valid records of PATH.journal-RANK for the file with this file_id, as dicts with
    family, cell, status and fingerprint."""
    doubles, ints = result_fields()
    max_parts, stats = part_layout()
    row_len = 1 + 8 + MESSAGE_LEN + 8 * (len(doubles) + len(ints)) + 8 * HIST_BINS + 8 * max_parts * len(stats)
    size = HEADER + row_len + 8
    try:
        data = open("%s.journal-%d" % (path, rank), "rb").read()
    except OSError:
        return []
    n = len(data) // size
    if n == 0:
        return []
    recs = np.frombuffer(data[:n * size], np.uint8).reshape(n, size)
    sums = xxh64(recs[:, :HEADER + row_len])
    out = []
    for k in range(n):
        rec = recs[k].tobytes()
        if rec[:8] != MAGIC or int(sums[k]) != int.from_bytes(rec[-8:], "little"):
            continue
        if int.from_bytes(rec[8:16], "little") != file_id or int.from_bytes(rec[16:24], "little") != fields_hash():
            continue
        if int.from_bytes(rec[28:32], "little") != rank:
            continue
        out.append({"family": rec[32:48].rstrip(b"\0").decode(), "cell": int.from_bytes(rec[48:56], "little"),
                    "status": rec[HEADER], "fingerprint": int.from_bytes(rec[HEADER + 1:HEADER + 9], "little")})
    return out
