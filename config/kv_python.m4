# kv_python.m4 - Python 3 with the packages analysis/ and the layout checks use.
AC_DEFUN([KV_CHECK_PYTHON], [
  AC_PATH_PROGS([PYTHON], [python3 python], [])
  kv_python_summary="not found: analysis tests will be skipped"
  AS_IF([test -n "$PYTHON"], [
    kv_py_missing=""
    for kv_mod in h5py numpy pandas scipy xarray matplotlib pytest; do
      $PYTHON -c "import $kv_mod" >/dev/null 2>&1 || kv_py_missing="$kv_py_missing $kv_mod"
    done
    AS_IF([test -z "$kv_py_missing"],
          [kv_python_summary="$PYTHON (h5py numpy pandas scipy xarray matplotlib pytest found)"],
          [kv_python_summary="$PYTHON (missing:$kv_py_missing; the tests that need them will fail)"])
  ])
  AC_SUBST([PYTHON])
])
