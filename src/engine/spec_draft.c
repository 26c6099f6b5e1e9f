/* spec_draft: speculative decoding's draft model (docs/SPECULATIVE.md).
 *
 * A second model with the model's vocabulary, with its own paged KV cache
 * (as large as the engine's) and context. It drafts for every completion
 * of a step at once (nc_spec_draft_batch): each draft sequence is first
 * brought up to its completion's tokens (the prompt and output it has not
 * seen), then each draft is sampled from the draft model's final
 * distribution q (a copy of the completion's sampler: the same pipeline,
 * history and step, drawing from another stream so that its randomness is
 * independent of the verification's) and fed to get the next q. The rows
 * of all completions share each forward call: the catch-up rows packed
 * into batches of the batch budget, then one forward per draft position
 * for every completion still drafting. Each row is added in the orders
 * llama.cpp gives its position (nc_batch_add_prompt), so its logits are
 * the same bits whatever else shares the batch: a completion's drafts do
 * not depend on the other completions. The q rows go to the verifier
 * (spec_verify.h), which keeps the model's distribution whatever q is.
 * After verification the draft sequence keeps the kept tokens only. The
 * completions of one request (n > 1) share the draft's prompt K/V (a fork
 * of the first one's, once its prompt is in). Each forward call is timed
 * (CPU time, its drafts' sampling included) by its row count: a draft
 * costs the policy a call's time per row at the step's row count
 * (nc_spec_draft_ms), and the catch-up of the steps that drafted nothing
 * (the prompt, on the first draft) stays a one-time cost, timed at its own
 * count. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* One completion drafting this step. */
typedef struct draft_job {
  completion *c;
  nc_sampler *s; /* the completion's sampler, on another stream */
  int32_t max;   /* drafts wanted */
  int32_t k;     /* drafts sampled */
  bool live;     /* its next row may be fed */
  bool fresh;    /* its draft sequence was made this step */
} draft_job;

