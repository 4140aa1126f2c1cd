/* test_deck.c - unit tests of the deck parser (src/input/deck.c): a good deck and its positions,
 * range expansion, more than 30 malformed decks each checked for its exact file:line:col and
 * message, --set overrides, reading files (missing, directory, NUL byte), and the decks
 * under tests/decks/good. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "input/deck.h"
#include "tests/unit/test_util.h"

static char err[2048];

/* Values of one entry joined by spaces. */
static const char *joined(const kv_deck *d, const char *section, const char *key) {
  static char buf[4096];
  const kv_deck_entry *en = kv_deck_find(d, section, key);
  if (!en) return NULL;
  buf[0] = '\0';
  for (int i = 0; i < en->n_values; i++) {
    size_t n = strlen(buf);
    snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", en->values[i].text);
  }
  return buf;
}

static void test_good_deck(void) {
  TEST("a good deck: sections, keys, comments, positions, verbatim text");
  const char *text =
      "# a comment line\n"
      "\n"
      "[fa2]   # trailing comment\n"
      "headdim = 64 128\n"
      "  seqlen\t=  512   1024 # two values\n"
      "[ run ]\r\n"
      "seed = 7\r\n"
      "l2_flush = warm";
  kv_deck d;
  int rc = kv_deck_parse_string("good.deck", text, &d, err, sizeof err);
  EXPECT(rc == 0, "parse returns 0 (err: %s)", err);
  if (rc != 0) return;
  EXPECT_STREQ(d.text, text);
  EXPECT_STREQ(d.path, "good.deck");
  EXPECT(d.n_sections == 2, "2 sections, got %d", d.n_sections);
  EXPECT(d.n_entries == 4, "4 entries, got %d", d.n_entries);
  EXPECT_STREQ(d.sections[0].name, "fa2");
  EXPECT(d.sections[0].line == 3 && d.sections[0].col == 2, "[fa2] at 3:2, got %d:%d", d.sections[0].line,
         d.sections[0].col);
  EXPECT_STREQ(d.sections[1].name, "run");
  EXPECT(d.sections[1].col == 3, "[ run ] name at col 3, got %d", d.sections[1].col);
  EXPECT_STREQ(joined(&d, "fa2", "headdim"), "64 128");
  EXPECT_STREQ(joined(&d, "fa2", "seqlen"), "512 1024");
  EXPECT_STREQ(joined(&d, "run", "seed"), "7");
  EXPECT_STREQ(joined(&d, "run", "l2_flush"), "warm");
  const kv_deck_entry *en = kv_deck_find(&d, "fa2", "seqlen");
  EXPECT(en && en->line == 5 && en->col == 3, "seqlen key at 5:3");
  EXPECT(en && en->values[1].line == 5 && en->values[1].col == 19, "1024 at 5:19, got col %d",
         en ? en->values[1].col : -1);
  EXPECT_STREQ(en ? en->file : NULL, "good.deck");
  EXPECT(kv_deck_find(&d, "fa2", "seed") == NULL, "keys are per section");
  EXPECT(kv_deck_find_section(&d, "run") == &d.sections[1], "find_section finds [run]");
  EXPECT(kv_deck_find_section(&d, "gemm") == NULL, "find_section: absent section");
  kv_deck_free(&d);
  EXPECT(d.n_entries == 0 && d.entries == NULL && d.text == NULL, "free clears the deck");

  TEST("empty deck and a section without keys are fine");
  EXPECT(kv_deck_parse_string("e.deck", "", &d, err, sizeof err) == 0 && d.n_sections == 0, "empty deck parses");
  kv_deck_free(&d);
  EXPECT(kv_deck_parse_string("e.deck", "[gemm]\n# nothing\n", &d, err, sizeof err) == 0 && d.n_sections == 1 &&
             d.n_entries == 0,
         "section without keys parses");
  kv_deck_free(&d);
  TEST("UTF-8 in comments is fine and columns count characters");
  EXPECT(kv_deck_parse_string("u.deck", "# cafe\xcc\x81 \xe2\x86\x92 \xf0\x9f\x98\x80\n[s]\nk = \xc3\xa9 x\n", &d, err,
                              sizeof err) == 0,
         "valid UTF-8 parses (err: %s)", err);
  en = kv_deck_find(&d, "s", "k");
  EXPECT(en && en->n_values == 2 && en->values[1].col == 7, "token after a 2-byte character at col 7");
  kv_deck_free(&d);
}

typedef struct {
  const char *text, *values;
} range_case;

