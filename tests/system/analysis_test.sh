#!/bin/sh
# analysis_test.sh - the pytest suite of analysis/ (synthetic files for the fleet, report
# and precision commands, plus one test on files made by the real kval binary).
set -u
: "${top_srcdir:?}" "${PYTHON:=python3}"
"$PYTHON" -c "import h5py, numpy, pandas, scipy, xarray, matplotlib, pytest" 2>/dev/null ||
  { echo "FAIL: the Python packages of analysis/ are missing (jobs/install-deps.sh installs them)"; exit 1; }
KVAL_BIN=${KVAL:-} MPLBACKEND=Agg "$PYTHON" -m pytest -q -p no:cacheprovider "$top_srcdir/analysis/tests"
