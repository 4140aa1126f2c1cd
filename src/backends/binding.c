/* binding.c - which GPU a rank drives. kv_binding_choose decides from the node-local picture
 * alone (unit-tested without GPUs); kv_binding_bind gathers that picture over the node's ranks
 * (MPI) for the cuda backend and for the cpu backend's test-only fake GPUs. Each local rank's
 * device list is its CUDA_VISIBLE_DEVICES entries, or the indices
 * 0..n-1 when the variable is unset. Going up in local-rank order, every rank takes the first
 * device of its list that no lower local rank has taken. Ranks sharing one list therefore
 * take devices in local-rank order; ranks Slurm bound to their own lists each take the first
 * of theirs; overlapping lists never hand one device to two ranks. Devices are compared by
 * their entry text (an index or a UUID); mixing index and UUID spellings of one device
 * across ranks is not detected. */
#include "backends/binding.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

#define ID_LEN 96      /* GPU-/MIG- UUID entries are shorter than this */
#define VISIBLE_LEN 256 /* bytes of CUDA_VISIBLE_DEVICES exchanged per rank */

/* Entry k of a device list: the k-th comma-separated, space-trimmed, non-empty entry of
 * `visible`, or the index k itself when `visible` is empty. Returns 0 when there is no
 * entry k (only possible for explicit lists; implicit lists are bounded by the caller). */
static int list_entry(const char *visible, int k, char id[ID_LEN]) {
  if (!visible || !*visible) {
    snprintf(id, ID_LEN, "%d", k);
    return 1;
  }
  const char *p = visible;
  for (int i = 0;; i++) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) return 0;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *t = e;
    while (t > p && t[-1] == ' ') t--;
    if (i == k) {
      snprintf(id, ID_LEN, "%.*s", (int)(t - p), p);
      return 1;
    }
    p = e;
  }
}

static int list_length(const char *visible, int n_visible) {
  if (!visible || !*visible) return n_visible;
  char id[ID_LEN];
  int n = 0;
  while (list_entry(visible, n, id)) n++;
  return n;
}

static int is_taken(char (*taken)[ID_LEN], int n_taken, const char *id) {
  for (int i = 0; i < n_taken; i++)
    if (strcmp(taken[i], id) == 0) return 1;
  return 0;
}

int kv_binding_choose(int local_rank, int local_size, const char *const *visible, int n_visible, const char *host,
                      char *err, size_t errlen) {
  if (local_rank < 0 || local_rank >= local_size) {
    snprintf(err, errlen, "host %s: local rank %d outside 0..%d", host, local_rank, local_size - 1);
    return -1;
  }
  const char *mine = visible[local_rank] ? visible[local_rank] : "";
  char shown[300];
  if (*mine) snprintf(shown, sizeof shown, "CUDA_VISIBLE_DEVICES='%.256s'", mine);
  else snprintf(shown, sizeof shown, "CUDA_VISIBLE_DEVICES unset");
  if (n_visible <= 0) {
    snprintf(err, errlen,
             "host %s: local rank %d of %d sees no GPU (%s); run on nodes with GPUs, or use --backend cpu",
             host, local_rank, local_size, shown);
    return -1;
  }
  char (*taken)[ID_LEN] = KV_MALLOC((size_t)local_rank * ID_LEN);
  if (!taken) {
    snprintf(err, errlen, "host %s: out of memory choosing a GPU for local rank %d", host, local_rank);
    return -1;
  }
  int n_taken = 0, device = -1;
  char id[ID_LEN];
  for (int j = 0; j <= local_rank && device < 0; j++) {
    const char *vj = visible[j] ? visible[j] : "";
    int len = list_length(vj, n_visible);
    if (j == local_rank && len > n_visible) len = n_visible; /* the runtime sees only n_visible of them */
    for (int k = 0; k < len; k++) {
      list_entry(vj, k, id);
      if (is_taken(taken, n_taken, id)) continue;
      if (j == local_rank) device = k;
      else snprintf(taken[n_taken++], ID_LEN, "%s", id);
      break;
    }
  }
  if (device < 0) {
    int len = list_length(mine, n_visible), used = 0;
    if (len > n_visible) len = n_visible;
    for (int k = 0; k < len; k++) {
      list_entry(mine, k, id);
      used += is_taken(taken, n_taken, id);
    }
    snprintf(err, errlen,
             "host %s: local rank %d of %d has no GPU: %d rank%s already use%s the %d visible device%s (%s); "
             "start at most %d rank%s per node or give each rank its own GPU",
             host, local_rank, local_size, used, used == 1 ? "" : "s", used == 1 ? "s" : "", len, len == 1 ? "" : "s",
             shown, len, len == 1 ? "" : "s");
  }
  free(taken);
  return device;
}

int kv_binding_count(const char *visible) { return visible && *visible ? list_length(visible, 0) : 0; }

/* all[i * VISIBLE_LEN] = CUDA_VISIBLE_DEVICES of node-local rank i ("" when unset), over a node
 * communicator (MPI_Comm_split_type SHARED: the ranks MPI places on this node). Every rank
 * takes part in the collectives even when its own input is bad, so a local error cannot hang
 * the other ranks of the node. */
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

kv_status kv_binding_bind(int local_rank, int local_size, int n_devices, kv_status devices_known, const char *host,
                          int *device) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    kv_report(__FILE__, __LINE__, "binding", "bad local rank %d of %d", local_rank, local_size);
    return KV_ERR;
  }
  char *all = KV_MALLOC((size_t)local_size * VISIBLE_LEN);
  const char **visible = KV_MALLOC((size_t)local_size * sizeof *visible);
  kv_status st = (all && visible) ? gather_visible(local_rank, local_size, all) : KV_ERR;
  if (st == KV_OK) st = devices_known;
  if (st == KV_OK) {
    for (int i = 0; i < local_size; i++) visible[i] = all + (size_t)i * VISIBLE_LEN;
    char err[512];
    *device = kv_binding_choose(local_rank, local_size, visible, n_devices, host, err, sizeof err);
    if (*device < 0) {
      kv_report(__FILE__, __LINE__, "binding", "%s", err);
      st = KV_ERR;
    }
  }
  free(all);
  free(visible);
  return st;
}