static void test_ranges(void) {
  TEST("range expansion");
  static const range_case cases[] = {
      {"128..16384 x2", "128 256 512 1024 2048 4096 8192 16384"},
      {"128..16384x2", "128 256 512 1024 2048 4096 8192 16384"},
      {"128..16383 x2", "128 256 512 1024 2048 4096 8192"},
      {"1024..8192 +1024", "1024 2048 3072 4096 5120 6144 7168 8192"},
      {"1024..8192+1024", "1024 2048 3072 4096 5120 6144 7168 8192"},
      {"1..10 +4", "1 5 9"},
      {"3..100 x3", "3 9 27 81"},
      {"5..5 +3", "5"},
      {"1..1 x2", "1"},
      {"-4..4 +4", "-4 0 4"},
      {"0..2 +1", "0 1 2"},
      {"64 128..512x2 1000", "64 128 256 512 1000"},
      {"1..4 +1 8..16 x2", "1 2 3 4 8 16"},
      {"4611686018427387904..9223372036854775807 x2", "4611686018427387904"},
      {"9223372036854775806..9223372036854775807 +1", "9223372036854775806 9223372036854775807"},
      {"256x256x256 nn", "256x256x256 nn"},
      {"fp16:fp32 +5 x2", "fp16:fp32 +5 x2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "[s]\nk = %s\n", cases[i].text);
    kv_deck d;
    int rc = kv_deck_parse_string("r.deck", text, &d, err, sizeof err);
    EXPECT(rc == 0, "'%s' parses (err: %s)", cases[i].text, err);
    if (rc != 0) continue;
    EXPECT_STREQ(joined(&d, "s", "k"), cases[i].values);
    kv_deck_free(&d);
  }
  TEST("range tokens carry the position of the range");
  kv_deck d;
  EXPECT(kv_deck_parse_string("r.deck", "[s]\nk = 7 1..4 +1\n", &d, err, sizeof err) == 0, "parses");
  const kv_deck_entry *en = kv_deck_find(&d, "s", "k");
  EXPECT(en && en->n_values == 5, "5 values");
  for (int i = 1; en && i < 5; i++)
    EXPECT(en->values[i].line == 2 && en->values[i].col == 7, "value %d at 2:7, got %d:%d", i, en->values[i].line,
           en->values[i].col);
  kv_deck_free(&d);
  TEST("the 100000-value limit");
  EXPECT(kv_deck_parse_string("r.deck", "[s]\nk = 1..100000 +1\n", &d, err, sizeof err) == 0, "100000 values allowed");
  en = kv_deck_find(&d, "s", "k");
  EXPECT(en && en->n_values == 100000 && strcmp(en->values[99999].text, "100000") == 0, "last value 100000");
  kv_deck_free(&d);
  EXPECT(kv_deck_parse_string("r.deck", "[s]\nk = 1..60000 +1 1..60000 +1\n", &d, err, sizeof err) != 0,
         "two ranges beyond 100000 values in one key fail");
  EXPECT_CONTAINS(err, "r.deck:2:17: error: value list grows beyond 100000 values");
}

typedef struct {
  const char *text, *where, *what;
} bad_case;

/* Each malformed deck: its text, the expected "file:line:col" and a key phrase. */
static const bad_case bad_decks[] = {
    {"[fa2\nseqlen = 1\n", "bad.deck:1:5", "missing ']' at the end of the section header (got '[fa2'"},
    {"[fa2 # comment\n", "bad.deck:1:5", "missing ']'"},
    {"[]\n", "bad.deck:1:1", "empty section name (got '[]'"},
    {"[   ]\n", "bad.deck:1:1", "empty section name"},
    {"[fa 2]\n", "bad.deck:1:4", "invalid character in section name (got 'fa 2'"},
    {"[fa2.]\n", "bad.deck:1:6", "empty name after '.' in the section name"},
    {"[fa2.a.b]\n", "bad.deck:1:7", "invalid character in section name (got 'fa2.a.b'"},
    {"[.a]\n", "bad.deck:1:2", "invalid character in section name (got '.a'"},
    {"[fa2] x = 1\n", "bad.deck:1:7", "unexpected text after the section header (got 'x = 1'"},
    {"[fa2]]\n", "bad.deck:1:6", "unexpected text after the section header"},
    {"seqlen = 1\n[fa2]\n", "bad.deck:1:1", "key 'seqlen' outside any section (got 'seqlen'; expected a [section] header"},
    {"[fa2]\nseqlen 1 2\n", "bad.deck:2:8", "expected '=' after key 'seqlen' (got '1'"},
    {"[fa2]\nseqlen: 1 2\n", "bad.deck:2:7", "expected '=' after key 'seqlen' (got ':'"},
    {"[fa2]\nseqlen\n", "bad.deck:2:7", "missing '=' after key 'seqlen'"},
    {"[fa2]\n  = 1 2\n", "bad.deck:2:3", "missing key before '='"},
    {"[fa2]\n$x = 1\n", "bad.deck:2:1", "invalid key (got '$x'"},
    {"[fa2]\nseqlen =   # nothing\n", "bad.deck:2:9", "empty value list for key 'seqlen' (got ''; expected at least one value"},
    {"[fa2]\nseqlen = 1\n\nseqlen = 2\n", "bad.deck:4:1", "duplicate key 'seqlen' in [fa2] (first at line 2)"},
    {"[fa2]\na = 1\n[gemm]\n[fa2]\n", "bad.deck:4:2", "duplicate section [fa2] (first at line 1)"},
    {"[s]\nk = 8..1 x2\n", "bad.deck:2:5", "range start 8 is greater than its end 1 (got '8..1'"},
    {"[s]\nk = 1..8 +0\n", "bad.deck:2:10", "range step must be an integer > 0 (got '+0'"},
    {"[s]\nk = 1..8 +-2\n", "bad.deck:2:10", "range step must be an integer > 0"},
    {"[s]\nk = 1..8x1\n", "bad.deck:2:9", "range factor must be an integer >= 2 (got 'x1'"},
    {"[s]\nk = 1..8 x1.5\n", "bad.deck:2:10", "range factor must be an integer >= 2 (got 'x1.5'"},
    {"[s]\nk = 1..8 x2y\n", "bad.deck:2:10", "range factor must be an integer >= 2 (got 'x2y'"},
    {"[s]\nk = 1.5..8 x2\n", "bad.deck:2:5", "range start is not an integer (got '1.5..8'"},
    {"[s]\nk = a..8 x2\n", "bad.deck:2:5", "range start is not an integer"},
    {"[s]\nk = 1..8.5 x2\n", "bad.deck:2:5", "range end is not an integer (got '1..8.5'"},
    {"[s]\nk = 1..1e3 x2\n", "bad.deck:2:5", "range end is not an integer"},
    {"[s]\nk = 1..8y\n", "bad.deck:2:9", "unexpected text after the range end (got '1..8y'"},
    {"[s]\nk = 1..8..16 x2\n", "bad.deck:2:5", "more than one '..'"},
    {"[s]\nk = 1..8\n", "bad.deck:2:5", "range without a step (got '1..8'; expected 'A..B xF'"},
    {"[s]\nk = 1..8 16\n", "bad.deck:2:5", "range without a step"},
    {"[s]\nk = 1.. x2\n", "bad.deck:2:5", "incomplete range: no end after '..'"},
    {"[s]\nk = 1..200000 +1\n", "bad.deck:2:5", "range expands to 200000 values"},
    {"[s]\nk = 0..8 x2\n", "bad.deck:2:5", "geometric range starts at 0"},
    {"[s]\nk = 99999999999999999999..1 +1\n", "bad.deck:2:5", "range start does not fit in 64 bits"},
    {"[s]\nk = 1 = 2\n", "bad.deck:2:7", "unexpected '=' in the value list (got '='"},
    {"[s]\nk = a[1]\n", "bad.deck:2:6", "unexpected '[' in the value list (got 'a[1]'"},
    {"[s]\nk = 1\x01 2\n", "bad.deck:2:6", "control character 0x01 in the deck (got '\\x01'"},
    {"[s]\nk = 1\r2\n", "bad.deck:2:6", "control character 0x0d"},
    {"[s]\n# caf\xe9!\n", "bad.deck:2:6", "invalid UTF-8 byte sequence (got '\\xe9!'"},
    {"[s]\n# \xc0\xaf overlong\n", "bad.deck:2:3", "invalid UTF-8 byte sequence"},
    {"[s]\n# \xed\xa0\x80 surrogate\n", "bad.deck:2:3", "invalid UTF-8 byte sequence"},
    {"[s]\nk = a\xc3\n", "bad.deck:2:6", "invalid UTF-8 byte sequence"},
    {"[s]\n# \xc3\xa9\nk = \xc3\xa9 1..8\n", "bad.deck:3:7", "range without a step"},
    {"\xef\xbb\xbf[s]\n", "bad.deck:1:1", "byte order mark at the start of the deck (got '\\xef\\xbb\\xbf'"},
};

static void test_bad_decks(void) {
  TEST("%zu malformed decks: exact file:line:col and message", sizeof bad_decks / sizeof bad_decks[0]);
  for (size_t i = 0; i < sizeof bad_decks / sizeof bad_decks[0]; i++) {
    const bad_case *b = &bad_decks[i];
    kv_deck d;
    err[0] = '\0';
    int rc = kv_deck_parse_string("bad.deck", b->text, &d, err, sizeof err);
    EXPECT(rc == -1, "bad deck %zu fails", i);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: error: ", b->where);
    EXPECT(strncmp(err, prefix, strlen(prefix)) == 0, "bad deck %zu: message starts with '%s', got '%s'", i, prefix, err);
    EXPECT_CONTAINS(err, b->what);
    EXPECT_CONTAINS(err, "; expected ");
    EXPECT(d.n_entries == 0 && d.text == NULL, "bad deck %zu: the deck is released", i);
  }

  TEST("a line longer than 4096 bytes");
  size_t n = 5000;
  char *text = malloc(n + 16);
  EXPECT(text != NULL, "malloc");
  if (!text) return;
  strcpy(text, "[s]\nk = ");
  memset(text + 8, 'a', n);
  text[8 + n] = '\0';
  kv_deck d;
  EXPECT(kv_deck_parse_string("long.deck", text, &d, err, sizeof err) == -1, "long line fails");
  EXPECT_CONTAINS(err, "long.deck:2:4097: error: line longer than 4096 bytes (got 'k = aaaa");
  text[4096 + 4] = '\0'; /* the second line is now exactly 4096 bytes */
  EXPECT(kv_deck_parse_string("long.deck", text, &d, err, sizeof err) == 0, "a 4096-byte line is fine (err: %s)", err);
  kv_deck_free(&d);
  free(text);
}

static void test_set(void) {
  TEST("--set replaces, adds keys and sections, with positions in the argument");
  kv_deck d;
  EXPECT(kv_deck_parse_string("s.deck", "[fa2]\nseqlen = 512\nheaddim = 64\n", &d, err, sizeof err) == 0, "parses");
  EXPECT(kv_deck_apply_set(&d, "fa2.seqlen=1024..4096 x2 100", err, sizeof err) == 0, "replace (err: %s)", err);
  EXPECT_STREQ(joined(&d, "fa2", "seqlen"), "1024 2048 4096 100");
  const kv_deck_entry *en = kv_deck_find(&d, "fa2", "seqlen");
  EXPECT_STREQ(en ? en->file : NULL, "--set");
  EXPECT(en && en->line == 1 && en->col == 5, "key col 5 in the argument");
  EXPECT(en && en->values[3].col == 26, "value '100' at col 26, got %d", en ? en->values[3].col : -1);
  EXPECT(d.n_entries == 2, "still 2 entries");
  EXPECT(kv_deck_apply_set(&d, " fa2.batch = 4 ", err, sizeof err) == 0, "adds a key (err: %s)", err);
  EXPECT_STREQ(joined(&d, "fa2", "batch"), "4");
  EXPECT(kv_deck_apply_set(&d, "gemm.shape=64x64x64", err, sizeof err) == 0, "adds a section (err: %s)", err);
  const kv_deck_section *s = kv_deck_find_section(&d, "gemm");
  EXPECT(s && strcmp(s->file, "--set") == 0, "new section comes from --set");
  EXPECT_STREQ(joined(&d, "gemm", "shape"), "64x64x64");
  EXPECT(kv_deck_apply_set(&d, "gemm.shape=128x128x128", err, sizeof err) == 0, "a second --set wins");
  EXPECT_STREQ(joined(&d, "gemm", "shape"), "128x128x128");
  EXPECT(d.n_sections == 2, "2 sections, got %d", d.n_sections);
  EXPECT(strstr(d.text, "gemm") == NULL, "the deck text stays the file's text");
  EXPECT(kv_deck_apply_set(&d, "fa2.tails.causal=0 1", err, sizeof err) == 0, "a named section's key (err: %s)", err);
  EXPECT_STREQ(joined(&d, "fa2.tails", "causal"), "0 1");
  EXPECT(d.n_sections == 3 && kv_deck_find_section(&d, "fa2.tails"), "--set FAMILY.NAME.KEY adds [fa2.tails]");

  TEST("--set errors name --set and the column in the argument");
  static const bad_case bad_sets[] = {
      {"fa2seqlen=1", "--set:1:10", "--set needs SECTION.KEY before '='"},
      {"fa2.=1", "--set:1:5", "--set needs a key after '.'"},
      {".seqlen=1", "--set:1:1", "--set needs SECTION.KEY"},
      {"fa2.seqlen 1", "--set:1:12", "--set needs '=' after SECTION.KEY (got 'fa2.seqlen 1'"},
      {"fa2.seqlen=", "--set:1:12", "empty value list for fa2.seqlen"},
      {"fa2.seqlen=1..8 x1", "--set:1:17", "range factor must be an integer >= 2 (got 'x1'"},
      {"fa2.seqlen=64 8..1 +1", "--set:1:15", "range start 8 is greater than its end 1"},
      {"fa2.seqlen=1 # c", "--set:1:14", "unexpected '#' in the value list"},
      {"fa2.seqlen=1\n2", "--set:1:13", "control character 0x0a"},
  };
  for (size_t i = 0; i < sizeof bad_sets / sizeof bad_sets[0]; i++) {
    err[0] = '\0';
    EXPECT(kv_deck_apply_set(&d, bad_sets[i].text, err, sizeof err) == -1, "--set '%s' fails", bad_sets[i].text);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: error: ", bad_sets[i].where);
    EXPECT(strncmp(err, prefix, strlen(prefix)) == 0, "--set %zu: starts with '%s', got '%s'", i, prefix, err);
    EXPECT_CONTAINS(err, bad_sets[i].what);
  }
  EXPECT_STREQ(joined(&d, "fa2", "seqlen"), "1024 2048 4096 100");
  kv_deck_free(&d);
}

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  EXPECT(f != NULL, "create %s", path);
  if (!f) return;
  EXPECT(fwrite(data, 1, n, f) == n, "write %s", path);
  fclose(f);
}

