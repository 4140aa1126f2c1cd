#!/usr/bin/env bash
# install-deps.sh - install what kval needs on Debian/Ubuntu, at one of two levels:
#   main  what the main job needs to build, run and write its report (jobs/local.sh): a C
#         compiler, make, Autotools, pkg-config, Open MPI, HDF5 with its high-level library (any
#         flavour: serial is enough), Python 3 with h5py, numpy and matplotlib for the report.
#         Each need is checked by what is there (the command, the pkg-config module, the Python
#         module), not by package name: a node whose tools came from elsewhere installs nothing.
#         When something is missing and the package registry cannot be reached, it says what is
#         missing; the report's Python modules are optional (the job runs without them).
#   test  (default) everything `make check` uses besides: both HDF5 flavours side by side,
#         hdf5-tools, Slurm and munge (the Slurm tests), clang with libFuzzer (the fuzz tests),
#         valgrind (the memcheck test),
#         and the Python packages and clients of analysis/'s tests.
# Installs only what is missing; needs root (or sudo) for apt-get; waits up to 10 minutes for the
# dpkg lock another apt holds rather than failing. CUDA is not installed here: configure finds
# nvcc when the CUDA toolkit is present.
#   bash jobs/install-deps.sh [main|test]
set -euo pipefail
level=${1:-test}
case $level in main|test) ;; *) echo "install-deps: level '$level': expected main or test" >&2; exit 2 ;; esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_WAIT=(-o DPkg::Lock::Timeout=600)
updated=0

# apt_install PKG...: apt-get update once, then install; 1 when the registry cannot be reached
apt_install() {
  echo "install-deps: apt-get install $*"
  if [ "$updated" = 0 ]; then
    $SUDO apt-get "${APT_WAIT[@]}" update -qq || return 1
    updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${APT_WAIT[@]}" install -y -qq --no-install-recommends "$@"
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
have_hdf5() {
  for m in hdf5-openmpi hdf5-serial hdf5; do pkg-config --exists "$m" 2>/dev/null && return 0; done
  command -v h5pcc >/dev/null 2>&1 || command -v h5cc >/dev/null 2>&1
}
py_missing() { for m in "$@"; do python3 -c "import $m" >/dev/null 2>&1 || printf ' %s' "$m"; done; }
pip_install() {
  echo "install-deps: pip install $*"
  python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q --break-system-packages "$@"
}

if [ "$level" = main ]; then
  need="" missing_what=""
  for t in cc:build-essential make:build-essential autoconf:autoconf automake:automake pkg-config:pkg-config \
    mpicc:libopenmpi-dev mpirun:openmpi-bin python3:python3; do
    command -v "${t%%:*}" >/dev/null 2>&1 || { need="$need ${t#*:}"; missing_what="$missing_what ${t%%:*}"; }
  done
  have_hdf5 || { need="$need libhdf5-dev"; missing_what="$missing_what HDF5"; }
  if [ -n "$need" ]; then
    # shellcheck disable=SC2086
    apt_install $(printf '%s\n' $need | sort -u) || {
      echo "install-deps: missing for the main job:$missing_what, and the package registry cannot be reached" >&2
      exit 1
    }
  fi
  py=$(py_missing h5py numpy matplotlib)
  if [ -n "$py" ]; then
    # shellcheck disable=SC2086
    pip_install $py || echo "install-deps: Python modules$py not installed: the job runs, its report is left out"
  fi
  echo "install-deps: the main job's dependencies are present"
  exit 0
fi

pkgs="build-essential autoconf automake pkg-config git openmpi-bin libopenmpi-dev
      libhdf5-openmpi-dev libhdf5-dev hdf5-tools slurm-wlm munge python3 python3-pip clang valgrind"
missing=""
for p in $pkgs; do installed "$p" || missing="$missing $p"; done
# shellcheck disable=SC2086
[ -z "$missing" ] || apt_install $missing

# libFuzzer's runtime for the fuzz tests: the libclang-rt-N-dev of the installed clang
clang_major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$clang_major" ] && ! installed "libclang-rt-$clang_major-dev"; then
  apt_install "libclang-rt-$clang_major-dev" ||
    echo "install-deps: libclang-rt-$clang_major-dev not available: the fuzz tests will be skipped"
fi

# --- analysis/ and its client tests (issue 16/17): one block, kept together --------------------
# Debian: ncdump (netcdf-bin) and udunits2 (udunits-bin) for tests/system/clients_test.sh,
# chromium and a font for the report's screenshot test (tests/system/report_browser_test.sh).
# PyPI: scipy (intervals of the fleet verdicts and the growth fits), h5netcdf and netCDF4 (the
# xarray engines README's examples use; netCDF4 from PyPI brings netCDF-C 4.10, whose strings
# Debian 12's 4.9.0 misreads).
ana_missing=""
for p in netcdf-bin udunits-bin chromium fonts-dejavu-core; do installed "$p" || ana_missing="$ana_missing $p"; done
# shellcheck disable=SC2086
[ -z "$ana_missing" ] || apt_install $ana_missing
py=$(py_missing h5py numpy pandas scipy xarray h5netcdf netCDF4 matplotlib pytest)
# shellcheck disable=SC2086
[ -z "$py" ] || pip_install $py
# --- end of the analysis block ---------------------------------------------------------------------
echo "install-deps: all dependencies present"
