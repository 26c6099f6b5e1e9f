/* spec_draft: speculative decoding's draft model (docs/SPECULATIVE.md).
 *
 * A second model with the model's vocabulary, with its own paged KV cache
 * (as large as the engine's) and context. For a completion that drafts,
 * its draft sequence is first brought up to the completion's tokens (the
 * prompt and output it has not seen: one forward, in chunks of the batch
 * budget), then each draft is sampled from the draft model's final
 * distribution q (a copy of the completion's sampler: the same pipeline,
 * history and step, drawing from another stream so that its randomness is
 * independent of the verification's) and fed to get the next q. The q rows
 * go to the verifier (spec_verify.h), which keeps the model's distribution
 * whatever q is. After verification the draft sequence keeps the kept
 * tokens only. The completions of one request (n > 1) share the draft's
 * prompt K/V (a fork). One completion at a time: the draft's forward calls
 * are not batched across requests yet. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

struct nc_spec_draft {
  nucleus_model *model;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch batch;
  float *logits; /* one row */
  nc_sample_workspace *ws;
  int32_t *ids;
  double *probs;
};

/* The draft's vocabulary is the model's, token by token. */
static nc_code same_vocab(const nucleus_engine *e, const nucleus_model *draft,
                          nc_error *err) {
  const nc_vocab *dv = nc_model_vocab(draft);
  int32_t n = nc_vocab_n_tokens(dv), m = nc_vocab_n_tokens(e->vocab);
  for (int32_t t = 0; t < n && t < m; t++) {
    size_t la = 0, lb = 0;
    const char *a = nc_vocab_token_text(e->vocab, t, &la);
    const char *b = nc_vocab_token_text(dv, t, &lb);
    if (la != lb || (la && memcmp(a, b, la)))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "draft model: token %d is '%.*s' there and '%.*s' in the "
                     "model: the vocabularies differ",
                     t, (int)(lb > 64 ? 64 : lb), b ? b : "",
                     (int)(la > 64 ? 64 : la), a ? a : "");
  }
  int32_t nd = nc_model_hparams(draft)->n_vocab;
  if (n != m || nd != e->n_vocab)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "draft model: token %d is in %s only (%d tokens there, %d "
                   "in the model): the vocabularies differ",
                   n < m ? n : m, n < m ? "the model" : "the draft", n, m);
  return NC_OK;
}

nc_code nc_spec_draft_create(nucleus_engine *e, nucleus_model *draft,
                             nc_spec_draft **out, nc_error *err) {
  *out = NULL;
  if (!draft) return NC_OK;
  nc_code rc = same_vocab(e, draft, err);
  if (rc) return rc;
  nc_spec_draft *d = calloc(1, sizeof *d);
  if (!d) return nc_fail(err, NC_ERR_NOMEM, "out of memory (draft model)");
  d->model = draft;
  const nc_hparams *hp = nc_model_hparams(draft);
  const nc_model_weights *w = nc_model_weights_of(draft);
  bool *swa = calloc((size_t)hp->n_layer, sizeof *swa);
  if (!swa) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory (draft model)");
  for (int32_t l = 0; swa && l < hp->n_layer; l++)
    swa[l] = w->layers[l].swa && !e->params.swa_full;
  const nucleus_engine_params *p = &e->params;
  if (rc == NC_OK)
    rc = nc_kv_cache_create_swa(
        nc_hp_kv_shape(hp), nc_model_kv_types(draft), swa,
        (p->kv_cache_tokens + p->kv_block_tokens - 1) / p->kv_block_tokens,
        p->kv_block_tokens, 2 * p->max_running + 8, p->max_batch_tokens, &d->kv,
        err);
  free(swa);
  if (rc == NC_OK)
    rc = nc_context_create(draft, d->kv, p->max_batch_tokens, &d->ctx, err);
  if (rc == NC_OK) nc_context_set_n_ctx(d->ctx, p->n_ctx);
  if (rc == NC_OK) rc = nc_batch_init(&d->batch, p->max_batch_tokens, err);
  if (rc == NC_OK) rc = nc_sample_workspace_create(e->n_vocab, &d->ws, err);
  if (rc == NC_OK)
    nc_sample_workspace_set_simd(d->ws, nc_model_kernels(draft)->sampler_simd);
  if (rc == NC_OK) {
    d->logits = malloc((size_t)e->n_vocab * sizeof *d->logits);
    d->ids = malloc((size_t)e->n_vocab * sizeof *d->ids);
    d->probs = malloc((size_t)e->n_vocab * sizeof *d->probs);
    if (!d->logits || !d->ids || !d->probs)
      rc = nc_fail(err, NC_ERR_NOMEM, "out of memory (draft model)");
  }
  if (rc != NC_OK) {
    nc_spec_draft_free(d);
    return rc;
  }
  *out = d;
  return NC_OK;
}