static void test_files(const char *tmpdir) {
  TEST("reading deck files");
  char path[512];
  kv_deck d;
  snprintf(path, sizeof path, "%s/ok.deck", tmpdir);
  write_file(path, "[gemm]\nshape = 64x64x64\n", strlen("[gemm]\nshape = 64x64x64\n"));
  EXPECT(kv_deck_parse_file(path, &d, err, sizeof err) == 0, "file parses (err: %s)", err);
  EXPECT_STREQ(d.text, "[gemm]\nshape = 64x64x64\n");
  const kv_deck_entry *en = kv_deck_find(&d, "gemm", "shape");
  EXPECT_STREQ(en ? en->file : NULL, path);
  kv_deck_free(&d);

  snprintf(path, sizeof path, "%s/missing.deck", tmpdir);
  EXPECT(kv_deck_parse_file(path, &d, err, sizeof err) == -1, "missing file fails");
  EXPECT(strncmp(err, path, strlen(path)) == 0, "message starts with the path: %s", err);
  EXPECT_CONTAINS(err, "No such file or directory");
  EXPECT(kv_deck_parse_file(tmpdir, &d, err, sizeof err) == -1, "a directory fails");
  EXPECT_CONTAINS(err, "Is a directory");

  snprintf(path, sizeof path, "%s/nul.deck", tmpdir);
  write_file(path, "[s]\nk = a\0b\n", 12);
  EXPECT(kv_deck_parse_file(path, &d, err, sizeof err) == -1, "NUL byte fails");
  char want[600];
  snprintf(want, sizeof want, "%s:2:6: error: control character 0x00", path);
  EXPECT_CONTAINS(err, want);
}

