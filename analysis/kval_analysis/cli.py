"""cli.py - the `kval-analyze` command line: subcommands report, fleet, precision and export.
Exit status: 0 done (fleet: VERDICT PASS), 1 fleet verdict FAIL or INCOMPLETE, 2 bad input or
usage (missing file, not HDF5, not a kval file, a damaged file, unsupported layout_version),
3 an internal error (a traceback; never a verdict)."""
import argparse
import sys
import traceback

from . import __version__
from .io import KvalInputError, load

EXIT_OK, EXIT_FLAGGED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be > 0")
    return value


def _hosts(text):
    hosts = [h.strip() for h in text.split(",")]
    if not all(hosts):
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of host names")
    return hosts


def _parser():
    p = argparse.ArgumentParser(prog="kval-analyze",
                                description="Reports, fleet-regression verdicts and precision studies "
                                            "from kval HDF5 files.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    r = sub.add_parser("report", help="HTML page + Markdown summary + PNG plots of one or many runs")
    r.add_argument("files", nargs="+", metavar="FILE", help="kval HDF5 files (combined along rank)")
    r.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory (created)")
    f = sub.add_parser("fleet", help="fingerprint, performance, failure, completeness and baseline checks per GPU; "
                                     "exit 1 unless the verdict is PASS")
    f.add_argument("files", nargs="+", metavar="FILE", help="kval HDF5 files of this run")
    f.add_argument("--baseline", nargs="+", metavar="FILE", help="kval files of an earlier run to compare with")
    f.add_argument("--expect-hosts", type=_hosts, metavar="HOST[,HOST...]",
                   help="hosts (/ranks host: the Slurm node names) that must have results; one with no file "
                        "makes the verdict INCOMPLETE")
    f.add_argument("--json", metavar="OUT", help="write the full result as JSON")
    f.add_argument("--junit", metavar="OUT", help="write JUnit XML (one testsuite per GPU, one testcase per case)")
    f.add_argument("--slow", type=_positive, default=0.02,
                   help="fail a GPU whose median slowdown vs its peers has its 95%% interval above this fraction (0.02)")
    f.add_argument("--z", type=_positive, default=3.5,
                   help="with 3+ GPUs of a model, a failing GPU's robust z among them must also exceed this (3.5)")
    f.add_argument("--mad-floor", type=_positive, default=0.002,
                   help="lower bound of the MAD of the GPUs' median slowdowns, as a fraction (0.002)")
    f.add_argument("--noise", type=_positive, default=0.05,
                   help="a case whose 95%% noise half-width exceeds this fraction is AMBIGUOUS (0.05)")
    f.add_argument("--confidence", type=float, default=0.99,
                   help="family-wise confidence of the per-GPU intervals (0.99: each GPU at 1 - 0.01 / GPUs)")
    f.add_argument("--regress", type=_positive, default=0.05,
                   help="baseline: fail a GPU whose median time ratio has its 95%% interval above 1 + this (0.05)")
    f.add_argument("--error-factor", type=_positive, default=2.0,
                   help="baseline: flag a case whose max_ulp or rel_l2 grew by more than this factor (2)")
    f.add_argument("-q", "--quiet", action="store_true", help="no text report on stdout")
    q = sub.add_parser("precision", help="fp16/bf16 storage and accumulation study: HTML + Markdown + PNGs")
    q.add_argument("files", nargs="+", metavar="FILE", help="kval HDF5 files")
    q.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory (created)")
    e = sub.add_parser("export", help="every (rank, case) of the files as one flat CSV or Parquet table")
    e.add_argument("files", nargs="+", metavar="FILE", help="kval HDF5 files")
    e.add_argument("-o", "--output", required=True, metavar="OUT", help="OUT.csv or OUT.parquet")
    return p


def _fleet(args):
    from . import fleet, fleet_output

    runs = load(args.files)
    baseline = load(args.baseline) if args.baseline else None
    opts = fleet.FleetOptions(z=args.z, slow=args.slow, mad_floor=args.mad_floor, noise=args.noise,
                              regress=args.regress, error_factor=args.error_factor, confidence=args.confidence)
    if not 0 < args.confidence < 1:
        raise KvalInputError(f"--confidence {args.confidence}: expected a number between 0 and 1")
    res = fleet.analyse(runs, baseline, opts, expect_hosts=args.expect_hosts)
    if not args.quiet:
        sys.stdout.write(fleet_output.text_report(res))
    if args.json:
        fleet_output.write_json(res, args.json)
    if args.junit:
        fleet_output.write_junit(res, runs, args.junit)
    return EXIT_FLAGGED if res["verdict"] != "PASS" else EXIT_OK


def _report(args):
    from .report import build_report

    html, md = build_report(load(args.files), args.output)
    print(f"report: {html}\nsummary: {md}")
    return EXIT_OK


def _precision(args):
    from .precision import build_precision

    html, md = build_precision(load(args.files), args.output)
    print(f"precision study: {html}\nsummary: {md}")
    return EXIT_OK


def _export(args):
    from .export import write_export

    n = write_export(load(args.files), args.output)
    print(f"export: {n} rows -> {args.output}")
    return EXIT_OK


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return {"report": _report, "fleet": _fleet, "precision": _precision, "export": _export}[args.command](args)
    except KvalInputError as err:
        print(f"kval-analyze: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        print(f"kval-analyze: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:  # a crash must not read as a verdict (1)
        traceback.print_exc()
        print("kval-analyze: internal error (the traceback above; this is not a verdict)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
