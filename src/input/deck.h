/* deck.h - the input-deck parser. A deck is INI-like: `[section]` headers, `key = v1 v2 ...`
 * value lists, `#` comments, and ranges `a..b xF` (geometric, factor F) and `a..b +S`
 * (arithmetic, step S), expanded here into plain tokens. The parser knows no schema: the
 * plan checks sections and keys against the family registry. Every error names
 * file:line:column, the offending token and what would be valid. */
#ifndef KVAL_DECK_H
#define KVAL_DECK_H

#include <stddef.h>

typedef struct {
  char *text;       /* the token, ranges already expanded into numbers */
  int line, col;    /* where it (or the range it came from) stands */
} kv_token;

typedef struct {
  char *section, *key;
  kv_token *values;
  int n_values;
  const char *file; /* deck path, or "--set" for command-line overrides */
  int line, col;    /* position of the key */
} kv_deck_entry;

typedef struct {
  char *name;
  const char *file;
  int line, col;
} kv_deck_section;

typedef struct {
  char *path;  /* as given */
  char *text;  /* the whole deck text, stored in the HDF5 file */
  kv_deck_entry *entries;
  int n_entries;
  kv_deck_section *sections;
  int n_sections;
} kv_deck;

/* Parse a deck file or an in-memory text (`name` used in messages). On error return -1 with
 * "FILE:LINE:COL: message" in err. A key repeated within one section is an error. */
int kv_deck_parse_file(const char *path, kv_deck *d, char *err, size_t errlen);
int kv_deck_parse_string(const char *name, const char *text, kv_deck *d, char *err, size_t errlen);

/* Apply `--set section.key=VALUES` (the n-th --set on the command line): replaces the
 * key's values, or adds the key (and the section) when absent. Errors name "--set" and the
 * argument. */
int kv_deck_apply_set(kv_deck *d, const char *assignment, char *err, size_t errlen);

const kv_deck_entry *kv_deck_find(const kv_deck *d, const char *section, const char *key);
const kv_deck_section *kv_deck_find_section(const kv_deck *d, const char *section);
void kv_deck_free(kv_deck *d);

#endif
