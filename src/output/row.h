/* row.h - the canonical bytes of one result row (row.c): what the `checksum` dataset hashes
 * and what the per-rank journal stores. */
#ifndef KVAL_OUTPUT_ROW_H
#define KVAL_OUTPUT_ROW_H

#include <stdint.h>

#include "output/internal.h"

/* the part statistics of a row: KV_MAX_PARTS rows of KV_N_PART_STATS (kv_result.part_stats) */
#define KV_ROW_PART_VALUES (KV_MAX_PARTS * KV_N_PART_STATS)
/* status, fingerprint, message, the float64 and int64 fields, the histogram, the part statistics */
#define KV_ROW_BYTES (1 + 8 + KV_MESSAGE_LEN + 8 * (KV_N_DOUBLES + KV_N_INTS) + 8 * KV_HIST_BINS + 8 * KV_ROW_PART_VALUES)

/* Pack the fields of one row (dbl and ints in X-macro order, parts KV_ROW_PART_VALUES
 * values part by part) into buf[KV_ROW_BYTES]. */
void kv_row_pack(unsigned char *buf, int status, uint64_t fingerprint, const char *message, const double *dbl,
                 const int64_t *ints, const uint64_t *hist, const double *parts);
void kv_row_from_result(const kv_result *r, unsigned char *buf);
/* The row's fields into r (rank, family and cell are left as they are). */
void kv_row_to_result(const unsigned char *buf, kv_result *r);
/* XXH64 of the row: the value of its `checksum` cell (0 there means "no row"). */
uint64_t kv_row_checksum(const unsigned char *buf);
/* A hash of the field list, so rows of a kval with other fields are recognised. */
uint64_t kv_row_fields_hash(void);

#endif
