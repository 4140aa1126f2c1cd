"""synth.py - writes synthetic kval HDF5 files in the layout kval writes (README "The HDF5
file", layout_version 3) with h5py: root attributes, /ranks, one group per family with
dimension scales attached through h5py's dims API, the status enum as the named type
/case_status, fixed-length messages, the log10|err| histogram, gemm's M/N/K coordinates, the
fleet fingerprint comparison and, for fa2bwd (asked for by name: not among the default
families), the part statistics of dq, dk and dv; a family named with a suffix (gemm.scale) is
the group of a named deck section, with its family's axes. Values follow a simple error model (sqrt(K) * u growth) and
roofline timing model with run-to-run jitter, a persistent per-GPU speed spread and recorded
p10/p90 spread; faults (flipped fingerprints, slow ranks, failures, NaN outputs, cells never
run, single-element error outliers, differing probe outcomes) and other deck parameters are
injected on request so the analysis tests do not depend on the C code."""
import hashlib
import math

import h5py
import numpy as np

STATUS = {"not_run": 0, "pass": 1, "fail_tolerance": 2, "fail_nonfinite": 3, "skipped": 4, "error": 5, "inaccurate": 6}
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24}
STORAGE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
HIST_BINS = np.array([-np.inf, -13.0] + [float(e) for e in range(-12, 4)] + [4.0, np.nan])

DOUBLES = [("max_abs", "1"), ("max_rel", "1"), ("rel_l2", "1"), ("mean_abs", "1"), ("max_ulp", "ulp"),
           ("p99_ulp", "ulp"), ("max_bound_ratio", "1"), ("floor_ratio", "1"), ("red_len", "1"), ("aux_max_abs", "1"),
           ("ref_seconds", "s"), ("ref_xcheck", "1"), ("time_min", "s"), ("time_median", "s"),
           ("time_mean", "s"), ("time_p10", "s"), ("time_p90", "s"), ("time_stddev", "s"),
           ("tflops", "TFLOP/s"), ("gbps", "GB/s"), ("intensity", "FLOP/byte"), ("roofline_frac", "1"),
           ("sm_clock_min", "MHz"), ("sm_clock_max", "MHz"), ("mem_clock", "MHz"), ("temperature", "C"),
           ("power", "W")]
INTS = [("n_nan", "1"), ("n_inf", "1"), ("n_checked", "1"), ("worst_index", "1"), ("ref_rows", "1"),
        ("reps", "1"), ("throttle_reasons", "1"), ("clock_flag", "1"), ("registers", "1"),
        ("smem_bytes", "B"), ("local_bytes", "B"), ("occupancy", "1")]

FAMILIES = {
    "fa2": {"axes": [("precision", ["fp16:fp32", "bf16:fp32", "fp16:fp16", "fp32:fp32"]),
                     ("headdim", [64, 128]), ("seqlen", [512, 1024, 2048]), ("causal", [0, 1]),
                     ("batch", [0]), ("heads", [16]), ("dist", ["normal"])],
            "params": {"tokens": 16384.0, "seqlen_k": 0.0, "scale": 0.0}},
    "gemm": {"axes": [("variant", ["kval-wgmma", "kval-mma", "cublas"]),
                      ("precision", ["fp16:fp32", "bf16:fp32", "fp16:fp16", "bf16:bf16"]),
                      ("layout", ["nn"]), ("shape", ["256x256x256", "512x512x1024", "1024x1024x4096"]),
                      ("dist", ["normal"])],
             "params": {"alpha": 1.0, "beta": 0.0}},
    "layernorm": {"axes": [("precision", ["fp16:fp32", "bf16:fp32", "fp32:fp32", "fp16:fp16"]),
                           ("rows", [1024]), ("hidden", [256, 1024, 4096]), ("dist", ["normal", "offset"])],
                  "params": {"eps": 1e-5}},
    "rmsnorm": {"axes": [("precision", ["fp16:fp32", "bf16:fp32", "fp32:fp32", "fp16:fp16"]),
                         ("rows", [1024]), ("hidden", [256, 1024, 4096]), ("dist", ["normal", "offset"])],
                "params": {"eps": 1e-5}},
}

