# test_lib.sh - shell helpers of the system tests, sourced (". $top_srcdir/tests/system/test_lib.sh").
# fail MESSAGE: prints "FAIL: MESSAGE" and sets rc=1, the test's exit status; with
# KVAL_TEST_FAIL_FAST=1 (tests/mutation/run_mutants.sh runs a mutant's tests so) the test ends at
# its first failed check, exit 1.
fail() { echo "FAIL: $*"; rc=1; [ "${KVAL_TEST_FAIL_FAST:-0}" != 1 ] || exit 1; }