void nc_spec_draft_free(nc_spec_draft *d) {
  if (!d) return;
  nc_sample_workspace_free(d->ws);
  free(d->logits);
  free(d->ids);
  free(d->probs);
  nc_batch_free(&d->batch);
  nc_context_free(d->ctx);
  nc_kv_cache_free(d->kv);
  free(d);
}

void nc_spec_draft_release(nucleus_engine *e, completion *c) {
  if (e->draft && c->spec.draft_seq >= 0)
    nc_kv_seq_free(e->draft->kv, c->spec.draft_seq);
  c->spec.draft_seq = -1;
}

void nc_spec_draft_truncate(nucleus_engine *e, completion *c, int32_t len) {
  if (!e->draft || c->spec.draft_seq < 0) return;
  if (nc_kv_seq_len(e->draft->kv, c->spec.draft_seq) > len)
    nc_kv_seq_truncate(e->draft->kv, c->spec.draft_seq, len);
}

/* Feeds tokens[0..n) at positions from pos (the last row with logits, into
 * d->logits); false when the draft's pool is short or the forward fails. */
static bool feed(nc_spec_draft *d, int32_t seq, const int32_t *tokens,
                 int32_t n, int32_t pos, int32_t n_prompt) {
  while (n > 0) {
    int32_t chunk = n < d->batch.capacity ? n : d->batch.capacity;
    if (nc_kv_seq_reserve(d->kv, seq, pos + chunk, NULL) != NC_OK) return false;
    nc_batch_clear(&d->batch);
    for (int32_t i = 0; i < chunk; i++)
      nc_batch_add_prompt(&d->batch, tokens[i], pos + i, seq,
                          i == n - 1 ? NC_LOGITS_LAST : NC_LOGITS_NONE,
                          n_prompt);
    if (nc_context_forward(d->ctx, &d->batch, d->logits, NULL) != NC_OK)
      return false;
    tokens += chunk, pos += chunk, n -= chunk;
  }
  return true;
}

/* A new draft sequence for c: a fork of a sibling's (n > 1) cut to their
 * common prompt, so the prompt is computed once; else an empty one. */
static int32_t new_seq(nc_spec_draft *d, const completion *c) {
  const group *g = c->owner;
  for (int32_t i = 0; i < g->n_comps; i++) {
    const completion *o = &g->comps[i];
    if (o == c || o->spec.draft_seq < 0) continue;
    int32_t seq = nc_kv_seq_fork(d->kv, o->spec.draft_seq);
    if (seq < 0) break;
    int32_t keep = nc_kv_seq_len(d->kv, seq);
    if (keep > g->req->n_prompt)
      nc_kv_seq_truncate(d->kv, seq, g->req->n_prompt);
    return seq;
  }
  return nc_kv_seq_new(d->kv);
}

int32_t nc_spec_draft_propose(nucleus_engine *e, completion *c, int32_t max) {
  nc_spec_draft *d = e->draft;
  nc_spec_state *sp = &c->spec;
  const int32_t V = e->n_vocab, n_prompt = c->owner->req->n_prompt;
  if (!d || max <= 0) return 0;
  if (!sp->q) {
    sp->q = malloc((size_t)c->owner->req->params.speculative.draft_max *
                   (size_t)V * sizeof *sp->q);
    if (!sp->q) return 0;
  }
  if (sp->draft_seq < 0 && (sp->draft_seq = new_seq(d, c)) < 0) return 0;
  const int32_t seq = sp->draft_seq;
  int32_t have = nc_kv_seq_len(d->kv, seq);
  if (have > c->n_tokens - 1) {
    nc_kv_seq_truncate(d->kv, seq, c->n_tokens - 1);
    have = nc_kv_seq_len(d->kv, seq);
  }
  /* another stream than every completion's: independent draws */
  nc_sampler *s = NULL;
  if (nc_sampler_clone(c->sampler, nc_sampler_stream(c->sampler) | 1ull << 32,
                       &s, NULL) != NC_OK)
    return 0;
  int32_t k = 0;
  bool ok = feed(d, seq, c->tokens + have, c->n_tokens - have, have, n_prompt);
  while (ok) {
    nc_sample_row row = {.sampler = s, .logits = d->logits};
    nc_sample_result res;
    int32_t n = 0;
    if (nc_sample_distribution(d->ws, &row, d->ids, d->probs, &n, NULL) ||
        nc_sample_batch(d->ws, &row, 1, &res, NULL))
      break;
    float *q = sp->q + (size_t)k * (size_t)V;
    memset(q, 0, (size_t)V * sizeof *q);
    for (int32_t i = 0; i < n; i++)
      q[d->ids[i]] = (float)d->probs[i];
    sp->draft[k++] = res.token;
    nc_sampler_accept(s, res.token);
    if (k == max) break;
    ok = feed(d, seq, &res.token, 1, c->n_tokens - 1 + k, n_prompt);
  }
  nc_sampler_free(s);
  return k;
}
