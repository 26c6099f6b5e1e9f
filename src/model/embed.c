/* embed: packing sequences into embedding batches, pooling and the heads
 * after it (llama.cpp's build_pooling and build_dense_out). */
#include "embed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "batch.h"
#include "context.h"
#include "forward.h"
#include "kv/kv_cache.h"
#include "pooling.h"

struct nc_embedder {
  const nucleus_model *m;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch batch;
  int32_t max_tokens;
  float *hidden; /* [max_tokens, n_embd]: the forward's output rows */
  float *pooled; /* [NC_EMBED_MAX_SEQS, wide] */
  float *tmp;    /* [NC_EMBED_MAX_SEQS, wide] */
  int64_t wide;  /* the widest vector of the heads */
};

static int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* KV blocks of this many positions; a sequence takes whole blocks. */
enum { EMBED_BLOCK = 16 };

nc_code nc_embedder_create(const nucleus_model *m, int32_t max_batch_tokens,
                           nc_embedder **out, nc_error *err) {
  *out = NULL;
  if (max_batch_tokens < 1 || max_batch_tokens > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embedder: max batch tokens %d must be in [1, %d]",
                   (int)max_batch_tokens, 1 << 20);
  nc_embedder *e = calloc(1, sizeof *e);
  if (!e) return nc_fail(err, NC_ERR_NOMEM, "embedder: out of memory");
  e->m = m;
  e->max_tokens = max_batch_tokens;
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  e->wide = max64(max64(hp->n_embd, hp->n_embd_out),
                  max64(w->dense_2.ne1, hp->n_cls_out));
  /* every sequence rounds up to whole blocks: room for the tokens and one
   * partial block per sequence */
  const int64_t blocks =
      ((int64_t)max_batch_tokens + EMBED_BLOCK - 1) / EMBED_BLOCK +
      NC_EMBED_MAX_SEQS;
  nc_code rc =
      nc_kv_cache_create_typed(nc_hp_kv_shape(hp), nc_model_kv_types(m), blocks,
                               EMBED_BLOCK, NC_EMBED_MAX_SEQS, &e->kv, err);
  if (!rc) rc = nc_context_create(m, e->kv, max_batch_tokens, &e->ctx, err);
  if (!rc) nc_context_set_n_ctx(e->ctx, hp->n_ctx_train);
  if (!rc) rc = nc_batch_init(&e->batch, max_batch_tokens, err);
  if (!rc) {
    e->hidden =
        malloc(sizeof(float) * (size_t)max_batch_tokens * (size_t)hp->n_embd);
    e->pooled = malloc(sizeof(float) * NC_EMBED_MAX_SEQS * (size_t)e->wide);
    e->tmp = malloc(sizeof(float) * NC_EMBED_MAX_SEQS * (size_t)e->wide);
    if (!e->hidden || !e->pooled || !e->tmp)
      rc = nc_fail(err, NC_ERR_NOMEM, "embedder: out of memory");
  }
  if (rc) {
    nc_embedder_free(e);
    return rc;
  }
  *out = e;
  return NC_OK;
}

void nc_embedder_free(nc_embedder *e) {
  if (!e) return;
  nc_batch_free(&e->batch);
  nc_context_free(e->ctx);
  nc_kv_cache_free(e->kv);
  free(e->hidden);
  free(e->pooled);
  free(e->tmp);
  free(e);
}

int32_t nc_embedder_max_tokens(const nc_embedder *e) {
  return e->max_tokens;
}

nc_code nc_embed_check(const nucleus_model *m, const nc_embed_opts *o,
                       nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  if (o->pooling <= NC_POOLING_NONE || o->pooling >= NC_POOLING_COUNT)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "pooling %d: must be mean (1), cls (2), last (3) or rank "
                   "(4); none gives no vector per input",
                   o->pooling);
  if (o->pooling == NC_POOLING_RANK && hp->n_cls_out < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "pooling rank: the model has no rank head (tensor "
                   "'cls.output.weight'); it is not a reranker");
  const int32_t full =
      o->pooling == NC_POOLING_RANK ? hp->n_cls_out : hp->n_embd_out;
  if (o->dimensions < 0 || o->dimensions > full)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "dimensions %d: must be in [1, %d] (the model's vector "
                   "size), or 0 for all",
                   (int)o->dimensions, (int)full);
  return NC_OK;
}

