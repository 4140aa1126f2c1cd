/* test_families_gpu.c - the cuda backend end to end on a GPU (make check; exit 77 without
 * one), over every family with a CUDA implementation in this build and the cases of the
 * families' test decks (families/<f>/test.deck; `small`: families/<f>/sanitize.deck, for
 * tests/system/sanitizer.sh): deck -> plan -> kv_backend_cuda.run_case, which generates the
 * inputs on the device, poisons the outputs with NaN bits, prepares, times the kernel and
 * computes the GPU fp64 reference. Checked here:
 *  - the device inputs are bit-identical to the host generator (downloaded again and compared);
 *  - every output element was written and the case passes its tolerance against the GPU
 *    reference; where it fails, the CPU emulation of the same inputs must fail the same way
 *    (fp16 sums overflowing on `offset` rows); the emulation runs only then and where it is
 *    exact (it costs up to 45 s a case for fa2 on the H200's host);
 *  - where the family says the emulation is exact (emulation_exact), the output equals it
 *    bit for bit;
 *  - the GPU reference agrees with the CPU reference on sampled rows (ref_xcheck <= 1e-9);
 *  - timings, resources (no local memory; a library kernel all unknown) are filled in;
 *  - a case larger than the device memory is refused with "needs X GiB, Y GiB free".
 * Per deck it prints the seconds spent in run_case and on the host (generation, emulation),
 * and every case that took over a second with its phases.
 * Usage: test_families_gpu [small] */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_util.h"
#include "backends/backend.h"
#include "backends/cuda/device.h"
#include "family_cuda.h"
#include "input/deck.h"
#include "families/kit.h"
#include "families/testkit/family_case.h"
#include "numerics/errstats.h"
#include "numerics/tolerance.h"
#include "input/plan.h"
#include "core/result.h"
#include "core/timing.h"

static const char *const huge_deck = "[rmsnorm]\nprecision = fp32:fp32\nrows = 67108864\nhidden = 65536\n";

/* Families of the deck that have a CUDA implementation here, as a --only list. */
static void cuda_families(char *only, size_t n) {
  only[0] = '\0';
  for (int i = 0; kv_families[i]; i++)
    if (kv_families[i]->cuda) {
      if (only[0]) strncat(only, ",", n - strlen(only) - 1);
      strncat(only, kv_families[i]->name, n - strlen(only) - 1);
    }
}

static int build_plan_of(int rc, const char *err_in, const char *only, kv_deck *d, kv_plan *p) {
  char err[512];
  snprintf(err, sizeof err, "%s", err_in);
  if (rc != 0 || kv_plan_build(d, only, "cuda", KV_MODE_SPLIT, 0, 0, p, err, sizeof err) != 0) {
    printf("FAIL deck/plan: %s\n", err);
    return -1;
  }
  return 0;
}

static int build_plan(const char *text, const char *only, kv_deck *d, kv_plan *p) {
  char err[512] = "";
  return build_plan_of(kv_deck_parse_string("test_families_gpu", text, d, err, sizeof err), err, only, d, p);
}

static int build_plan_file(const char *path, const char *only, kv_deck *d, kv_plan *p) {
  char err[512] = "";
  return build_plan_of(kv_deck_parse_file(path, d, err, sizeof err), err, only, d, p);
}

/* Verdict of an output against the reference the backend returned. */
static kv_case_status judge(const kv_case *c, const kv_plan *p, const kv_cost *cost, const void *out, kv_dtype t,
                            const kv_case_data *d) {
  kv_tolerance tol = p->run.has_tol_override ? p->run.tol_override : kv_tolerance_default(c->prec);
  kv_errstats st;
  if (kv_errstats_compute(out, t, NULL, d->ref, d->mag, d->n_rows * d->row_len, c->prec, &tol, cost->red_len, &st) != 0)
    return KV_ERROR;
  return kv_errstats_verdict(&st);
}

/* The inputs as the host generator makes them, and the emulation's output on them. */
static int host_side(const kv_case *c, const kv_plan *p, const kv_tensors *t, void **in, void **out) {
  for (int i = 0; i < t->n_in; i++) {
    in[i] = malloc(t->in[i].count * kv_dtype_size(t->in[i].dtype));
    if (!in[i] || kv_generate_host(&t->in[i], kv_stream_key(p->run.seed, c->key, (uint64_t)i), in[i]) != KV_OK)
      return 1;
  }
  for (int i = 0; i < t->n_out; i++)
    if (!(out[i] = calloc(t->out[i].count, kv_dtype_size(t->out[i].dtype)))) return 1;
  return c->fp->family->emulate(c, in, out) != KV_OK;
}

