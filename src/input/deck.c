/* deck.c - the input-deck parser: `[section]` headers, `key = v1 v2 ...` lists, `#`
 * comments, ranges `a..b xF` / `a..b +S` expanded into tokens, and --set overrides read
 * with the same tokenizer. Every error reads
 *   FILE:LINE:COL: error: WHAT (got 'TOKEN'; expected WHAT WOULD BE VALID)
 * with columns counted in characters (UTF-8 code points) from 1. Syntax only: the plan
 * checks sections, keys and values against the family registry. */
#include "input/deck.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"

#define DECK_MAX_LINE 4096           /* bytes of one line, newline excluded */
#define DECK_MAX_VALUES 100000       /* values of one range, and of one key */
#define DECK_MAX_BYTES (16L << 20)   /* size of a deck file */

#define RANGE_EXPECTED                                                                        \
  "'A..B xF' (geometric, integer factor F >= 2) or 'A..B +S' (arithmetic, integer step "    \
  "S > 0) with integers A <= B"
#define NAME_EXPECTED "a name of letters, digits, '_' or '-'"

static const char set_file[] = "--set";

/* Where the parser stands: name used in messages, line number, first byte of the line. */
typedef struct {
  const char *file;
  int line;
  const char *lstart;
  char *err;
  size_t errlen;
} cursor;

/* Values of one key while they are read. */
typedef struct {
  kv_token *v;
  int n, cap;
} token_list;

static int column(const cursor *c, const char *at) {
  int col = 1;
  for (const char *p = c->lstart; p < at; p++)
    if (((unsigned char)*p & 0xc0) != 0x80) col++;
  return col;
}

/* A token for a message: printable ASCII kept, other bytes as \xNN, long ones shortened. */
static void quote(const char *s, size_t n, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 8 < outlen; i++) {
    unsigned char b = (unsigned char)s[i];
    if (i == 48) {
      o += (size_t)snprintf(out + o, outlen - o, "...");
      break;
    }
    if (b >= 0x20 && b < 0x7f)
      out[o++] = (char)b;
    else
      o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", b);
  }
  out[o] = '\0';
}

