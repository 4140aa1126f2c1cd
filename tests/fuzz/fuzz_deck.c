/* fuzz_deck.c - libFuzzer target for the deck parser and the plan builder: the input is a
 * deck text, optionally followed by --set arguments, each after a 0x01 byte. Besides
 * crashes, leaks and undefined behaviour (ASan/UBSan), it checks the error contract: a
 * rejected deck or --set yields one message that names the deck ("fuzz.deck:"), the
 * option ("--set:") or the family list, and says "error"; an accepted deck builds a plan
 * whose every case lies inside its family's grid. Built and run by tests/system/fuzz_test.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/deck.h"
#include "input/plan.h"

#define MAX_SETS 8

static void require(int ok, const char *what, const char *err) {
  if (ok) return;
  fprintf(stderr, "fuzz_deck: contract broken: %s (message: '%s')\n", what, err);
  abort();
}

/* A rejected input names where: the deck, a --set or (plan-level) the deck file. */
static void check_message(const char *err, const char *where) {
  require(err[0] != '\0', "an error without a message", err);
  require(strncmp(err, where, strlen(where)) == 0 || strncmp(err, "fuzz.deck", 9) == 0, "a message that does not name the deck or --set", err);
  require(strstr(err, "error") != NULL, "a message without 'error'", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *sets[MAX_SETS];
  int n_sets = 0;
  for (char *p = text; (p = memchr(p, '\x01', (size_t)(text + size - p))) != NULL && n_sets < MAX_SETS;) {
    *p++ = '\0';
    sets[n_sets++] = p;
  }
  kv_deck deck;
  char err[2048] = "";
  if (kv_deck_parse_string("fuzz.deck", text, &deck, err, sizeof err) != 0) {
    check_message(err, "fuzz.deck:");
    free(text);
    return 0;
  }
  int rc = 0;
  for (int i = 0; rc == 0 && i < n_sets; i++) {
    char *nul = memchr(sets[i], '\x01', strlen(sets[i]));
    if (nul) *nul = '\0';
    rc = kv_deck_apply_set(&deck, sets[i], err, sizeof err);
    if (rc != 0) check_message(err, "--set");
  }
  if (rc == 0) {
    kv_plan plan;
    err[0] = '\0';
    kv_mode mode = size % 2 ? KV_MODE_SPLIT : KV_MODE_FLEET;
    if (kv_plan_build(&deck, NULL, "cpu", mode, 0, 0, &plan, err, sizeof err) == 0) {
      for (size_t i = 0; i < plan.n_cases; i++)
        require(plan.cases[i].cell < plan.cases[i].fp->n_cells, "a case outside its family's grid", "");
      size_t *idx = NULL, n = kv_plan_rank_cases(&plan, 1, 3, &idx);
      for (size_t i = 0; i < n; i++) require(idx[i] < plan.n_cases, "a rank case outside the plan", "");
      free(idx);
      kv_plan_free(&plan);
    } else {
      check_message(err, "--set");
    }
  }
  kv_deck_free(&deck);
  free(text);
  return 0;
}
