/* main.c - kval: validate GPU kernels across a fleet (see README.md). */
#include <mpi.h>

#include "app.h"

int main(int argc, char **argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 3;
  int code = kv_app_run(argc, argv);
  MPI_Finalize();
  return code;
}