/* Report an error at `at` about the token [tok, tok + toklen); always returns -1. */
static int fail(const cursor *c, const char *at, const char *tok, size_t toklen, const char *expected,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int fail(const cursor *c, const char *at, const char *tok, size_t toklen, const char *expected,
                const char *fmt, ...) {
  char what[512], got[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  quote(tok, toklen, got, sizeof got);
  if (c->err && c->errlen)
    snprintf(c->err, c->errlen, "%s:%d:%d: error: %s (got '%s'; expected %s)", c->file, c->line,
             column(c, at), what, got, expected);
  return -1;
}

static int out_of_memory(const cursor *c) {
  if (c->err && c->errlen) snprintf(c->err, c->errlen, "%s: error: out of memory", c->file);
  return -1;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t'; }
static int is_name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
         ch == '-';
}
static const char *skip_space(const char *p, const char *e) {
  while (p < e && is_space(*p)) p++;
  return p;
}
static const char *trim_end(const char *s, const char *e) {
  while (e > s && is_space(e[-1])) e--;
  return e;
}
static const char *name_end(const char *p, const char *e) {
  while (p < e && is_name_char(*p)) p++;
  return p;
}
static const char *token_end(const char *p, const char *e) {
  while (p < e && !is_space(*p)) p++;
  return p;
}

static char *copy_span(const char *s, size_t n) {
  char *t = KV_MALLOC(n + 1);
  if (!t) return NULL;
  memcpy(t, s, n);
  t[n] = '\0';
  return t;
}

/* Bytes of one line: valid UTF-8 and no control characters other than tab. */
static int check_bytes(const cursor *c, const char *s, const char *e) {
  const unsigned char *p = (const unsigned char *)s, *end = (const unsigned char *)e;
  while (p < end) {
    unsigned b = *p;
    if (b < 0x80) {
      if ((b < 0x20 && b != '\t') || b == 0x7f)
        return fail(c, (const char *)p, (const char *)p, 1, "printable text (tabs and spaces are whitespace)",
                    "control character 0x%02x in the deck", b);
      p++;
      continue;
    }
    /* RFC 3629: lead byte, allowed range of the second byte, number of continuation bytes. */
    unsigned lo = 0x80, hi = 0xbf;
    int more;
    if (b >= 0xc2 && b <= 0xdf) more = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      if (b == 0xe0) lo = 0xa0;
      if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      more = 3;
      if (b == 0xf0) lo = 0x90;
      if (b == 0xf4) hi = 0x8f;
    } else
      more = -1;
    int ok = more > 0 && end - p > more;
    for (int i = 1; ok && i <= more; i++) {
      unsigned lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xbf;
      ok = p[i] >= lo_i && p[i] <= hi_i;
    }
    if (!ok) {
      size_t n = (size_t)(end - p) < 4 ? (size_t)(end - p) : 4;
      return fail(c, (const char *)p, (const char *)p, n, "UTF-8 text", "invalid UTF-8 byte sequence");
    }
    p += more + 1;
  }
  return 0;
}

/* An optionally signed decimal integer at [s, e): 0 with *v and *stop (first byte after the
 * digits), 1 when there are no digits, 2 on overflow. */
static int parse_int(const char *s, const char *e, long long *v, const char **stop) {
  const char *p = s;
  int neg = 0;
  if (p < e && (*p == '-' || *p == '+')) neg = *p++ == '-';
  const char *digits = p;
  unsigned long long acc = 0, limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
  int overflow = 0;
  for (; p < e && *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (acc > (limit - d) / 10) overflow = 1;
    else acc = acc * 10 + d;
  }
  *stop = p;
  if (p == digits) return 1;
  if (overflow) return 2;
  *v = neg ? (long long)(0 - acc) : (long long)acc;
  return 0;
}

static int push_token(const cursor *c, token_list *tl, const char *s, size_t n, const char *at) {
  if (tl->n == tl->cap) {
    int cap = tl->cap ? 2 * tl->cap : 8;
    kv_token *v = realloc(tl->v, (size_t)cap * sizeof *v);
    if (CHECK_ALLOC(v) != KV_OK) return out_of_memory(c);
    tl->v = v;
    tl->cap = cap;
  }
  char *t = copy_span(s, n);
  if (!t) return out_of_memory(c);
  tl->v[tl->n].text = t;
  tl->v[tl->n].line = c->line;
  tl->v[tl->n].col = column(c, at);
  tl->n++;
  return 0;
}

static void free_tokens(kv_token *v, int n) {
  for (int i = 0; i < n; i++) free(v[i].text);
  free(v);
}

/* Range starting at token [ts, te) (containing ".." at `dots`); the step is inline or the
 * next token of [te, e). Appends the values to tl and sets *next past what it consumed. */
static int parse_range(const cursor *c, const char *ts, const char *te, const char *dots, const char *e,
                       token_list *tl, const char **next) {
  long long a, b, step;
  const char *q;
  size_t tn = (size_t)(te - ts);
  int rc = parse_int(ts, dots, &a, &q);
  if (rc == 2) return fail(c, ts, ts, tn, RANGE_EXPECTED, "range start does not fit in 64 bits");
  if (rc != 0 || q != dots) return fail(c, ts, ts, tn, RANGE_EXPECTED, "range start is not an integer");
  if (dots + 2 == te) return fail(c, ts, ts, tn, RANGE_EXPECTED, "incomplete range: no end after '..'");
  rc = parse_int(dots + 2, te, &b, &q);
  if (te - q >= 2 && q[0] == '.' && q[1] == '.')
    return fail(c, ts, ts, tn, RANGE_EXPECTED, "malformed range: more than one '..'");
  if (rc == 2) return fail(c, ts, ts, tn, RANGE_EXPECTED, "range end does not fit in 64 bits");
  if (rc != 0 || (q < te && (*q == '.' || *q == 'e' || *q == 'E')))
    return fail(c, ts, ts, tn, RANGE_EXPECTED, "range end is not an integer");
  const char *ss = q, *se = te; /* the step */
  *next = te;
  if (ss < te && *ss != 'x' && *ss != '+')
    return fail(c, ss, ts, tn, RANGE_EXPECTED, "unexpected text after the range end");
  if (ss == te) {
    ss = skip_space(te, e);
    se = token_end(ss, e);
    if (ss == e || (*ss != 'x' && *ss != '+'))
      return fail(c, ts, ts, tn, RANGE_EXPECTED, "range without a step");
    *next = se;
  }
  int geometric = *ss == 'x';
  size_t sn = (size_t)(se - ss);
  rc = parse_int(ss + 1, se, &step, &q);
  if (geometric && (rc != 0 || q != se || ss[1] == '+' || ss[1] == '-' || step < 2))
    return fail(c, ss, ss, sn, RANGE_EXPECTED, "range factor must be an integer >= 2");
  if (!geometric && (rc != 0 || q != se || ss[1] == '+' || step <= 0))
    return fail(c, ss, ss, sn, RANGE_EXPECTED, "range step must be an integer > 0");
  if (a > b) return fail(c, ts, ts, tn, RANGE_EXPECTED, "range start %lld is greater than its end %lld", a, b);
  if (geometric && a < 1)
    return fail(c, ts, ts, tn, "a geometric range 'A..B xF' with A >= 1 (or an arithmetic one 'A..B +S')",
                "geometric range starts at %lld", a);
  unsigned long long count = 0;
  if (geometric)
    for (long long v = a;; v *= step) {
      count++;
      if (v > b / step) break;
    }
  else
    count = ((unsigned long long)b - (unsigned long long)a) / (unsigned long long)step + 1;
  if (count > DECK_MAX_VALUES)
    return fail(c, ts, ts, tn, "a range of at most 100000 values", "range expands to %llu values", count);
  if (count + (unsigned long long)tl->n > DECK_MAX_VALUES)
    return fail(c, ts, ts, tn, "at most 100000 values per key", "value list grows beyond 100000 values");
  long long v = a;
  for (unsigned long long i = 0; i < count; i++) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    if (push_token(c, tl, buf, (size_t)n, ts) != 0) return -1;
    if (i + 1 < count) v = geometric ? v * step : v + step;
  }
  return 0;
}

