#!/usr/bin/env bash
# install-deps.sh - install what kval needs to build, run and test on Debian/Ubuntu:
# compilers, Autotools, Open MPI, HDF5 (parallel and serial flavours side by side),
# hdf5-tools, Slurm and munge (for the Slurm tests), clang with libFuzzer (for the fuzz tests),
# and the Python packages of analysis/ with the clients its tests open files with (one block)
# Installs only what is missing; needs root (or sudo) for apt-get. CUDA is not installed
# here: configure finds nvcc when the CUDA toolkit is present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

pkgs="build-essential autoconf automake pkg-config git openmpi-bin libopenmpi-dev
      libhdf5-openmpi-dev libhdf5-dev hdf5-tools slurm-wlm munge python3 python3-pip clang"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: apt-get install$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# libFuzzer's runtime for the fuzz tests: the libclang-rt-N-dev of the installed clang
clang_major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$clang_major" ] && ! dpkg-query -W -f='${Status}' "libclang-rt-$clang_major-dev" 2>/dev/null | grep -q "install ok installed"; then
  echo "install-deps: apt-get install libclang-rt-$clang_major-dev"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "libclang-rt-$clang_major-dev" ||
    echo "install-deps: libclang-rt-$clang_major-dev not available: the fuzz tests will be skipped"
fi

# --- analysis/ and its client tests (issue 16/17): one block, kept together --------------------
# Debian: ncdump (netcdf-bin) and udunits2 (udunits-bin) for tests/system/clients_test.sh,
# chromium and a font for the report's screenshot test (tests/system/report_browser_test.sh).
# PyPI: scipy (intervals of the fleet verdicts and the growth fits), h5netcdf and netCDF4 (the
# xarray engines README's examples use; netCDF4 from PyPI brings netCDF-C 4.10, whose strings
# Debian 12's 4.9.0 misreads).
ana_pkgs="netcdf-bin udunits-bin chromium fonts-dejavu-core"
ana_missing=""
for p in $ana_pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || ana_missing="$ana_missing $p"
done
if [ -n "$ana_missing" ]; then
  echo "install-deps: apt-get install$ana_missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $ana_missing
fi
py_missing=""
for m in h5py numpy pandas scipy xarray h5netcdf netCDF4 matplotlib pytest; do
  python3 -c "import $m" >/dev/null 2>&1 || py_missing="$py_missing $m"
done
if [ -n "$py_missing" ]; then
  echo "install-deps: pip install$py_missing"
  python3 -m pip install -q $py_missing 2>/dev/null ||
    python3 -m pip install -q --break-system-packages $py_missing
fi
# --- end of the analysis block ---------------------------------------------------------------------
echo "install-deps: all dependencies present"
