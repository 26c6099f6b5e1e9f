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
  b->mm_order = malloc((size_t)capacity);
  b->snap = malloc(sizeof(float *) * (size_t)capacity);
  b->rope_pos = malloc(sizeof(int32_t) * 4 * (size_t)capacity);
  b->embd = malloc(sizeof(float *) * (size_t)capacity);
  b->key_end = malloc(sizeof(int32_t) * (size_t)capacity);
  if (!b->token || !b->pos || !b->seq || !b->want_logits || !b->prompt_order ||
      !b->mm_order || !b->snap || !b->rope_pos || !b->embd || !b->key_end) {
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
  free(b->mm_order);
  free(b->snap);
  free(b->rope_pos);
  free((void *)b->embd);
  free(b->key_end);
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
  b->prompt_order[i] = NC_FLASH_ROW;
  b->mm_order[i] = 0;
  b->snap[i] = NULL;
  if (b->embd) b->embd[i] = NULL;
  if (b->key_end) b->key_end[i] = 0;
  const int32_t text[4] = {pos, pos, pos, 0};
  memcpy(b->rope_pos + 4 * (int64_t)i, text, sizeof text);
  return true;
}

bool nc_batch_set_rope_pos(nc_batch *b, int32_t row, const int32_t pos[4]) {
  if (row < 0 || row >= b->n_tokens) return false;
  memcpy(b->rope_pos + 4 * (int64_t)row, pos, 4 * sizeof *pos);
  return true;
}

void nc_batch_set_input(nc_batch *b, int32_t row, const float *embd,
                        int32_t key_end) {
  if (row < 0 || row >= b->n_tokens || !b->embd || !b->key_end) return;
  b->embd[row] = embd;
  b->key_end[row] = key_end;
  b->prompt_order[row] = NC_FLASH_ROW;
}

void nc_batch_set_snapshot(nc_batch *b, int32_t row, float *dst) {
  if (row >= 0 && row < b->n_tokens) b->snap[row] = dst;
}

/* The end of a prompt's micro-batches of min_rows or more rows. */
static int32_t ubatch_order_end(int32_t n_prompt, int32_t min_rows) {
  if (n_prompt <= 0) return 0;
  const int32_t tail = n_prompt % NC_LLAMA_UBATCH;
  return tail == 0 || tail >= min_rows ? n_prompt : n_prompt - tail;
}

int32_t nc_flash_prompt_order_end(int32_t n_prompt) {
  return ubatch_order_end(n_prompt, NC_FLASH_TILED_MIN_ROWS);
}

int32_t nc_mm_prompt_order_end(int32_t n_prompt) {
  return ubatch_order_end(n_prompt, NC_MM_TILED_MIN_ROWS);
}

bool nc_batch_add_prompt(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                         nc_prompt_logits logits, int32_t n_prompt) {
  if (!nc_batch_add(b, token, pos, seq, logits != NC_LOGITS_NONE)) return false;
  const int32_t i = b->n_tokens - 1;
  b->prompt_order[i] =
      (uint8_t)(pos < nc_flash_prompt_order_end(n_prompt) ? NC_FLASH_TILED
                                                          : NC_FLASH_ROW);
  const bool few = pos >= nc_mm_prompt_order_end(n_prompt);
  /* the last layer's rows with logits: every row of a micro-batch that
   * wants all (as many as the micro-batch, so few as it), else one */
  const bool out_few = few || logits != NC_LOGITS_ALL;
  b->mm_order[i] =
      (uint8_t)((few ? NC_MM_FEW : 0) | (out_few ? NC_MM_OUT_FEW : 0));
  return true;
}

bool nc_batch_add_reusable(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                           bool want_logits) {
  if (!nc_batch_add(b, token, pos, seq, want_logits)) return false;
  const int32_t i = b->n_tokens - 1;
  b->prompt_order[i] = NC_FLASH_TILED;
  b->mm_order[i] = NC_MM_OUT_FEW;
  return true;
}

bool nc_batch_add_reusable_split(nc_batch *b, int32_t token, int32_t pos,
                                 int32_t seq, bool want_logits) {
  if (!nc_batch_add_reusable(b, token, pos, seq, want_logits)) return false;
  b->prompt_order[b->n_tokens - 1] = NC_FLASH_SPLIT;
  return true;
}

int32_t nc_batch_n_logits(const nc_batch *b) {
  int32_t n = 0;
  for (int32_t i = 0; i < b->n_tokens; i++)
    n += b->want_logits[i] ? 1 : 0;
  return n;
}
