/* nucleus_imatrix_compute: an importance matrix as llama-imatrix computes
 * one. The text's tokens are cut into chunks of n_ctx; each chunk runs from
 * an empty cache (its first token BOS when the model adds one) while an
 * observer of the forward's matmuls (context.h's nc_fwd_observer) adds, for
 * every "blk." weight (and output.weight on request), each input row's
 * squared values to its column sums and counts the rows: per expert for a
 * mixture's matrices, and for a dense matmul only when it reads 16 rows or
 * more, as llama-imatrix's collector. The sums are written in its GGUF
 * form (quantize/imatrix_save.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "quantize/imatrix_save.h"

/* llama-imatrix skips a dense matmul of fewer rows (a decode step). */
enum { MIN_DENSE_ROWS = 16, BLOCK_TOKENS = 256 };

typedef struct stat_entry {
  const char *name; /* the weight's (owned by the model's file) */
  float *sums;
  int64_t *counts;
  int64_t ne0;
  int32_t n_mat;
} stat_entry;

typedef struct collector {
  stat_entry *e;
  int64_t n, cap;
  bool process_output, oom;
} collector;

static stat_entry *entry_for(collector *c, const nc_weight *w) {
  for (int64_t i = 0; i < c->n; i++)
    if (c->e[i].name == w->name || strcmp(c->e[i].name, w->name) == 0)
      return &c->e[i];
  if (c->n == c->cap) {
    const int64_t cap = c->cap ? 2 * c->cap : 64;
    stat_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
    if (!e) return NULL;
    c->e = e;
    c->cap = cap;
  }
  const int32_t n_mat = w->n_experts > 0 ? w->n_experts : 1;
  stat_entry *s = &c->e[c->n];
  s->name = w->name;
  s->ne0 = w->ne0;
  s->n_mat = n_mat;
  s->sums = calloc((size_t)(w->ne0 * n_mat), sizeof *s->sums);
  s->counts = calloc((size_t)n_mat, sizeof *s->counts);
  if (!s->sums || !s->counts) {
    free(s->sums);
    free(s->counts);
    return NULL;
  }
  c->n++;
  return s;
}

static void observe(void *arg, const nc_weight *w, const float *x,
                    int64_t x_stride, const int32_t *idx, int32_t rows) {
  collector *c = arg;
  if (!w->name) return;
  const bool blk = strncmp(w->name, "blk.", 4) == 0;
  if (!blk && !(c->process_output && strcmp(w->name, "output.weight") == 0))
    return;
  if (w->n_experts == 0 && rows < MIN_DENSE_ROWS) return;
  stat_entry *s = entry_for(c, w);
  if (!s) {
    c->oom = true;
    return;
  }
  const int32_t m = w->n_experts > 0 ? w->expert : 0;
  float *acc = s->sums + (int64_t)m * s->ne0;
  for (int32_t k = 0; k < rows; k++) {
    const float *xr = x + (int64_t)(idx ? idx[k] : k) * x_stride;
    for (int64_t j = 0; j < s->ne0; j++)
      acc[j] += xr[j] * xr[j];
  }
  s->counts[m] += rows;
}

nucleus_imatrix_params nucleus_imatrix_default_params(void) {
  return (nucleus_imatrix_params){
      .n_ctx = 512, .max_chunks = 0, .process_output = false, .dataset = NULL};
}

