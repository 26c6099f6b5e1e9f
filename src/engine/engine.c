/* engine: requests, the step loop, stop rules, finish reasons, cancellation
 * and events.
 *
 * One engine thread owns the model context, the KV cache and the samplers.
 * Callers submit requests from any thread into the inbox (the engine's one
 * mutex); each step the engine takes new requests, applies cancellations,
 * asks the scheduler for a plan, runs one forward call over every running
 * sequence's next tokens, samples, and turns tokens into events: text
 * deltas that are never revised, finish reasons, usage and timings.
 *
 * A request's life: queued -> prefill -> decode -> finished, with exactly
 * one finish reason per completion: stop (end-of-generation token, stop
 * token id, stop string), length (max_tokens, or the context is full),
 * abort (cancelled, shutdown) or error (it can never fit in the KV pool).
 */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "engine_images.h"
#include "engine_internal.h"
#include "request_checks.h"
#include "vision/image.h"
#include "vision/mmproj.h"

/* ------------------------------------------------------------ completions */

static void completion_clear(completion *c) {
  nc_sampler_free(c->sampler);
  nc_detok_free(c->detok);
  nc_stop_matcher_free(c->stop);
  free(c->tokens);
  free(c->inspect);
  nc_grammar_matcher_free(c->grammar);
  free(c->grammar_mask);
  free(c->spec.q);
  free(c->forced);
  free(c->force_mask);
}

bool nc_engine_push_token(completion *c, int32_t tok) {
  if (c->n_tokens == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 64;
    int32_t *t = realloc(c->tokens, (size_t)cap * sizeof *t);
    if (!t) return false;
    c->tokens = t;
    c->cap = cap;
  }
  c->tokens[c->n_tokens++] = tok;
  return true;
}

