/* kit.h - what the kernel families share on the host: tensor specs, host input generation
 * from the counter-based generator, bulk conversion of storage buffers, and the row-list
 * check of the references. (The accumulator model is numerics/accum.h, double-double
 * arithmetic numerics/dd.h.) */
#ifndef KVAL_FAMILIES_KIT_H
#define KVAL_FAMILIES_KIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "core/dtype.h"
#include "family.h"
#include "numerics/halfprec.h"
#include "numerics/rng.h"

/* An input tensor: values offset + scale * base(dist), rounded to dtype. */
void kv_spec_in(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count, int dist, double scale,
                double offset);
/* An output tensor (no generator fields). */
void kv_spec_out(kv_tensor_spec *t, const char *name, kv_dtype dtype, size_t count);

/* Element i of buf = kv_store(round(kv_gen_value(key, i, dist, scale, offset))); the CUDA
 * generator (kv_cuda_generate) produces the same bits. key = kv_stream_key(seed, case key,
 * index of the tensor in kv_tensors.in). */
kv_status kv_generate_host(const kv_tensor_spec *t, uint64_t key, void *buf);
/* Element i of that buffer alone, stored at dst (one element of t->dtype). */
void kv_generate_element(const kv_tensor_spec *t, uint64_t key, size_t i, void *dst);

/* Whether buf holds the generator's bits for tensor t with this key, on a sample: the first and
 * last KV_GEN_EDGE elements and KV_GEN_SAMPLES elements at positions hashed from the key (every
 * element of a small tensor). Returns -1 when they agree, else the first element that differs.
 * The backends check the inputs a kernel read with it (kv_input_finding), so a device
 * generator that writes wrong values, another distribution or leaves elements unwritten is
 * seen in the run, not only by the GPU tests. */
#define KV_GEN_EDGE 256
#define KV_GEN_SAMPLES 4096
long long kv_generate_verify(const kv_tensor_spec *t, uint64_t key, const void *buf);

/* Elements [off, off + n) of a storage buffer widened (exactly) to float / double. The
 * emulations widen with kv_to_float, the fp64 references with kv_to_double, and the two are
 * written apart on purpose: a bug in one shared widening would be made alike by the reference
 * and the code it checks, and pass (the cpu mutant cpu-to-float-fp32-off is caught because a
 * reference reads the same tensor correctly). */
void kv_to_float(const void *buf, kv_dtype t, size_t off, size_t n, float *dst);
void kv_to_double(const void *buf, kv_dtype t, size_t off, size_t n, double *dst);

/* Every storage:accumulator pair kval names, NULL-terminated; a family's support rule says
 * which of them it runs (the path_tag enumerations walk this list). */
extern const char *const kv_precision_pairs[];

/* Append tag (printf format) to the space-separated list in buf (truncated at n). */
void kv_tag(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Enumeration helper of path_tag: when *i is 0, write the tag into buf and return 1, else
 * count *i down and return 0. */
int kv_tag_at(int *i, char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The attention families' path rule `batch-stride`: several sequences and several heads, not as
 * many of each, so a sequence's stride of a [batch, seqlen, heads, ...] tensor written with the
 * batch count where the head count belongs is wrong (right wherever batch is 1 or equals heads). */
static inline int kv_batch_stride_path(long long batch, long long heads) {
  return batch > 1 && heads > 1 && batch != heads;
}

/* A reference's row list: present when n_rows > 0 and every row below total_rows; else
 * reported (naming the family) and KV_ERR. */
kv_status kv_check_rows(const size_t *rows, size_t n_rows, size_t total_rows, const char *family);

#endif