/* Split [s, e) into value tokens, expanding ranges. */
static int tokenize(const cursor *c, const char *s, const char *e, token_list *tl) {
  const char *p = s;
  for (;;) {
    p = skip_space(p, e);
    if (p == e) return 0;
    const char *te = token_end(p, e);
    for (const char *q = p; q < te; q++)
      if (*q == '=' || *q == '[' || *q == ']' || *q == '#')
        return fail(c, q, p, (size_t)(te - p), "values separated by spaces, one key per line",
                    "unexpected '%c' in the value list", *q);
    const char *dots = NULL;
    for (const char *q = p; q + 1 < te && !dots; q++)
      if (q[0] == '.' && q[1] == '.') dots = q;
    if (!dots) {
      if (tl->n >= DECK_MAX_VALUES)
        return fail(c, p, p, (size_t)(te - p), "at most 100000 values per key", "too many values");
      if (push_token(c, tl, p, (size_t)(te - p), p) != 0) return -1;
      p = te;
    } else if (parse_range(c, p, te, dots, e, tl, &p) != 0)
      return -1;
  }
}

static int add_section(const cursor *c, kv_deck *d, const char *name, size_t n, const char *file, int line,
                       int col) {
  kv_deck_section *s = realloc(d->sections, (size_t)(d->n_sections + 1) * sizeof *s);
  if (CHECK_ALLOC(s) != KV_OK) return out_of_memory(c);
  d->sections = s;
  s += d->n_sections;
  if (!(s->name = copy_span(name, n))) return out_of_memory(c);
  s->file = file;
  s->line = line;
  s->col = col;
  d->n_sections++;
  return 0;
}

