/* output_h5.c - small HDF5 helpers of the output module: the status enum and string types,
 * scalar attributes (write, overwrite, read), contiguous datasets filled at creation, and
 * hyperslab selections of one cell (or of nothing, for collective rounds). */
#include "output/internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

void kv_h5_close_id(hid_t *id) {
  if (*id < 0) return;
  H5I_type_t t = H5Iget_type(*id);
  herr_t rc = 0;
  switch (t) {
    case H5I_FILE: rc = H5Fclose(*id); break;
    case H5I_GROUP: rc = H5Gclose(*id); break;
    case H5I_DATASET: rc = H5Dclose(*id); break;
    case H5I_DATASPACE: rc = H5Sclose(*id); break;
    case H5I_DATATYPE: rc = H5Tclose(*id); break;
    case H5I_ATTR: rc = H5Aclose(*id); break;
    case H5I_GENPROP_LST: rc = H5Pclose(*id); break;
    default:
      kv_report(__FILE__, __LINE__, "HDF5", "cannot close handle %lld of type %d", (long long)*id, (int)t);
      break;
  }
  CHECK_H5(rc);
  *id = H5I_INVALID_HID;
}

kv_status kv_h5_no_file_locking(hid_t fapl) {
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  return CHECK_H5(H5Pset_file_locking(fapl, 0, 1));
#else
  (void)fapl;
  return KV_OK;
#endif
}

kv_status kv_h5_serial_fapl(hid_t *fapl) {
  *fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (CHECK_H5(*fapl) || CHECK_H5(H5Pset_sieve_buf_size(*fapl, 0)) || kv_h5_no_file_locking(*fapl)) {
    kv_h5_close_id(fapl);
    return KV_ERR;
  }
  return KV_OK;
}

kv_status kv_h5_make_types(kv_output *o) {
  o->t_status = H5Tenum_create(H5T_NATIVE_INT8);
  if (CHECK_H5(o->t_status)) return KV_ERR;
  for (int s = 0; s < KV_NSTATUS; s++) {
    signed char v = (signed char)s;
    if (CHECK_H5(H5Tenum_insert(o->t_status, kv_status_name((kv_case_status)s), &v))) return KV_ERR;
  }
  o->t_message = H5Tcopy(H5T_C_S1);
  if (CHECK_H5(o->t_message) || CHECK_H5(H5Tset_size(o->t_message, KV_MESSAGE_LEN)) ||
      CHECK_H5(H5Tset_strpad(o->t_message, H5T_STR_NULLPAD)))
    return KV_ERR;
  o->t_vstr = H5Tcopy(H5T_C_S1);
  if (CHECK_H5(o->t_vstr) || CHECK_H5(H5Tset_size(o->t_vstr, H5T_VARIABLE)) ||
      CHECK_H5(H5Tset_cset(o->t_vstr, H5T_CSET_UTF8)))
    return KV_ERR;
  return KV_OK;
}

/* Create and write a scalar attribute of file type ft from memory type mt. */
static kv_status attr_scalar(hid_t loc, const char *name, hid_t ft, hid_t mt, const void *value) {
  kv_status st = KV_ERR;
  hid_t sp = H5Screate(H5S_SCALAR), a = H5I_INVALID_HID;
  if (CHECK_H5(sp)) return KV_ERR;
  a = H5Acreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (!CHECK_H5(a) && !CHECK_H5(H5Awrite(a, mt, value))) st = KV_OK;
  kv_h5_close_id(&a);
  kv_h5_close_id(&sp);
  if (st != KV_OK) kv_report(__FILE__, __LINE__, "HDF5", "cannot write attribute '%s'", name);
  return st;
}

kv_status kv_h5_attr_str(hid_t loc, hid_t t_vstr, const char *name, const char *value) {
  const char *v = value ? value : "";
  return attr_scalar(loc, name, t_vstr, t_vstr, &v);
}

