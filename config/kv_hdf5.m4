# kv_hdf5.m4 - find HDF5 (with its high-level library for dimension scales).
# --with-hdf5=auto (default: parallel flavour first, else serial) | parallel | serial | PATH.
# Defines KV_HDF5_PARALLEL to 1 or 0 and sets HDF5_CFLAGS / HDF5_LIBS.

# _KV_HDF5_FROM_PKG(module): flags from pkg-config, plus hdf5_hl from the same directory.
AC_DEFUN([_KV_HDF5_FROM_PKG], [
  HDF5_CFLAGS=`$PKG_CONFIG --cflags $1 2>/dev/null`
  kv_h5_libdirs=`$PKG_CONFIG --libs-only-L $1 2>/dev/null`
  HDF5_LIBS="$kv_h5_libdirs -lhdf5_hl `$PKG_CONFIG --libs $1 2>/dev/null`"
  kv_hdf5_how="pkg-config $1"
])

# _KV_HDF5_FROM_WRAPPER(h5cc|h5pcc): flags from the wrapper's -show output.
AC_DEFUN([_KV_HDF5_FROM_WRAPPER], [
  kv_h5_show=`$1 -show 2>/dev/null`
  HDF5_CFLAGS=""
  HDF5_LIBS=""
  for kv_tok in $kv_h5_show; do
    case $kv_tok in
      -I*|-D*) HDF5_CFLAGS="$HDF5_CFLAGS $kv_tok" ;;
      -L*|-l*|-Wl,*) HDF5_LIBS="$HDF5_LIBS $kv_tok" ;;
      *.a|*.so) HDF5_LIBS="$HDF5_LIBS $kv_tok" ;;
    esac
  done
  AS_CASE([" $HDF5_LIBS "], [*hdf5_hl*], [], [HDF5_LIBS="-lhdf5_hl $HDF5_LIBS -lhdf5"])
  kv_hdf5_how="$1 -show"
])

# _KV_HDF5_TRY(flavour): do the current flags build an HDF5 (parallel: with MPI-IO) program?
AC_DEFUN([_KV_HDF5_TRY], [
  kv_save_CPPFLAGS="$CPPFLAGS"; kv_save_LIBS="$LIBS"
  CPPFLAGS="$CPPFLAGS $HDF5_CFLAGS"; LIBS="$HDF5_LIBS $LIBS"
  AS_IF([test "$1" = parallel],
    [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>
#include <hdf5_hl.h>
#ifndef H5_HAVE_PARALLEL
#error not parallel
#endif]], [[hid_t p = H5Pcreate(H5P_FILE_ACCESS); H5Pset_fapl_mpio(p, MPI_COMM_WORLD, MPI_INFO_NULL); H5DSis_scale(p);]])],
      [kv_h5_ok=yes], [kv_h5_ok=no])],
    [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>
#include <hdf5_hl.h>
#ifdef H5_HAVE_PARALLEL
#error parallel library asked for as serial
#endif]], [[H5open(); H5DSis_scale(0);]])],
      [kv_h5_ok=yes], [kv_h5_ok=no])])
  CPPFLAGS="$kv_save_CPPFLAGS"; LIBS="$kv_save_LIBS"
])