static void free_all(void **bufs, int n) {
  for (int i = 0; i < n; i++) free(bufs[i]);
}

/* Element i equal in both buffers: the same bits, or both NaN (payloads differ between the
 * GPU's canonical NaN and the host's). */
static int same_value(const void *a, const void *b, size_t i, kv_dtype t) {
  const size_t w = kv_dtype_size(t);
  if (memcmp((const char *)a + i * w, (const char *)b + i * w, w) == 0) return 1;
  return isnan(kv_load(a, i, t)) && isnan(kv_load(b, i, t));
}

/* Where a deck's time goes: the backend's run_case, the host's generation and emulation. */
static struct {
  double gpu, host;
} spent;

static void check_case(const kv_backend *be, const kv_case *c, const kv_plan *p) {
  const kv_family *f = c->fp->family;
  char prec[32], what[160], message[KV_MESSAGE_LEN] = "";
  kv_precision_format(c->prec, prec, sizeof prec);
  snprintf(what, sizeof what, "%s cell %zu (%s)", f->name, c->cell, prec);
  kv_tensors t;
  kv_cost cost;
  memset(&t, 0, sizeof t);
  f->tensors(c, &t);
  kv_case_cost(c, &cost);
  kv_case_data d;
  memset(&d, 0, sizeof d);
  kv_phases_unknown(&d.phases);
  const double t0 = kv_wtime();
  kv_status st = be->run_case(c, &p->run, &d, message, sizeof message);
  const double t1 = kv_wtime();
  spent.gpu += t1 - t0;
  EXPECT(st == KV_OK, "%s: run_case failed: %s", what, message);
  if (st != KV_OK) {
    kv_case_data_free(&d);
    return;
  }
  const size_t n = d.out_count;
  EXPECT(d.out && n == t.out[0].count && !d.rows && d.n_rows * d.row_len == n, "%s: output or reference shape", what);
  const kv_case_status gpu = judge(c, p, &cost, d.out, d.out_type, &d);
  /* The emulation on the host (minutes for fa2's tensor-core model) only where it decides
   * something: a case the family says the kernel must equal bit for bit, or a GPU failure
   * that the emulation of the same inputs must share. */
  const int exact = f->emulation_exact && f->emulation_exact(c);
  void *in[KV_MAX_TENSORS] = {0}, *out[KV_MAX_TENSORS] = {0};
  if (exact || gpu != KV_PASS) {
    EXPECT(host_side(c, p, &t, in, out) == 0, "%s: host generation or emulation failed", what);
    const kv_case_status cpu = judge(c, p, &cost, out[0], d.out_type, &d);
    EXPECT(gpu == KV_PASS || gpu == cpu, "%s: GPU verdict %s, emulation %s", what, kv_status_name(gpu),
           kv_status_name(cpu));
    if (exact) {
      size_t differ = 0;
      for (size_t i = 0; i < n; i++) differ += !same_value(d.out, out[0], i, d.out_type);
      EXPECT(differ == 0, "%s: %zu elements differ from the emulation, which this kernel must equal", what, differ);
    }
  }
  const double t2 = kv_wtime();
  spent.host += t2 - t1;
  if (t2 - t0 > 1.0)
    printf("   slow: %s: %.2f s (run_case %.2f s: setup %.2f, timing %.2f, checks %.2f, reference %.2f, "
           "cross-checks %.2f; host emulation %.2f s)\n", what, t2 - t0, t1 - t0, d.phases.setup, d.phases.timing,
           d.phases.checks, d.ref_seconds, d.phases.xcheck, t2 - t1);
  EXPECT(d.ref_xcheck <= 1e-9, "%s: GPU vs CPU reference disagreement %g", what, d.ref_xcheck);
  EXPECT(d.n_times >= p->run.min_reps && d.times[0] > 0.0 && d.ref_seconds > 0.0, "%s: %d timings", what, d.n_times);
  if (d.res.registers == -1)
    /* a library kernel (cuBLAS chooses inside the library): its resources are all unknown */
    EXPECT(d.res.local_bytes == -1 && d.res.occupancy == -1 && d.res.smem_bytes == -1, "%s: resources partly known", what);
  else
    EXPECT(d.res.registers > 0 && d.res.local_bytes == 0 && d.res.occupancy > 0, "%s: resources %d regs %d local %d blocks/SM",
           what, d.res.registers, d.res.local_bytes, d.res.occupancy);
  free_all(in, t.n_in);
  free_all(out, t.n_out);
  kv_case_data_free(&d);
}