int32_t nc_embed_width(const nucleus_model *m, const nc_embed_opts *o) {
  const nc_hparams *hp = nc_model_hparams(m);
  if (o->dimensions > 0) return o->dimensions;
  return o->pooling == NC_POOLING_RANK ? hp->n_cls_out : hp->n_embd_out;
}

/* y = W x (+ bias) for rows rows of x (k wide); y has W's rows. */
static void head_matmul(nc_fwd *f, const nc_weight *w, const nc_weight *bias,
                        const float *x, int32_t rows, float *y) {
  f->mm_few = NULL; /* every row in the one order: the same bits per row */
  const nc_mm mm = {w, y, w->ne1};
  nc_fwd_matmul(f, x, w->ne0, rows, &mm, 1);
  if (bias->data) nc_fwd_add_bias(f, y, bias->data, rows, w->ne1);
}

/* The heads after pooling, over the batch's n_seq pooled vectors
 * (e->pooled, n_embd each): writes each sequence's final vector (before
 * truncation and normalisation) into e->pooled, returning its width. */
static int64_t apply_heads(nc_embedder *e, int32_t n_seq, int pooling) {
  nc_fwd *f = nc_context_fwd(e->ctx);
  const nc_hparams *hp = nc_model_hparams(e->m);
  const nc_model_weights *w = nc_model_weights_of(e->m);
  const int64_t E = hp->n_embd;
  if (pooling == NC_POOLING_RANK) {
    const float *x = e->pooled;
    if (w->cls.data) {
      head_matmul(f, &w->cls, &w->cls_b, e->pooled, n_seq, e->tmp);
      for (int64_t i = 0; i < (int64_t)n_seq * E; i++)
        e->tmp[i] = tanhf(e->tmp[i]);
      x = e->tmp;
    }
    float *y = x == e->tmp ? e->pooled : e->tmp;
    head_matmul(f, &w->cls_out, &w->cls_out_b, x, n_seq, y);
    const int64_t n = hp->n_cls_out;
    /* a causal reranker (Qwen3-Reranker: its yes / no rows) scores by the
     * softmax over its outputs, as llama.cpp's rank pooling for qwen3 */
    if (!hp->non_causal)
      for (int32_t s = 0; s < n_seq; s++) {
        float *r = y + (int64_t)s * n, mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < n; j++)
          mx = r[j] > mx ? r[j] : mx;
        for (int64_t j = 0; j < n; j++)
          sum += (r[j] = expf(r[j] - mx));
        for (int64_t j = 0; j < n; j++)
          r[j] /= sum;
      }
    if (y != e->pooled)
      memcpy(e->pooled, y, sizeof(float) * (size_t)n_seq * (size_t)n);
    return n;
  }
  int64_t width = E;
  if (w->dense_2.data) {
    head_matmul(f, &w->dense_2, &w->dense_2_b, e->pooled, n_seq, e->tmp);
    width = w->dense_2.ne1;
    memcpy(e->pooled, e->tmp, sizeof(float) * (size_t)n_seq * (size_t)width);
  }
  if (w->dense_3.data) {
    const nc_weight none = {0};
    head_matmul(f, &w->dense_3, &none, e->pooled, n_seq, e->tmp);
    width = w->dense_3.ne1;
    memcpy(e->pooled, e->tmp, sizeof(float) * (size_t)n_seq * (size_t)width);
  }
  return width;
}

/* Runs the packed sequences [first, first + n_seq) and writes their
 * vectors. */
