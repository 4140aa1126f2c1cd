/* test_cli.c - unit tests of the command line (src/input/cli.c): defaults, every option in its
 * "--opt value" and "--opt=value" forms, every value check and its exact message, option
 * combinations (--resume with -o, --retry-errors, --force), limits of repeatable options,
 * and the usage text. */
#include <stdlib.h>
#include <string.h>

#include "input/cli.h"
#include "tests/unit/test_util.h"

static char err[1024];

/* Parse a NULL-terminated argument list (argv[0] = "kval" is added). */
static int parse(kv_options *o, const char *const *args) {
  char *argv[256];
  int argc = 0;
  argv[argc++] = "kval";
  for (int i = 0; args[i]; i++) argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  err[0] = '\0';
  return kv_cli_parse(argc, argv, o, err, sizeof err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void expect_error(const char *const *args, const char *message) {
  kv_options o;
  int rc = parse(&o, args);
  EXPECT(rc == -1, "'%s ...' fails", args[0]);
  EXPECT_STREQ(err, message);
}

static void test_defaults(void) {
  TEST("defaults");
  kv_options o;
  EXPECT(parse(&o, ARGS("sweep.deck")) == 0, "parses (err: %s)", err);
  EXPECT_STREQ(o.deck_path, "sweep.deck");
  EXPECT_STREQ(o.backend, "auto");
  EXPECT(o.mode == KV_MODE_FLEET, "mode fleet");
  EXPECT(o.output == NULL && o.only == NULL && o.resume == NULL, "no output, only, resume");
  EXPECT(o.n_sets == 0 && o.n_injects == 0 && !o.have_seed, "no sets, injects, seed");
  EXPECT(!o.dry_run && !o.list && !o.help && !o.version && !o.force && !o.retry_errors && !o.quiet, "no flags");
}

static void test_values(void) {
  TEST("-o / --output in all forms");
  kv_options o;
  EXPECT(parse(&o, ARGS("-o", "a.h5", "d")) == 0 && strcmp(o.output, "a.h5") == 0, "-o FILE");
  EXPECT(parse(&o, ARGS("-ob.h5", "d")) == 0 && strcmp(o.output, "b.h5") == 0, "-oFILE");
  EXPECT(parse(&o, ARGS("--output", "c.h5", "d")) == 0 && strcmp(o.output, "c.h5") == 0, "--output FILE");
  EXPECT(parse(&o, ARGS("d", "--output=e.h5")) == 0 && strcmp(o.output, "e.h5") == 0, "--output=FILE after DECK");
  EXPECT(parse(&o, ARGS("-o", "-dash.h5", "d")) == 0 && strcmp(o.output, "-dash.h5") == 0, "value may start with '-'");
  EXPECT(parse(&o, ARGS("-o", "x.h5", "-o", "y.h5", "d")) == 0 && strcmp(o.output, "y.h5") == 0, "last -o wins");
  expect_error(ARGS("-o", "", "d"), "kval: -o: empty file name (expected the path of an HDF5 file)");
  expect_error(ARGS("--output=", "d"), "kval: --output: empty file name (expected the path of an HDF5 file)");
  expect_error(ARGS("d", "-o"), "kval: -o: missing value (expected FILE)");

  TEST("--backend");
  EXPECT(parse(&o, ARGS("--backend", "cpu", "d")) == 0 && strcmp(o.backend, "cpu") == 0, "--backend cpu");
  EXPECT(parse(&o, ARGS("--backend=cuda", "d")) == 0 && strcmp(o.backend, "cuda") == 0, "--backend=cuda");
  EXPECT(parse(&o, ARGS("--backend=auto", "d")) == 0 && strcmp(o.backend, "auto") == 0, "--backend=auto");
  expect_error(ARGS("--backend=gpu", "d"), "kval: --backend: invalid value 'gpu' (expected cuda, cpu or auto)");
  expect_error(ARGS("--backend", "CPU", "d"), "kval: --backend: invalid value 'CPU' (expected cuda, cpu or auto)");
  expect_error(ARGS("d", "--backend"), "kval: --backend: missing value (expected B)");

  TEST("--mode");
  EXPECT(parse(&o, ARGS("--mode", "split", "d")) == 0 && o.mode == KV_MODE_SPLIT, "--mode split");
  EXPECT(parse(&o, ARGS("--mode=split", "--mode=fleet", "d")) == 0 && o.mode == KV_MODE_FLEET, "last --mode wins");
  expect_error(ARGS("--mode", "x", "d"), "kval: --mode: invalid value 'x' (expected fleet or split)");
  expect_error(ARGS("--mode=", "d"), "kval: --mode: invalid value '' (expected fleet or split)");

  TEST("--only");
  EXPECT(parse(&o, ARGS("--only", "fa2,gemm", "d")) == 0 && strcmp(o.only, "fa2,gemm") == 0, "--only fa2,gemm");
  EXPECT(parse(&o, ARGS("--only=rmsnorm", "d")) == 0 && strcmp(o.only, "rmsnorm") == 0, "--only=rmsnorm");
  expect_error(ARGS("--only", "fa2,,gemm", "d"),
               "kval: --only: invalid value 'fa2,,gemm' (expected family names separated by commas, e.g. fa2,gemm)");
  expect_error(ARGS("--only=", "d"),
               "kval: --only: invalid value '' (expected family names separated by commas, e.g. fa2,gemm)");
  expect_error(ARGS("--only", "fa2,", "d"),
               "kval: --only: invalid value 'fa2,' (expected family names separated by commas, e.g. fa2,gemm)");
  expect_error(ARGS("--only", ",fa2", "d"),
               "kval: --only: invalid value ',fa2' (expected family names separated by commas, e.g. fa2,gemm)");

  TEST("--set");
  EXPECT(parse(&o, ARGS("--set", "fa2.seqlen=1024 2048", "--set=gemm.shape=64x64x64", "d")) == 0 && o.n_sets == 2,
         "two --set");
  EXPECT(o.n_sets == 2 && strcmp(o.sets[0], "fa2.seqlen=1024 2048") == 0 && strcmp(o.sets[1], "gemm.shape=64x64x64") == 0,
         "--set values in order, '=' inside the value kept");
  const char *set_msg = "(expected SECTION.KEY=VALUES, e.g. --set 'fa2.seqlen=1024 2048')";
  char want[256];
  static const char *const bad_sets[] = {"seqlen=1024", "fa2.seqlen", ".seqlen=1", "fa2.=1", "fa2=1.2", ""};
  for (size_t i = 0; i < sizeof bad_sets / sizeof bad_sets[0]; i++) {
    snprintf(want, sizeof want, "kval: --set: invalid value '%s' %s", bad_sets[i], set_msg);
    expect_error(ARGS("--set", bad_sets[i], "d"), want);
  }
  const char *many[2 * KV_MAX_SETS + 4];
  int n = 0;
  for (int i = 0; i < KV_MAX_SETS; i++) many[n++] = "--set", many[n++] = "fa2.heads=8";
  many[n++] = "d";
  many[n] = NULL;
  EXPECT(parse(&o, many) == 0 && o.n_sets == KV_MAX_SETS, "%d --set accepted (err: %s)", KV_MAX_SETS, err);
  many[n - 1] = "--set=fa2.heads=4";
  many[n++] = "d";
  many[n] = NULL;
  expect_error(many, "kval: --set: too many overrides (expected at most 64 --set options)");

  TEST("--seed");
  EXPECT(parse(&o, ARGS("--seed", "0", "d")) == 0 && o.have_seed && o.seed == 0, "--seed 0");
  EXPECT(parse(&o, ARGS("--seed=18446744073709551615", "d")) == 0 && o.seed == UINT64_MAX, "--seed max");
  EXPECT(parse(&o, ARGS("--seed", "0042", "d")) == 0 && o.seed == 42, "--seed 0042");
  static const char *const bad_seeds[] = {"18446744073709551616", "-1", "+1", "0x10", "1e3", "", " 1", "12a"};
  for (size_t i = 0; i < sizeof bad_seeds / sizeof bad_seeds[0]; i++) {
    snprintf(want, sizeof want, "kval: --seed: invalid value '%s' (expected a decimal integer 0..18446744073709551615)",
             bad_seeds[i]);
    expect_error(ARGS("--seed", bad_seeds[i], "d"), want);
  }

  TEST("--inject");
  EXPECT(parse(&o, ARGS("--inject", "bitflip@0", "--inject=nan@3:17", "--inject", "scale@12:0", "--inject", "slow@1",
                        "d")) == 0,
         "four faults (err: %s)", err);
  EXPECT(o.n_injects == 4 && strcmp(o.injects[1], "nan@3:17") == 0, "kept in order");
  static const char *const bad_injects[] = {"flip@0",     "bitflip",   "bitflip@",   "bitflip@-1",
                                            "bitflip@1:", "bitflip@1:x", "bitflip@1:2:3", "bitflip@2147483648",
                                            "@0",         "nan@ 1",    "BITFLIP@0",  "slow@1:-2"};
  for (size_t i = 0; i < sizeof bad_injects / sizeof bad_injects[0]; i++) {
    snprintf(want, sizeof want,
             "kval: --inject: invalid value '%s' (expected KIND@RANK[:CASE] with KIND bitflip, nan, scale, slow, "
             "sticky or hang, RANK an integer >= 0 and CASE a case index >= 0, e.g. bitflip@1:0)",
             bad_injects[i]);
    expect_error(ARGS("--inject", bad_injects[i], "d"), want);
  }
  EXPECT(parse(&o, ARGS("--inject", "bitflip@2147483647:9223372036854775807", "d")) == 0, "largest rank and case");
  const char *faults[2 * KV_MAX_INJECTS + 4];
  n = 0;
  for (int i = 0; i <= KV_MAX_INJECTS; i++) faults[n++] = "--inject", faults[n++] = "nan@0";
  faults[n++] = "d";
  faults[n] = NULL;
  expect_error(faults, "kval: --inject: too many faults (expected at most 16 --inject options)");
}

static void test_flags(void) {
  TEST("flags");
  kv_options o;
  EXPECT(parse(&o, ARGS("--dry-run", "--force", "--quiet", "d")) == 0 && o.dry_run && o.force && o.quiet,
         "--dry-run --force --quiet");
  expect_error(ARGS("--force=yes", "d"), "kval: --force: takes no value (got '--force=yes')");
  expect_error(ARGS("--dry-run=1", "d"), "kval: --dry-run: takes no value (got '--dry-run=1')");
  expect_error(ARGS("-hx"), "kval: -h: takes no value (got '-hx')");

  TEST("--help, -h, --list, --version need no DECK");
  EXPECT(parse(&o, ARGS("--help")) == 0 && o.help && !o.deck_path, "--help");
  EXPECT(parse(&o, ARGS("-h")) == 0 && o.help, "-h");
  EXPECT(parse(&o, ARGS("--list")) == 0 && o.list, "--list");
  EXPECT(parse(&o, ARGS("--version")) == 0 && o.version, "--version");
  EXPECT(parse(&o, ARGS("--help", "--retry-errors")) == 0 && o.help, "--help skips the combination checks");
  expect_error(ARGS("--help", "--mode=x"), "kval: --mode: invalid value 'x' (expected fleet or split)");

  TEST("DECK: missing, twice, after --");
  expect_error(ARGS("--dry-run"), "kval: missing DECK (usage: kval [options] DECK; run 'kval --help')");
  const char *none[] = {NULL};
  expect_error(none, "kval: missing DECK (usage: kval [options] DECK; run 'kval --help')");
  expect_error(ARGS("a.deck", "b.deck"), "kval: unexpected argument 'b.deck' (expected one DECK; got 'a.deck' already)");
  EXPECT(parse(&o, ARGS("--", "-odd.deck")) == 0 && strcmp(o.deck_path, "-odd.deck") == 0, "-- ends the options");
  EXPECT(parse(&o, ARGS("-")) == 0 && strcmp(o.deck_path, "-") == 0, "'-' is a DECK name");

  TEST("unknown options");
  expect_error(ARGS("--frobnicate", "d"), "kval: unknown option '--frobnicate' (run 'kval --help' for the options)");
  expect_error(ARGS("-x", "d"), "kval: unknown option '-x' (run 'kval --help' for the options)");
  expect_error(ARGS("--mod=split", "d"), "kval: unknown option '--mod=split' (run 'kval --help' for the options)");
  expect_error(ARGS("---mode", "d"), "kval: unknown option '---mode' (run 'kval --help' for the options)");
}

static void test_resume(void) {
  TEST("--resume, -o, --retry-errors, --force");
  kv_options o;
  EXPECT(parse(&o, ARGS("--resume", "run.h5", "d")) == 0 && strcmp(o.resume, "run.h5") == 0 &&
             strcmp(o.output, "run.h5") == 0,
         "--resume sets the output");
  EXPECT(parse(&o, ARGS("-o", "run.h5", "--resume=run.h5", "--retry-errors", "d")) == 0 && o.retry_errors,
         "-o with the same file and --retry-errors");
  expect_error(ARGS("--resume", "a.h5", "d", "-o", "b.h5"),
               "kval: -o 'b.h5' and --resume 'a.h5' name different files (expected -o omitted or the same file)");
  expect_error(ARGS("--retry-errors", "d"),
               "kval: --retry-errors needs --resume FILE (it reruns the failed cases of that file)");
  expect_error(ARGS("--resume", "a.h5", "--force", "d"),
               "kval: --force and --resume exclude each other (--force overwrites the file, --resume continues it)");
  expect_error(ARGS("--resume=", "d"), "kval: --resume: empty file name (expected the path of an HDF5 file)");
}

static void test_usage(void) {
  TEST("usage text");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  EXPECT(f != NULL, "open_memstream");
  if (!f) return;
  kv_cli_usage(f);
  fclose(f);
  printf("%s", text);
  static const char *const parts[] = {
      "usage: kval [options] DECK", "-o, --output FILE", "--backend B", "--mode M", "--only LIST", "--set S.K=V",
      "--seed N", "--dry-run", "--list", "--force", "--resume FILE", "--retry-errors", "--inject K@R[:C]",
      "--quiet", "-h, --help", "--version", "\"--opt=value\"", "exit status:", "  0    every case passed",
      "  1    some case failed validation", "  2    usage or input error", "  3    runtime error",
      "  130  interrupted by SIGINT", "  143  interrupted by SIGTERM"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) EXPECT_CONTAINS(text, parts[i]);
  free(text);
}

int main(void) {
  test_defaults();
  test_values();
  test_flags();
  test_resume();
  test_usage();
  return TEST_RETURN();
}