static nc_code completion_init(nucleus_engine *e, group *g, completion *c,
                               int32_t index, nc_error *err) {
  const nucleus_request *r = g->req;
  c->owner = g;
  c->index = index;
  c->kv_seq = -1;
  c->spec.draft_seq = -1;
  c->spec.shadow = -1;
  nc_spec_accept_init(&c->spec.accept);
  nc_spec_accept_clear(&c->spec.top);
  for (int32_t i = 0; i < NC_NGRAM_CLASSES; i++)
    nc_spec_accept_clear(&c->spec.by_match[i]);
  c->spec.match_class = -1;
  const nucleus_request_params *p = &r->params;
  if (p->beam_width > 1) { /* a beam: tokens and KV only */
    for (int32_t i = 0; i < r->n_prompt; i++)
      if (!nc_engine_push_token(c, r->prompt[i]))
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    return NC_OK;
  }
  nc_code rc = nc_sampler_create(&p->sampling, e->n_vocab, r->seed,
                                 (uint64_t)index, &c->sampler, err);
  if (rc != NC_OK) return rc;
  nc_sampler_accept_prompt(c->sampler, r->prompt, (size_t)r->n_prompt);
  if (p->sampling.inspect_top_n > 0) {
    c->inspect = malloc(sizeof *c->inspect);
    if (!c->inspect) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  c->detok = nc_detok_create(e->vocab, p->skip_special_tokens);
  if (!c->detok) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  rc = nc_stop_matcher_create(p->stop, p->n_stop, p->include_stop_str_in_output,
                              &c->stop, err);
  if (rc != NC_OK) return rc;
  for (int32_t i = 0; i < r->n_prompt; i++)
    if (!nc_engine_push_token(c, r->prompt[i]))
      return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  nc_stop_matcher_arm(c->stop, p->min_tokens <= 0);
  nc_reasoning_track_init(&c->think, &p->reasoning);
  if (p->grammar) {
    if (!e->grammar_vocab &&
        (rc = nc_grammar_vocab_from(e->vocab, &e->grammar_vocab, err)) != NC_OK)
      return rc;
    if (p->reasoning.answer_grammar) {
      c->grammar_after = true; /* started by answer_grammar_start */
    } else if (p->grammar_trigger) {
      c->grammar_waiting = true; /* started by lazy_grammar_push */
    } else {
      rc = nc_grammar_matcher_create(nc_grammar_handle_get(p->grammar),
                                     &c->grammar, err);
      if (rc != NC_OK) return rc;
    }
    c->grammar_mask =
        malloc(((size_t)e->n_vocab + 63) / 64 * sizeof *c->grammar_mask);
    if (!c->grammar_mask) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  return NC_OK;
}

/* A lazy grammar waiting for its trigger: looks for it in the output so
 * far (the tail kept from earlier pieces, then this piece). Found, the
 * grammar starts at the trigger's first byte and takes the bytes from there
 * on (*done: it is already complete); output that cannot continue it there
 * leaves the completion free. Returns false when out of memory. */
static bool lazy_grammar_push(completion *c, const nucleus_request_params *p,
                              const char *piece, size_t n, bool *done) {
  const size_t tl = strlen(p->grammar_trigger);
  size_t all = c->grammar_tail_len + n;
  char *buf = malloc(all ? all : 1);
  if (!buf) return false;
  memcpy(buf, c->grammar_tail, c->grammar_tail_len);
  if (n) memcpy(buf + c->grammar_tail_len, piece, n);
  const char *hit = all >= tl ? memmem(buf, all, p->grammar_trigger, tl) : NULL;
  if (hit) {
    c->grammar_waiting = false;
    nc_error gerr = {0};
    bool ok = false;
    nc_grammar_matcher *m = NULL;
    if (nc_grammar_matcher_create(nc_grammar_handle_get(p->grammar), &m,
                                  &gerr) == NC_OK &&
        nc_grammar_matcher_accept(m, hit, (size_t)(buf + all - hit), &ok,
                                  &gerr) == NC_OK &&
        ok) {
      c->grammar = m;
      *done = nc_grammar_matcher_complete(m);
    } else {
      nc_grammar_matcher_free(m);
    }
  } else { /* keep what may be the trigger's start */
    size_t keep = all < tl - 1 ? all : tl - 1;
    memcpy(c->grammar_tail, buf + all - keep, keep);
    c->grammar_tail_len = keep;
  }
  free(buf);
  return true;
}

/* The thinking block closed and the answer grammar starts at bytes[0, n),
 * the rest of the closing token's text: lazily (grammar_trigger: *gp and
 * *gn become what the waiting grammar looks at), or at once (bytes it
 * cannot take leave the completion free, as a lazy grammar's do). */
static void answer_grammar_start(completion *c, const nucleus_request_params *p,
                                 const char *bytes, size_t n, bool *done,
                                 const char **gp, size_t *gn) {
  c->grammar_after = false;
  *gp = bytes;
  *gn = n;
  if (p->grammar_trigger) {
    c->grammar_waiting = true;
    return;
  }
  nc_error gerr = {0};
  bool ok = false;
  nc_grammar_matcher *m = NULL;
  if (nc_grammar_matcher_create(nc_grammar_handle_get(p->grammar), &m, &gerr) ==
          NC_OK &&
      (n == 0 || nc_grammar_matcher_accept(m, bytes, n, &ok, &gerr) == NC_OK) &&
      (n == 0 || ok)) {
    c->grammar = m;
    *done = nc_grammar_matcher_complete(m);
  } else {
    nc_grammar_matcher_free(m);
  }
}

/* The budget is spent: the tokens of the close marker (less what of it
 * the block already ends with), forced one per step from now on. */
static nc_code begin_forcing(nucleus_engine *e, completion *c,
                             const nucleus_request_params *p, nc_error *err) {
  const nucleus_reasoning_params *r = &p->reasoning;
  const char *text = r->force_close ? r->force_close : r->close;
  size_t skip = nc_reasoning_track_partial_close(&c->think);
  if (strncmp(text, r->close, strlen(r->close))) skip = 0;
  c->force_spent = true;
  int32_t *ids = NULL;
  size_t n = 0;
  nc_code rc = nc_tokenize(e->vocab, text + skip, strlen(text + skip), false,
                           true, &ids, &n, err);
  if (rc != NC_OK) return rc;
  c->forced = ids;
  c->n_forced = n;
  c->forced_at = 0;
  if (!c->force_mask)
    c->force_mask = malloc(((size_t)e->n_vocab + 63) / 64 * sizeof(uint64_t));
  if (!c->force_mask) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  return NC_OK;
}

static void end_forcing(completion *c) {
  free(c->forced);
  c->forced = NULL;
  c->n_forced = c->forced_at = 0;
}

/* This step's forced token of a completion, or -1: the budget's close
 * marker, begun when the block has had its budget of tokens. */
static int32_t forced_token(nucleus_engine *e, group *g, completion *c) {
  const nucleus_request_params *p = &g->req->params;
  if (!c->forced && !c->force_spent && p->reasoning.budget >= 0 &&
      c->think.phase == NC_THINK_INSIDE &&
      c->think.inside >= p->reasoning.budget) {
    nc_error err = {0};
    if (begin_forcing(e, c, p, &err) != NC_OK) {
      const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &err);
      nc_engine_finish(e, g, c, &f);
      return -1;
    }
  }
  return c->forced && c->forced_at < c->n_forced ? c->forced[c->forced_at] : -1;
}

/* ----------------------------------------------------------------- groups */

static void group_free(group *g) {
  if (!g) return;
  for (int32_t i = 0; i < g->n_comps; i++)
    completion_clear(&g->comps[i]);
  nc_beam_group_free(g);
  nc_image_jobs_drop(g);
  for (size_t i = 0; g->image_embd && i < g->req->params.n_images; i++)
    free(g->image_embd[i]);
  free(g->image_embd);
  free(g->comps);
  free(g->suppress);
  free(g);
}

/* The completions (KV sequences) a request runs: its n, or its beams. */
static int32_t request_n_comps(const nucleus_request *r) {
  return r->params.beam_width > 1 ? r->params.beam_width
         : r->params.n > 0        ? r->params.n
                                  : 1;
}

static nc_code group_create(nucleus_engine *e, nucleus_request *r, group **out,
                            nc_error *err) {
  *out = NULL;
  group *g = calloc(1, sizeof *g);
  if (!g) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  g->req = r;
  g->n_comps = request_n_comps(r);
  g->n_active = 1;
  g->comps = calloc((size_t)g->n_comps, sizeof *g->comps);
  size_t n_sup = (size_t)e->n_eog + r->params.n_stop_token_ids;
  g->suppress = malloc((n_sup ? n_sup : 1) * sizeof *g->suppress);
  if (r->params.n_images)
    g->image_embd = calloc(r->params.n_images, sizeof *g->image_embd);
  if (!g->comps || !g->suppress || (r->params.n_images && !g->image_embd)) {
    group_free(g);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  memcpy(g->suppress, e->eog_ids, (size_t)e->n_eog * sizeof *g->suppress);
  if (r->params.n_stop_token_ids)
    memcpy(g->suppress + e->n_eog, r->params.stop_token_ids,
           r->params.n_stop_token_ids * sizeof *g->suppress);
  g->n_suppress = (int32_t)n_sup;
  const char *salt = r->params.cache_salt;
  g->salt = nc_kv_salt_hash(salt, salt ? strlen(salt) : 0);
  for (int32_t i = 0; i < g->n_comps; i++) {
    nc_code rc = completion_init(e, g, &g->comps[i], i, err);
    if (rc != NC_OK) {
      group_free(g);
      return rc;
    }
  }
  if (r->params.beam_width > 1) {
    nc_code rc = nc_beam_group_init(e, g, err);
    if (rc != NC_OK) {
      group_free(g);
      return rc;
    }
  }
  *out = g;
  return NC_OK;
}

static void emit(group *g, const nucleus_event *ev) {
  nc_request_push_event(g->req, ev);
}

static nucleus_timings group_timings(const group *g, double now) {
  nucleus_timings t = {0};
  if (g->t_first_token_ms > 0) {
    t.time_to_first_token_ms = g->t_first_token_ms - g->req->t_submit_ms;
    double prefill = g->t_first_token_ms - g->t_admit_ms;
    /* the tokens computed: a prefix hit's were not */
    if (prefill > 0)
      t.prompt_tokens_per_s =
          (g->req->n_prompt - g->cached_tokens) / (prefill / 1e3);
    double gen = now - g->t_first_token_ms;
    if (gen > 0 && g->completion_tokens > 1)
      t.generation_tokens_per_s = (g->completion_tokens - 1) / (gen / 1e3);
  }
  return t;
}

void nc_engine_release_kv(nucleus_engine *e, completion *c) {
  if (c->kv_seq >= 0) nc_kv_seq_free(e->kv, c->kv_seq);
  c->kv_seq = -1;
  nc_spec_draft_release(e, c);
}

void nc_engine_emit_finish(group *g, int32_t index, int32_t n_generated,
                           const nc_finish *f) {
  nucleus_event ev = {0};
  ev.kind = NUCLEUS_EVENT_FINISH;
  ev.index = index;
  ev.token = -1;
  ev.text = f->text ? f->text : "";
  ev.text_len = f->text ? f->text_len : 0;
  ev.finish_reason = f->reason;
  ev.stop_string = f->stop_string;
  ev.stop_token = f->stop_token;
  if (f->error) ev.error = *f->error;
  ev.error_in_grammar = f->error && f->grammar_error;
  ev.usage.prompt_tokens = g->req->n_prompt;
  ev.usage.completion_tokens = n_generated;
  ev.usage.cached_tokens = g->cached_tokens;
  ev.usage.draft_tokens =
      g->beam ? g->beam_drafted : g->comps[index].spec.drafted;
  ev.usage.accepted_draft_tokens =
      g->beam ? g->beam_accepted : g->comps[index].spec.accepted;
  ev.usage.reasoning_tokens = g->beam ? 0 : g->comps[index].think.tokens;
  ev.timings = group_timings(g, nc_now_ms());
  ev.seed = g->req->seed;
  ev.inspect = f->inspect;
  emit(g, &ev);
}

/* Ends one completion: the one way every completion finishes. */
static void finish_completion(nucleus_engine *e, group *g, completion *c,
                              const nc_finish *f) {
  c->finished = true;
  g->n_finished++;
  nc_engine_release_kv(e, c);
  nc_engine_emit_finish(g, c->index, c->n_generated, f);
}

void nc_engine_finish_group(nucleus_engine *e, group *g,
                            nucleus_finish_reason reason,
                            const nc_error *error) {
  const nc_finish f = nc_finish_of(reason, error);
  if (g->beam) { /* the beams end together: one event per returned rank */
    for (int32_t i = 0; i < g->n_comps; i++) {
      nc_engine_release_kv(e, &g->comps[i]);
      g->comps[i].finished = true;
    }
    g->n_finished = g->n_comps;
    int32_t n_ret = g->req->params.n > 0 ? g->req->params.n : 1;
    for (int32_t i = 0; i < n_ret; i++)
      nc_engine_emit_finish(g, i, 0, &f);
    return;
  }
  for (int32_t i = 0; i < g->n_comps; i++) {
    completion *c = &g->comps[i];
    if (!c->finished) finish_completion(e, g, c, &f);
  }
}

static void emit_done(group *g) {
  nucleus_event ev = {0};
  ev.kind = NUCLEUS_EVENT_DONE;
  ev.token = -1;
  ev.text = "";
  ev.usage.prompt_tokens = g->req->n_prompt;
  ev.usage.completion_tokens = g->completion_tokens;
  ev.usage.cached_tokens = g->cached_tokens;
  for (int32_t i = 0; !g->beam && i < g->n_comps; i++) {
    ev.usage.draft_tokens += g->comps[i].spec.drafted;
    ev.usage.accepted_draft_tokens += g->comps[i].spec.accepted;
    ev.usage.reasoning_tokens += g->comps[i].think.tokens;
  }
  if (g->beam) {
    ev.usage.draft_tokens = g->beam_drafted;
    ev.usage.accepted_draft_tokens = g->beam_accepted;
  }
  ev.timings = group_timings(g, nc_now_ms());
  ev.seed = g->req->seed;
  emit(g, &ev);
}

/* ------------------------------------------------------------ the tokens */

static bool is_stop_token(const group *g, int32_t tok) {
  const nucleus_request_params *p = &g->req->params;
  for (size_t i = 0; i < p->n_stop_token_ids; i++)
    if (p->stop_token_ids[i] == tok) return true;
  return false;
}

/* Flushes the detokenizer through the stop matcher at the end of a
 * completion; the text goes into buf (caller frees). */
static char *final_text(completion *c, size_t *len, int *stop_hit) {
  const char *piece, *out;
  size_t piece_len, out_len;
  nc_detok_flush(c->detok, &piece, &piece_len);
  char *buf = malloc(piece_len + NUCLEUS_MAX_STOP_STRING_BYTES + 8);
  if (!buf) {
    *len = 0;
    return NULL;
  }
  *stop_hit = nc_stop_matcher_push(c->stop, piece, piece_len, &out, &out_len);
  memcpy(buf, out, out_len);
  *len = out_len;
  if (*stop_hit < 0) {
    nc_stop_matcher_flush(c->stop, &out, &out_len);
    memcpy(buf + *len, out, out_len);
    *len += out_len;
  }
  return buf;
}

/* Ends a completion after its last token. The text the detokenizer and the
 * stop matcher still hold rides on the FINISH event (unless a stop string
 * matched in the stream already: hit >= 0). The reason is stop when an end
 * token (end_tok >= 0, its text not part of the output) or a stop string
 * ended it, else length. */
static void end_output(nucleus_engine *e, group *g, completion *c,
                       int32_t end_tok, int hit, bool grammar_done) {
  size_t len = 0;
  char *text = hit < 0 ? final_text(c, &len, &hit) : NULL;
  nc_finish f = nc_finish_of(end_tok >= 0 || hit >= 0 || grammar_done
                                 ? NUCLEUS_FINISH_STOP
                                 : NUCLEUS_FINISH_LENGTH,
                             NULL);
  if (hit >= 0)
    f.stop_string = nc_stop_matcher_string(c->stop, hit);
  else
    f.stop_token = end_tok;
  f.text = text;
  f.text_len = len;
  if (end_tok >= 0) f.inspect = c->inspect; /* no TOKEN event had it */
  finish_completion(e, g, c, &f);
  free(text);
}

void nc_engine_finish(nucleus_engine *e, group *g, completion *c,
                      const nc_finish *f) {
  finish_completion(e, g, c, f);
}

void nc_engine_handle_token(nucleus_engine *e, group *g, completion *c,
                            const nc_sample_result *res) {
  const nucleus_request_params *p = &g->req->params;
  int32_t tok = res->token;
  double now = nc_now_ms();
  if (g->t_first_token_ms == 0) g->t_first_token_ms = now;
  c->n_generated++;
  g->completion_tokens++;
  nc_spec_top_observe(&c->spec.top, res->p_top);
  nc_sampler_accept(c->sampler, tok);
  if (!nc_engine_push_token(c, tok)) {
    nc_error err;
    nc_fail(&err, NC_ERR_NOMEM, "out of memory");
    const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &err);
    finish_completion(e, g, c, &f);
    return;
  }

  /* An end-of-generation or stop token ends the completion; its text is
   * not part of the output. */
  bool end_token = (!p->ignore_eos && nc_vocab_is_eog(e->vocab, tok)) ||
                   is_stop_token(g, tok);
  bool grammar_done = false;
  if (c->grammar && !end_token) {
    bool ok = false;
    nc_error gerr = {0};
    nc_code rc = nc_grammar_matcher_accept_token(c->grammar, e->grammar_vocab,
                                                 tok, &ok, &gerr);
    if (rc == NC_OK && !ok)
      rc = nc_fail(&gerr, NC_ERR_INTERNAL,
                   "grammar: token %d does not fit the grammar", (int)tok);
    if (rc != NC_OK) {
      nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &gerr);
      f.grammar_error = true;
      finish_completion(e, g, c, &f);
      return;
    }
    grammar_done = nc_grammar_matcher_complete(c->grammar);
  }
  int hit = -1; /* a stop string matched in the stream */
  if (!end_token) {
    if (c->n_generated >= p->min_tokens) nc_stop_matcher_arm(c->stop, true);
    const char *piece, *released;
    size_t piece_len, released_len;
    nc_detok_push(c->detok, tok, &piece, &piece_len);
    const char *gp = piece; /* what a waiting grammar looks at */
    size_t gn = piece_len;
    if (c->forced && c->forced_at < c->n_forced &&
        tok == c->forced[c->forced_at] && ++c->forced_at == c->n_forced)
      end_forcing(c);
    size_t answer_at = nc_reasoning_track_push(&c->think, piece, piece_len);
    /* (a forced close goes on to its end: harmony's final header) */
    if (answer_at != SIZE_MAX && c->grammar_after)
      answer_grammar_start(c, p, piece + answer_at, piece_len - answer_at,
                           &grammar_done, &gp, &gn);
    if (c->grammar_waiting && !lazy_grammar_push(c, p, gp, gn, &grammar_done)) {
      nc_error err;
      nc_fail(&err, NC_ERR_NOMEM, "out of memory");
      const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &err);
      finish_completion(e, g, c, &f);
      return;
    }
    hit = nc_stop_matcher_push(c->stop, piece, piece_len, &released,
                               &released_len);

    nucleus_event ev = {0};
    ev.kind = NUCLEUS_EVENT_TOKEN;
    ev.index = c->index;
    ev.token = tok;
    ev.text = released;
    ev.text_len = released_len;
    ev.stop_token = -1;
    if (p->sampling.logprobs || p->sampling.top_logprobs > 0) {
      ev.logprob = res->logprob;
      ev.top_logprobs = res->top;
      ev.n_top_logprobs = res->n_top;
    }
    ev.inspect = c->inspect;
    ev.seed = g->req->seed;
    emit(g, &ev);
  }

  bool budget = p->max_tokens >= 0 && c->n_generated >= p->max_tokens;
  bool ctx_full = c->n_tokens >= e->params.n_ctx;
  if (end_token || hit >= 0 || budget || ctx_full || grammar_done)
    end_output(e, g, c, end_token ? tok : -1, hit, grammar_done);
}

