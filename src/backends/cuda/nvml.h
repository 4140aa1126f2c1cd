/* nvml.h - GPU telemetry through NVML, loaded at run time with dlopen("libnvidia-ml.so.1")
 * so kval neither links against nor needs the driver's management library. One device per
 * process. A missing library, symbol or device is recorded (kv_nvml_why) and every reading
 * is then NaN: telemetry is never an error. */
#ifndef KVAL_NVML_H
#define KVAL_NVML_H

#include <stddef.h>
#include <stdint.h>

/* One reading of the device; NaN (or have_throttle 0) where NVML could not say. */
typedef struct {
  double sm_clock;     /* MHz */
  double mem_clock;    /* MHz */
  double temperature;  /* degrees C */
  double power;        /* W */
  uint64_t throttle_reasons; /* NVML clocks-event (throttle) reason bitmask */
  int have_throttle;
} kv_nvml_sample;

/* Load NVML and find the device by UUID ("GPU-...") or, failing that, by PCI bus id.
 * Returns 1 when telemetry works, 0 otherwise (the reason is kept for kv_nvml_why). */
int kv_nvml_open(const char *uuid, const char *pci_bus_id);

/* "ok", or why telemetry is missing (no library, missing symbol, device not found...). */
const char *kv_nvml_why(void);

/* Board serial number, or "unknown (why)" when NVML cannot give one. */
void kv_nvml_serial(char *buf, size_t n);

/* Maximum SM clock in MHz (NaN when unknown). */
double kv_nvml_max_sm_clock(void);

/* Current clocks, temperature, power and throttle reasons. */
void kv_nvml_read(kv_nvml_sample *s);

/* Shut NVML down and unload it. */
void kv_nvml_close(void);

#endif
