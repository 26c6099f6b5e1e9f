/* batch: the flat list of entries of one forward call. */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

nc_code nc_batch_init(nc_batch *b, int32_t capacity, nc_error *err) {
  memset(b, 0, sizeof *b);
  if (capacity < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "batch capacity %d: must be at least 1", (int)capacity);
  b->token = malloc(sizeof(int32_t) * (size_t)capacity);
  b->pos = malloc(sizeof(int32_t) * (size_t)capacity);
  b->seq = malloc(sizeof(int32_t) * (size_t)capacity);
  b->want_logits = malloc((size_t)capacity);
  b->prompt_order = malloc((size_t)capacity);
  if (!b->token || !b->pos || !b->seq || !b->want_logits || !b->prompt_order) {
    nc_batch_free(b);
    return nc_fail(err, NC_ERR_NOMEM, "batch of %d entries: out of memory",
                   (int)capacity);
  }
  b->capacity = capacity;
  return NC_OK;
}

void nc_batch_free(nc_batch *b) {
  if (!b) return;
  free(b->token);
  free(b->pos);
  free(b->seq);
  free(b->want_logits);
  free(b->prompt_order);
  memset(b, 0, sizeof *b);
}

void nc_batch_clear(nc_batch *b) {
  b->n_tokens = 0;
}

bool nc_batch_add(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                  bool want_logits) {
  if (b->n_tokens >= b->capacity) return false;
  const int32_t i = b->n_tokens++;
  b->token[i] = token;
  b->pos[i] = pos;
  b->seq[i] = seq;
  b->want_logits[i] = want_logits ? 1 : 0;
  b->prompt_order[i] = 0;
  return true;
}

int32_t nc_flash_prompt_order_end(int32_t n_prompt) {
  if (n_prompt <= 0) return 0;
  const int32_t tail = n_prompt % NC_LLAMA_UBATCH;
  return tail == 0 || tail >= NC_FLASH_TILED_MIN_ROWS ? n_prompt
                                                      : n_prompt - tail;
}

bool nc_batch_add_prompt(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                         bool want_logits, int32_t n_prompt) {
  if (!nc_batch_add(b, token, pos, seq, want_logits)) return false;
  b->prompt_order[b->n_tokens - 1] = pos < nc_flash_prompt_order_end(n_prompt);
  return true;
}

int32_t nc_batch_n_logits(const nc_batch *b) {
  int32_t n = 0;
  for (int32_t i = 0; i < b->n_tokens; i++)
    n += b->want_logits[i] ? 1 : 0;
  return n;
}
