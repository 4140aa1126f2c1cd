/* kit.c - what the families share on the host: tensor specs, host input generation (the CPU
 * twin of kv_cuda_generate) and its check of generated buffers, bulk widening of storage
 * buffers, the row-list check of the references, and the tag lists of kernel paths. */
#include "families/kit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kv_precision_pairs[] = {"fp16:fp32", "bf16:fp32", "fp32:fp32", "fp16:fp16",
                                          "bf16:bf16", "e4m3:fp32", "e5m2:fp32", NULL};

void kv_tag(char *buf, size_t n, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 1 >= n) return;
  if (used) buf[used++] = ' ', buf[used] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, n - used, fmt, ap);
  va_end(ap);
}

int kv_tag_at(int *i, char *buf, size_t n, const char *fmt, ...) {
  if ((*i)-- != 0) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return 1;
}

void kv_spec_in(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count, int dist, double scale,
                double offset) {
  t->name = name;
  t->dtype = dtype;
  t->count = count;
  t->dist = dist;
  t->scale = scale;
  t->offset = offset;
}

void kv_spec_out(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count) {
  kv_spec_in(t, name, dtype, count, KV_DIST_NORMAL, 0.0, 0.0);
}

kv_status kv_generate_host(const kv_tensor_spec *t, uint64_t key, void *buf) {
  if (!buf && t->count > 0) {
    kv_report(__FILE__, __LINE__, "generate", "no buffer for tensor %s", t->name);
    return KV_ERR;
  }
  const size_t size = kv_dtype_size(t->dtype);
  for (size_t i = 0; i < t->count; i++) kv_generate_element(t, key, i, (unsigned char *)buf + i * size);
  return KV_OK;
}

void kv_generate_element(const kv_tensor_spec *t, uint64_t key, size_t i, void *dst) {
  kv_store(dst, 0, t->dtype, kv_gen_value(key, (uint64_t)i, t->dist, t->scale, t->offset));
}

/* Element i of buf against the generator's, bit for bit. */
static int generated(const kv_tensor_spec *t, uint64_t key, const void *buf, size_t i) {
  const size_t size = kv_dtype_size(t->dtype);
  unsigned char want[sizeof(double)];
  kv_generate_element(t, key, i, want);
  return memcmp(want, (const unsigned char *)buf + i * size, size) == 0;
}

long long kv_generate_verify(const kv_tensor_spec *t, uint64_t key, const void *buf) {
  const size_t n = t->count;
  if (n <= 2 * KV_GEN_EDGE + KV_GEN_SAMPLES) {
    for (size_t i = 0; i < n; i++)
      if (!generated(t, key, buf, i)) return (long long)i;
    return -1;
  }
  for (size_t i = 0; i < KV_GEN_EDGE; i++) {
    if (!generated(t, key, buf, i)) return (long long)i;
    if (!generated(t, key, buf, n - 1 - i)) return (long long)(n - 1 - i);
  }
  for (uint64_t j = 0; j < KV_GEN_SAMPLES; j++) {
    const size_t i = (size_t)(kv_mix64(key ^ kv_mix64(~j)) % n);
    if (!generated(t, key, buf, i)) return (long long)i;
  }
  return -1;
}

void kv_to_float(const void *buf, kv_dtype t, size_t off, size_t n, float *dst) {
  const uint16_t *h = (const uint16_t *)buf + off;
  switch (t) {
  case KV_FP16:
    for (size_t i = 0; i < n; i++) dst[i] = kv_f16_to_f32(h[i]);
    break;
  case KV_BF16:
    for (size_t i = 0; i < n; i++) dst[i] = kv_bf16_to_f32(h[i]);
    break;
  case KV_FP32:
    memcpy(dst, (const float *)buf + off, n * sizeof(float));
    break;
  case KV_E4M3:
  case KV_E5M2:
    for (size_t i = 0; i < n; i++) dst[i] = (float)kv_load(buf, off + i, t); /* exact: 8-bit values are floats */
    break;
  default:
    for (size_t i = 0; i < n; i++) dst[i] = (float)((const double *)buf)[off + i];
    break;
  }
}

void kv_to_double(const void *buf, kv_dtype t, size_t off, size_t n, double *dst) {
  const uint16_t *h = (const uint16_t *)buf + off;
  switch (t) {
  case KV_FP16:
    for (size_t i = 0; i < n; i++) dst[i] = kv_f16_to_f32(h[i]);
    break;
  case KV_BF16:
    for (size_t i = 0; i < n; i++) dst[i] = kv_bf16_to_f32(h[i]);
    break;
  case KV_FP32:
    for (size_t i = 0; i < n; i++) dst[i] = ((const float *)buf)[off + i];
    break;
  case KV_E4M3:
  case KV_E5M2:
    for (size_t i = 0; i < n; i++) dst[i] = kv_load(buf, off + i, t);
    break;
  default:
    memcpy(dst, (const double *)buf + off, n * sizeof(double));
    break;
  }
}

kv_status kv_check_rows(const size_t *rows, size_t n_rows, size_t total_rows, const char *family) {
  if (n_rows > 0 && !rows) {
    kv_report(__FILE__, __LINE__, family, "reference called without a row list");
    return KV_ERR;
  }
  for (size_t r = 0; r < n_rows; r++)
    if (rows[r] >= total_rows) {
      kv_report(__FILE__, __LINE__, family, "reference row %zu out of range (%zu rows)", rows[r], total_rows);
      return KV_ERR;
    }
  return KV_OK;
}
