#!/usr/bin/env bash
# install-deps.sh - install what kval needs to build, run and test on Debian/Ubuntu:
# compilers, Autotools, Open MPI, HDF5 (parallel and serial flavours side by side),
# hdf5-tools, Slurm and munge (for the Slurm tests), and the Python packages of analysis/.
# Installs only what is missing; needs root (or sudo) for apt-get. CUDA is not installed
# here: configure finds nvcc when the CUDA toolkit is present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

pkgs="build-essential autoconf automake pkg-config git openmpi-bin libopenmpi-dev
      libhdf5-openmpi-dev libhdf5-dev hdf5-tools slurm-wlm munge python3 python3-pip"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: apt-get install$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

py_missing=""
for m in h5py numpy pandas xarray h5netcdf matplotlib pytest; do
  python3 -c "import $m" >/dev/null 2>&1 || py_missing="$py_missing $m"
done
if [ -n "$py_missing" ]; then
  echo "install-deps: pip install$py_missing"
  python3 -m pip install -q $py_missing 2>/dev/null ||
    python3 -m pip install -q --break-system-packages $py_missing
fi
echo "install-deps: all dependencies present"
