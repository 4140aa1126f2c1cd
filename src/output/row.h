/* row.h - the canonical bytes of one result row (row.c): what the `checksum` dataset hashes
 * and what the per-rank journal stores. */
#ifndef KVAL_OUTPUT_ROW_H
#define KVAL_OUTPUT_ROW_H

#include <stdint.h>

#include "output/internal.h"

/* status, fingerprint, message, the float64 and int64 fields, the histogram */
#define KV_ROW_BYTES (1 + 8 + KV_MESSAGE_LEN + 8 * (KV_N_DOUBLES + KV_N_INTS) + 8 * KV_HIST_BINS)

/* Pack the fields of one row (dbl and ints in X-macro order) into buf[KV_ROW_BYTES]. */
void kv_row_pack(unsigned char *buf, int status, uint64_t fingerprint, const char *message, const double *dbl,
                 const int64_t *ints, const uint64_t *hist);
void kv_row_from_result(const kv_result *r, unsigned char *buf);
/* The row's fields into r (rank, family and cell are left as they are). */
void kv_row_to_result(const unsigned char *buf, kv_result *r);
/* XXH64 of the row: the value of its `checksum` cell (0 there means "no row"). */
uint64_t kv_row_checksum(const unsigned char *buf);
/* A hash of the field list, so rows of a kval with other fields are recognised. */
uint64_t kv_row_fields_hash(void);

#endif
