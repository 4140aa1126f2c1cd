/* binding.h - which GPU a rank drives. A pure function of the node-local picture, so it is
 * unit-tested without GPUs: ranks on one node that see the same device set (same
 * CUDA_VISIBLE_DEVICES, or none) take devices in local-rank order; ranks that Slurm bound
 * to their own sets (--gpus-per-task, --gpu-bind) each take the first device of their set
 * not taken by a lower local rank with the same set. More ranks than devices is an error
 * naming the host. */
#ifndef KVAL_BINDING_H
#define KVAL_BINDING_H

#include <stddef.h>

/* visible[i]: the device-visibility string of local rank i (CUDA_VISIBLE_DEVICES, "" when
 * unset); n_visible: devices the CUDA runtime of this rank reports. Returns the device
 * index for local_rank, or -1 with a message in err. */
int kv_binding_choose(int local_rank, int local_size, const char *const *visible, int n_visible,
                      const char *host, char *err, size_t errlen);

#endif
