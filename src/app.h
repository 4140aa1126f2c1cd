/* app.h - the kval program between MPI_Init and MPI_Finalize: options, deck, plan,
 * backend, output, run, summary; returns the exit code (check.h). */
#ifndef KVAL_APP_H
#define KVAL_APP_H

int kv_app_run(int argc, char **argv);

#endif
