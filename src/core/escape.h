/* escape.h - show user-given text (paths, option values, deck tokens) safely in messages:
 * control characters, invalid UTF-8 and invisible or bidi code points escaped. */
#ifndef KVAL_ESCAPE_H
#define KVAL_ESCAPE_H

#include <stddef.h>

/* Copy `in` into out (outlen bytes, always terminated, cut at a whole character), with
 * control bytes and bytes that are not UTF-8 as \xNN and invisible or direction-changing
 * code points (U+202E, U+200B, U+FEFF, ...) as \u{XXXX}; returns out. */
const char *kv_escape(const char *in, char *out, size_t outlen);

/* Escape a message in place (buflen: the buffer's size; at most 4096 bytes are kept). */
void kv_escape_inplace(char *buf, size_t buflen);

#endif
