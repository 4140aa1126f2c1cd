/* escape.c - text that users gave kval (paths, option values, deck tokens) made safe to show
 * in a message: printable UTF-8 is kept; control characters, bytes that are not UTF-8 and
 * the invisible code points that reorder or hide text (bidi controls, zero-width and other
 * format characters) are written as \xNN or \u{XXXX}, so a message shows what was typed
 * and no terminal is tricked into showing something else. */
#include "core/escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Code points that are invisible or change the direction of the text around them. */
static int invisible(uint32_t cp) {
  return cp == 0x00ad || cp == 0x034f || cp == 0x061c || cp == 0x115f || cp == 0x1160 || cp == 0x17b4 ||
         cp == 0x17b5 || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3164 || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff ||
         cp == 0xffa0 || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe0fff);
}

/* Length of the UTF-8 sequence at s (at most n bytes) and its code point; 0 when invalid. */
static int utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned b = s[0];
  int more;
  uint32_t v, min;
  if (b >= 0xc2 && b <= 0xdf) more = 1, v = b & 0x1f, min = 0x80;
  else if (b >= 0xe0 && b <= 0xef) more = 2, v = b & 0x0f, min = 0x800;
  else if (b >= 0xf0 && b <= 0xf4) more = 3, v = b & 0x07, min = 0x10000;
  else return 0;
  if ((size_t)more >= n) return 0;
  for (int i = 1; i <= more; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return more + 1;
}

const char *kv_escape(const char *in, char *out, size_t outlen) {
  if (!outlen) return out;
  const unsigned char *s = (const unsigned char *)(in ? in : "");
  size_t n = strlen((const char *)s), o = 0;
  for (size_t i = 0; i < n;) {
    char piece[16];
    size_t len;
    uint32_t cp = 0;
    int seq = s[i] >= 0x80 ? utf8_seq(s + i, n - i, &cp) : 1;
    if (s[i] < 0x80 && (s[i] < 0x20 || s[i] == 0x7f)) {
      len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", s[i]);
      seq = 1;
    } else if (seq == 0) {
      len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", s[i]);
      seq = 1;
    } else if (seq > 1 && (invisible(cp) || (cp >= 0x80 && cp < 0xa0))) {
      len = (size_t)snprintf(piece, sizeof piece, "\\u{%04x}", (unsigned)cp);
    } else {
      len = (size_t)seq;
      memcpy(piece, s + i, len);
    }
    if (o + len >= outlen) break;
    memcpy(out + o, piece, len);
    o += len;
    i += (size_t)seq;
  }
  out[o] = '\0';
  return out;
}

void kv_escape_inplace(char *buf, size_t buflen) {
  char tmp[4096];
  size_t n = buflen < sizeof tmp ? buflen : sizeof tmp;
  kv_escape(buf, tmp, n);
  memcpy(buf, tmp, strlen(tmp) + 1);
}
