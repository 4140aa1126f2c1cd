/* binding.h - which GPU a rank drives. A pure function of the node-local picture, so it is
 * unit-tested without GPUs: going up in local-rank order, each rank takes the first device
 * of its visible list (CUDA_VISIBLE_DEVICES, or all devices) that no lower local rank has
 * taken, devices compared by their list entry. Ranks that see the same set therefore take
 * devices in local-rank order, and ranks that Slurm bound to their own sets
 * (--gpus-per-task, --gpu-bind) each take their own; overlapping sets never share a GPU.
 * More ranks than devices is an error naming the host. */
#ifndef KVAL_BINDING_H
#define KVAL_BINDING_H

#include <stddef.h>

#include "core/check.h"

/* visible[i]: the device-visibility string of local rank i (CUDA_VISIBLE_DEVICES, "" when
 * unset); n_visible: devices the CUDA runtime of this rank reports. Returns the device
 * index for local_rank, or -1 with a message in err. */
int kv_binding_choose(int local_rank, int local_size, const char *const *visible, int n_visible,
                      const char *host, char *err, size_t errlen);

/* Number of entries of a CUDA_VISIBLE_DEVICES value (0 for NULL or ""). */
int kv_binding_count(const char *visible);

/* Collective over the ranks of this node (when MPI is initialised): gathers every local
 * rank's CUDA_VISIBLE_DEVICES (MPI_Comm_split_type SHARED, an allgather) and returns this
 * rank's device index from kv_binding_choose in *device. n_devices: the devices this rank
 * sees; devices_known: KV_ERR when they could not be counted (the rank still takes part in
 * the collectives). Errors are reported (naming the host) and return KV_ERR. */
kv_status kv_binding_bind(int local_rank, int local_size, int n_devices, kv_status devices_known, const char *host,
                          int *device);

#endif
