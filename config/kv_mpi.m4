# kv_mpi.m4 - find the MPI C compiler and check that it compiles and links MPI programs.

# KV_PROG_MPICC: set CC to mpicc (or $MPICC) before AC_PROG_CC.
AC_DEFUN([KV_PROG_MPICC], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AS_IF([test -z "$MPICC"], [AC_CHECK_PROGS([MPICC], [mpicc mpicc.openmpi], [])])
  AS_IF([test -z "$MPICC"],
        [AC_MSG_ERROR([no MPI C compiler found: install Open MPI (Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin) or set MPICC=/path/to/mpicc])])
  CC="$MPICC"
])

# KV_CHECK_MPI: mpi.h compiles and MPI_Init links; record the library version.
AC_DEFUN([KV_CHECK_MPI], [
  AC_MSG_CHECKING([whether $CC builds MPI programs])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Init(0, 0); MPI_Finalize();]])],
                 [AC_MSG_RESULT([yes])],
                 [AC_MSG_RESULT([no])
                  AC_MSG_ERROR([$CC cannot compile and link an MPI program; see config.log])])
  kv_mpi_version=`$CC --showme:version 2>/dev/null | head -n 1`
  AS_IF([test -z "$kv_mpi_version"], [kv_mpi_version="unknown version"])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [mpirun])
])