kv_status kv_h5_attr_i64(hid_t loc, const char *name, long long value) {
  int64_t v = value;
  return attr_scalar(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

kv_status kv_h5_attr_u64(hid_t loc, const char *name, unsigned long long value) {
  uint64_t v = value;
  return attr_scalar(loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

kv_status kv_h5_attr_f64(hid_t loc, const char *name, double value) {
  return attr_scalar(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

kv_status kv_h5_attr_set_i64(hid_t loc, const char *name, long long value) {
  int64_t v = value;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (CHECK_H5(a)) return KV_ERR;
  kv_status st = CHECK_H5(H5Awrite(a, H5T_NATIVE_INT64, &v));
  if (CHECK_H5(H5Aclose(a))) st = KV_ERR;
  return st;
}

/* Open attribute `name` if present: KV_OK with *a < 0 when absent. */
static kv_status attr_open_if(hid_t loc, const char *name, hid_t *a, int *found) {
  *a = H5I_INVALID_HID;
  *found = 0;
  htri_t ex = H5Aexists(loc, name);
  if (CHECK_H5(ex)) return KV_ERR;
  if (!ex) return KV_OK;
  *a = H5Aopen(loc, name, H5P_DEFAULT);
  if (CHECK_H5(*a)) return KV_ERR;
  *found = 1;
  return KV_OK;
}

/* Read a scalar attribute of an expected class; a class mismatch is reported. */
static kv_status attr_read_scalar(hid_t loc, const char *name, H5T_class_t cls, hid_t mt, void *value,
                                  int *found) {
  hid_t a;
  if (attr_open_if(loc, name, &a, found)) return KV_ERR;
  if (!*found) return KV_OK;
  kv_status st = KV_ERR;
  hid_t t = H5Aget_type(a);
  if (!CHECK_H5(t)) {
    H5T_class_t c = H5Tget_class(t);
    htri_t vstr = c == H5T_STRING ? H5Tis_variable_str(t) : 0;
    if (CHECK_H5(c) || CHECK_H5(vstr))
      st = KV_ERR;
    else if (c != cls || (cls == H5T_STRING && !vstr))
      kv_report(__FILE__, __LINE__, "HDF5", "attribute '%s' has an unexpected type", name);
    else
      st = CHECK_H5(H5Aread(a, mt, value));
  }
  kv_h5_close_id(&t);
  kv_h5_close_id(&a);
  return st;
}

kv_status kv_h5_attr_read_str(hid_t loc, hid_t t_vstr, const char *name, char **value, int *found) {
  char *raw = NULL;
  *value = NULL;
  KV_TRY(attr_read_scalar(loc, name, H5T_STRING, t_vstr, &raw, found));
  if (!*found) return KV_OK;
  *value = KV_MALLOC(strlen(raw ? raw : "") + 1);
  if (*value) strcpy(*value, raw ? raw : "");
  if (raw) CHECK_H5(H5free_memory(raw));
  return *value ? KV_OK : KV_ERR;
}

kv_status kv_h5_attr_read_i64(hid_t loc, const char *name, long long *value, int *found) {
  int64_t v = 0;
  KV_TRY(attr_read_scalar(loc, name, H5T_INTEGER, H5T_NATIVE_INT64, &v, found));
  *value = v;
  return KV_OK;
}

kv_status kv_h5_attr_read_u64(hid_t loc, const char *name, unsigned long long *value, int *found) {
  uint64_t v = 0;
  KV_TRY(attr_read_scalar(loc, name, H5T_INTEGER, H5T_NATIVE_UINT64, &v, found));
  *value = v;
  return KV_OK;
}

kv_status kv_h5_create_dataset(hid_t loc, const char *name, hid_t t, int rank, const hsize_t *dims,
                               hid_t fill_type, const void *fill, hid_t *ds) {
  *ds = H5I_INVALID_HID;
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  if (CHECK_H5(sp)) return KV_ERR;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (!CHECK_H5(dcpl) && !CHECK_H5(H5Pset_layout(dcpl, H5D_CONTIGUOUS)) &&
      !CHECK_H5(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY)) &&
      !CHECK_H5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC)) &&
      (!fill || !CHECK_H5(H5Pset_fill_value(dcpl, fill_type, fill))))
    *ds = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  kv_h5_close_id(&dcpl);
  kv_h5_close_id(&sp);
  if (CHECK_H5(*ds)) {
    kv_report(__FILE__, __LINE__, "HDF5", "cannot create dataset '%s'", name);
    return KV_ERR;
  }
  return KV_OK;
}

kv_status kv_h5_select(int rank, const hsize_t *dims, const hsize_t *start, const hsize_t *count,
                       hsize_t n_mem, hid_t *fspace, hid_t *mspace) {
  *fspace = H5Screate_simple(rank, dims, NULL);
  *mspace = H5Screate_simple(1, &n_mem, NULL);
  kv_status st = CHECK_H5(*fspace) || CHECK_H5(*mspace) ? KV_ERR : KV_OK;
  if (st == KV_OK && count)
    st = CHECK_H5(H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, count, NULL));
  else if (st == KV_OK)
    st = CHECK_H5(H5Sselect_none(*fspace)) || CHECK_H5(H5Sselect_none(*mspace)) ? KV_ERR : KV_OK;
  if (st != KV_OK) {
    kv_h5_close_id(fspace);
    kv_h5_close_id(mspace);
  }
  return st;
}
