# kv_libm.m4 - the math library: links a program that calls exp and sqrt on a volatile
# argument (nothing folded away), first as it is, then with -lm, and adds -lm to LIBS where
# needed. Unlike AC_SEARCH_LIBS, whose test declares `char sqrt ()`, it holds with
# CFLAGS=-Werror (gcc rejects that declaration of a builtin, and the search would end in
# "no" and a link error at the end of the build).
AC_DEFUN([KV_CHECK_LIBM], [
  AC_MSG_CHECKING([for the library of exp and sqrt])
  m4_define([kv_libm_program], [AC_LANG_PROGRAM([[#include <math.h>
volatile double kv_x = 0.5;]], [[return exp(kv_x) > 2.0 || sqrt(kv_x) > 1.0;]])])
  AC_LINK_IFELSE([kv_libm_program], [AC_MSG_RESULT([none required])], [
    LIBS="-lm $LIBS"
    AC_LINK_IFELSE([kv_libm_program], [AC_MSG_RESULT([-lm])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([cannot link exp and sqrt, with or without -lm: see config.log])])])
])
