/* nvml.c - NVML telemetry loaded at run time (dlopen of libnvidia-ml.so.1). Only the few
 * entry points kval reads are resolved; their C signatures are restated here (NVML's ABI is
 * stable) so the build needs no NVML header. Any failure leaves telemetry "missing" with a
 * reason, never an error. */
#include "backends/cuda/nvml.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_ret;            /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_dev *nvml_dev; /* nvmlDevice_t, an opaque handle */

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

static struct {
  void *lib;
  nvml_dev dev;
  int inited; /* nvmlInit_v2 succeeded: shut down on failure */
  int ok;
  char why[128];
  nvml_ret (*shutdown)(void);
  const char *(*error_string)(nvml_ret);
  nvml_ret (*serial)(nvml_dev, char *, unsigned);
  nvml_ret (*clock)(nvml_dev, int, unsigned *);
  nvml_ret (*max_clock)(nvml_dev, int, unsigned *);
  nvml_ret (*temperature)(nvml_dev, int, unsigned *);
  nvml_ret (*power)(nvml_dev, unsigned *);
  nvml_ret (*reasons)(nvml_dev, unsigned long long *);
} nv = {.why = "not opened"};

static void *sym(const char *name) { return nv.lib ? dlsym(nv.lib, name) : NULL; }

static const char *err_name(nvml_ret r) {
  const char *s = nv.error_string ? nv.error_string(r) : NULL;
  return s ? s : "unknown NVML error";
}

static int fail(const char *what, const char *detail) {
  snprintf(nv.why, sizeof nv.why, "%s: %s", what, detail);
  if (nv.inited) nv.shutdown();
  if (nv.lib) dlclose(nv.lib);
  nv.lib = NULL;
  nv.dev = NULL;
  nv.inited = nv.ok = 0;
  return 0;
}

int kv_nvml_open(const char *uuid, const char *pci_bus_id) {
  if (nv.ok) return 1;
  nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nv.lib) {
    const char *e = dlerror();
    return fail("libnvidia-ml.so.1 not loaded", e ? e : "dlopen failed");
  }
  nvml_ret (*init)(void) = (nvml_ret(*)(void))sym("nvmlInit_v2");
  nvml_ret (*by_uuid)(const char *, nvml_dev *) = (nvml_ret(*)(const char *, nvml_dev *))sym("nvmlDeviceGetHandleByUUID");
  nvml_ret (*by_pci)(const char *, nvml_dev *) =
      (nvml_ret(*)(const char *, nvml_dev *))sym("nvmlDeviceGetHandleByPciBusId_v2");
  nv.shutdown = (nvml_ret(*)(void))sym("nvmlShutdown");
  nv.error_string = (const char *(*)(nvml_ret))sym("nvmlErrorString");
  nv.serial = (nvml_ret(*)(nvml_dev, char *, unsigned))sym("nvmlDeviceGetSerial");
  nv.clock = (nvml_ret(*)(nvml_dev, int, unsigned *))sym("nvmlDeviceGetClockInfo");
  nv.max_clock = (nvml_ret(*)(nvml_dev, int, unsigned *))sym("nvmlDeviceGetMaxClockInfo");
  nv.temperature = (nvml_ret(*)(nvml_dev, int, unsigned *))sym("nvmlDeviceGetTemperature");
  nv.power = (nvml_ret(*)(nvml_dev, unsigned *))sym("nvmlDeviceGetPowerUsage");
  /* renamed "clocks event reasons" in newer drivers; the old name remains as an alias */
  nv.reasons = (nvml_ret(*)(nvml_dev, unsigned long long *))sym("nvmlDeviceGetCurrentClocksEventReasons");
  if (!nv.reasons)
    nv.reasons = (nvml_ret(*)(nvml_dev, unsigned long long *))sym("nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!init || !nv.shutdown || (!by_uuid && !by_pci)) return fail("libnvidia-ml.so.1", "entry points missing");
  nvml_ret r = init();
  if (r != 0) return fail("nvmlInit_v2 failed", err_name(r));
  nv.inited = 1;
  nv.dev = NULL;
  r = -1;
  if (by_uuid && uuid && uuid[0]) r = by_uuid(uuid, &nv.dev);
  if (r != 0 && by_pci && pci_bus_id && pci_bus_id[0]) r = by_pci(pci_bus_id, &nv.dev);
  if (r != 0) return fail("device not found by NVML", r == -1 ? "no UUID or PCI bus id given" : err_name(r));
  nv.ok = 1;
  snprintf(nv.why, sizeof nv.why, "ok");
  return 1;
}

const char *kv_nvml_why(void) { return nv.why; }

void kv_nvml_serial(char *buf, size_t n) {
  char s[96] = "";
  nvml_ret r = (nv.ok && nv.serial) ? nv.serial(nv.dev, s, sizeof s) : -1;
  if (r == 0 && s[0])
    snprintf(buf, n, "%s", s);
  else
    snprintf(buf, n, "unknown (%s)", !nv.ok ? nv.why : !nv.serial ? "no nvmlDeviceGetSerial" : err_name(r));
}

static double read_clock(nvml_ret (*f)(nvml_dev, int, unsigned *), int which) {
  unsigned v = 0;
  return (nv.ok && f && f(nv.dev, which, &v) == 0) ? (double)v : NAN;
}

double kv_nvml_max_sm_clock(void) { return read_clock(nv.max_clock, NVML_CLOCK_SM); }

void kv_nvml_read(kv_nvml_sample *s) {
  s->sm_clock = read_clock(nv.clock, NVML_CLOCK_SM);
  s->mem_clock = read_clock(nv.clock, NVML_CLOCK_MEM);
  unsigned v = 0;
  s->temperature = (nv.ok && nv.temperature && nv.temperature(nv.dev, NVML_TEMPERATURE_GPU, &v) == 0) ? (double)v : NAN;
  s->power = (nv.ok && nv.power && nv.power(nv.dev, &v) == 0) ? (double)v / 1000.0 : NAN;
  unsigned long long reasons = 0;
  s->have_throttle = nv.ok && nv.reasons && nv.reasons(nv.dev, &reasons) == 0;
  s->throttle_reasons = s->have_throttle ? (uint64_t)reasons : 0;
}

void kv_nvml_close(void) {
  if (nv.inited) nv.shutdown();
  if (nv.lib) dlclose(nv.lib);
  memset(&nv, 0, sizeof nv);
  snprintf(nv.why, sizeof nv.why, "closed");
}