static nc_code run_chunks(nucleus_model *m, const int32_t *tokens, size_t n,
                          const nucleus_imatrix_params *p, int32_t n_chunks,
                          collector *col, nucleus_imatrix_progress progress,
                          void *arg, nc_error *err) {
  const int32_t n_ctx = p->n_ctx;
  nc_kv_cache *kv = NULL;
  nc_context *ctx = NULL;
  nc_batch b = {0};
  int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
  const int64_t n_vocab = nc_model_hparams(m)->n_vocab;
  /* every row's logits, as llama-imatrix's perplexity run has them: the
   * last layer then runs every row (not only those kept for output) */
  float *logits = malloc((size_t)n_ctx * (size_t)n_vocab * sizeof *logits);
  nc_code rc = chunk && logits ? NC_OK
                               : nc_fail(err, NC_ERR_NOMEM,
                                         "imatrix: out of memory for a chunk");
  if (!rc)
    rc = nc_kv_cache_create_typed(
        nc_hp_kv_shape(nc_model_hparams(m)), nc_model_kv_types(m),
        (n_ctx + BLOCK_TOKENS - 1) / BLOCK_TOKENS, BLOCK_TOKENS, 1, &kv, err);
  if (!rc) rc = nc_context_create(m, kv, n_ctx, &ctx, err);
  if (!rc) nc_context_set_n_ctx(ctx, nc_model_hparams(m)->n_ctx_train);
  if (!rc) rc = nc_batch_init(&b, n_ctx, err);
  const nc_fwd_observer obs = {observe, col};
  if (!rc) nc_context_set_observer(ctx, &obs);
  const int32_t bos = nucleus_token_bos(m);
  const bool add_bos = bos >= 0 && tokens[0] == bos;
  (void)n;
  for (int32_t c = 0; !rc && c < n_chunks; c++) {
    memcpy(chunk, tokens + (size_t)c * (size_t)n_ctx,
           (size_t)n_ctx * sizeof *chunk);
    if (add_bos) chunk[0] = bos;
    const int32_t s = nc_kv_seq_new(kv);
    rc = nc_kv_seq_reserve(kv, s, n_ctx, err);
    nc_batch_clear(&b);
    for (int32_t i = 0; !rc && i < n_ctx; i++)
      nc_batch_add_prompt(&b, chunk[i], i, s, NC_LOGITS_ALL, n_ctx);
    if (!rc) rc = nc_context_forward(ctx, &b, logits, err);
    nc_kv_seq_free(kv, s);
    if (!rc && col->oom)
      rc = nc_fail(err, NC_ERR_NOMEM, "imatrix: out of memory for the sums");
    if (!rc && progress) progress(arg, c + 1, n_chunks);
  }
  free(chunk);
  free(logits);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  return rc;
}

nucleus_status nucleus_imatrix_compute(nucleus_model *model,
                                       const int32_t *tokens, size_t n,
                                       const nucleus_imatrix_params *params,
                                       const char *out_path,
                                       nucleus_imatrix_progress progress,
                                       void *arg, nucleus_error *err) {
  if (!model || !tokens || !out_path)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "imatrix: model, tokens and an output path are required");
  const nucleus_imatrix_params p =
      params ? *params : nucleus_imatrix_default_params();
  const int32_t n_train = nc_model_hparams(model)->n_ctx_train;
  if (p.n_ctx < 16 || p.n_ctx > n_train || p.n_ctx > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "imatrix: n_ctx %d is outside [16, %d] (the model's "
                   "training context)",
                   (int)p.n_ctx,
                   (int)(n_train < (1 << 20) ? n_train : 1 << 20));
  if (p.max_chunks < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "imatrix: max_chunks %d is negative", (int)p.max_chunks);
  const int32_t n_vocab = nc_model_hparams(model)->n_vocab;
  for (size_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "imatrix: tokens[%zu] = %d is not a token id in [0, %d)",
                     i, (int)tokens[i], (int)n_vocab);
  int64_t n_chunks = (int64_t)(n / (size_t)p.n_ctx);
  if (n_chunks < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "imatrix: %zu tokens, fewer than one chunk of %d", n,
                   (int)p.n_ctx);
  if (p.max_chunks > 0 && n_chunks > p.max_chunks) n_chunks = p.max_chunks;
  if (n_chunks > INT32_MAX) n_chunks = INT32_MAX;
  collector col = {.process_output = p.process_output};
  nc_code rc = run_chunks(model, tokens, n, &p, (int32_t)n_chunks, &col,
                          progress, arg, err);
  nc_imatrix_stat *st = NULL;
  if (!rc && col.n == 0)
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "imatrix: the model ran no matmul this collects ('blk.' "
                 "weights)");
  if (!rc && !(st = malloc((size_t)col.n * sizeof *st)))
    rc = nc_fail(err, NC_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; !rc && i < col.n; i++) {
    const stat_entry *e = &col.e[i];
    for (int64_t j = 0; j < e->ne0 * e->n_mat; j++)
      if (!isfinite(e->sums[j]))
        rc = nc_fail(err, NC_ERR_INTERNAL,
                     "imatrix: the sums of '%s' are not finite (the model "
                     "overflowed on this text)",
                     e->name);
    st[i] = (nc_imatrix_stat){e->name, e->sums, e->counts, e->ne0, e->n_mat};
  }
  const char *ds = p.dataset ? p.dataset : "";
  if (!rc)
    rc = nc_imatrix_save(out_path, st, col.n, &ds, 1, (uint32_t)n_chunks,
                         (uint32_t)p.n_ctx, err);
  free(st);
  for (int64_t i = 0; i < col.n; i++) {
    free(col.e[i].sums);
    free(col.e[i].counts);
  }
  free(col.e);
  return rc;
}
