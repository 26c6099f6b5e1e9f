/* batch: the flat list of (token, position, sequence, want_logits) entries
 * that one forward call processes. Prefill and decode are the same thing
 * with different lengths; several sequences may share one batch. */
#ifndef NC_BATCH_H
#define NC_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef struct nc_batch {
  int32_t n_tokens, capacity;
  int32_t *token, *pos, *seq;
  uint8_t *want_logits;
  /* Flash attention's order for the row (nc_flash_order): NC_FLASH_ROW
   * (nc_batch_add, and nc_batch_add_prompt's rows of short micro-batches),
   * NC_FLASH_TILED (nc_batch_add_prompt's rows of long ones,
   * nc_batch_add_reusable, the embedder's rows) or NC_FLASH_SPLIT
   * (nc_batch_add_reusable_split) */
  uint8_t *prompt_order;
  /* NC_MM_* bits: the matmul order of the row's micro-batch in llama.cpp
   * (set by nc_batch_add_prompt, 0 by nc_batch_add) */
  uint8_t *mm_order;
  /* recurrent state: where the forward pass copies the row's sequence's
   * state once it has computed the row (a snapshot, kv_cache.h), NULL:
   * nowhere; NULL by every add, set by nc_batch_set_snapshot */
  float **snap;
  /* M-RoPE positions (model.h's mrope): the row's (t, h, w, e) at
   * rope_pos[4 * row ..]; nc_batch_add sets a text row's (pos, pos, pos,
   * 0) as llama.cpp does, nc_batch_set_rope_pos an image patch's. Only
   * RoPE reads them: pos stays the row's place in its sequence (its KV
   * cell, the causal order). */
  int32_t *rope_pos;
  /* images (docs/VISION.md): the row's input embedding (n_embd floats;
   * Qwen3-VL's n_embd x (1 + n_deepstack), nc_fwd_add_input_slice) in
   * place of its token's (the token is then a placeholder), NULL for a
   * token; and the end (exclusive) of the positions its attention sees
   * when past its own (an image's rows see the whole image), 0 for causal.
   * NULL / 0 by every add, set by nc_batch_set_input. A row with either
   * takes flash attention's row order. */
  const float **embd;
  int32_t *key_end;
} nc_batch;

/* Flash attention's orders (attn_flash.h, docs/forward.md):
 * - NC_FLASH_ROW: llama.cpp's per-row path (its decode order);
 * - NC_FLASH_TILED: llama.cpp's tiled path (a long prompt's rows): every
 *   key tile of a row folded into one state in position order;
 * - NC_FLASH_SPLIT: the tiled path's steps over each chunk of
 *   NC_FLASH_SPLIT_KEYS keys (aligned to absolute positions) from a fresh
 *   state, the chunks' states then folded in position order
 *   (nc_flash_tstate_fold): a row's keys can spread over the threads while
 *   its bits stay those of its keys alone; the same bits as NC_FLASH_TILED
 *   for a row that sees keys of one chunk only (positions below
 *   NC_FLASH_SPLIT_KEYS, or a window inside one chunk). */
typedef enum nc_flash_order {
  NC_FLASH_ROW = 0,
  NC_FLASH_TILED = 1,
  NC_FLASH_SPLIT = 2
} nc_flash_order;

/* llama.cpp's K-quant matmuls take its tiled order for a micro-batch of
 * NC_MM_TILED_MIN_ROWS or more rows and vec_dot's below (kernels.h,
 * gemm_few). NC_MM_FEW: the row's micro-batch has fewer rows (a decode
 * step, a prompt's short last micro-batch); NC_MM_OUT_FEW: in the last
 * layer after attention, where llama.cpp keeps only the rows with logits,
 * fewer such rows (a prompt that wants only its last row's logits).
 * The positions of a prompt whose micro-batch has enough rows are those
 * below nc_mm_prompt_order_end(n_prompt). */
enum { NC_MM_TILED_MIN_ROWS = 8 };
enum { NC_MM_FEW = 1, NC_MM_OUT_FEW = 2 };
int32_t nc_mm_prompt_order_end(int32_t n_prompt);

/* Which of a prompt's rows want logits (nc_batch_add_prompt). */
typedef enum nc_prompt_logits {
  NC_LOGITS_NONE, /* this row wants none */
  NC_LOGITS_LAST, /* this row, the only one of its prompt (or a generated
                     token) */
  NC_LOGITS_ALL   /* this row, as every row of its prompt */
} nc_prompt_logits;

/* llama.cpp evaluates a prompt in micro-batches of NC_LLAMA_UBATCH tokens
 * (its default -ub) from position 0, and its CPU flash attention takes the
 * tiled path for a micro-batch of NC_FLASH_TILED_MIN_ROWS or more rows,
 * the per-row path otherwise (and for every decode). The rows that took
 * the tiled path are always a prefix of the prompt: positions below
 * nc_flash_prompt_order_end(n_prompt). */
enum { NC_LLAMA_UBATCH = 512, NC_FLASH_TILED_MIN_ROWS = 64 };
int32_t nc_flash_prompt_order_end(int32_t n_prompt);

/* Allocates room for capacity entries (capacity >= 1). */
nc_code nc_batch_init(nc_batch *b, int32_t capacity, nc_error *err);
void nc_batch_free(nc_batch *b);
void nc_batch_clear(nc_batch *b);
/* Appends one entry; false when the batch is full. */
bool nc_batch_add(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                  bool want_logits);
/* Appends position pos of a sequence whose prompt has n_prompt tokens
 * (pos >= n_prompt: a generated token), with prompt_order and mm_order set
 * as llama.cpp's orders for that position (its prompt evaluated in
 * micro-batches of NC_LLAMA_UBATCH from position 0, logits as given). */
bool nc_batch_add_prompt(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                         nc_prompt_logits logits, int32_t n_prompt);
/* Appends a row in the orders llama.cpp gives a row of a long prompt (a
 * micro-batch of NC_FLASH_TILED_MIN_ROWS or more rows: flash attention's
 * prompt order, the tiled matmuls), whatever its position or request, and
 * its logits, if it wants them, as a prompt's last row (NC_MM_OUT_FEW): a
 * position's K/V then depend only on the tokens up to it, so the prefix
 * cache can hand them to any later request (the engine's reuse orders). */
bool nc_batch_add_reusable(nc_batch *b, int32_t token, int32_t pos, int32_t seq,
                           bool want_logits);
/* As nc_batch_add_reusable with flash attention's split order
 * (NC_FLASH_SPLIT) instead of the tiled one: the same bits for positions
 * below NC_FLASH_SPLIT_KEYS, other (close) ones past it. */
bool nc_batch_add_reusable_split(nc_batch *b, int32_t token, int32_t pos,
                                 int32_t seq, bool want_logits);
/* Row row's M-RoPE position (t, h, w, e); false for a row not in the
 * batch. */
bool nc_batch_set_rope_pos(nc_batch *b, int32_t row, const int32_t pos[4]);
/* Row row's input embedding (kept by the caller until the forward call
 * returns) and key_end (nc_batch's embd and key_end). */
void nc_batch_set_input(nc_batch *b, int32_t row, const float *embd,
                        int32_t key_end);
/* Row row's snapshot target (nc_batch's snap). */
void nc_batch_set_snapshot(nc_batch *b, int32_t row, float *dst);
/* Number of entries with want_logits set (rows of the logits output). */
int32_t nc_batch_n_logits(const nc_batch *b);

#endif