/* ------------------------------------------------------------- the step */

/* Bounded per token (NC_GRAMMAR_MAX_MASK_WORK: past it this completion
 * ends with the error, the batch goes on) and stopped early when the
 * request is cancelled (finish abort). */
bool nc_engine_grammar_mask(nucleus_engine *e, group *g, completion *c) {
  nc_error gerr = {0};
  memset(c->grammar_mask, 0,
         ((size_t)e->n_vocab + 63) / 64 * sizeof *c->grammar_mask);
  nc_grammar_matcher_set_cancel(c->grammar, &g->req->cancelled);
  nc_code rc = nc_grammar_matcher_mask(c->grammar, e->grammar_vocab,
                                       c->grammar_mask, &gerr);
  if (rc == NC_OK) return true;
  nc_finish f = rc == NC_ERR_CANCELLED
                    ? nc_finish_of(NUCLEUS_FINISH_ABORT, NULL)
                    : nc_finish_of(NUCLEUS_FINISH_ERROR, &gerr);
  f.grammar_error = rc != NC_ERR_CANCELLED;
  finish_completion(e, g, c, &f);
  return false;
}

/* The grammar masks of a step's sampling rows, spread over the model's
 * threads (each completion's matcher is its own; the grammar and the
 * vocabulary's trie are only read): a thread takes the next row with a
 * grammar until none is left. */
typedef struct mask_work {
  nucleus_engine *e;
  int32_t n;
  atomic_int next;
} mask_work;

static void mask_rows(void *arg, int ith, int nth) {
  (void)ith, (void)nth;
  mask_work *w = arg;
  nucleus_engine *e = w->e;
  for (;;) {
    int32_t s = atomic_fetch_add(&w->next, 1);
    if (s >= w->n) return;
    completion *c = e->step.sample_comp[s];
    if (!c->grammar) continue;
    memset(c->grammar_mask, 0,
           ((size_t)e->n_vocab + 63) / 64 * sizeof *c->grammar_mask);
    nc_grammar_matcher_set_cancel(c->grammar, &c->owner->req->cancelled);
    e->step.mask_rc[s] = nc_grammar_matcher_mask(
        c->grammar, e->grammar_vocab, c->grammar_mask, &e->step.mask_err[s]);
  }
}

/* Computes the masks of rows [0, n) and drops the rows whose mask failed
 * (each such completion ends, in row order, as nc_engine_grammar_mask
 * ends it); returns the rows left. */
static int32_t grammar_masks(nucleus_engine *e, int32_t n) {
  int32_t with = 0;
  for (int32_t s = 0; s < n; s++) {
    e->step.mask_rc[s] = NC_OK;
    with += e->step.sample_comp[s]->grammar != NULL;
  }
  if (!with) return n;
  mask_work w = {.e = e, .n = n};
  atomic_init(&w.next, 0);
  if (with > 1)
    nc_threadpool_run(nc_context_threadpool(e->ctx), mask_rows, &w);
  else
    mask_rows(&w, 0, 1);
  int32_t kept = 0;
  for (int32_t s = 0; s < n; s++) {
    completion *c = e->step.sample_comp[s];
    nc_code rc = e->step.mask_rc[s];
    if (rc != NC_OK) {
      nc_finish f =
          rc == NC_ERR_CANCELLED
              ? nc_finish_of(NUCLEUS_FINISH_ABORT, NULL)
              : nc_finish_of(NUCLEUS_FINISH_ERROR, &e->step.mask_err[s]);
      f.grammar_error = rc != NC_ERR_CANCELLED;
      finish_completion(e, c->owner, c, &f);
      continue;
    }
    e->step.rows[kept] = e->step.rows[s];
    e->step.sample_comp[kept++] = c;
  }
  return kept;
}

/* The rows of rows [0, n) with a forced token (the budget's close marker)
 * allow that token alone (and the grammar, if one is active, allows it
 * too: else the grammar's mask stays); returns the rows left (a
 * completion whose forcing failed ends). */
static int32_t force_masks(nucleus_engine *e, int32_t n) {
  const size_t words = ((size_t)e->n_vocab + 63) / 64;
  int32_t kept = 0;
  for (int32_t s = 0; s < n; s++) {
    completion *c = e->step.sample_comp[s];
    int32_t tok = forced_token(e, c->owner, c);
    if (c->finished) continue;
    if (tok >= 0) {
      const uint64_t bit = 1ull << (tok % 64);
      if (!c->grammar || (c->grammar_mask[tok / 64] & bit)) {
        memset(c->force_mask, 0, words * sizeof *c->force_mask);
        c->force_mask[tok / 64] = bit;
        e->step.rows[s].grammar = c->force_mask;
      }
    }
    e->step.rows[kept] = e->step.rows[s];
    e->step.sample_comp[kept++] = c;
  }
  return kept;
}

