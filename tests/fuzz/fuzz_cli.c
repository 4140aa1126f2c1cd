/* fuzz_cli.c - libFuzzer target for the option parser: the input is split at NUL bytes
 * into argv[1..] (at most 64 arguments). Besides crashes and undefined behaviour, it checks
 * the contract: a rejected command line yields one message starting "kval: " (and naming
 * the option); an accepted one has a DECK unless --help, --list or --version, never pairs
 * --resume with another -o or with --force, nor --retry-errors without --resume, and every
 * --inject it accepts is also accepted, with the same meaning, by kv_inject_parse (the
 * parser the run uses). Built and run by tests/system/fuzz_test.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/cli.h"
#include "run/inject.h"

#define MAX_ARGS 64

static void require(int ok, const char *what, const char *detail) {
  if (ok) return;
  fprintf(stderr, "fuzz_cli: contract broken: %s ('%s')\n", what, detail);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAX_ARGS + 2] = {"kval"};
  int argc = 1;
  for (char *p = buf; p <= buf + size && argc <= MAX_ARGS; p += strlen(p) + 1) argv[argc++] = p;
  argv[argc] = NULL;
  kv_options o;
  char err[1024] = "";
  if (kv_cli_parse(argc, argv, &o, err, sizeof err) != 0) {
    require(strncmp(err, "kval: ", 6) == 0 && err[6] != '\0', "a rejection without a 'kval: ' message", err);
  } else {
    require(o.help || o.list || o.version || o.deck_path != NULL, "accepted without a DECK", "");
    require(o.n_sets <= KV_MAX_SETS && o.n_injects <= KV_MAX_INJECTS, "too many --set or --inject kept", "");
    for (int i = 0; i < o.n_injects; i++) {
      kv_inject inj;
      char ierr[256];
      require(kv_inject_parse(o.injects[i], &inj, ierr, sizeof ierr) == 0, "--inject accepted by the option parser "
              "but refused by kv_inject_parse", o.injects[i]);
      require(inj.rank >= 0 && (strchr(o.injects[i], ':') != NULL) == (inj.case_index >= 0),
              "--inject parsed into another fault", o.injects[i]);
    }
    int runs = !(o.help || o.list || o.version); /* these print and exit before any check */
    require(!runs || !o.resume || (o.output && strcmp(o.output, o.resume) == 0 && !o.force),
            "--resume accepted with another -o or with --force", "");
    require(!runs || !o.retry_errors || o.resume, "--retry-errors without --resume", "");
  }
  free(buf);
  return 0;
}
