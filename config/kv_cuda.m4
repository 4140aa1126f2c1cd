# kv_cuda.m4 - the CUDA backend: --with-cuda=auto|no|PATH, --with-cuda-arch=sm_90a[,sm_XY...],
# --enable-race-delays (a test build for the mutation suite's gpu-race kind).
# auto builds the backend when nvcc is found (on the PATH, in $CUDA_HOME/bin or
# /usr/local/cuda/bin). Sets NVCC, NVCCFLAGS, CUDA_CFLAGS, CUDA_LIBS, HAVE_CUDA.
AC_DEFUN([KV_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=auto|no|PATH], [build the CUDA backend (default: auto, when nvcc is found)])],
    [], [with_cuda=auto])
  AC_ARG_ENABLE([race-delays],
    [AS_HELP_STRING([--enable-race-delays], [kernels leave every barrier, cp.async wait and mbarrier wait after a random delay of up to a few
      microseconds per warp, so that a missing barrier's race shows in the results (the mutation suite's
      gpu-race kind); a test build only: its timings are not the kernels' (kval_version ends in +race-delays)])],
    [AS_CASE([$enableval], [yes|no], [], [AC_MSG_ERROR([--enable-race-delays takes no value, got '$enableval'])])],
    [enable_race_delays=no])
  AS_IF([test "$enable_race_delays" = yes],
    [AC_DEFINE([KVAL_RACE_DELAYS], [1], [Define to 1 in a build whose kernels delay after every barrier and wait])])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST], [comma-separated GPU targets (default: sm_90a, built as -gencode arch=compute_90a,code=sm_90a)])],
    [], [with_cuda_arch=sm_90a])
  kv_cuda_summary="no"
  kv_cuda_arch_summary="-"
  kv_have_cuda=no
  AS_CASE([$with_cuda],
    [no], [kv_cuda_summary="no (--with-cuda=no): cpu backend only"],
    [auto|yes], [
      AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:${CUDA_HOME:-/usr/local/cuda}/bin:/usr/local/cuda/bin])
      AS_IF([test -n "$NVCC"], [kv_have_cuda=yes],
            [test "$with_cuda" = yes], [AC_MSG_ERROR([--with-cuda: nvcc not found; give --with-cuda=PATH])],
            [kv_cuda_summary="no (nvcc not found): cpu backend only"])
    ],
    [*], [
      AS_IF([test -x "$with_cuda/bin/nvcc"], [NVCC="$with_cuda/bin/nvcc"; kv_have_cuda=yes],
            [AC_MSG_ERROR([--with-cuda=$with_cuda: $with_cuda/bin/nvcc not found or not executable])])
    ])
  AS_IF([test "$kv_have_cuda" = yes], [
    kv_cuda_home=`dirname "$NVCC"`
    kv_cuda_home=`dirname "$kv_cuda_home"`
    kv_cuda_libdir="$kv_cuda_home/lib64"
    AS_IF([test -d "$kv_cuda_libdir"], [], [kv_cuda_libdir="$kv_cuda_home/lib"])
    AS_IF([test -d "$kv_cuda_home/targets/x86_64-linux/lib"] && test ! -e "$kv_cuda_libdir/libcudart.so",
          [kv_cuda_libdir="$kv_cuda_home/targets/x86_64-linux/lib"])
    CUDA_CFLAGS="-I$kv_cuda_home/include"
    CUDA_LIBS="-L$kv_cuda_libdir -Wl,-rpath,$kv_cuda_libdir -lcublasLt -lcublas -lcudart -lstdc++"
    NVCC_GENCODE=""
    kv_cuda_arch_summary=""
    kv_save_IFS=$IFS; IFS=,
    for kv_arch in $with_cuda_arch; do
      IFS=$kv_save_IFS
      AS_CASE([$kv_arch],
        [sm_[[0-9]][[0-9]]|sm_[[0-9]][[0-9]]a|sm_[[0-9]][[0-9]][[0-9]]|sm_[[0-9]][[0-9]][[0-9]]a], [],
        [AC_MSG_ERROR([--with-cuda-arch: '$kv_arch' is not a target like sm_90a or sm_80])])
      kv_num=`echo $kv_arch | sed 's/^sm_//'`
      NVCC_GENCODE="$NVCC_GENCODE -gencode arch=compute_$kv_num,code=sm_$kv_num"
      kv_cuda_arch_summary="$kv_cuda_arch_summary -gencode arch=compute_$kv_num,code=sm_$kv_num"
    done
    IFS=$kv_save_IFS
    NVCCFLAGS="-O3 -std=c++17 --expt-relaxed-constexpr -Xptxas -v -Xcompiler -fno-fast-math $NVCC_GENCODE"
    AS_IF([test "$enable_race_delays" = yes], [NVCCFLAGS="$NVCCFLAGS -DKVAL_RACE_DELAYS=1"])
    kv_save_CPPFLAGS="$CPPFLAGS"; kv_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"; LIBS="$CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([whether CUDA runtime and cuBLAS programs link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>
#include <cublas_v2.h>]], [[int n; cublasHandle_t h; cudaGetDeviceCount(&n); cublasCreate(&h);]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([CUDA found at $kv_cuda_home but the runtime/cuBLAS do not link; see config.log or use --with-cuda=no])])
    CPPFLAGS="$kv_save_CPPFLAGS"; LIBS="$kv_save_LIBS"
    kv_cuda_version=`"$NVCC" --version | sed -n 's/.*release \([[0-9.]]*\).*/\1/p'`
    kv_cuda_summary="yes: $NVCC (CUDA $kv_cuda_version)"
    AC_DEFINE([HAVE_CUDA], [1], [Define to 1 when the CUDA backend is built])
    AC_PATH_PROG([CUOBJDUMP], [cuobjdump], [], [$kv_cuda_home/bin:$PATH])
    AC_PATH_PROG([COMPUTE_SANITIZER], [compute-sanitizer], [], [$kv_cuda_home/bin:$PATH])
  ])
  AS_IF([test "$enable_race_delays" = yes], [
    AS_IF([test "$kv_have_cuda" != yes],
      [AC_MSG_ERROR([--enable-race-delays delays the CUDA kernels, but the CUDA backend is not built ($kv_cuda_summary): drop the option or give --with-cuda])])
    kv_cuda_summary="$kv_cuda_summary; race delays after every barrier and wait (a test build: not for timings)"])
  AM_CONDITIONAL([HAVE_CUDA], [test "$kv_have_cuda" = yes])
  AC_SUBST([NVCC])
  AC_SUBST([NVCCFLAGS])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
])
