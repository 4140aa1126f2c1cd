/* test_util.h - the tiny check macros of kval's C unit tests: TEST names a group of checks
 * (printed), EXPECT and EXPECT_STREQ count checks and report failures with file:line, and
 * TEST_RETURN() ends main with 0 when every check passed, 1 otherwise. One test program is
 * one translation unit, so the counters are file-static. */
#ifndef KVAL_TEST_UTIL_H
#define KVAL_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

static int tu_checks, tu_failures;

/* Print the name of the group of checks that follows. */
#define TEST(...)                                                                             \
  do {                                                                                        \
    printf("-- ");                                                                            \
    printf(__VA_ARGS__);                                                                      \
    printf("\n");                                                                             \
    fflush(stdout);                                                                           \
  } while (0)

/* EXPECT(cond, fmt, ...): the message says what was checked and is printed on failure. */
#define EXPECT(cond, ...)                                                                     \
  do {                                                                                        \
    tu_checks++;                                                                              \
    if (!(cond)) {                                                                            \
      tu_failures++;                                                                          \
      printf("FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond);                                 \
      printf(__VA_ARGS__);                                                                    \
      printf("\n");                                                                           \
      fflush(stdout);                                                                         \
    }                                                                                         \
  } while (0)

/* Two strings equal (NULL equals only NULL). */
#define EXPECT_STREQ(got, want)                                                               \
  do {                                                                                        \
    const char *tu_g = (got), *tu_w = (want);                                                 \
    EXPECT((tu_g == NULL && tu_w == NULL) || (tu_g && tu_w && strcmp(tu_g, tu_w) == 0),       \
           "%s is \"%s\", expected \"%s\"", #got, tu_g ? tu_g : "(null)", tu_w ? tu_w : "(null)"); \
  } while (0)

/* `s` contains `part`. */
#define EXPECT_CONTAINS(s, part)                                                              \
  do {                                                                                        \
    const char *tu_s = (s), *tu_p = (part);                                                   \
    EXPECT(tu_s && strstr(tu_s, tu_p), "%s is \"%s\", expected to contain \"%s\"", #s,        \
           tu_s ? tu_s : "(null)", tu_p);                                                     \
  } while (0)

/* End of main: summary line and exit status (0 pass, 1 fail). */
#define TEST_RETURN()                                                                         \
  (printf("%s: %d checks, %d failed\n", __FILE__, tu_checks, tu_failures), tu_failures ? 1 : 0)

#endif