/* Append an entry that takes ownership of the tokens (freed here on failure). */
static int add_entry(const cursor *c, kv_deck *d, const char *section, const char *key, size_t keylen,
                     token_list *tl, int col) {
  kv_deck_entry *en = realloc(d->entries, (size_t)(d->n_entries + 1) * sizeof *en);
  if (CHECK_ALLOC(en) != KV_OK) {
    free_tokens(tl->v, tl->n);
    return out_of_memory(c);
  }
  d->entries = en;
  en += d->n_entries;
  memset(en, 0, sizeof *en);
  en->section = copy_span(section, strlen(section));
  en->key = copy_span(key, keylen);
  en->values = tl->v;
  en->n_values = tl->n;
  en->file = c->file;
  en->line = c->line;
  en->col = col;
  d->n_entries++; /* counted even when a copy failed, so kv_deck_free releases it */
  if (!en->section || !en->key) return out_of_memory(c);
  return 0;
}

static int parse_header(const cursor *c, kv_deck *d, const char *s, const char *e, const char **section) {
  const char *close = memchr(s, ']', (size_t)(e - s));
  if (!close)
    return fail(c, e, s, (size_t)(e - s), "'[name]'", "missing ']' at the end of the section header");
  const char *ns = skip_space(s + 1, close), *ne = trim_end(ns, close);
  size_t n = (size_t)(ne - ns);
  if (n == 0) return fail(c, s, s, (size_t)(close + 1 - s), "a section name such as [fa2] or [run]", "empty section name");
  const char *bad = name_end(ns, ne);
  if (bad < ne && *bad == '.' && bad > ns) { /* [FAMILY.NAME]: a named section of a family */
    const char *sub = bad + 1;
    bad = name_end(sub, ne);
    if (bad == sub && bad == ne)
      return fail(c, bad, ns, n, "[FAMILY.NAME] with a name after the '.'", "empty name after '.' in the section name");
  }
  if (bad != ne)
    return fail(c, bad, ns, n, NAME_EXPECTED " (and one '.' in [FAMILY.NAME])", "invalid character in section name");
  const char *rest = skip_space(close + 1, e);
  if (rest != e)
    return fail(c, rest, rest, (size_t)(e - rest), "nothing but a comment after ']'",
                "unexpected text after the section header");
  for (int i = 0; i < d->n_sections; i++)
    if (strlen(d->sections[i].name) == n && memcmp(d->sections[i].name, ns, n) == 0)
      return fail(c, ns, ns, n, "each section once (merge its keys into the first one)",
                  "duplicate section [%s] (first at line %d)", d->sections[i].name, d->sections[i].line);
  if (add_section(c, d, ns, n, c->file, c->line, column(c, ns)) != 0) return -1;
  *section = d->sections[d->n_sections - 1].name;
  return 0;
}

static int parse_assignment(const cursor *c, kv_deck *d, const char *s, const char *e, const char *section) {
  const char *ke = name_end(s, e);
  size_t kn = (size_t)(ke - s);
  if (kn == 0) {
    if (*s == '=') return fail(c, s, s, (size_t)(e - s), "'key = values'", "missing key before '='");
    return fail(c, s, s, (size_t)(token_end(s, e) - s),
                "a key (letters, digits, '_' or '-') followed by '=', or a [section] header", "invalid key");
  }
  const char *eq = skip_space(ke, e);
  if (eq == e) return fail(c, e, s, kn, "'key = values'", "missing '=' after key '%.*s'", (int)kn, s);
  if (*eq != '=')
    return fail(c, eq, eq, (size_t)(token_end(eq, e) - eq), "'=' after the key (key = values)",
                "expected '=' after key '%.*s'", (int)kn, s);
  if (!section)
    return fail(c, s, s, kn, "a [section] header before the first key", "key '%.*s' outside any section",
                (int)kn, s);
  for (int i = 0; i < d->n_entries; i++) {
    const kv_deck_entry *en = &d->entries[i];
    if (strcmp(en->section, section) == 0 && strlen(en->key) == kn && memcmp(en->key, s, kn) == 0)
      return fail(c, s, s, kn, "each key once per section (all values on one line)",
                  "duplicate key '%s' in [%s] (first at line %d)", en->key, section, en->line);
  }
  token_list tl = {0};
  if (tokenize(c, eq + 1, e, &tl) != 0) {
    free_tokens(tl.v, tl.n);
    return -1;
  }
  if (tl.n == 0)
    return fail(c, e, "", 0, "at least one value after '='", "empty value list for key '%.*s'", (int)kn, s);
  return add_entry(c, d, section, s, kn, &tl, column(c, s));
}