static nc_code run_batch(nc_embedder *e, const int32_t *const *tokens,
                         const int32_t *n_tokens, int32_t first, int32_t n_seq,
                         const nc_embed_opts *o, float *out, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(e->m);
  const bool causal = !hp->non_causal;
  const int64_t E = hp->n_embd;
  nc_batch_clear(&e->batch);
  nc_code rc = NC_OK;
  int32_t seq_ids[NC_EMBED_MAX_SEQS];
  int32_t live = 0;
  for (int32_t s = 0; s < n_seq && !rc; s++) {
    const int32_t i = first + s, n = n_tokens[i];
    const int32_t id = nc_kv_seq_new(e->kv);
    if (id < 0) {
      rc = nc_fail(err, NC_ERR_INTERNAL, "embedder: no free sequence");
      break;
    }
    seq_ids[live++] = id;
    rc = nc_kv_seq_reserve(e->kv, id, n, err);
    /* flash attention's tiled order for every row (llama.cpp's for a
     * micro-batch of 64 or more rows, key tiles aligned to the sequence's
     * positions as for a text at the start of one): each row's bits
     * depend on its own sequence only */
    for (int32_t p = 0; !rc && p < n; p++) {
      nc_batch_add(&e->batch, tokens[i][p], p, id,
                   nc_pooling_wants_row(o->pooling, causal, p, n));
      e->batch.prompt_order[e->batch.n_tokens - 1] = NC_FLASH_TILED;
    }
  }
  if (!rc) rc = nc_context_embed(e->ctx, &e->batch, e->hidden, err);
  for (int32_t s = 0; s < live; s++)
    nc_kv_seq_free(e->kv, seq_ids[s]);
  if (rc) {
    if (err)
      nc_error_prefix(err, "inputs %d to %d", (int)first,
                      (int)(first + n_seq - 1));
    return rc;
  }
  /* the output rows are the wanted rows in batch order, sequence by
   * sequence */
  const float *row = e->hidden;
  for (int32_t s = 0; s < n_seq; s++) {
    const int32_t n = n_tokens[first + s];
    int32_t wanted = 0;
    for (int32_t p = 0; p < n; p++)
      wanted += nc_pooling_wants_row(o->pooling, causal, p, n);
    nc_pool_rows(o->pooling, row, wanted, E, e->pooled + (int64_t)s * E);
    row += (int64_t)wanted * E;
  }
  const int64_t width = apply_heads(e, n_seq, o->pooling);
  const int64_t keep = o->dimensions > 0 ? o->dimensions : width;
  for (int32_t s = 0; s < n_seq; s++) {
    float *dst = out + (int64_t)(first + s) * keep;
    memcpy(dst, e->pooled + (int64_t)s * width, sizeof(float) * (size_t)keep);
    if (o->normalize && o->pooling != NC_POOLING_RANK)
      nc_l2_normalize(dst, keep);
  }
  return NC_OK;
}

nc_code nc_embedder_run(nc_embedder *e, const int32_t *const *tokens,
                        const int32_t *n_tokens, int32_t n,
                        const nc_embed_opts *o, float *out, nc_error *err) {
  nc_code rc = nc_embed_check(e->m, o, err);
  if (rc) return rc;
  if (n < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embed: %d inputs, must be at least 0", (int)n);
  const int32_t n_vocab = nc_model_hparams(e->m)->n_vocab;
  for (int32_t i = 0; i < n; i++) {
    if (n_tokens[i] < 1)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "input %d is empty: an embedding needs at least one "
                     "token",
                     (int)i);
    if (n_tokens[i] > nc_model_hparams(e->m)->n_ctx_train)
      return nc_fail(err, NC_ERR_LIMIT,
                     "input %d has %d tokens, more than the model's context "
                     "of %d",
                     (int)i, (int)n_tokens[i],
                     (int)nc_model_hparams(e->m)->n_ctx_train);
    if (n_tokens[i] > e->max_tokens)
      return nc_fail(err, NC_ERR_LIMIT,
                     "input %d has %d tokens, more than the %d an embedding "
                     "batch takes",
                     (int)i, (int)n_tokens[i], (int)e->max_tokens);
    for (int32_t p = 0; p < n_tokens[i]; p++)
      if (tokens[i][p] < 0 || tokens[i][p] >= n_vocab)
        return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                       "input %d: token %d at position %d is out of the "
                       "vocabulary [0, %d)",
                       (int)i, (int)tokens[i][p], (int)p, (int)n_vocab);
  }
  /* greedy packing in input order: as many whole sequences as fit */
  for (int32_t i = 0; i < n;) {
    int32_t used = 0, k = 0;
    while (i + k < n && k < NC_EMBED_MAX_SEQS &&
           used + n_tokens[i + k] <= e->max_tokens)
      used += n_tokens[i + k++];
    if ((rc = run_batch(e, tokens, n_tokens, i, k, o, out, err))) return rc;
    i += k;
  }
  return NC_OK;
}
