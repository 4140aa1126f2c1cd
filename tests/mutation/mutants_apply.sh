#!/bin/sh
# mutants_apply.sh - every mutant of tests/mutation/mutants.tsv, of every kind (the gpu kinds
# too, which no CPU machine runs), still applies: its `from` text occurs exactly once in its file.
# A kernel edit that moves a mutant's text makes the mutant stale; this catches it in seconds
# instead of at the end of the cpu mutants' minutes, or never for a gpu mutant.
set -e
: "${top_srcdir:?run by make check}"
PYTHON=${PYTHON:-python3}
exec "$PYTHON" "$top_srcdir/tests/mutation/mutate.py" check "$top_srcdir/tests/mutation/mutants.tsv" \
  "$top_srcdir" --kind all