/* Batch rows and KV blocks this step's plan leaves over, for drafts: the
 * batch's capacity less the planned tokens (*planned), the free blocks less
 * what the planned tokens need (without sharing: an upper bound). */
static void spare_room(nucleus_engine *e, const nc_sched_plan *plan,
                       int32_t *rows, int64_t *blocks, int32_t *planned_out) {
  int32_t planned = 0;
  int64_t needed = 0;
  for (int32_t i = 0; i < plan->n_items; i++) {
    nc_sched_item it = plan->items[i];
    completion *c = e->step.seq_comp[it.seq];
    if (c->finished || c->kv_seq < 0) continue;
    int32_t kv_len = nc_kv_seq_len(e->kv, c->kv_seq);
    int32_t n = it.n_tokens;
    if (kv_len + n > c->n_tokens) n = c->n_tokens - kv_len;
    if (n <= 0) continue;
    planned += n;
    needed += nc_kv_blocks_needed(e->kv, c->kv_seq, kv_len + n);
  }
  *rows = e->batch.capacity - planned;
  *blocks = nc_kv_blocks_free(e->kv) - needed;
  *planned_out = planned;
}

/* The process's CPU time (every thread's): a step's cost, which other
 * processes taking the cores do not inflate as they do its wall time. */
double nc_engine_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* What k drafts cost against a decode step (cost[k], k up to
 * NUCLEUS_MAX_DRAFT), in a step that feeds `planned` rows before drafts:
 * the engine params' fixed row cost, or what its timed decode steps give
 * (spec_policy.h); model_cost / mtp_cost: the same plus the draft model's /
 * MTP head's own time per draft, measured (none with a fixed row cost, so
 * that tests' draft counts do not follow the machine's timings); the draft
 * model's with its verification's sampling per row too (rejection sampling
 * against q: at T > 0 a draft's row costs that much more than the forward's
 * share, which decided drafts that did not pay at T = 1.5 and 2). */
static void draft_costs(const nucleus_engine *e, int32_t planned, double *cost,
                        double *model_cost, double *mtp_cost) {
  if (e->params.spec_row_cost > 0)
    nc_spec_linear_costs(e->params.spec_row_cost, NUCLEUS_MAX_DRAFT, cost);
  else
    nc_spec_measured_costs(&e->spec_cost, planned, NUCLEUS_MAX_DRAFT, cost);
  memcpy(model_cost, cost, sizeof *cost * (NUCLEUS_MAX_DRAFT + 1));
  memcpy(mtp_cost, cost, sizeof *cost * (NUCLEUS_MAX_DRAFT + 1));
  const double row = nc_spec_row_ms(&e->spec_cost, planned);
  if (e->params.spec_row_cost > 0 || !(row > 0)) return;
  nc_spec_add_drafter_costs((nc_spec_draft_ms(e, planned) + e->verify_cost.ms) /
                                row,
                            NUCLEUS_MAX_DRAFT, model_cost);
  nc_spec_add_drafter_costs(e->mtp_cost.ms / row, NUCLEUS_MAX_DRAFT, mtp_cost);
}

static bool grow(void **arr, int32_t *cap, int32_t need, size_t elem) {
  if (need <= *cap) return true;
  int32_t c = *cap ? *cap : 16;
  while (c < need)
    c *= 2;
  void *p = realloc(*arr, (size_t)c * elem);
  if (!p) return false;
  *arr = p;
  *cap = c;
  return true;
}

/* Takes new requests, in arrival order while the step arrays hold them (the
 * rest wait in the inbox); false when shutting down. */
static bool take_inbox(nucleus_engine *e) {
  engine_step *st = &e->step;
  pthread_mutex_lock(&e->mu);
  while (!e->stepped && !e->shutdown && e->n_inbox == 0 && e->n_groups == 0)
    pthread_cond_wait(&e->cv, &e->mu);
  bool shutdown = e->shutdown;
  int32_t n_in = 0;
  while (n_in < e->n_inbox && e->n_groups + n_in < st->max_groups) {
    int32_t n = request_n_comps(e->inbox[n_in]);
    if (e->n_seqs_held + n > st->max_seqs) break;
    e->n_seqs_held += n;
    st->taken[n_in] = e->inbox[n_in];
    n_in++;
  }
  e->n_inbox -= n_in;
  if (n_in > 0) /* (the inbox is NULL until the first submit) */
    memmove(e->inbox, e->inbox + n_in, (size_t)e->n_inbox * sizeof *e->inbox);
  pthread_mutex_unlock(&e->mu);

  for (int32_t i = 0; i < n_in; i++) {
    nucleus_request *r = st->taken[i];
    group *g = NULL;
    nc_error err = {0};
    if (group_create(e, r, &g, &err) != NC_OK) {
      e->n_seqs_held -= request_n_comps(r);
      nucleus_event ev = {0};
      ev.kind = NUCLEUS_EVENT_FINISH;
      ev.finish_reason = NUCLEUS_FINISH_ERROR;
      ev.error = err;
      ev.stop_token = -1;
      ev.token = -1;
      nc_request_push_event(r, &ev);
      ev.kind = NUCLEUS_EVENT_DONE;
      nc_request_push_event(r, &ev);
      nc_request_unref(r);
      continue;
    }
    e->groups[e->n_groups++] = g;
  }
  return !shutdown;
}

static void apply_cancellations(nucleus_engine *e) {
  for (int32_t i = 0; i < e->n_groups; i++) {
    group *g = e->groups[i];
    if (atomic_load(&g->req->cancelled) && g->n_finished < g->n_comps)
      nc_engine_finish_group(e, g, NUCLEUS_FINISH_ABORT, NULL);
  }
}

/* Drops groups whose completions have all finished. */
static void retire_groups(nucleus_engine *e) {
  int32_t w = 0;
  for (int32_t i = 0; i < e->n_groups; i++) {
    group *g = e->groups[i];
    if (g->n_finished < g->n_comps) {
      e->groups[w++] = g;
      continue;
    }
    emit_done(g);
    nucleus_request *r = g->req;
    e->n_seqs_held -= g->n_comps;
    group_free(g);
    nc_request_unref(r);
  }
  e->n_groups = w;
}

/* Whether K/V go through the prefix cache: with the reuse orders a
 * position's K/V depend only on the tokens up to it (batch.h,
 * nc_batch_add_reusable); with llama.cpp's they depend on the prompt's
 * length, so nothing is shared across requests. */
static bool prefix_cache_on(const nucleus_engine *e) {
  return !e->params.no_prefix_cache &&
         (e->params.row_orders == NUCLEUS_ROW_ORDERS_REUSE ||
          e->params.row_orders == NUCLEUS_ROW_ORDERS_SPLIT);
}

/* Appends a row of the group's sequence seq in the engine's row orders:
 * llama.cpp's for its place in the request, or the reuse orders' one. */
static void add_row(nucleus_engine *e, const group *g, int32_t token,
                    int32_t pos, int32_t seq, bool logits) {
  if (e->params.row_orders == NUCLEUS_ROW_ORDERS_LLAMA)
    nc_batch_add_prompt(&e->batch, token, pos, seq,
                        logits ? NC_LOGITS_LAST : NC_LOGITS_NONE,
                        g->req->n_prompt);
  else if (e->params.row_orders == NUCLEUS_ROW_ORDERS_SPLIT)
    nc_batch_add_reusable_split(&e->batch, token, pos, seq, logits);
  else
    nc_batch_add_reusable(&e->batch, token, pos, seq, logits);
  const nucleus_request *r = g->req;
  if (r->params.n_images && nc_model_hparams(e->model)->mrope) {
    int32_t rp[4];
    nc_mrope_row_pos(e->params.mmproj, r->params.images, r->image_at,
                     r->image_rows, r->params.n_images, pos, rp);
    nc_batch_set_rope_pos(&e->batch, e->batch.n_tokens - 1, rp);
  }
}

/* Blocks that return to the pool if the group is preempted: those no other
 * group holds (its forks share within it, prefix hits across groups). */
static int64_t group_blocks_held(nucleus_engine *e, const group *g) {
  int32_t n = 0;
  for (int32_t i = 0; i < g->n_active; i++) {
    const completion *c = &g->comps[i];
    if (!c->finished && c->kv_seq >= 0) e->step.seq_ids[n++] = c->kv_seq;
  }
  return nc_kv_blocks_exclusive(e->kv, e->step.seq_ids, n);
}

/* A new sequence takes the longest cached run of full blocks prefixing its
 * tokens; the request's first admission counts its prompt's hit. */
static void attach_prefix(nucleus_engine *e, group *g, completion *c) {
  int32_t hit = 0;
  if (prefix_cache_on(e))
    hit = nc_kv_seq_attach_prefix(e->kv, c->kv_seq, g->salt, c->tokens,
                                  c->n_tokens);
  if (g->queried) return;
  g->queried = true;
  g->cached_tokens = hit < g->req->n_prompt ? hit : g->req->n_prompt;
  if (!prefix_cache_on(e)) return;
  e->stats.prefix_cache_queried_tokens_total += g->req->n_prompt;
  e->stats.prefix_cache_hit_tokens_total += g->cached_tokens;
}

