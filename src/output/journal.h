/* journal.h - the per-rank journal of finished rows, PATH.journal-<rank> (journal.c). */
#ifndef KVAL_OUTPUT_JOURNAL_H
#define KVAL_OUTPUT_JOURNAL_H

#include <stddef.h>

#include "output/internal.h"

/* PATH.journal-RANK into buf. */
void kv_journal_path(const char *path, int rank, char *buf, size_t n);
/* Start this rank's journal empty (a failure is a warning: the run goes on without it). */
void kv_journal_start(kv_output *o, const char *path);
/* Append r and fdatasync it (a failure is a warning and ends the journal). */
void kv_journal_append(kv_output *o, const kv_result *r);
/* This rank's valid records of the file at path (malloc'ed); a missing journal is none. */
kv_status kv_journal_read(kv_output *o, const char *path, kv_result **rows, size_t *n);
/* Close the journal; remove it unless keep (the file does not hold every row yet). */
void kv_journal_finish(kv_output *o, int keep);

#endif