/* Inputs on the device equal the host generator's, tensor by tensor (first case of each
 * family, where every input tensor kind appears). */
static void check_generation(const kv_case *c, const kv_plan *p) {
  kv_tensors t;
  memset(&t, 0, sizeof t);
  c->fp->family->tensors(c, &t);
  for (int i = 0; i < t.n_in; i++) {
    const size_t bytes = t.in[i].count * kv_dtype_size(t.in[i].dtype);
    void *host = malloc(bytes), *back = malloc(bytes), *dev = NULL;
    const uint64_t key = kv_stream_key(p->run.seed, c->key, (uint64_t)i);
    int ok = host && back && kv_generate_host(&t.in[i], key, host) == KV_OK &&
             cudaMalloc(&dev, bytes) == cudaSuccess && kv_cuda_generate(dev, &t.in[i], key, NULL) == KV_OK &&
             cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
    EXPECT(ok && memcmp(host, back, bytes) == 0, "%s input %s: device generator differs from the host", c->fp->family->name,
           t.in[i].name);
    free(host);
    free(back);
    if (dev) EXPECT(cudaFree(dev) == cudaSuccess, "cudaFree");
  }
}

int main(int argc, char **argv) {
  const kv_backend *be = &kv_backend_cuda;
  const int small = argc > 1 && !strcmp(argv[1], "small");
  if (!be->available()) {
    printf("test_families_gpu: no GPU, skipped\n");
    return 77;
  }
  kv_check_init(0, "test");
  char only[256];
  cuda_families(only, sizeof only);
  if (!only[0]) {
    printf("test_families_gpu: no family has a CUDA implementation in this build\n");
    return 77;
  }
  char paths[16][1024];
  const int n_decks = fcase_family_decks(small ? "sanitize" : "test", paths, 16);
  kv_deck d, dh;
  kv_plan p, ph;
  kv_rank_info info;
  kv_run_settings defaults; /* init reads no setting */
  memset(&defaults, 0, sizeof defaults);
  TEST("init: binding, identity, ceilings");
  EXPECT(be->init(0, 1, &defaults, &info) == KV_OK, "init failed");
  printf("   %s %s %s, copy %.0f GB/s, bf16 %.0f TFLOP/s, fp64 %.1f TFLOP/s, nvml %s\n", info.device_name, info.uuid,
         info.serial, info.copy_gbps, info.matrix_tflops, info.fp64_tflops, info.nvml);
  EXPECT(!strncmp(info.uuid, "GPU-", 4) && info.sm_count > 0, "rank info incomplete");
  EXPECT(getenv("KVAL_SKIP_CEILINGS") || (info.copy_gbps > 0 && info.matrix_tflops > 0 && info.fp64_tflops > 0),
         "ceilings not measured");
  EXPECT(be->free_bytes() > 0, "free_bytes");
  EXPECT(n_decks > 0, "families/*/%s.deck found", small ? "sanitize" : "test");
  for (int k = 0; k < n_decks; k++) {
    /* The deck's own sections (--only with a family the deck lacks would add its defaults:
     * every family's default cases on every family's deck, minutes of host emulation). */
    if (build_plan_file(paths[k], NULL, &d, &p) != 0) {
      EXPECT(0, "%s", paths[k]);
      continue;
    }
    TEST("%s: %zu cases", paths[k], p.n_cases);
    spent.gpu = spent.host = 0.0;
    for (size_t i = 0; i < p.n_cases; i++) {
      if (!p.cases[i].fp->family->cuda) continue; /* no CUDA implementation in this build */
      if (i == 0 || p.cases[i].fp != p.cases[i - 1].fp) check_generation(&p.cases[i], &p);
      check_case(be, &p.cases[i], &p);
    }
    printf("   %zu cases: run_case %.1f s, host generation and emulation %.1f s\n", p.n_cases, spent.gpu, spent.host);
    kv_plan_free(&p);
    kv_deck_free(&d);
  }
  if (strstr(only, "rmsnorm") && build_plan(huge_deck, "rmsnorm", &dh, &ph) == 0 && ph.n_cases == 1) {
    TEST("a case larger than the device memory is refused");
    kv_case_data hd;
    memset(&hd, 0, sizeof hd);
    char message[KV_MESSAGE_LEN] = "";
    EXPECT(be->run_case(&ph.cases[0], &ph.run, &hd, message, sizeof message) == KV_ERR, "huge case ran");
    EXPECT_CONTAINS(message, "GiB free");
    kv_case_data_free(&hd);
    kv_plan_free(&ph);
    kv_deck_free(&dh);
  }
  be->finalize();
  return TEST_RETURN();
}