static int parse_line(const cursor *c, kv_deck *d, const char *s, const char *e, const char **section) {
  const char *hash = memchr(s, '#', (size_t)(e - s));
  if (hash) e = hash;
  s = skip_space(s, e);
  e = trim_end(s, e);
  if (s == e) return 0;
  if (*s == '[') return parse_header(c, d, s, e, section);
  return parse_assignment(c, d, s, e, *section);
}

static int parse_buffer(const char *name, const char *text, size_t len, kv_deck *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  cursor c = {name, 0, text, err, errlen};
  d->path = copy_span(name, strlen(name));
  d->text = copy_span(text, len);
  if (!d->path || !d->text) return out_of_memory(&c);
  c.file = d->path;
  const char *section = NULL, *s = d->text, *end = d->text + len;
  int rc = 0;
  while (rc == 0 && s <= end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    const char *e = nl ? nl : end;
    if (e > s && e[-1] == '\r') e--;
    c.line++;
    c.lstart = s;
    if (c.line == 1 && e - s >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
      rc = fail(&c, s, s, 3, "UTF-8 text without a byte order mark", "byte order mark at the start of the deck");
    else if (e - s > DECK_MAX_LINE)
      rc = fail(&c, s + DECK_MAX_LINE, s, 40, "at most 4096 bytes per line", "line longer than %d bytes",
                DECK_MAX_LINE);
    else if ((rc = check_bytes(&c, s, e)) == 0)
      rc = parse_line(&c, d, s, e, &section);
    if (!nl) break;
    s = nl + 1;
  }
  if (rc != 0) kv_deck_free(d);
  return rc;
}

int kv_deck_parse_string(const char *name, const char *text, kv_deck *d, char *err, size_t errlen) {
  return parse_buffer(name, text, strlen(text), d, err, errlen);
}

/* What a file that is not a regular file is, for the message. */
static const char *file_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* Open the deck without blocking (a FIFO with no writer would block open() and read()
 * forever) and accept only a regular file. */
static FILE *open_deck(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat sb;
  const char *why = NULL;
  if (fd < 0 || fstat(fd, &sb) != 0) why = strerror(errno);
  else if (S_ISDIR(sb.st_mode)) why = "Is a directory";
  if (why) {
    snprintf(err, errlen, "%s: error: cannot %s the deck: %s (expected a readable deck file)", path,
             fd < 0 ? "open" : "read", why);
  } else if (!S_ISREG(sb.st_mode)) {
    snprintf(err, errlen, "%s: error: the deck is %s, not a regular file (expected a deck file; save piped "
             "text to a file first)", path, file_kind(sb.st_mode));
  } else {
    FILE *f = fcntl(fd, F_SETFL, 0) == 0 ? fdopen(fd, "rb") : NULL;
    if (f) return f;
    snprintf(err, errlen, "%s: error: cannot read the deck: %s (expected a readable deck file)", path,
             strerror(errno));
  }
  if (fd >= 0) close(fd);
  return NULL;
}

int kv_deck_parse_file(const char *path, kv_deck *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  FILE *f = open_deck(path, err, errlen);
  if (!f) return -1;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 4096;
      char *nb = realloc(buf, cap);
      if (CHECK_ALLOC(nb) != KV_OK) {
        snprintf(err, errlen, "%s: error: out of memory reading the deck", path);
        rc = -1;
        break;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) {
        snprintf(err, errlen, "%s: error: cannot read the deck: %s (expected a readable deck file)", path,
                 strerror(errno));
        rc = -1;
      }
      break;
    }
    if (len > (size_t)DECK_MAX_BYTES) {
      snprintf(err, errlen, "%s: error: deck larger than %ld bytes (expected a deck of at most 16 MiB)", path,
               DECK_MAX_BYTES);
      rc = -1;
      break;
    }
  }
  fclose(f);
  if (rc == 0) rc = parse_buffer(path, buf ? buf : "", len, d, err, errlen);
  free(buf);
  return rc;
}

