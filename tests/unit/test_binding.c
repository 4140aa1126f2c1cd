/* test_binding.c - unit tests of the rank -> GPU rule (src/backends/binding.c) over many node
 * pictures: CUDA_VISIBLE_DEVICES unset, identical sets, per-rank sets (Slurm
 * --gpus-per-task / --gpu-bind), overlapping and reordered sets, UUIDs, too many ranks,
 * no device at all; errors checked word for word. Also the entry count of a device list and
 * kv_binding_bind of a single rank without MPI (its own CUDA_VISIBLE_DEVICES). */
#include <stdlib.h>
#include <string.h>

#include "backends/binding.h"
#include "tests/unit/test_util.h"

static char err[1024];

typedef struct {
  const char *what;
  int local_size;
  const char *visible[8];
  int n_visible[8]; /* devices each rank's runtime reports */
  int want[8];      /* device index per rank, -1: error */
} node_case;

static const node_case nodes[] = {
    {"unset, 4 ranks, 4 GPUs", 4, {"", "", "", ""}, {4, 4, 4, 4}, {0, 1, 2, 3}},
    {"unset, 2 ranks, 8 GPUs", 2, {"", ""}, {8, 8}, {0, 1}},
    {"NULL entries count as unset", 3, {NULL, NULL, NULL}, {4, 4, 4}, {0, 1, 2}},
    {"unset, 5 ranks, 4 GPUs", 5, {"", "", "", "", ""}, {4, 4, 4, 4, 4}, {0, 1, 2, 3, -1}},
    {"identical 0,1,2,3", 4, {"0,1,2,3", "0,1,2,3", "0,1,2,3", "0,1,2,3"}, {4, 4, 4, 4}, {0, 1, 2, 3}},
    {"identical subset 2,3", 2, {"2,3", "2,3"}, {2, 2}, {0, 1}},
    {"identical, spaces around entries", 2, {" 4, 5", "4,5 "}, {2, 2}, {0, 1}},
    {"per-rank sets of one", 4, {"0", "1", "2", "3"}, {1, 1, 1, 1}, {0, 0, 0, 0}},
    {"per-rank sets of two", 2, {"0,1", "2,3"}, {2, 2}, {0, 0}},
    {"two ranks per set", 4, {"0,1", "0,1", "2,3", "2,3"}, {2, 2, 2, 2}, {0, 1, 0, 1}},
    {"overlapping sets", 2, {"0,1", "1,2"}, {2, 2}, {0, 0}},
    {"overlap: third rank skips a taken device", 3, {"0,1", "0,1", "1,2"}, {2, 2, 2}, {0, 1, 1}},
    {"same set, another order", 2, {"0,1", "1,0"}, {2, 2}, {0, 0}},
    {"same set, another order, three ranks", 3, {"0,1,2", "2,1,0", "1,2,0"}, {3, 3, 3}, {0, 0, 0}},
    {"UUIDs shared", 2, {"GPU-aa11,GPU-bb22", "GPU-aa11,GPU-bb22"}, {2, 2}, {0, 1}},
    {"MIG instances, one per rank", 2, {"MIG-GPU-aa11/1/0", "MIG-GPU-aa11/2/0"}, {1, 1}, {0, 0}},
    {"lower rank unset, this rank bound", 2, {"", "1"}, {4, 1}, {0, 0}},
    {"list longer than the runtime sees", 3, {"0,1,7", "0,1,7", "0,1,7"}, {2, 2, 2}, {0, 1, -1}},
    {"rank bound to a taken device", 2, {"0,1", "0"}, {2, 1}, {0, -1}},
    {"no GPU at all", 1, {""}, {0}, {-1}},
    {"Slurm without GPUs", 2, {"NoDevFiles", "NoDevFiles"}, {0, 0}, {-1, -1}},
};

static void test_table(void) {
  TEST("%zu node pictures", sizeof nodes / sizeof nodes[0]);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
    const node_case *nc = &nodes[i];
    for (int r = 0; r < nc->local_size; r++) {
      err[0] = '\0';
      int got = kv_binding_choose(r, nc->local_size, nc->visible, nc->n_visible[r], "node7", err, sizeof err);
      EXPECT(got == nc->want[r], "%s: local rank %d gets %d, expected %d (err: %s)", nc->what, r, got, nc->want[r], err);
      if (nc->want[r] < 0) EXPECT_CONTAINS(err, "host node7: local rank ");
    }
  }
}