/* Every deck of tests/decks/good parses. */
static void test_good_files(const char *srcdir) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%.900s/tests/decks/good", srcdir);
  TEST("decks in %s parse", dir);
  DIR *dp = opendir(dir);
  EXPECT(dp != NULL, "open %s", dir);
  if (!dp) return;
  int n = 0;
  for (struct dirent *e; (e = readdir(dp));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".deck") != 0) continue;
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    kv_deck d;
    EXPECT(kv_deck_parse_file(path, &d, err, sizeof err) == 0, "%s parses (err: %s)", path, err);
    EXPECT(d.n_sections > 0, "%s has sections", path);
    kv_deck_free(&d);
    n++;
  }
  closedir(dp);
  EXPECT(n >= 3, "found %d good decks", n);
}

int main(void) {
  const char *srcdir = getenv("top_srcdir");
  char here[512];
  if (!srcdir) { /* run by hand: the source tree is where this file came from */
    snprintf(here, sizeof here, "%s", __FILE__);
    char *cut = strstr(here, "tests/unit/test_deck.c");
    if (cut == here) snprintf(here, sizeof here, ".");
    else if (cut) cut[-1] = '\0';
    srcdir = here;
  }
  char tmpdir[] = "/tmp/kval_test_deck_XXXXXX";
  EXPECT(mkdtemp(tmpdir) != NULL, "mkdtemp");
  test_good_deck();
  test_ranges();
  test_bad_decks();
  test_set();
  test_files(tmpdir);
  test_good_files(srcdir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  EXPECT(system(cmd) == 0, "remove %s", tmpdir);
  return TEST_RETURN();
}
