/* batch: the flat list of (token, position, sequence, want_logits) entries
 * that one forward call processes. Prefill and decode are the same thing
 * with different lengths; several sequences may share one batch. */
#ifndef NC_BATCH_H
#define NC_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct nc_batch {
  int32_t n_tokens, capacity;
  int32_t *token, *pos, *seq;
  uint8_t *want_logits;
} nc_batch;

/* Allocates room for capacity entries (capacity >= 1). */
nc_code nc_batch_init(nc_batch *b, int32_t capacity, nc_error *err);
void nc_batch_free(nc_batch *b);
void nc_batch_clear(nc_batch *b);
/* Appends one entry; false when the batch is full. */
bool nc_batch_add(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                  bool want_logits);
/* Number of entries with want_logits set (rows of the logits output). */
int32_t nc_batch_n_logits(const nc_batch *b);

#endif
