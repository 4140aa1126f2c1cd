#!/bin/sh
# cpu_mutants.sh - make check's part of kval's mutation suite: every cpu mutant of
# tests/mutation/mutants.tsv, planted in a scratch copy of the tree and built with this build's
# configure options (less CUDA), must be flagged by inputs/smoke.deck on the cpu backend or,
# where the mutant names tests (a bug in what a run plans, counts or records), fail one of them
# (tests/mutation/run_mutants.sh; docs/VALIDATION.md). Fails when one survives or is broken.
set -e
: "${top_srcdir:?run by make check}" "${top_builddir:?run by make check}"
args=$(cd "$top_builddir" && ./config.status --config)
exec "$top_srcdir/tests/mutation/run_mutants.sh" --kind cpu --backend cpu --deck inputs/smoke.deck \
  --configure-args "$args" --results "$top_builddir/tests/mutation/cpu-mutants.tsv"
