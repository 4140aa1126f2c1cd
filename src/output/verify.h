/* verify.h - --resume's check of the rows it keeps (verify.c). */
#ifndef KVAL_OUTPUT_VERIFY_H
#define KVAL_OUTPUT_VERIFY_H

#include "output/internal.h"

/* Rank 0, serial handle: every row of family `of` that holds a result has a valid status
 * (skipped where the plan skips the cell) and matches its checksum; else KV_ERR with the
 * first damaged row and the count reported. */
kv_status kv_verify_family(kv_output *o, hid_t file, const char *path, const kv_out_family *of);

#endif