/* Builds the scheduler's view; returns the number of seqs. */
static int32_t build_sched_state(nucleus_engine *e) {
  int32_t n_seqs = 0;
  int32_t bt = nc_kv_block_tokens(e->kv);
  /* Waiting requests past the first max_running cannot be admitted this
   * step: they are not looked up in the prefix cache. */
  int32_t peeks = prefix_cache_on(e) ? e->params.max_running : 0;
  for (int32_t i = 0; i < e->n_groups; i++) {
    group *g = e->groups[i];
    nc_sched_group *sg = &e->step.sg[i];
    sg->running = g->running;
    sg->admit_order = g->admit_order;
    sg->blocks_held = g->running ? group_blocks_held(e, g) : 0;
    sg->first_seq = n_seqs;
    for (int32_t k = 0; k < g->n_active; k++) {
      completion *c = &g->comps[k];
      if (c->finished) continue;
      int32_t kv_len = c->kv_seq >= 0 ? nc_kv_seq_len(e->kv, c->kv_seq) : 0;
      bool cow = c->kv_seq >= 0 && kv_len % bt != 0 &&
                 nc_kv_block_refcount(e->kv, c->kv_seq, kv_len - 1) > 1;
      int64_t pin = 0;
      if (c->kv_seq < 0 && peeks > 0) { /* waiting: what it would reuse */
        kv_len =
            nc_kv_prefix_peek(e->kv, g->salt, c->tokens, c->n_tokens, &pin);
        peeks--;
      }
      /* (a beam waiting for its siblings holds its drafts' positions) */
      int32_t todo = c->n_tokens > kv_len ? c->n_tokens - kv_len : 0;
      /* a running prompt waits before an image still encoding */
      if (g->running && g->req->params.n_images)
        todo = nc_image_jobs_todo(g, kv_len, todo);
      e->step.ss[n_seqs] = (nc_sched_seq){i, kv_len, todo, cow, (int32_t)pin};
      e->step.seq_comp[n_seqs] = c;
      n_seqs++;
    }
    sg->n_seqs = n_seqs - sg->first_seq;
  }
  return n_seqs;
}

/* Applies the scheduler's verdicts: fail, preempt, admit. */
static void apply_verdicts(nucleus_engine *e) {
  for (int32_t i = 0; i < e->n_groups; i++) {
    group *g = e->groups[i];
    switch (e->step.verdicts[i]) {
    case NC_SCHED_KEEP: break;
    case NC_SCHED_FAIL: {
      nc_error err;
      nc_fail(&err, NC_ERR_LIMIT,
              "the request needs more KV cache than the pool holds (%lld "
              "blocks of %d tokens)",
              (long long)nc_kv_blocks_total(e->kv), nc_kv_block_tokens(e->kv));
      nc_engine_finish_group(e, g, NUCLEUS_FINISH_ERROR, &err);
      g->running = false;
      break;
    }
    case NC_SCHED_PREEMPT:
      for (int32_t k = 0; k < g->n_active; k++)
        nc_engine_release_kv(e, &g->comps[k]);
      g->running = false;
      e->stats.preemptions_total++;
      break;
    case NC_SCHED_ADMIT:
      g->running = true;
      g->admit_order = ++e->admit_counter;
      if (g->t_admit_ms == 0) g->t_admit_ms = nc_now_ms();
      for (int32_t k = 0; k < g->n_active; k++) {
        completion *c = &g->comps[k];
        if (!c->finished && c->kv_seq < 0) {
          c->kv_seq = nc_kv_seq_new(e->kv);
          if (c->kv_seq >= 0) attach_prefix(e, g, c);
        }
      }
      break;
    }
  }
}

/* After the prompt of an n > 1 request is prefilled, the other completions
 * fork its KV sequence (sharing every block) and sample from its logits. */
static void fork_completions(nucleus_engine *e, group *g) {
  completion *c0 = &g->comps[0];
  for (int32_t k = 1; k < g->n_comps; k++) {
    completion *c = &g->comps[k];
    c->kv_seq = nc_kv_seq_fork(e->kv, c0->kv_seq);
  }
  g->n_active = g->n_comps;
}

/* The completion the plan's item i feeds this step, with its KV length and
 * the number of its tokens fed (NULL: nothing to feed). */
static completion *fed_this_step(nucleus_engine *e, const nc_sched_plan *plan,
                                 int32_t i, int32_t *kv_len_out,
                                 int32_t *n_out) {
  nc_sched_item it = plan->items[i];
  completion *c = e->step.seq_comp[it.seq];
  group *g = e->groups[e->step.ss[it.seq].group];
  if (c->finished || c->kv_seq < 0 || !g->running) return NULL;
  int32_t kv_len = nc_kv_seq_len(e->kv, c->kv_seq);
  int32_t n = it.n_tokens;
  if (kv_len + n > c->n_tokens) n = c->n_tokens - kv_len;
  if (n <= 0) return NULL;
  if (kv_len_out) *kv_len_out = kv_len;
  if (n_out) *n_out = n;
  return c;
}

/* A chunk of a prompt with images, [kv_len, kv_len + *n): cut before an
 * image it would end inside (an image's rows attend to each other: one
 * forward takes them whole) and before an image whose rows are not ready
 * (its encode runs in the steps: engine_image_jobs.c). False: nothing to
 * feed this step (the chunk starts at such an image). */
static bool image_chunk(const group *g, int32_t kv_len, int32_t *n) {
  const nucleus_request *r = g->req;
  for (size_t i = 0; i < r->params.n_images; i++) {
    const int32_t s = r->image_at[i], end = s + r->image_rows[i];
    const int32_t stop = kv_len + *n;
    if (end <= kv_len || s >= stop) continue;
    if (stop < end || !g->image_embd[i]) {
      if (s <= kv_len) return false;
      *n = s - kv_len;
    }
  }
  return true;
}

/* Appends prompt row pos of c: a token, or an image's row (its embedding,
 * attention over its whole image). */
static void add_prompt_row(nucleus_engine *e, group *g, const completion *c,
                           int32_t pos, bool last) {
  const int32_t tok = c->tokens[pos];
  if (tok >= 0) {
    add_row(e, g, tok, pos, c->kv_seq, last);
    return;
  }
  const nucleus_request *r = g->req;
  const int64_t E = nc_mmproj_n_embd(e->params.mmproj);
  for (size_t i = 0; i < r->params.n_images; i++) {
    const int32_t s = r->image_at[i], end = s + r->image_rows[i];
    if (pos < s || pos >= end) continue;
    add_row(e, g, 0, pos, c->kv_seq, last);
    /* Gemma 3's rows see their whole image, Qwen's are causal */
    nc_batch_set_input(&e->batch, e->batch.n_tokens - 1,
                       g->image_embd[i] + (int64_t)(pos - s) * E,
                       nc_mmproj_bidirectional(e->params.mmproj) ? end : 0);
    return;
  }
}

/* The prompt tokens a step may carry beside decoding sequences
 * (scheduler.h's prefill_budget; prefill_budget.h): a step of n_decoding
 * decode rows and the prompt chunk costs at most decode_stall times a
 * decode step of the sequences running and waiting (n_seqs, at most
 * max_running), on the engine's measured step times, the chunk costed
 * from the deepest prompt position it may start at; at least one KV block,
 * and never less than an image a running prompt still has to feed (its
 * rows go in one step). */
static int32_t prefill_budget(const nucleus_engine *e, int32_t n_decoding,
                              int32_t n_seqs) {
  int32_t floor = nc_kv_block_tokens(e->kv);
  for (int32_t i = 0; i < e->n_groups; i++) {
    const nucleus_request *r = e->groups[i]->req;
    if (!e->groups[i]->running) continue;
    for (size_t k = 0; k < r->params.n_images; k++)
      if (r->image_rows[k] > floor) floor = r->image_rows[k];
  }
  int32_t depth = 0;
  int64_t pending = 0;
  for (int32_t i = 0; i < n_seqs; i++) {
    if (e->step.ss[i].todo <= 1) continue;
    pending += e->step.ss[i].todo;
    if (e->step.ss[i].kv_len > depth) depth = e->step.ss[i].kv_len;
  }
  const int32_t coming =
      n_seqs < e->params.max_running ? n_seqs : e->params.max_running;
  const nc_prefill_query q = {n_decoding,
                              coming,
                              depth,
                              pending,
                              e->params.max_batch_tokens,
                              floor,
                              e->params.decode_stall,
                              e->decode_timed_at,
                              e->stats.steps_total + 1};
  return nc_prefill_budget(&e->spec_cost, &e->prompt_cost, &q);
}

/* Running sequences with one token to feed (decoding). */
static int32_t decoding_seqs(const nucleus_engine *e, int32_t n_seqs) {
  int32_t n = 0;
  for (int32_t i = 0; i < n_seqs; i++)
    if (e->step.ss[i].todo == 1 && e->step.sg[e->step.ss[i].group].running) n++;
  return n;
}

