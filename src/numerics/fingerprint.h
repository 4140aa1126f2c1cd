/* fingerprint.h - a 64-bit fingerprint of an output's bits: identical GPUs on identical
 * inputs must produce the same fingerprint. */
#ifndef KVAL_FINGERPRINT_H
#define KVAL_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

uint64_t kv_fingerprint(const void *data, size_t nbytes);

#endif
