/* row.c - the canonical bytes of one result row, the same whether they come from a kv_result
 * or from the file: status (int8), fingerprint (u64), message (96 bytes, NUL-padded), the
 * float64 fields and then the int64 fields of result.h in X-macro order, the histogram
 * (KV_HIST_BINS u64) and the part statistics (KV_MAX_PARTS x KV_N_PART_STATS float64, NaN past
 * the family's parts), every number little-endian. Their XXH64 is the row's `checksum`
 * dataset, which --resume verifies for every row it keeps, and the same bytes are the
 * records of the per-rank journal (journal.c). tests/system/kvrows.py reads them too. */
#include "output/row.h"

#include <string.h>

#include "numerics/fingerprint.h"

static unsigned char *put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 8;
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static uint64_t dbits(double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  return v;
}

void kv_row_pack(unsigned char *buf, int status, uint64_t fingerprint, const char *message, const double *dbl,
                 const int64_t *ints, const uint64_t *hist, const double *parts) {
  unsigned char *p = buf;
  *p++ = (unsigned char)(signed char)status;
  p = put64(p, fingerprint);
  memcpy(p, message, KV_MESSAGE_LEN);
  p += KV_MESSAGE_LEN;
  for (int i = 0; i < KV_N_DOUBLES; i++) p = put64(p, dbits(dbl[i]));
  for (int i = 0; i < KV_N_INTS; i++) p = put64(p, (uint64_t)ints[i]);
  for (int i = 0; i < KV_HIST_BINS; i++) p = put64(p, hist[i]);
  for (int i = 0; i < KV_ROW_PART_VALUES; i++) p = put64(p, dbits(parts[i]));
}

void kv_row_from_result(const kv_result *r, unsigned char *buf) {
  double dbl[KV_N_DOUBLES + 1];
  int64_t ints[KV_N_INTS + 1];
  char message[KV_MESSAGE_LEN];
  strncpy(message, r->message, KV_MESSAGE_LEN); /* as the file stores it: NUL-padded */
#define KV_X(name, member, unit, doc) dbl[KV_DOUBLE_##name] = r->member;
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) ints[KV_INT_##name] = (int64_t)r->member;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  kv_row_pack(buf, r->status, r->fingerprint, message, dbl, ints, r->stats.hist, &r->part_stats[0][0]);
}

void kv_row_to_result(const unsigned char *buf, kv_result *r) {
  const unsigned char *p = buf;
  r->status = (signed char)*p++;
  r->fingerprint = get64(p);
  p += 8;
  memcpy(r->message, p, KV_MESSAGE_LEN);
  r->message[KV_MESSAGE_LEN - 1] = '\0';
  p += KV_MESSAGE_LEN;
#define KV_X(name, member, unit, doc)    \
  {                                      \
    uint64_t bits = get64(p);            \
    memcpy(&r->member, &bits, 8);        \
    p += 8;                              \
  }
  KV_RESULT_DOUBLES(KV_X)
#undef KV_X
#define KV_X(name, member, unit, doc) \
  r->member = (int64_t)get64(p);      \
  p += 8;
  KV_RESULT_INTS(KV_X)
#undef KV_X
  for (int i = 0; i < KV_HIST_BINS; i++, p += 8) r->stats.hist[i] = get64(p);
  for (int i = 0; i < KV_ROW_PART_VALUES; i++, p += 8) {
    const uint64_t bits = get64(p);
    memcpy(&r->part_stats[i / KV_N_PART_STATS][i % KV_N_PART_STATS], &bits, 8);
  }
}

uint64_t kv_row_checksum(const unsigned char *buf) { return kv_fingerprint(buf, KV_ROW_BYTES); }

uint64_t kv_row_fields_hash(void) {
  static const char names[] = "status,fingerprint,message"
#define KV_X(name, member, unit, doc) "," #name
      KV_RESULT_DOUBLES(KV_X) KV_RESULT_INTS(KV_X)
#undef KV_X
      ",hist"
#define KV_X(name, member, doc) ",part_" #name
      KV_PART_STATS(KV_X)
#undef KV_X
      ;
  return kv_fingerprint(names, sizeof names - 1) ^ (uint64_t)KV_HIST_BINS ^ ((uint64_t)KV_MAX_PARTS << 32);
}