/* Learns from a step's forward time (CPU ms): a step of decode rows alone
 * times a decode step of its row count (the draft length's choice, the
 * prefill budget's base), one with prompt rows what its prompt rows cost
 * beyond its decode rows' estimate; the trace's line. */
static void observe_step(nucleus_engine *e, int32_t n_prompt,
                         double prompt_keys, double ms, double t_step,
                         int32_t budget) {
  const int32_t decode_rows = e->batch.n_tokens - n_prompt;
  const double base = nc_decode_step_ms(&e->spec_cost, decode_rows);
  if (e->trace) {
    nc_step_record r = {
        .t0_ms = t_step,
        .wall_ms = nc_step_trace_now(e->trace) - t_step,
        .cpu_ms = ms,
        .rows = e->batch.n_tokens,
        .decode_rows = decode_rows,
        .prompt_rows = n_prompt,
        .prompt_keys = prompt_keys,
        .budget = budget,
        .decode_est_ms = base,
        .step_est_ms =
            base + nc_prompt_cost_ms(&e->prompt_cost, n_prompt, prompt_keys),
    };
    for (int32_t i = 0; i < e->n_groups; i++)
      *(e->groups[i]->running ? &r.running : &r.waiting) += 1;
    nc_step_trace_write(e->trace, &r);
  }
  if (n_prompt == 0) {
    nc_spec_cost_observe(&e->spec_cost, e->batch.n_tokens, ms);
    if (e->batch.n_tokens <= NC_SPEC_COST_ROWS)
      e->decode_timed_at[e->batch.n_tokens] = e->stats.steps_total;
  } else if (decode_rows == 0 || base > 0)
    nc_prompt_cost_observe(&e->prompt_cost, n_prompt, prompt_keys, ms - base);
}

/* Runs one step; false when there was nothing to do. */
static bool step(nucleus_engine *e) {
  nc_image_jobs_step(e);
  int32_t n_seqs = build_sched_state(e);
  const double t_step = nc_step_trace_now(e->trace);
  nc_sched_capacity cap = {
      .free_blocks = nc_kv_blocks_free(e->kv),
      .total_blocks = nc_kv_blocks_total(e->kv),
      .block_tokens = nc_kv_block_tokens(e->kv),
      .token_budget = e->params.max_batch_tokens,
      .max_running = e->params.max_running,
      .prefill_budget = prefill_budget(e, decoding_seqs(e, n_seqs), n_seqs),
  };
  nc_sched_plan plan = {e->step.items, 0, e->step.verdicts};
  nc_schedule(e->step.sg, e->n_groups, e->step.ss, n_seqs, &cap, &plan);
  apply_verdicts(e);

  nc_batch_clear(&e->batch);
  const bool snaps = prefix_cache_on(e) && nc_kv_state_floats(e->kv) > 0;
  const int32_t bt = nc_kv_block_tokens(e->kv);
  int32_t n_rows = 0, n_fed = 0, n_logit_rows = 0, spare_rows, n_drafting = 0,
          n_mtp = 0;
  int32_t planned;
  int64_t spare_blocks;
  int32_t n_prompt = 0;   /* prompt rows (chunks of more than one token) */
  double prompt_keys = 0; /* the keys they attend */
  spare_room(e, &plan, &spare_rows, &spare_blocks, &planned);
  double cost[NUCLEUS_MAX_DRAFT + 1], model_cost[NUCLEUS_MAX_DRAFT + 1],
      mtp_cost[NUCLEUS_MAX_DRAFT + 1];
  draft_costs(e, planned, cost, model_cost, mtp_cost);
  /* drafts first: the n-gram ones now, the draft model's for all at once */
  for (int32_t i = 0; i < plan.n_items; i++) {
    int32_t kv_len, n;
    completion *c = fed_this_step(e, &plan, i, &kv_len, &n);
    if (!c) continue;
    group *g = c->owner;
    c->spec.n_draft = c->spec.draft_room = 0;
    const nucleus_spec_type st = g->req->params.speculative.type;
    if (n == 1 && st != NUCLEUS_SPEC_OFF)
      nc_spec_propose(e, g, c, kv_len,
                      st == NUCLEUS_SPEC_DRAFT ? model_cost
                      : st == NUCLEUS_SPEC_MTP ? mtp_cost
                                               : cost,
                      &spare_rows, &spare_blocks);
    if (c->spec.draft_room > 0) {
      if (g->req->params.speculative.type == NUCLEUS_SPEC_MTP)
        e->step.mtp_drafting[n_mtp++] = c;
      else
        e->step.drafting[n_drafting++] = c;
    }
  }
  if (n_drafting > 0) nc_spec_draft_batch(e, e->step.drafting, n_drafting);
  if (n_mtp > 0) nc_spec_mtp_batch(e, e->step.mtp_drafting, n_mtp);
  for (int32_t i = 0; i < plan.n_items; i++) {
    int32_t kv_len, n;
    completion *c = fed_this_step(e, &plan, i, &kv_len, &n);
    if (!c) continue;
    group *g = c->owner;
    if (g->req->params.n_images && !image_chunk(g, kv_len, &n)) continue;
    int32_t n_draft = c->spec.n_draft;
    if (nc_kv_seq_reserve(e->kv, c->kv_seq, kv_len + n + n_draft, NULL) !=
        NC_OK) {
      c->spec.n_draft = n_draft = 0;
      if (nc_kv_seq_reserve(e->kv, c->kv_seq, kv_len + n, NULL) != NC_OK)
        continue; /* the pool is short this step: it waits */
    }
    /* a state model goes back to here when a draft is rejected */
    if (n_draft > 0 && nc_kv_state_floats(e->kv) > 0 &&
        !nc_kv_seq_checkpoint(e->kv, c->kv_seq))
      c->spec.n_draft = n_draft = 0;
    e->step.fed[n_fed++] = c;
    if (n > 1) {
      n_prompt += n;
      prompt_keys += nc_prompt_keys(kv_len, n);
    }
    /* a state model: snapshots of the state for the prefix cache, at the
     * block end a re-sent prompt can reuse (the last one short of its last
     * token: kept) and at the last block end these rows reach (rolling:
     * one per sequence) */
    const int32_t keep_end = (g->req->n_prompt - 1) / bt * bt;
    int32_t keep_row = -1, snap_row = -1, snap_end = 0;
    for (int32_t k = 0; k < n; k++) {
      int32_t pos = kv_len + k;
      bool last = pos == c->n_tokens - 1;
      add_prompt_row(e, g, c, pos, last);
      if (snaps && (pos + 1) % bt == 0) {
        if (pos + 1 == keep_end) keep_row = e->batch.n_tokens - 1;
        snap_row = e->batch.n_tokens - 1;
        snap_end = pos + 1;
      }
      if (last) {
        e->step.row_at[n_rows] = n_logit_rows++;
        e->step.row_comp[n_rows++] = c;
      }
    }
    if (keep_row >= 0)
      nc_batch_set_snapshot(&e->batch, keep_row,
                            nc_kv_snap_take(e->kv, c->kv_seq, keep_end, false));
    if (snap_row >= 0 && snap_row != keep_row)
      nc_batch_set_snapshot(&e->batch, snap_row,
                            nc_kv_snap_take(e->kv, c->kv_seq, snap_end, true));
    /* drafts: generated positions, each row in a plain decode's orders */
    for (int32_t k = 0; k < n_draft; k++)
      add_row(e, g, c->spec.draft[k], kv_len + n + k, c->kv_seq, true);
    n_logit_rows += n_draft;
  }
  if (e->batch.n_tokens == 0) return plan.n_items > 0;

  nc_error err = {0};
  const double t_forward = nc_engine_cpu_ms();
  if (nc_context_forward(e->ctx, &e->batch, e->logits, &err) != NC_OK) {
    /* The model failed: end every request in the batch with the error. */
    for (int32_t i = 0; i < e->n_groups; i++)
      if (e->groups[i]->running)
        nc_engine_finish_group(e, e->groups[i], NUCLEUS_FINISH_ERROR, &err);
    return true;
  }
  e->stats.steps_total++;
  observe_step(e, n_prompt, prompt_keys, nc_engine_cpu_ms() - t_forward, t_step,
               cap.prefill_budget);
  /* The full blocks just written join the prefix cache's index. */
  for (int32_t i = 0; i < n_fed && prefix_cache_on(e); i++)
    nc_kv_seq_publish(e->kv, e->step.fed[i]->kv_seq, e->step.fed[i]->tokens,
                      e->step.fed[i]->n_tokens);

  /* Sampling rows: one per completion that got logits; a group whose
   * prompt just finished prefilling forks its other completions first. */
  int32_t n_sample = 0;
  for (int32_t r = 0; r < n_rows; r++) {
    completion *c = e->step.row_comp[r];
    group *g = c->owner;
    if (g->req->params.max_tokens == 0) { /* the prompt read: length */
      if (!c->finished)
        nc_engine_finish_group(e, g, NUCLEUS_FINISH_LENGTH, NULL);
      continue;
    }
    if (g->beam) {
      nc_beam_take_logits(
          e, g, c, e->logits + (size_t)e->step.row_at[r] * (size_t)e->n_vocab);
      continue;
    }
    int32_t first = c->index, last = c->index;
    if (c->index == 0 && g->n_active < g->n_comps) {
      fork_completions(e, g);
      last = g->n_comps - 1;
    }
    for (int32_t k = first; k <= last; k++) {
      completion *ck = &g->comps[k];
      const float *logits =
          e->logits + (size_t)e->step.row_at[r] * (size_t)e->n_vocab;
      if (ck->spec.n_draft > 0) { /* the drafts, then the token after them */
        const double tv = nc_engine_cpu_ms();
        const int32_t rows = ck->spec.n_draft + 1;
        nc_spec_verify_step(e, g, ck, logits);
        if (g->req->params.speculative.type == NUCLEUS_SPEC_DRAFT)
          nc_spec_drafter_observe(&e->verify_cost, nc_engine_cpu_ms() - tv,
                                  rows);
        continue;
      }
      /* before min_tokens, and while an answer grammar waits for the end
       * of the thinking (the answer must come), no end token */
      bool masked =
          ck->n_generated < g->req->params.min_tokens || ck->grammar_after;
      e->step.rows[n_sample] = (nc_sample_row){
          .sampler = ck->sampler,
          .logits = logits,
          .suppress = masked ? g->suppress : NULL,
          .n_suppress = masked ? g->n_suppress : 0,
          .inspect = ck->inspect,
          .grammar = ck->grammar ? ck->grammar_mask : NULL,
      };
      e->step.sample_comp[n_sample++] = ck;
    }
  }
  n_sample = grammar_masks(e, n_sample);
  n_sample = force_masks(e, n_sample);
  nc_sample_batch(e->ws, e->step.rows, n_sample, e->step.results, NULL);
  for (int32_t s = 0; s < n_sample; s++) {
    completion *c = e->step.sample_comp[s];
    group *g = c->owner;
    if (c->finished) continue;
    if (e->step.results[s].token < 0) {
      nc_error serr;
      nc_fail(&serr,
              e->step.results[s].status ? e->step.results[s].status
                                        : NC_ERR_INTERNAL,
              "sampling failed (the logits hold NaN or every token is "
              "masked)");
      const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &serr);
      finish_completion(e, g, c, &f);
      continue;
    }
    nc_spec_shadow_check(g, c, e->step.results[s].token);
    nc_engine_handle_token(e, g, c, &e->step.results[s]);
  }
  e->stats.generated_tokens_total += n_sample;
  return true;
}