# Families with parts, written only when named (kv_family.out_parts; part_stats [.., part, part_stat]).
PART_FAMILIES = {
    "fa2bwd": {"axes": [("precision", ["fp16:fp32", "bf16:fp32"]), ("headdim", [64, 128]), ("seqlen", [512, 2048]),
                        ("causal", [0, 1]), ("batch", [0]), ("heads", [16]), ("dist", ["normal"])],
               "params": {"tokens": 16384.0, "scale": 0.0}, "parts": ["dq", "dk", "dv"]},
}
PART_ERROR = {"dq": 1.0, "dk": 0.9, "dv": 0.5}  # each part's error relative to the whole output's
PART_STATS = ["max_abs", "max_rel", "rel_l2", "mean_abs", "max_ulp", "p99_ulp", "max_bound_ratio", "floor_ratio",
              "bias_ulp", "bias_mag_ulp", "bias_se", "n_nan", "n_inf", "n_checked", "worst_index", "n_bias"]


def family_spec(family):
    """The spec of a family, or of a named deck section's group (gemm.scale: gemm's)."""
    kind = family.split(".", 1)[0]
    return FAMILIES[kind] if kind in FAMILIES else PART_FAMILIES[kind]


def gpu_uuid(host, local_rank):
    """A stable fake GPU UUID per (host, local rank), so two runs of one fleet share UUIDs."""
    h = hashlib.sha1(f"{host}/{local_rank}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _fingerprint(family, cell, seed, params=None):
    """A stable fingerprint per family, cell and seed (and, when given, the family's overridden
    parameters: other parameters compute other bits)."""
    h = hashlib.sha1(f"{family}/{cell}/{seed}{'/' + repr(sorted(params.items())) if params else ''}".encode()).digest()
    return int.from_bytes(h[:8], "little") | 1


def _cell_values(family, values, params, backend):
    """Skip reason, reduction length K, FLOPs, bytes, element count of one cell."""
    prec = values["precision"]
    storage, accum = prec.split(":")
    sb = STORAGE_BYTES[storage]
    if family in ("fa2", "fa2bwd"):
        if storage == "fp32":
            return "fp32 storage not implemented for fa2", 0, 0, 0, 0
        L, d, h = values["seqlen"], values["headdim"], values["heads"]
        b = values["batch"] or max(1, int(params["tokens"]) // L)
        flops = 4.0 * b * h * L * L * d / (2 if values["causal"] else 1)
        count = b * L * h * d
        if family == "fa2bwd":  # dq | dk | dv, 2.5 times the forward's FLOPs
            return None, L, 2.5 * flops, 8.0 * count * sb + 8.0 * b * L * h, 3 * count
        return None, L, flops, 4.0 * count * sb + 4.0 * b * L * h, count
    if family == "gemm":
        if values["variant"] == "cublas" and backend == "cpu":
            return "cublas needs the cuda backend", 0, 0, 0, 0
        m, n, k = (int(t) for t in values["shape"].split("x"))
        return None, k, 2.0 * m * n * k, float(sb * (m * k + k * n + m * n)), m * n
    rows, hidden = values["rows"], values["hidden"]
    flops = (8.0 if family == "layernorm" else 5.0) * rows * hidden
    return None, hidden, flops, float(2 * sb * rows * hidden + 2 * sb * hidden), rows * hidden


def _select(values, sel):
    return all(values[k] == v for k, v in sel.items())


def _write_scale(group, name, values):
    if isinstance(values[0], str):
        ds = group.create_dataset(name, data=np.array(values, dtype=object), dtype=h5py.string_dtype("utf-8"))
    else:
        ds = group.create_dataset(name, data=np.asarray(values, dtype=np.int64))
    ds.make_scale(name)
    return ds


def _attach(dset, scales):
    for i, scale in enumerate(scales):
        dset.dims[i].attach_scale(scale)


def _rank_rows(nranks, gpus_per_host, host_prefix, device_names, backend):
    rows = []
    for r in range(nranks):
        host = f"{host_prefix}{r // gpus_per_host:02d}"
        local = r % gpus_per_host
        name = device_names[r] if device_names else "NVIDIA H200"
        rows.append({"host": host, "local_rank": local, "local_size": gpus_per_host,
                     "device_index": local if backend == "cuda" else -1, "device_name": name,
                     "uuid": gpu_uuid(host, local), "serial": f"SN{r:06d}", "pci_bus_id": f"00000000:{0x18 + local:02X}:00.0",
                     "sm_count": 132, "cc_major": 9, "cc_minor": 0, "memory_bytes": 150e9,
                     "driver_version": 13000, "runtime_version": 13000, "copy_gbps": 4272.0,
                     "matrix_tflops": 780.0 if backend == "cuda" else float("nan"), "fp64_tflops": 54.0,
                     "nvml": "ok"})
    return rows


def _write_ranks(f, rows, fixed_strings):
    g = f.create_group("ranks")
    scale = g.create_dataset("rank", data=np.arange(len(rows), dtype=np.int32))
    scale.make_scale("rank")
    for key in rows[0]:
        vals = [row[key] for row in rows]
        if isinstance(vals[0], str):
            if fixed_strings:
                data = np.array([v.encode() for v in vals], dtype="S128")
                d = g.create_dataset(key, data=data)
            else:
                d = g.create_dataset(key, data=np.array(vals, dtype=object), dtype=h5py.string_dtype("utf-8"))
        elif isinstance(vals[0], float):
            d = g.create_dataset(key, data=np.asarray(vals, dtype=np.float64))
        else:
            d = g.create_dataset(key, data=np.asarray(vals, dtype=np.int32))
        d.dims[0].attach_scale(scale)


def _fill_cell(out, idx, r, values, meas, rng, opts):
    """Write one (rank, cell) result into the in-memory arrays `out`."""
    _, k, flops, nbytes, count = meas
    storage, accum = values["precision"].split(":")
    us, ua = UNIT_ROUNDOFF[storage], UNIT_ROUNDOFF[accum]
    escale = opts["error_scale"]
    rel_l2 = (0.3 * us + 0.2 * math.sqrt(k) * ua) * escale
    bound_ratio = 0.5 * rel_l2 / (us + math.sqrt(k) * ua)
    peak, bw = (780e12, 4.2e12) if opts["backend"] == "cuda" else (1e11, 2e10)
    t = max(flops / (0.6 * peak), nbytes / (0.8 * bw)) + 5e-6
    t *= (1.0 + opts["jitter"] * rng.standard_normal()) * opts["gpu_factor"][r] * opts["slow"].get(r, 1.0)
    t *= opts["time_factor"]
    for fam, sel, rr, factor in opts["case_slow"]:
        if rr == r and fam == opts["family"] and _select(values, sel):
            t *= factor
    vals = {"max_abs": rel_l2 * 3.0, "max_rel": rel_l2 * 10.0, "rel_l2": rel_l2, "mean_abs": rel_l2 * 0.8,
            "max_ulp": max(1.0, round(4.0 * rel_l2 / us)), "p99_ulp": max(1.0, round(2.0 * rel_l2 / us)),
            "max_bound_ratio": bound_ratio, "floor_ratio": rel_l2 / (0.5 * us), "red_len": float(k),
            "aux_max_abs": rel_l2 if opts["kind"] == "fa2" else float("nan"), "ref_seconds": 1e-3,
            "ref_xcheck": 1e-15, "time_min": t * 0.98, "time_median": t, "time_mean": t * 1.01,
            "time_p10": t * 0.99, "time_p90": t * 1.02, "time_stddev": t * 0.01, "tflops": flops / t / 1e12,
            "gbps": nbytes / t / 1e9, "intensity": flops / nbytes,
            "roofline_frac": flops / t / min(peak, flops / nbytes * bw),
            "sm_clock_min": 1755.0 if r in opts["slow"] else 1980.0, "sm_clock_max": 1980.0,
            "mem_clock": 2619.0, "temperature": 45.0 + r % 7 + (30 if r in opts["slow"] else 0),
            "power": 450.0, "n_nan": 0, "n_inf": 0, "n_checked": count, "worst_index": count // 3,
            "ref_rows": count, "reps": 50, "throttle_reasons": 0x20 if r in opts["slow"] else 0,
            "clock_flag": 1 if r in opts["slow"] else 0, "registers": 128 if opts["backend"] == "cuda" else -1,
            "smem_bytes": 49152, "local_bytes": 0, "occupancy": 2}
    for name, v in vals.items():
        out[name][(r,) + idx] = v
    for p, part in enumerate(opts["parts"]):  # equal thirds of the output, each with its own error
        f = PART_ERROR[part]
        pv = {"max_abs": vals["max_abs"] * f, "max_rel": vals["max_rel"] * f, "rel_l2": rel_l2 * f,
              "mean_abs": vals["mean_abs"] * f, "max_ulp": vals["max_ulp"], "p99_ulp": vals["p99_ulp"],
              "max_bound_ratio": bound_ratio * f, "floor_ratio": vals["floor_ratio"] * f, "bias_ulp": 0.0,
              "bias_mag_ulp": 0.0, "bias_se": 0.01, "n_nan": 0, "n_inf": 0, "n_checked": count // 3,
              "worst_index": p * (count // 3), "n_bias": count // 3}
        out["part_stats"][(r,) + idx + (p,)] = [pv[k] for k in PART_STATS]
    out["status"][(r,) + idx] = STATUS["pass"] if bound_ratio <= 1 else STATUS["fail_tolerance"]
    if "outcome" in out:  # a probe family's measured outcome (0 unless overridden) and its words
        out["outcome"][(r,) + idx] = 0
        for fam, sel, rr, value in opts["outcomes"]:
            if rr == r and fam == opts["family"] and _select(values, sel):
                out["outcome"][(r,) + idx] = value
        out["message"][(r,) + idx] = f"outcome {out['outcome'][(r,) + idx]}".encode()
    for fam, sel, rr, factor in opts["ulp_outliers"]:  # one element far off: max_ulp grows, rel_l2 does not
        if rr == r and fam == opts["family"] and _select(values, sel):
            out["max_ulp"][(r,) + idx] *= factor
    fp = _fingerprint(opts["family"], idx, opts["seed"], opts["params"].get(opts["family"]))
    for fam, sel, rr, *part in opts["flips"]:
        if rr == r and fam == opts["family"] and _select(values, sel):
            fp ^= 1 << 17
            if part:  # the flipped bits lie in this part: its error sums change
                out["part_stats"][(r,) + idx + (opts["parts"].index(part[0]), PART_STATS.index("mean_abs"))] *= 1.001
    out["fingerprint"][(r,) + idx] = fp
    peak_bin = int(np.clip(math.floor(math.log10(vals["max_abs"])) + 14, 2, 17))
    hist = np.zeros(len(HIST_BINS), dtype=np.uint64)
    hist[0] = count // 10
    hist[peak_bin] = count // 2
    hist[peak_bin - 1] = count - count // 10 - count // 2
    out["hist"][(r,) + idx] = hist
    for fam, sel, rr, status, message in opts["failures"]:
        if rr == r and fam == opts["family"] and _select(values, sel):
            out["status"][(r,) + idx] = STATUS[status]
            if status == "fail_tolerance":
                out["max_bound_ratio"][(r,) + idx] = 1.5
            out["message"][(r,) + idx] = message.encode()[:96]
            if status == "fail_nonfinite":
                out["n_nan"][(r,) + idx] = 3
                if opts["parts"]:  # the three NaNs in the last part
                    out["part_stats"][(r,) + idx + (len(opts["parts"]) - 1, PART_STATS.index("n_nan"))] = 3
    for fam, sel in opts["all_nan"]:  # every output NaN: kval's statistics of the finite elements are 0
        if fam == opts["family"] and _select(values, sel):
            out["status"][(r,) + idx] = STATUS["fail_nonfinite"]
            out["n_nan"][(r,) + idx] = count
            for name in ("max_abs", "max_rel", "rel_l2", "mean_abs", "max_ulp", "p99_ulp", "max_bound_ratio"):
                out[name][(r,) + idx] = 0.0


def _fp_compare(out, device_names, nranks):
    """fp_distinct / fp_majority / fp_agrees as the C side computes them at the end of a fleet run."""
    shape = out["status"].shape[1:]
    distinct = np.zeros(shape, dtype=np.int32)
    majority = np.zeros(shape, dtype=np.uint64)
    agrees = np.full((nranks,) + shape, 2, dtype=np.int8)
    models = [device_names[r] if device_names else "NVIDIA H200" for r in range(nranks)]
    for idx in np.ndindex(*shape):
        for model in sorted(set(models)):
            ranks = [r for r in range(nranks) if models[r] == model and out["status"][(r,) + idx] in (1, 2, 3)]
            if not ranks:
                continue
            fps = [int(out["fingerprint"][(r,) + idx]) for r in ranks]
            best = max(set(fps), key=fps.count)
            if len(set(fps)) >= distinct[idx]:
                distinct[idx] = len(set(fps))
                majority[idx] = best
            for r, fp in zip(ranks, fps):
                agrees[(r,) + idx] = 1 if fp == best else 0
    return distinct, majority, agrees


def _write_family(f, family, nranks, rng, opts):
    spec, kind = family_spec(family), family.split(".", 1)[0]
    spec = dict(spec, params=dict(spec["params"], **opts["params"].get(family, {})))
    opts = dict(opts, parts=spec.get("parts", []))
    axes = [name for name, _ in spec["axes"]]
    grid = [vals for _, vals in spec["axes"]]
    shape = tuple(len(v) for v in grid)
    g = f.create_group(family)
    rank_scale = g.create_dataset("rank", data=np.arange(nranks, dtype=np.int32))
    rank_scale.make_scale("rank")
    axis_scales = [_write_scale(g, name, vals) for name, vals in spec["axes"]]
    hist_scale = g.create_dataset("hist_bin", data=HIST_BINS)
    hist_scale.make_scale("hist_bin")
    full = (nranks,) + shape
    out = {name: np.full(full, np.nan) for name, _ in DOUBLES}
    out.update({name: np.full(full, -1, dtype=np.int64) for name, _ in INTS})
    out["status"] = np.zeros(full, dtype=np.int8)
    out["fingerprint"] = np.zeros(full, dtype=np.uint64)
    out["message"] = np.zeros(full, dtype="S96")
    out["hist"] = np.zeros(full + (len(HIST_BINS),), dtype=np.uint64)
    out["part_stats"] = np.full(full + (len(opts["parts"]), len(PART_STATS)), np.nan)
    if any(o[0] == family for o in opts["outcomes"]):
        out["outcome"] = np.full(full, -1, dtype=np.int32)
    n_valid = n_skipped = 0
    for flat, idx in enumerate(np.ndindex(*shape)):
        values = {a: grid[i][j] for i, (a, j) in enumerate(zip(axes, idx))}
        meas = _cell_values(kind, values, spec["params"], opts["backend"])
        if meas[0] is not None:
            n_skipped += 1
            out["status"][(slice(None),) + idx] = STATUS["skipped"]
            out["message"][(slice(None),) + idx] = meas[0].encode()
            continue
        n_valid += 1
        ranks = range(nranks) if opts["mode"] == "fleet" else [flat % nranks]
        for r in ranks:
            if opts["missing"] and rng.random() < opts["missing"]:
                continue  # the run never reached this cell on this rank
            _fill_cell(out, idx, r, values, meas, rng, dict(opts, family=family, kind=kind))
    g.attrs["axes"] = ",".join(axes)
    g.attrs["n_cells"] = np.int64(int(np.prod(shape)))
    g.attrs["n_valid"] = np.int64(n_valid)
    g.attrs["n_skipped"] = np.int64(n_skipped)
    for k, v in spec["params"].items():
        g.attrs[k] = np.float64(v)
    scales = [rank_scale] + axis_scales
    d = g.create_dataset("status", data=out["status"], dtype=f["case_status"], fillvalue=0)
    _attach(d, scales)
    if kind == "gemm":
        shape_scale = axis_scales[axes.index("shape")]
        for k, name in enumerate("MNK"):
            c = g.create_dataset(name, data=np.array([int(v.split("x")[k]) for v in grid[axes.index("shape")]]))
            c.dims[0].attach_scale(shape_scale)
        d.attrs["coordinates"] = "M N K"
    d = g.create_dataset("fingerprint", data=out["fingerprint"], fillvalue=np.uint64(0))
    _attach(d, scales)
    for name, unit in DOUBLES + INTS:
        d = g.create_dataset(name, data=out[name])
        d.attrs["units"] = unit
        d.attrs["description"] = f"synthetic {name}"
        _attach(d, scales)
    d = g.create_dataset("message", data=out["message"])
    _attach(d, scales)
    if "outcome" in out:
        d = g.create_dataset("outcome", data=out["outcome"])
        _attach(d, scales)
    d = g.create_dataset("hist", data=out["hist"])
    _attach(d, scales + [hist_scale])
    if opts["parts"]:
        part_scales = [_write_scale(g, "part", opts["parts"]), _write_scale(g, "part_stat", PART_STATS)]
        d = g.create_dataset("part_stats", data=out["part_stats"])
        _attach(d, scales + part_scales)
    if opts["fp_compare"] and opts["mode"] == "fleet":
        distinct, majority, agrees = _fp_compare(out, opts["device_names"], nranks)
        d = g.create_dataset("fp_distinct", data=distinct)
        _attach(d, axis_scales)
        d = g.create_dataset("fp_majority", data=majority)
        _attach(d, axis_scales)
        d = g.create_dataset("fp_agrees", data=agrees)
        _attach(d, scales)
    return g


def write_kval_file(path, nranks=4, gpus_per_host=2, host_prefix="node", families=tuple(FAMILIES),
                    backend="cuda", mode="fleet", seed=42, slow=None, case_slow=(), flips=(), failures=(),
                    error_scale=1.0, time_factor=1.0, device_names=None, layout_version=3,
                    drop_root_attrs=(), drop_groups=(), fp_compare=True, fixed_strings=False,
                    creation_time="2026-11-30T08:00:00Z", noise_seed=1, jitter=0.004, gpu_spread=0.0,
                    missing=0.0, all_nan=(), params=None, outcomes=(), complete=None, ulp_outliers=()):
    """Write one synthetic kval file. slow: {rank: factor}; case_slow: [(family, {axis: v}, rank,
    factor)]; flips: [(family, {axis: v}, rank[, part])]; failures: [(family, {axis: v}, rank, status,
    message)]; jitter: relative run-to-run noise of every time; gpu_spread: relative sigma of a
    persistent speed factor per GPU; missing: fraction of (rank, cell) results never written
    (the file is then incomplete, unless complete says otherwise: the root attribute complete,
    1 or 0); all_nan: [(family, {axis: v})] cells whose output is all NaN; params: {family: {name:
    value}} parameters other than the family's defaults (its fingerprints change with them);
    outcomes: [(family, {axis: v}, rank, outcome)]: the family gets an `outcome` dataset (a
    probe's measured outcome, 0 for every result unless named here); ulp_outliers: [(family,
    {axis: v}, rank, factor)]: max_ulp of those cells times factor, the other errors unchanged."""
    rng = np.random.default_rng(noise_seed)
    opts = {"backend": backend, "mode": mode, "seed": seed, "slow": dict(slow or {}),
            "case_slow": list(case_slow), "flips": list(flips), "failures": list(failures),
            "error_scale": error_scale, "time_factor": time_factor, "device_names": device_names,
            "fp_compare": fp_compare, "jitter": jitter, "missing": missing, "all_nan": list(all_nan),
            "params": dict(params or {}), "outcomes": list(outcomes), "ulp_outliers": list(ulp_outliers),
            "gpu_factor": 1.0 + gpu_spread * rng.standard_normal(nranks)}
    deck = "\n".join(f"[{fam}]\n" + "\n".join(f"{a} = {' '.join(map(str, v))}" for a, v in family_spec(fam)["axes"])
                     for fam in families) + "\n"
    with h5py.File(path, "w") as f:
        attrs = {"kval_version": "0.1.0", "git_commit": "synthetic", "command_line": f"kval -o {path}",
                 "deck_text": deck, "deck_path": "synthetic.deck", "creation_time": creation_time,
                 "mpi_version": "Open MPI v4.1.6", "hdf5_version": "1.10.10", "cuda_runtime": "13.0",
                 "cuda_driver": "13.0", "slurm_job_id": "", "slurm_nodes": "", "backend": backend, "mode": mode,
                 "seed": np.uint64(seed), "nranks": np.int32(nranks), "hdf5_flavour": "serial",
                 "layout_version": np.int32(layout_version), "complete": np.int64((0 if missing else 1) if complete is None else complete),
                 "status_names": ",".join(f"{v}={k}" for k, v in STATUS.items()), "Conventions": "CF-1.10"}
        for k, v in attrs.items():
            if k not in drop_root_attrs:
                f.attrs[k] = v
        f["case_status"] = h5py.enum_dtype(STATUS, basetype="i1")
        if "ranks" not in drop_groups:
            _write_ranks(f, _rank_rows(nranks, gpus_per_host, host_prefix, device_names, backend), fixed_strings)
        for fam in families:
            if fam not in drop_groups:
                _write_family(f, fam, nranks, rng, opts)
    return path
