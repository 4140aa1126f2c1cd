/* cuda_identity.c - which GPU this rank drives and what it is. Binding gathers every
 * node-local rank's CUDA_VISIBLE_DEVICES over a node communicator (MPI_Comm_split_type
 * SHARED) and lets kv_binding_choose decide; identity reads the CUDA device properties
 * (name, UUID, PCI bus id, SMs, memory, compute capability, versions) and the board serial
 * through NVML. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/context.h"
#include "backends/binding.h"
#include "core/cuda_check.cuh"
#include "backends/cuda/nvml.h"

#define VISIBLE_LEN 256 /* bytes of CUDA_VISIBLE_DEVICES exchanged per rank */

/* visible[i] = CUDA_VISIBLE_DEVICES of node-local rank i ("" when unset). Every rank takes
 * part in the collectives even when its own input is bad, so a local error cannot hang the
 * other ranks of the node. */
static kv_status gather_visible(int local_rank, int local_size, char *all) {
  const char *env = getenv("CUDA_VISIBLE_DEVICES");
  char mine[VISIBLE_LEN];
  kv_status st = KV_OK;
  if (env && strlen(env) >= VISIBLE_LEN) {
    kv_report(__FILE__, __LINE__, "binding", "CUDA_VISIBLE_DEVICES is longer than %d characters", VISIBLE_LEN - 1);
    st = KV_ERR;
  }
  snprintf(mine, sizeof mine, "%s", env ? env : "");
  int initialized = 0;
  KV_TRY(CHECK_MPI(MPI_Initialized(&initialized)));
  if (!initialized) {
    if (local_size != 1 || local_rank != 0) {
      kv_report(__FILE__, __LINE__, "binding", "local rank %d of %d given but MPI is not initialised", local_rank,
                local_size);
      return KV_ERR;
    }
    memcpy(all, mine, VISIBLE_LEN);
    return st;
  }
  MPI_Comm node;
  KV_TRY(CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)));
  int rank = -1, size = 0;
  if (CHECK_MPI(MPI_Comm_rank(node, &rank)) != KV_OK || CHECK_MPI(MPI_Comm_size(node, &size)) != KV_OK) st = KV_ERR;
  if (size == local_size) {
    if (CHECK_MPI(MPI_Allgather(mine, VISIBLE_LEN, MPI_CHAR, all, VISIBLE_LEN, MPI_CHAR, node)) != KV_OK) st = KV_ERR;
  }
  if (rank != local_rank || size != local_size) { /* the same on every rank of the node when sizes differ */
    kv_report(__FILE__, __LINE__, "binding", "node communicator says local rank %d of %d, caller says %d of %d", rank,
              size, local_rank, local_size);
    st = KV_ERR;
  }
  if (CHECK_MPI(MPI_Comm_free(&node)) != KV_OK) st = KV_ERR;
  return st;
}

kv_status kv_cuda_bind(int local_rank, int local_size, const char *host, int *device) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    kv_report(__FILE__, __LINE__, "binding", "bad local rank %d of %d", local_rank, local_size);
    return KV_ERR;
  }
  char *all = KV_MALLOC((size_t)local_size * VISIBLE_LEN);
  const char **visible = KV_MALLOC((size_t)local_size * sizeof *visible);
  kv_status st = (all && visible) ? gather_visible(local_rank, local_size, all) : KV_ERR;
  int n = 0;
  if (st == KV_OK) st = CHECK_CUDA(cudaGetDeviceCount(&n));
  if (st == KV_OK) {
    for (int i = 0; i < local_size; i++) visible[i] = all + (size_t)i * VISIBLE_LEN;
    char err[512];
    *device = kv_binding_choose(local_rank, local_size, visible, n, host, err, sizeof err);
    if (*device < 0) {
      kv_report(__FILE__, __LINE__, "binding", "%s", err);
      st = KV_ERR;
    }
  }
  if (st == KV_OK) st = CHECK_CUDA(cudaSetDevice(*device));
  if (st == KV_OK) st = CHECK_CUDA(cudaFree(NULL)); /* create the context now, not inside a timing */
  free(all);
  free(visible);
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