static void update_stats(nucleus_engine *e) {
  int32_t queued = 0, running = 0;
  for (int32_t i = 0; i < e->n_groups; i++) {
    const group *g = e->groups[i];
    if (g->running)
      running += g->n_active - g->n_finished;
    else
      queued++;
  }
  pthread_mutex_lock(&e->mu);
  e->stats.queued = queued + e->n_inbox;
  e->stats.running = running;
  e->stats.kv_blocks_used = nc_kv_blocks_used(e->kv);
  e->stats.kv_blocks_free = nc_kv_blocks_free(e->kv);
  e->stats.prefix_cache_blocks = nc_kv_blocks_hashed(e->kv);
  e->stats.prefix_cache_evictions_total = nc_kv_evictions(e->kv);
  e->stats.state_bytes = (int64_t)nc_kv_state_bytes(e->kv);
  e->stats.state_snapshots = nc_kv_snaps_held(e->kv);
  e->stats.state_snapshot_bytes = (int64_t)nc_kv_snap_bytes(e->kv);
  pthread_mutex_unlock(&e->mu);
}

/* One iteration of the loop; false once shutting down. */
static bool iterate(nucleus_engine *e) {
  if (!take_inbox(e)) return false;
  apply_cancellations(e);
  retire_groups(e);
  step(e);
  retire_groups(e);
  update_stats(e);
  return true;
}

static void abort_all(nucleus_engine *e) {
  for (int32_t i = 0; i < e->n_groups; i++)
    nc_engine_finish_group(e, e->groups[i], NUCLEUS_FINISH_ABORT, NULL);
  retire_groups(e);
  update_stats(e);
}

static void *engine_main(void *arg) {
  nucleus_engine *e = arg;
  while (iterate(e)) {
  }
  abort_all(e);
  return NULL;
}

bool nc_engine_step(nucleus_engine *e) {
  iterate(e);
  return e->n_groups > 0;
}

/* ------------------------------------------------------------ public API */

static nc_code collect_eog(nucleus_engine *e, nc_error *err) {
  int32_t n = 0;
  for (int32_t t = 0; t < e->n_vocab; t++)
    if (nc_vocab_is_eog(e->vocab, t)) n++;
  e->eog_ids = malloc((size_t)(n ? n : 1) * sizeof *e->eog_ids);
  if (!e->eog_ids) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  for (int32_t t = 0; t < e->n_vocab; t++)
    if (nc_vocab_is_eog(e->vocab, t)) e->eog_ids[e->n_eog++] = t;
  return NC_OK;
}

/* Requests held at once beyond the running ones, whatever max_queued says
 * (more wait in the inbox): bounds the step arrays. */
enum { MAX_HELD_WAITING = 1024 };

static nc_code step_alloc(nucleus_engine *e, nc_error *err) {
  engine_step *st = &e->step;
  const nucleus_engine_params *p = &e->params;
  int32_t waiting =
      p->max_queued < MAX_HELD_WAITING ? p->max_queued : MAX_HELD_WAITING;
  st->max_groups = p->max_running + waiting;
  /* a request runs at most max_running completions: one always fits */
  st->max_seqs = 2 * p->max_running + waiting;
  const size_t ng = (size_t)st->max_groups, ns = (size_t)st->max_seqs;
  e->groups = malloc(ng * sizeof *e->groups);
  st->taken = malloc(ng * sizeof *st->taken);
  st->sg = malloc(ng * sizeof *st->sg);
  st->verdicts = malloc(ng * sizeof *st->verdicts);
  st->ss = malloc(ns * sizeof *st->ss);
  st->seq_comp = malloc(ns * sizeof *st->seq_comp);
  st->items = malloc(ns * sizeof *st->items);
  st->rows = malloc(ns * sizeof *st->rows);
  st->results = malloc(ns * sizeof *st->results);
  st->row_comp = malloc(ns * sizeof *st->row_comp);
  st->row_at = malloc(ns * sizeof *st->row_at);
  st->sample_comp = malloc(ns * sizeof *st->sample_comp);
  st->mask_rc = malloc(ns * sizeof *st->mask_rc);
  st->mask_err = malloc(ns * sizeof *st->mask_err);
  st->fed = malloc(ns * sizeof *st->fed);
  st->drafting = malloc(ns * sizeof *st->drafting);
  st->mtp_drafting = malloc(ns * sizeof *st->mtp_drafting);
  st->seq_ids = malloc(ns * sizeof *st->seq_ids);
  if (!e->groups || !st->taken || !st->sg || !st->verdicts || !st->ss ||
      !st->seq_comp || !st->items || !st->rows || !st->results ||
      !st->row_comp || !st->row_at || !st->sample_comp || !st->mask_rc ||
      !st->mask_err || !st->fed || !st->drafting || !st->mtp_drafting ||
      !st->seq_ids)
    return nc_fail(err, NC_ERR_NOMEM, "out of memory (engine step arrays)");
  return NC_OK;
}

static void step_free(nucleus_engine *e) {
  engine_step *st = &e->step;
  free(e->groups);
  free(st->taken);
  free(st->sg);
  free(st->verdicts);
  free(st->ss);
  free(st->seq_comp);
  free(st->items);
  free(st->rows);
  free(st->results);
  free(st->row_comp);
  free(st->row_at);
  free(st->sample_comp);
  free(st->mask_rc);
  free(st->mask_err);
  free(st->fed);
  free(st->drafting);
  free(st->mtp_drafting);
  free(st->seq_ids);
}

/* What engine_create builds before the thread starts (NULL-safe). */
static void free_resources(nucleus_engine *e) {
  step_free(e);
  nc_image_jobs_free(e);
  nc_sample_workspace_free(e->ws);
  free(e->logits);
  nc_batch_free(&e->batch);
  nc_context_free(e->ctx);
  nc_kv_cache_free(e->kv);
  free(e->eog_ids);
  nc_grammar_vocab_free(e->grammar_vocab);
  nc_spec_draft_free(e->draft);
  nc_spec_mtp_free(e->mtp);
  nc_step_trace_close(e->trace);
}

/* The paged cache, rows in the model's cache types (-ctk/-ctv); a model
 * with sliding-window layers keeps theirs in a second group of blocks,
 * sized for the running sequences' windows and one step's tokens
 * (kv_cache.h). */
