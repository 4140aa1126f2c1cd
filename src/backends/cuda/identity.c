/* cuda_identity.c - which GPU this rank drives and what it is. Binding counts the devices
 * the runtime sees and lets kv_binding_bind decide (binding.c: every node-local rank's
 * CUDA_VISIBLE_DEVICES over a node communicator, then kv_binding_choose); identity reads the
 * CUDA device properties (name, UUID, PCI bus id, SMs, memory, compute capability, versions)
 * and the board serial through NVML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/context.h"
#include "backends/binding.h"
#include "core/cuda_check.cuh"
#include "backends/cuda/nvml.h"

kv_status kv_cuda_bind(int local_rank, int local_size, const char *host, int *device) {
  int n = 0;
  kv_status counted = CHECK_CUDA(cudaGetDeviceCount(&n));
  kv_status st = kv_binding_bind(local_rank, local_size, n, counted, host, device);
  if (st == KV_OK) st = CHECK_CUDA(cudaSetDevice(*device));
  if (st == KV_OK) st = CHECK_CUDA(cudaFree(NULL)); /* create the context now, not inside a timing */
  return st;
}

static void format_uuid(const cudaUUID_t *u, char *buf, size_t n) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(buf, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
           b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

kv_status kv_cuda_identify(int device, kv_rank_info *info) {
  struct cudaDeviceProp prop;
  KV_TRY(CHECK_CUDA(cudaGetDeviceProperties(&prop, device)));
  info->device_index = device;
  snprintf(info->device_name, sizeof info->device_name, "%.*s", (int)sizeof info->device_name - 1, prop.name);
  format_uuid(&prop.uuid, info->uuid, sizeof info->uuid);
  KV_TRY(CHECK_CUDA(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, device)));
  info->sm_count = prop.multiProcessorCount;
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  info->memory_bytes = (double)prop.totalGlobalMem;
  KV_TRY(CHECK_CUDA(cudaDriverGetVersion(&info->driver_version)));
  KV_TRY(CHECK_CUDA(cudaRuntimeGetVersion(&info->runtime_version)));
  kv_nvml_open(info->uuid, info->pci_bus_id);
  kv_nvml_serial(info->serial, sizeof info->serial);
  snprintf(info->nvml, sizeof info->nvml, "%s", kv_nvml_why());
  return KV_OK;
}
