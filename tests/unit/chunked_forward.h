/* Test helper: a token sequence through a fresh paged cache (blocks of 16,
 * one sequence, the model's cache types) in chunks of chunks[] (cycled), logits
 * for every row: the forward tests' way to check that any split of a prompt
 * gives the same bits. The first n_prompt tokens are the prompt (the rest
 * as generated ones: batch.h's flash attention orders); run_chunked: all
 * of them; run_chunked_reusable: the engine's reuse orders;
 * run_chunked_split: those with flash attention's split order. Include after
 * cmocka.h. */
#ifndef NC_TEST_CHUNKED_FORWARD_H
#define NC_TEST_CHUNKED_FORWARD_H

#include <stdint.h>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"

/* n_prompt < 0: every row in the engine's reuse orders
 * (nc_batch_add_reusable) instead; -2: with flash attention's split order
 * (nc_batch_add_reusable_split). */
static inline void run_chunked_prompt(const nucleus_model *m,
                                      const int32_t *tokens, int32_t n,
                                      int32_t n_prompt, const int32_t *chunks,
                                      int n_chunks, float *logits) {
  const int32_t nv = nc_model_hparams(m)->n_vocab;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create_typed(nc_hp_kv_shape(nc_model_hparams(m)),
                                            nc_model_kv_types(m), (n + 15) / 16,
                                            16, 1, &kv, &err),
                   NC_OK);
  assert_int_equal(nc_context_create(m, kv, n, &ctx, &err), NC_OK);
  assert_int_equal(nc_batch_init(&b, n, &err), NC_OK);
  const int32_t s = nc_kv_seq_new(kv);
  int ci = 0;
  for (int32_t i0 = 0; i0 < n;) {
    const int32_t len = chunks[ci++ % n_chunks];
    const int32_t end = i0 + len < n ? i0 + len : n;
    assert_int_equal(nc_kv_seq_reserve(kv, s, end, &err), NC_OK);
    nc_batch_clear(&b);
    for (int32_t i = i0; i < end; i++)
      if (n_prompt == -2)
        nc_batch_add_reusable_split(&b, tokens[i], i, s, true);
      else if (n_prompt < 0)
        nc_batch_add_reusable(&b, tokens[i], i, s, true);
      else
        nc_batch_add_prompt(&b, tokens[i], i, s, NC_LOGITS_ALL, n_prompt);
    if (nc_context_forward(ctx, &b, logits + (int64_t)i0 * nv, &err) != NC_OK)
      fail_msg("forward: %s", err.message);
    assert_int_equal(nc_kv_seq_len(kv, s), end);
    i0 = end;
  }
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
}

static inline void run_chunked(const nucleus_model *m, const int32_t *tokens,
                               int32_t n, const int32_t *chunks, int n_chunks,
                               float *logits) {
  run_chunked_prompt(m, tokens, n, n, chunks, n_chunks, logits);
}

static inline void run_chunked_reusable(const nucleus_model *m,
                                        const int32_t *tokens, int32_t n,
                                        const int32_t *chunks, int n_chunks,
                                        float *logits) {
  run_chunked_prompt(m, tokens, n, -1, chunks, n_chunks, logits);
}

static inline void run_chunked_split(const nucleus_model *m,
                                     const int32_t *tokens, int32_t n,
                                     const int32_t *chunks, int n_chunks,
                                     float *logits) {
  run_chunked_prompt(m, tokens, n, -2, chunks, n_chunks, logits);
}

#endif
