"""kval_analysis - reports, fleet-regression verdicts and precision studies from kval HDF5
files (the layout in README.md, "The HDF5 file"). Entry point: kval-analyze (cli.py)."""
__version__ = "0.1.0"
