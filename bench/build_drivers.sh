# build_drivers.sh - sourced by the GPU-node bench scripts (device_run.sh, ncu_profile.sh): one
# way to build bench drivers in a build tree outside the source tree.
#   kv_build_drivers ROOT BUILD TARGET...
# bootstraps ROOT when it has no configure script, configures BUILD (CONFIGURE_ARGS) unless it
# already holds a Makefile, makes the generated header first (make builds BUILT_SOURCES only
# for `make all` and `make check`), then the targets with one job per core. Output goes to
# the caller's stdout and stderr; returns make's status.
kv_build_drivers() {
  local root=$1 build=$2
  shift 2
  { [ -x "$root/configure" ] || (cd "$root" && ./bootstrap); } &&
    # shellcheck disable=SC2086
    { [ -f "$build/Makefile" ] || (cd "$build" && "$root/configure" ${CONFIGURE_ARGS:-}); } &&
    make -C "$build" src/kval_git.h &&
    make -C "$build" -j"$(nproc)" "$@"
}
