"""probes.py - the tensor-core arithmetic probes (tcprobe) in the precision study: the families
whose cases measure an outcome (the `outcome` dataset, >= 0 where measured), and one table of the
outcomes per GPU: a row per probe case (probe, input type, instruction), a column per physical
GPU (model, host, UUID), each cell the outcome in words as kval decoded it (the case's message)
with its status. docs/NUMERICS.md says what each probe measures and what the model requires."""
import pandas as pd

from .io import case_frame, family_axes


def probe_families(runs):
    """Names of the families with measured outcomes."""
    return [n for n, ds in runs.families.items() if "outcome" in ds and bool((ds["outcome"].values >= 0).any())]


def probe_table(runs):
    """(DataFrame, records): the outcomes per case and GPU; records for the JSON."""
    rows, records = {}, []
    gpus = []
    for name in probe_families(runs):
        ds = runs.families[name]
        axes = family_axes(ds)
        frame = case_frame(ds, ["status", "outcome", "message"])
        frame = frame[frame["outcome"] >= 0]
        for _, r in frame.iterrows():
            gpu = f"{r['gpu_name']} {r['host']} {str(r['gpu_key'])[:16]}"
            if gpu not in gpus:
                gpus.append(gpu)
            key = (name,) + tuple(str(r[a]) for a in axes)
            row = rows.setdefault(key, dict({"family": name}, **{a: str(r[a]) for a in axes}))
            words = str(r["message"]).split(": ", 1)[-1]
            row[gpu] = words if r["status"] == "pass" else f"{words} ({r['status']})"
            records.append({"family": name, "case": {a: str(r[a]) for a in axes}, "gpu": gpu,
                            "outcome": int(r["outcome"]), "words": str(r["message"]), "status": str(r["status"])})
    return pd.DataFrame(list(rows.values())), records


def probe_section(doc, runs):
    """The probes' heading, note and table; returns the JSON records."""
    table, records = probe_table(runs)
    if table.empty:
        return []
    doc.heading("Tensor-core arithmetic (probes)")
    doc.paragraph("What the tensor cores of each GPU compute, measured by crafted inputs (tcprobe; "
                  "docs/NUMERICS.md): products, alignment width, rounding, normalisation, subnormals, the "
                  "block of the fused sum, monotonicity. A case that contradicts the precision model the "
                  "tolerance rests on fails; on the cpu backend the table shows the model itself.")
    doc.table(table, row_class=lambda r: "bad" if any("(fail" in str(v) for v in r.values) else "")
    return records