static nc_code create_kv(nucleus_engine *e, const nc_hparams *hp,
                         int64_t n_blocks, nc_error *err) {
  const nc_model_weights *w = nc_model_weights_of(e->model);
  bool *swa = calloc((size_t)hp->n_layer, sizeof *swa);
  if (!swa) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  for (int32_t l = 0; l < hp->n_layer; l++)
    swa[l] = w->layers[l].swa && !e->params.swa_full;
  nc_code rc = nc_kv_cache_create_swa(
      nc_hp_kv_shape(hp), nc_model_kv_types(e->model), swa, n_blocks,
      e->params.kv_block_tokens, 2 * e->params.max_running + 8,
      e->params.max_batch_tokens, &e->kv, err);
  free(swa);
  if (rc == NC_OK && e->params.state_snapshots > 0)
    rc = nc_kv_snaps_set_max(e->kv, e->params.state_snapshots, err);
  return rc;
}

static nc_code engine_create(nucleus_model *model,
                             const nucleus_engine_params *params, bool stepped,
                             nucleus_engine **out, nc_error *err) {
  *out = NULL;
  nucleus_engine *e = calloc(1, sizeof *e);
  if (!e) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  e->stepped = stepped;
  e->model = model;
  e->vocab = nc_model_vocab(model);
  const nc_hparams *hp = nc_model_hparams(model);
  e->n_vocab = hp->n_vocab;
  nc_code rc = nc_engine_resolve_params(hp, params, &e->params, err);
  if (rc == NC_OK) rc = collect_eog(e, err);
  if (rc == NC_OK) rc = step_alloc(e, err);
  int64_t n_blocks =
      (e->params.kv_cache_tokens + e->params.kv_block_tokens - 1) /
      e->params.kv_block_tokens;
  if (rc == NC_OK) rc = create_kv(e, hp, n_blocks, err);
  if (rc == NC_OK)
    rc = nc_context_create(model, e->kv, e->params.max_batch_tokens, &e->ctx,
                           err);
  if (rc == NC_OK) nc_context_set_n_ctx(e->ctx, e->params.n_ctx);
  if (rc == NC_OK)
    rc = nc_batch_init(&e->batch, e->params.max_batch_tokens, err);
  if (rc == NC_OK) rc = nc_sample_workspace_create(e->n_vocab, &e->ws, err);
  if (rc == NC_OK)
    rc = nc_spec_draft_create(e, e->params.draft_model, &e->draft, err);
  if (rc == NC_OK) rc = nc_spec_mtp_create(e, &e->mtp, err);
  if (rc == NC_OK)
    e->image_budget = nc_image_jobs_budget(model, e->params.image_step_tokens);
  if (rc == NC_OK) rc = nc_image_jobs_init(e, err);
  if (rc == NC_OK) e->trace = nc_step_trace_from_env();
  if (rc == NC_OK) /* the sampler's row passes follow the kernel table */
    nc_sample_workspace_set_simd(e->ws, nc_model_kernels(model)->sampler_simd);
  if (rc == NC_OK) {
    size_t rows = (size_t)e->params.max_batch_tokens;
    e->logits = malloc(rows * (size_t)e->n_vocab * sizeof *e->logits);
    if (!e->logits) rc = nc_fail(err, NC_ERR_NOMEM, "out of memory (logits)");
  }
  if (rc == NC_OK) {
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->stats.kv_blocks_free = nc_kv_blocks_free(e->kv);
    if (!stepped && pthread_create(&e->thread, NULL, engine_main, e) != 0) {
      pthread_mutex_destroy(&e->mu);
      pthread_cond_destroy(&e->cv);
      rc = nc_fail(err, NC_ERR_INTERNAL, "cannot start the engine thread");
    }
  }
  if (rc != NC_OK) {
    free_resources(e);
    free(e);
    return rc;
  }
  *out = e;
  return NC_OK;
}

nucleus_status nucleus_engine_create(nucleus_model *model,
                                     const nucleus_engine_params *params,
                                     nucleus_engine **out, nucleus_error *err) {
  return engine_create(model, params, false, out, err);
}

nc_code nc_engine_create_stepped(nucleus_model *model,
                                 const nucleus_engine_params *params,
                                 nucleus_engine **out, nc_error *err) {
  return engine_create(model, params, true, out, err);
}

void nucleus_engine_free(nucleus_engine *e) {
  if (!e) return;
  pthread_mutex_lock(&e->mu);
  e->shutdown = true;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  if (e->stepped) {
    take_inbox(e);
    abort_all(e);
  } else {
    pthread_join(e->thread, NULL);
  }
  for (int32_t i = 0; i < e->n_inbox; i++) {
    nucleus_event ev = {.kind = NUCLEUS_EVENT_FINISH,
                        .finish_reason = NUCLEUS_FINISH_ABORT,
                        .token = -1,
                        .stop_token = -1};
    nc_request_push_event(e->inbox[i], &ev);
    ev.kind = NUCLEUS_EVENT_DONE;
    nc_request_push_event(e->inbox[i], &ev);
    nc_request_unref(e->inbox[i]);
  }
  free(e->inbox);
  free_resources(e);
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
  free(e);
}

nucleus_status nucleus_engine_submit(nucleus_engine *e, const int32_t *prompt,
                                     size_t n_prompt,
                                     const nucleus_request_params *params,
                                     nucleus_request **out,
                                     nucleus_error *err) {
  *out = NULL;
  nc_code rc = nucleus_request_params_validate(e->model, params, err);
  if (rc != NC_OK) return rc;
  if (n_prompt == 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "prompt: empty; at least one token is needed");
  if (n_prompt >= (size_t)e->params.n_ctx)
    return nc_fail(err, NC_ERR_LIMIT,
                   "prompt: %zu tokens; the context holds %d (leave room for "
                   "at least one generated token)",
                   n_prompt, e->params.n_ctx);
  for (size_t i = 0; i < n_prompt; i++)
    if ((prompt[i] < 0 || prompt[i] >= e->n_vocab) &&
        !(prompt[i] == NUCLEUS_TOKEN_IMAGE && params->n_images > 0))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "prompt[%zu]: token id %d out of range [0, %d)%s", i,
                     prompt[i], e->n_vocab,
                     prompt[i] == NUCLEUS_TOKEN_IMAGE
                         ? " (NUCLEUS_TOKEN_IMAGE needs params.images)"
                         : "");
  if (params->n > e->params.max_running ||
      params->beam_width > e->params.max_running)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "n: %d completions (beam_width %d); this engine runs at "
                   "most %d sequences at once",
                   params->n, params->beam_width, e->params.max_running);
  rc = nc_request_fit_check(n_prompt, params, e->params.n_ctx,
                            nc_kv_block_tokens(e->kv),
                            nc_kv_blocks_total(e->kv), err);
  if (rc != NC_OK) return rc;
  if (params->speculative.type == NUCLEUS_SPEC_DRAFT && !e->draft)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative 'draft': this engine has no draft model "
                   "(--model-draft)");
  if (params->speculative.type == NUCLEUS_SPEC_MTP && !e->mtp)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative 'mtp': the model runs no MTP head (load a "
                   "file with MTP layers with mtp on: --spec mtp at startup)");
  uint64_t seed =
      params->sampling.has_seed ? params->sampling.seed : nc_seed_from_os();

  pthread_mutex_lock(&e->mu);
  if (e->shutdown) {
    pthread_mutex_unlock(&e->mu);
    return nc_fail(err, NC_ERR_BUSY, "the engine is shutting down");
  }
  if (e->stats.queued + e->n_inbox >= e->params.max_queued) {
    pthread_mutex_unlock(&e->mu);
    return nc_fail(err, NC_ERR_BUSY,
                   "busy: %d requests are already waiting (the queue holds "
                   "%d); try again later",
                   e->stats.queued + e->n_inbox, e->params.max_queued);
  }
  uint64_t id = ++e->next_id;
  pthread_mutex_unlock(&e->mu);

  int32_t *keyed = NULL, *image_at = NULL, *image_rows = NULL;
  rc = nc_images_prepare(e->params.mmproj, e->params.max_batch_tokens, prompt,
                         n_prompt, params, &keyed, &image_at, &image_rows, err);
  if (rc != NC_OK) return rc;
  nucleus_request *r = NULL;
  rc = nc_request_create(id, keyed ? keyed : prompt, n_prompt, params, seed,
                         image_at, image_rows, &r, err);
  free(keyed);
  if (rc != NC_OK) return rc;

  pthread_mutex_lock(&e->mu);
  if (!grow((void **)&e->inbox, &e->cap_inbox, e->n_inbox + 1,
            sizeof *e->inbox)) {
    pthread_mutex_unlock(&e->mu);
    nc_request_unref(r);
    nc_request_unref(r);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  e->inbox[e->n_inbox++] = r;
  e->stats.prompt_tokens_total += (int64_t)n_prompt;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  *out = r;
  return NC_OK;
}

void nucleus_engine_get_stats(nucleus_engine *e, nucleus_engine_stats *stats) {
  pthread_mutex_lock(&e->mu);
  *stats = e->stats;
  pthread_mutex_unlock(&e->mu);
}