struct nc_spec_draft {
  nucleus_model *model;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch batch;
  float *logits;      /* [logit_rows, n_vocab]: one forward's logits */
  int32_t logit_rows; /* the most rows with logits in one forward */
  int32_t *row_job;   /* [logit_rows]: the job of each row with logits */
  int32_t n_row_jobs;
  draft_job *jobs; /* [max_jobs] */
  int32_t max_jobs;
  nc_sample_workspace *ws;
  int32_t *ids;
  double *probs;
  /* the forward calls' CPU time, their drafts' sampling included, by row
   * count: what a draft costs (nc_spec_draft_ms) */
  nc_spec_cost fwd;
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
    /* a running completion per row at most (more take more forwards) */
    d->logit_rows = p->max_running < p->max_batch_tokens ? p->max_running
                                                         : p->max_batch_tokens;
    d->max_jobs = e->step.max_seqs;
    d->logits =
        malloc((size_t)d->logit_rows * (size_t)e->n_vocab * sizeof *d->logits);
    d->row_job = malloc((size_t)d->logit_rows * sizeof *d->row_job);
    d->jobs = calloc((size_t)d->max_jobs, sizeof *d->jobs);
    d->ids = malloc((size_t)e->n_vocab * sizeof *d->ids);
    d->probs = malloc((size_t)e->n_vocab * sizeof *d->probs);
    if (!d->logits || !d->row_job || !d->jobs || !d->ids || !d->probs)
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
  free(d->row_job);
  free(d->jobs);
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

/* Job j's next draft from its q (a logits row of the draft): a draw from
 * q, or under the strict rule its mode (nc_spec_draft_token). */
static void sample_next(nucleus_engine *e, nc_spec_draft *d, draft_job *j,
                        const float *logits) {
  const nc_sample_row row = {.sampler = j->s, .logits = logits};
  const int32_t tok = nc_spec_draft_token(
      d->ws, &row, nc_spec_rule_of(j->c->owner), d->ids, d->probs,
      j->c->spec.q + (size_t)j->k * (size_t)e->n_vocab);
  j->live = false;
  if (tok < 0) return;
  j->c->spec.draft[j->k++] = tok;
  nc_sampler_accept(j->s, tok);
  j->live = j->k < j->max;
}

/* Runs the rows gathered so far and samples the drafts their logits give;
 * false when the forward failed (every job stops drafting). */
static bool flush(nucleus_engine *e, nc_spec_draft *d, int32_t n_jobs) {
  if (d->batch.n_tokens == 0) return true;
  const double t0 = nc_engine_cpu_ms();
  bool ok = nc_context_forward(d->ctx, &d->batch, d->logits, NULL) == NC_OK;
  e->stats.spec_draft_forwards_total++;
  for (int32_t r = 0; r < d->n_row_jobs && ok; r++)
    sample_next(e, d, &d->jobs[d->row_job[r]],
                d->logits + (size_t)r * (size_t)e->n_vocab);
  if (ok)
    nc_spec_cost_observe(&d->fwd, d->batch.n_tokens, nc_engine_cpu_ms() - t0);
  for (int32_t i = 0; i < n_jobs && !ok; i++)
    d->jobs[i].live = false;
  nc_batch_clear(&d->batch);
  d->n_row_jobs = 0;
  return ok;
}

/* Adds job ji's tokens[0..n) at positions from pos, the last one with
 * logits, running the batch whenever it is full; false when the draft's
 * pool is short for them (the job stops) or a forward failed. */
static bool feed(nucleus_engine *e, nc_spec_draft *d, int32_t n_jobs,
                 int32_t ji, const int32_t *tokens, int32_t n, int32_t pos) {
  draft_job *j = &d->jobs[ji];
  const int32_t seq = j->c->spec.draft_seq;
  const int32_t n_prompt = j->c->owner->req->n_prompt;
  while (n > 0) {
    if ((d->batch.n_tokens == d->batch.capacity ||
         d->n_row_jobs == d->logit_rows) &&
        !flush(e, d, n_jobs))
      return false;
    int32_t room = d->batch.capacity - d->batch.n_tokens;
    int32_t chunk = n < room ? n : room;
    if (nc_kv_seq_reserve(d->kv, seq, pos + chunk, NULL) != NC_OK) {
      j->live = false;
      return false;
    }
    for (int32_t i = 0; i < chunk; i++)
      nc_batch_add_prompt(&d->batch, tokens[i], pos + i, seq,
                          i == n - 1 ? NC_LOGITS_LAST : NC_LOGITS_NONE,
                          n_prompt);
    if (chunk == n) d->row_job[d->n_row_jobs++] = ji;
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

/* A sibling of job i (the same request) got its draft sequence this step,
 * its prompt not fed yet: job i waits for it, to fork it after. */
static bool waits_for_sibling(const nc_spec_draft *d, int32_t i) {
  for (int32_t o = 0; o < i; o++)
    if (d->jobs[o].fresh && d->jobs[o].c->owner == d->jobs[i].c->owner)
      return true;
  return false;
}

/* Gives job i its draft sequence (a fresh one or a fork) and feeds the
 * tokens of its completion the sequence lacks. */
static void catch_up(nucleus_engine *e, nc_spec_draft *d, int32_t n_jobs,
                     int32_t i) {
  draft_job *j = &d->jobs[i];
  completion *c = j->c;
  nc_spec_state *sp = &c->spec;
  if (sp->draft_seq < 0) {
    if ((sp->draft_seq = new_seq(d, c)) < 0) return;
    j->fresh = true;
  }
  int32_t have = nc_kv_seq_len(d->kv, sp->draft_seq);
  if (have > c->n_tokens - 1) {
    nc_kv_seq_truncate(d->kv, sp->draft_seq, c->n_tokens - 1);
    have = nc_kv_seq_len(d->kv, sp->draft_seq);
  }
  feed(e, d, n_jobs, i, c->tokens + have, c->n_tokens - have, have);
}

void nc_spec_draft_batch(nucleus_engine *e, completion *const *cs, int32_t n) {
  nc_spec_draft *d = e->draft;
  int32_t n_jobs = 0;
  for (int32_t i = 0; i < n && d; i++) {
    completion *c = cs[i];
    c->spec.n_draft = 0;
    if (n_jobs == d->max_jobs) continue;
    /* another stream than every completion's: independent draws */
    nc_sampler *s = NULL;
    if (!nc_spec_q_reserve(e, c, c->spec.draft_room) ||
        nc_sampler_clone(c->sampler, nc_sampler_stream(c->sampler) | 1ull << 32,
                         &s, NULL) != NC_OK)
      continue;
    d->jobs[n_jobs++] = (draft_job){.c = c, .s = s, .max = c->spec.draft_room};
  }
  nc_batch_clear(&d->batch);
  d->n_row_jobs = 0;
  /* the catch-up rows of all, but a request's second and later
   * completions whose first has no draft prompt yet: they fork it after
   * it ran, their rows going with the first drafts' */
  for (int32_t i = 0; i < n_jobs; i++)
    if (!waits_for_sibling(d, i)) catch_up(e, d, n_jobs, i);
  bool ok = flush(e, d, n_jobs);
  for (int32_t i = 0; i < n_jobs && ok; i++)
    if (d->jobs[i].c->spec.draft_seq < 0) catch_up(e, d, n_jobs, i);
  /* one row per completion still drafting: its last draft */
  while (ok) {
    for (int32_t i = 0; i < n_jobs; i++) {
      const draft_job *j = &d->jobs[i];
      if (j->live)
        feed(e, d, n_jobs, i, &j->c->spec.draft[j->k - 1], 1,
             j->c->n_tokens - 1 + j->k);
    }
    if (d->batch.n_tokens == 0) break;
    ok = flush(e, d, n_jobs);
  }
  for (int32_t i = 0; i < n_jobs; i++) {
    draft_job *j = &d->jobs[i];
    nc_spec_state *sp = &j->c->spec;
    sp->n_draft =
        j->k >= j->c->owner->req->params.speculative.draft_min ? j->k : 0;
    sp->draft_room = 0;
    nc_sampler_free(j->s);
  }
  for (int32_t i = 0; i < n; i++)
    cs[i]->spec.draft_room = 0;
}

double nc_spec_draft_ms(const nucleus_engine *e, int32_t rows) {
  return e->draft ? nc_spec_row_ms(&e->draft->fwd, rows) : 0;
}