int kv_deck_apply_set(kv_deck *d, const char *a, char *err, size_t errlen) {
  cursor c = {set_file, 1, a, err, errlen};
  const char *e = a + strlen(a);
  const char *expected = "SECTION.KEY=VALUES, e.g. --set 'fa2.seqlen=1024 2048' or --set fa2.tails.causal=1";
  if (e - a > DECK_MAX_LINE)
    return fail(&c, a + DECK_MAX_LINE, a, 40, "at most 4096 bytes", "--set argument longer than %d bytes",
                DECK_MAX_LINE);
  if (check_bytes(&c, a, e) != 0) return -1;
  const char *s = skip_space(a, e), *se = name_end(s, e);
  if (se == s || se == e || *se != '.')
    return fail(&c, se, a, (size_t)(e - a), expected, "--set needs SECTION.KEY before '='");
  const char *k = se + 1, *ke = name_end(k, e);
  if (ke > k && ke < e && *ke == '.') { /* FAMILY.NAME.KEY: the key of a named section */
    se = ke;
    k = se + 1;
    ke = name_end(k, e);
  }
  if (ke == k) return fail(&c, k, a, (size_t)(e - a), expected, "--set needs a key after '.'");
  const char *eq = skip_space(ke, e);
  if (eq == e || *eq != '=') return fail(&c, eq, a, (size_t)(e - a), expected, "--set needs '=' after SECTION.KEY");
  token_list tl = {0};
  if (tokenize(&c, eq + 1, e, &tl) != 0) {
    free_tokens(tl.v, tl.n);
    return -1;
  }
  if (tl.n == 0)
    return fail(&c, e, "", 0, "at least one value after '='", "empty value list for %.*s", (int)(ke - s), s);
  char *section = copy_span(s, (size_t)(se - s));
  if (!section) {
    free_tokens(tl.v, tl.n);
    return out_of_memory(&c);
  }
  int rc = 0;
  kv_deck_entry *old = NULL;
  for (int i = 0; i < d->n_entries && !old; i++)
    if (strcmp(d->entries[i].section, section) == 0 && strlen(d->entries[i].key) == (size_t)(ke - k) &&
        memcmp(d->entries[i].key, k, (size_t)(ke - k)) == 0)
      old = &d->entries[i];
  if (old) {
    free_tokens(old->values, old->n_values);
    old->values = tl.v;
    old->n_values = tl.n;
    old->file = set_file;
    old->line = 1;
    old->col = column(&c, k);
  } else {
    if (!kv_deck_find_section(d, section)) rc = add_section(&c, d, section, strlen(section), set_file, 1, column(&c, s));
    if (rc == 0)
      rc = add_entry(&c, d, section, k, (size_t)(ke - k), &tl, column(&c, k));
    else
      free_tokens(tl.v, tl.n);
  }
  free(section);
  return rc;
}

const kv_deck_entry *kv_deck_find(const kv_deck *d, const char *section, const char *key) {
  for (int i = 0; i < d->n_entries; i++)
    if (strcmp(d->entries[i].section, section) == 0 && strcmp(d->entries[i].key, key) == 0) return &d->entries[i];
  return NULL;
}

const kv_deck_section *kv_deck_find_section(const kv_deck *d, const char *section) {
  for (int i = 0; i < d->n_sections; i++)
    if (strcmp(d->sections[i].name, section) == 0) return &d->sections[i];
  return NULL;
}

void kv_deck_free(kv_deck *d) {
  for (int i = 0; i < d->n_entries; i++) {
    free(d->entries[i].section);
    free(d->entries[i].key);
    free_tokens(d->entries[i].values, d->entries[i].n_values);
  }
  for (int i = 0; i < d->n_sections; i++) free(d->sections[i].name);
  free(d->entries);
  free(d->sections);
  free(d->path);
  free(d->text);
  memset(d, 0, sizeof *d);
}