static void test_messages(void) {
  TEST("error messages");
  const char *four[] = {"0,1,2,3", "0,1,2,3", "0,1,2,3", "0,1,2,3", "0,1,2,3"};
  EXPECT(kv_binding_choose(4, 5, four, 4, "node7", err, sizeof err) == -1, "fifth rank on four GPUs");
  EXPECT_STREQ(err, "host node7: local rank 4 of 5 has no GPU: 4 ranks already use the 4 visible devices "
                    "(CUDA_VISIBLE_DEVICES='0,1,2,3'); start at most 4 ranks per node or give each rank its own GPU");
  const char *unset[] = {"", "", ""};
  EXPECT(kv_binding_choose(2, 3, unset, 2, "gpu-a01", err, sizeof err) == -1, "third rank on two GPUs");
  EXPECT_STREQ(err, "host gpu-a01: local rank 2 of 3 has no GPU: 2 ranks already use the 2 visible devices "
                    "(CUDA_VISIBLE_DEVICES unset); start at most 2 ranks per node or give each rank its own GPU");
  const char *taken[] = {"0,1", "0"};
  EXPECT(kv_binding_choose(1, 2, taken, 1, "n1", err, sizeof err) == -1, "bound to a taken device");
  EXPECT_STREQ(err, "host n1: local rank 1 of 2 has no GPU: 1 rank already uses the 1 visible device "
                    "(CUDA_VISIBLE_DEVICES='0'); start at most 1 rank per node or give each rank its own GPU");
  EXPECT(kv_binding_choose(0, 1, unset, 0, "n2", err, sizeof err) == -1, "no device");
  EXPECT_STREQ(err, "host n2: local rank 0 of 1 sees no GPU (CUDA_VISIBLE_DEVICES unset); run on nodes with GPUs, "
                    "or use --backend cpu");
  const char *nodev[] = {"NoDevFiles"};
  EXPECT(kv_binding_choose(0, 1, nodev, 0, "n3", err, sizeof err) == -1, "Slurm gave no GPU");
  EXPECT_STREQ(err, "host n3: local rank 0 of 1 sees no GPU (CUDA_VISIBLE_DEVICES='NoDevFiles'); run on nodes with "
                    "GPUs, or use --backend cpu");
  EXPECT(kv_binding_choose(3, 3, unset, 4, "n4", err, sizeof err) == -1, "local rank outside the node");
  EXPECT_STREQ(err, "host n4: local rank 3 outside 0..2");
}

static void test_many_ranks(void) {
  TEST("64 ranks sharing 64 GPUs, then a 65th");
  const char *vis[65];
  for (int i = 0; i < 65; i++) vis[i] = "";
  int ok = 1;
  for (int r = 0; r < 64; r++) ok &= kv_binding_choose(r, 64, vis, 64, "big", err, sizeof err) == r;
  EXPECT(ok, "rank r gets device r");
  EXPECT(kv_binding_choose(64, 65, vis, 64, "big", err, sizeof err) == -1, "65th rank fails");
  EXPECT_CONTAINS(err, "64 ranks already use the 64 visible devices");
}

static void test_count_and_bind(void) {
  TEST("entry counts; binding one rank without MPI");
  EXPECT(kv_binding_count(NULL) == 0 && kv_binding_count("") == 0, "no list, no entries");
  EXPECT(kv_binding_count("0,1") == 2 && kv_binding_count(" 4, 5 ") == 2 && kv_binding_count("0,,1,") == 2,
         "empty entries and spaces do not count");
  EXPECT(kv_binding_count("GPU-aa11,GPU-bb22,MIG-GPU-aa11/1/0") == 3, "UUID entries");
  int dev = 7;
  setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
  EXPECT(kv_binding_bind(0, 1, 2, KV_OK, "n1", &dev) == KV_OK && dev == 0, "one rank, two devices: %d", dev);
  EXPECT(kv_binding_bind(0, 1, 0, KV_OK, "n1", &dev) == KV_ERR, "no device the runtime sees");
  EXPECT(kv_binding_bind(0, 1, 2, KV_ERR, "n1", &dev) == KV_ERR, "devices could not be counted");
  EXPECT(kv_binding_bind(1, 2, 2, KV_OK, "n1", &dev) == KV_ERR, "two local ranks need MPI");
  unsetenv("CUDA_VISIBLE_DEVICES");
}

int main(void) {
  test_count_and_bind();
  test_table();
  test_messages();
  test_many_ranks();
  return TEST_RETURN();
}
