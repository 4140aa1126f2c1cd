#!/bin/sh
# analysis_mutants.sh - make check's analysis part of kval's mutation suite: every analysis
# mutant of tests/mutation/mutants.tsv (a bug in analysis/'s fleet and baseline verdicts,
# statistics, readers, reports or exports), planted in a scratch copy of the tree, must make analysis/'s pytest
# suite fail (tests/mutation/run_analysis_mutants.sh; docs/VALIDATION.md). Fails when one
# survives or is broken.
set -e
: "${top_srcdir:?run by make check}" "${top_builddir:?run by make check}"
exec "$top_srcdir/tests/mutation/run_analysis_mutants.sh" --jobs 2 \
  --results "$top_builddir/tests/mutation/analysis-mutants.tsv"