AC_DEFUN([KV_CHECK_HDF5], [
  AC_ARG_WITH([hdf5],
    [AS_HELP_STRING([--with-hdf5=auto|parallel|serial|PATH],
                    [HDF5 to use: auto (default) tries the parallel flavour first, then the serial one; PATH is an install prefix (PATH/include, PATH/lib)])],
    [], [with_hdf5=auto])
  PKG_PROG_PKG_CONFIG
  kv_hdf5_flavour=none
  kv_h5_ok=no
  AS_CASE([$with_hdf5],
    [auto|parallel], [
      AC_MSG_CHECKING([for parallel HDF5])
      AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists hdf5-openmpi],
            [_KV_HDF5_FROM_PKG([hdf5-openmpi]) _KV_HDF5_TRY([parallel])])
      AS_IF([test "$kv_h5_ok" != yes && command -v h5pcc >/dev/null 2>&1],
            [_KV_HDF5_FROM_WRAPPER([h5pcc]) _KV_HDF5_TRY([parallel])])
      AC_MSG_RESULT([$kv_h5_ok])
      AS_IF([test "$kv_h5_ok" = yes], [kv_hdf5_flavour=parallel],
            [test "$with_hdf5" = parallel],
            [AC_MSG_ERROR([--with-hdf5=parallel: no parallel HDF5 found (Debian/Ubuntu: apt-get install libhdf5-openmpi-dev)])])
    ])
  AS_IF([test "$kv_h5_ok" != yes], [
    AS_CASE([$with_hdf5],
      [auto|serial], [
        AC_MSG_CHECKING([for serial HDF5])
        AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists hdf5-serial],
              [_KV_HDF5_FROM_PKG([hdf5-serial]) _KV_HDF5_TRY([serial])])
        AS_IF([test "$kv_h5_ok" != yes && test -n "$PKG_CONFIG" && $PKG_CONFIG --exists hdf5],
              [_KV_HDF5_FROM_PKG([hdf5]) _KV_HDF5_TRY([serial])])
        AS_IF([test "$kv_h5_ok" != yes && command -v h5cc >/dev/null 2>&1],
              [_KV_HDF5_FROM_WRAPPER([h5cc]) _KV_HDF5_TRY([serial])])
        AC_MSG_RESULT([$kv_h5_ok])
        AS_IF([test "$kv_h5_ok" = yes], [kv_hdf5_flavour=serial])
      ],
      [no], [AC_MSG_ERROR([kval needs HDF5; --with-hdf5=no is not supported])],
      [*], [
        AS_IF([test -d "$with_hdf5"], [],
              [AC_MSG_ERROR([--with-hdf5=$with_hdf5: not auto, parallel, serial, or an existing directory])])
        HDF5_CFLAGS="-I$with_hdf5/include"
        HDF5_LIBS="-L$with_hdf5/lib -Wl,-rpath,$with_hdf5/lib -lhdf5_hl -lhdf5"
        kv_hdf5_how="prefix $with_hdf5"
        AC_MSG_CHECKING([for parallel HDF5 in $with_hdf5])
        _KV_HDF5_TRY([parallel])
        AC_MSG_RESULT([$kv_h5_ok])
        AS_IF([test "$kv_h5_ok" = yes], [kv_hdf5_flavour=parallel], [
          AC_MSG_CHECKING([for serial HDF5 in $with_hdf5])
          _KV_HDF5_TRY([serial])
          AC_MSG_RESULT([$kv_h5_ok])
          AS_IF([test "$kv_h5_ok" = yes], [kv_hdf5_flavour=serial])])
      ])
  ])
  AS_IF([test "$kv_hdf5_flavour" = none],
        [AC_MSG_ERROR([no usable HDF5 with its high-level library found (Debian/Ubuntu: apt-get install libhdf5-openmpi-dev or libhdf5-dev); see config.log])])
  AS_IF([test "$kv_hdf5_flavour" = parallel],
        [AC_DEFINE([KV_HDF5_PARALLEL], [1], [Define to 1 when HDF5 is the parallel (MPI-IO) flavour])],
        [AC_DEFINE([KV_HDF5_PARALLEL], [0], [Define to 1 when HDF5 is the parallel (MPI-IO) flavour])])
  AM_CONDITIONAL([KV_HDF5_PARALLEL], [test "$kv_hdf5_flavour" = parallel])
  AC_SUBST([HDF5_CFLAGS])
  AC_SUBST([HDF5_LIBS])
  AC_SUBST([KV_HDF5_FLAVOUR], [$kv_hdf5_flavour])
  AC_PATH_PROGS([H5DUMP], [h5dump], [])
])
