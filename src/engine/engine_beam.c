/* engine_beam: beam search over the paged KV cache.
 *
 * A beam-search request keeps up to width live beams, each a KV sequence.
 * The prompt is prefilled once (beam 0); every step, once each live beam has
 * its logits, nc_beam_step picks the next live beams as (parent, token); each
 * new beam forks its parent's sequence (blocks shared, copy-on-write of the
 * partial last block only, never the whole prefix) and the old sequences are
 * freed. When the search is done (every hypothesis finished, early stopping,
 * max_tokens or a full context), the best n hypotheses are detokenized and
 * reported as completions 0..n-1. Beam search emits no per-token events:
 * the text of a live beam can still change. Stop strings do not apply. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

nc_code nc_beam_group_init(nucleus_engine *e, group *g, nc_error *err) {
  const nucleus_request_params *p = &g->req->params;
  int32_t width = p->beam_width;
  int32_t n_eog = e->n_eog + (int32_t)p->n_stop_token_ids;
  int32_t *eog = malloc((size_t)(n_eog ? n_eog : 1) * sizeof *eog);
  if (!eog) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  if (!p->ignore_eos) memcpy(eog, e->eog_ids, (size_t)e->n_eog * sizeof *eog);
  int32_t k = p->ignore_eos ? 0 : e->n_eog;
  for (size_t i = 0; i < p->n_stop_token_ids; i++)
    eog[k++] = p->stop_token_ids[i];
  nc_beam_params bp = {
      .width = width,
      .n_return = p->n > 0 ? p->n : 1,
      .length_penalty = p->length_penalty,
      .early_stopping = p->early_stopping,
      .eog = eog,
      .n_eog = k,
  };
  nc_code rc = nc_beam_create(&bp, &g->beam, err);
  free(eog);
  if (rc != NC_OK) return rc;
  g->beam_row_stride = p->speculative.type != NUCLEUS_SPEC_OFF
                           ? 1 + nc_spec_beam_draft_max(p)
                           : 1;
  g->beam_rows = malloc((size_t)width * (size_t)g->beam_row_stride *
                        (size_t)e->n_vocab * sizeof(float));
  g->beam_ready = calloc((size_t)width, 1);
  if (!g->beam_rows || !g->beam_ready)
    return nc_fail(err, NC_ERR_NOMEM, "out of memory (beam rows)");
  return NC_OK;
}

void nc_beam_group_free(group *g) {
  nc_beam_free(g->beam);
  free(g->beam_rows);
  free(g->beam_ready);
  g->beam = NULL;
  g->beam_rows = NULL;
  g->beam_ready = NULL;
}

static void log_softmax(const float *x, float *out, int32_t n) {
  float max = -INFINITY;
  for (int32_t i = 0; i < n; i++)
    if (x[i] > max) max = x[i];
  double sum = 0;
  for (int32_t i = 0; i < n; i++)
    sum += exp((double)x[i] - max);
  float lse = max + (float)log(sum);
  for (int32_t i = 0; i < n; i++)
    out[i] = x[i] - lse;
}

static bool is_end(const nucleus_engine *e, const nucleus_request_params *p,
                   int32_t tok) {
  if (nc_vocab_is_eog(e->vocab, tok)) return true;
  for (size_t s = 0; s < p->n_stop_token_ids; s++)
    if (p->stop_token_ids[s] == tok) return true;
  return false;
}

/* Detokenizes the ranked hypotheses and ends the request. */
static void report(nucleus_engine *e, group *g) {
  const nucleus_request_params *p = &g->req->params;
  int32_t n_ret = p->n > 0 ? p->n : 1;
  if (n_ret > nc_beam_n_finished(g->beam)) n_ret = nc_beam_n_finished(g->beam);
  for (int32_t i = 0; i < g->n_comps; i++) {
    nc_engine_release_kv(e, &g->comps[i]);
    g->comps[i].finished = true;
  }
  g->n_finished = g->n_comps;
  for (int32_t rank = 0; rank < n_ret; rank++) {
    const int32_t *toks = NULL;
    int32_t n = 0;
    float score, cum;
    nc_error err = {0};
    if (nc_beam_result(g->beam, rank, &toks, &n, &score, &cum, &err) != NC_OK) {
      const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &err);
      nc_engine_emit_finish(g, rank, 0, &f);
      continue;
    }
    bool ended = n > 0 && !p->ignore_eos && is_end(e, p, toks[n - 1]);
    int32_t n_text = ended ? n - 1 : n;
    char *text = NULL;
    size_t len = 0;
    nc_detokenize(e->vocab, toks, (size_t)n_text, p->skip_special_tokens, &text,
                  &len, NULL);
    g->completion_tokens += n;
    nc_finish f =
        nc_finish_of(ended ? NUCLEUS_FINISH_STOP : NUCLEUS_FINISH_LENGTH, NULL);
    f.stop_token = ended ? toks[n - 1] : -1;
    f.text = text;
    f.text_len = len;
    nc_engine_emit_finish(g, rank, n, &f);
    free(text);
  }
}

/* The next live beams fork the sequences of the slots they descend from,
 * cut to the tokens they keep (the slot's tokens and v drafts); then the
 * old sequences are freed (a parent nobody chose returns its blocks). Each
 * inherits its slot's drafting state. */
static void replace_beams(nucleus_engine *e, group *g, const int32_t *slot,
                          int32_t v, const nc_beam_next *next, int32_t n_next) {
  completion fresh[NC_BEAM_MAX_WIDTH];
  memset(fresh, 0, sizeof fresh);
  for (int32_t j = 0; j < n_next; j++) {
    const completion *parent = &g->comps[slot[next[j].parent]];
    completion *f = &fresh[j];
    f->owner = g;
    f->index = j;
    f->spec = parent->spec;
    f->spec.n_draft = 0;
    f->spec.draft_seq = -1;
    f->spec.q = NULL;
    f->spec.q_rows = 0;
    int32_t keep = parent->n_tokens + v;
    f->kv_seq =
        parent->kv_seq >= 0 ? nc_kv_seq_fork(e->kv, parent->kv_seq) : -1;
    if (f->kv_seq >= 0 && nc_kv_seq_len(e->kv, f->kv_seq) > keep)
      nc_kv_seq_truncate(e->kv, f->kv_seq, keep);
    f->n_generated = parent->n_generated + v + 1;
    for (int32_t t = 0; t < parent->n_tokens; t++)
      nc_engine_push_token(f, parent->tokens[t]);
    for (int32_t t = 0; t < v; t++)
      nc_engine_push_token(f, parent->spec.draft[t]);
    nc_engine_push_token(f, next[j].token);
  }
  for (int32_t k = 0; k < g->n_comps; k++) {
    nc_engine_release_kv(e, &g->comps[k]);
    free(g->comps[k].tokens);
    g->comps[k] = (completion){.owner = g, .index = k, .kv_seq = -1};
    g->comps[k].spec.draft_seq = -1;
  }
  for (int32_t j = 0; j < n_next; j++)
    g->comps[j] = fresh[j];
  for (int32_t k = n_next; k < g->n_comps; k++)
    g->comps[k].finished = true;
  g->n_active = n_next;
  g->n_finished = g->n_comps - n_next;
}

/* Counts the drafts of the step's beams: a slot kept as many as the steps
 * it stayed on a live path (depth), and adapts its draft length. */
static void account_drafts(nucleus_engine *e, group *g, int32_t n_slots,
                           const int32_t *depth) {
  for (int32_t s = 0; s < n_slots; s++) {
    nc_spec_state *sp = &g->comps[s].spec;
    if (sp->n_draft == 0) continue;
    int32_t before = sp->drafted, kept_before = sp->accepted;
    nc_spec_account(e, g, sp, depth[s], sp->n_draft);
    g->beam_drafted += sp->drafted - before;
    g->beam_accepted += sp->accepted - kept_before;
  }
}

void nc_beam_take_logits(nucleus_engine *e, group *g, completion *c,
                         const float *logits) {
  const int32_t n_vocab = e->n_vocab;
  const size_t stride = (size_t)g->beam_row_stride * (size_t)n_vocab;
  /* the fed token's row, then one per draft */
  for (int32_t r = 0; r <= c->spec.n_draft; r++)
    log_softmax(logits + (size_t)r * (size_t)n_vocab,
                g->beam_rows + (size_t)c->index * stride +
                    (size_t)r * (size_t)n_vocab,
                n_vocab);
  g->beam_ready[c->index] = 1;
  const int32_t n_slots = nc_beam_n_live(g->beam);
  for (int32_t k = 0; k < n_slots; k++)
    if (!g->beam_ready[k]) return; /* wait for the other beams */
  memset(g->beam_ready, 0, (size_t)g->n_comps);
  if (g->t_first_token_ms == 0) g->t_first_token_ms = nc_now_ms();

  /* Beam steps from the rows at hand: step v scores each live beam from
   * the row of its slot after v drafts. While every next beam is its
   * parent's draft (each slot then has at most one), its row is there and
   * the search steps on without a forward call; the first step where one
   * is not ends it: the next beams are made and fed. */
  const nucleus_request_params *p = &g->req->params;
  const completion *c0 = &g->comps[0]; /* every beam has its length */
  int32_t slot[NC_BEAM_MAX_WIDTH], depth[NC_BEAM_MAX_WIDTH] = {0};
  for (int32_t k = 0; k < n_slots; k++)
    slot[k] = k;
  int32_t n_live = n_slots;
  nc_beam_next next[NC_BEAM_MAX_WIDTH];
  for (int32_t v = 0;; v++) {
    const float *rows[NC_BEAM_MAX_WIDTH];
    for (int32_t k = 0; k < n_live; k++) {
      float *row =
          g->beam_rows + (size_t)slot[k] * stride + (size_t)v * (size_t)n_vocab;
      if (c0->n_generated + v < p->min_tokens)
        for (int32_t s = 0; s < g->n_suppress; s++)
          row[g->suppress[s]] = -INFINITY;
      rows[k] = row;
    }
    int32_t n_next = 0;
    nc_error err = {0};
    if (nc_beam_step(g->beam, rows, n_vocab, next, &n_next, &err) != NC_OK) {
      account_drafts(e, g, n_slots, depth);
      nc_engine_finish_group(e, g, NUCLEUS_FINISH_ERROR, &err);
      return;
    }
    int32_t generated = c0->n_generated + v + 1;
    int32_t n_tokens = c0->n_tokens + v + 1;
    bool budget = p->max_tokens >= 0 && generated >= p->max_tokens;
    if (!nc_beam_done(g->beam) && (budget || n_tokens >= e->params.n_ctx))
      nc_beam_finish(g->beam);
    if (nc_beam_done(g->beam) || n_next == 0) {
      if (!nc_beam_done(g->beam)) nc_beam_finish(g->beam);
      account_drafts(e, g, n_slots, depth);
      report(e, g);
      return;
    }
    bool drafted = true;
    for (int32_t j = 0; j < n_next && drafted; j++) {
      const nc_spec_state *sp = &g->comps[slot[next[j].parent]].spec;
      drafted = v < sp->n_draft && sp->draft[v] == next[j].token;
    }
    if (!drafted) {
      account_drafts(e, g, n_slots, depth);
      replace_beams(e, g, slot, v, next, n_next);
      return;
    }
    int32_t moved[NC_BEAM_MAX_WIDTH];
    for (int32_t j = 0; j < n_next; j++) {
      moved[j] = slot[next[j].parent];
      depth[moved[j]] = v + 1;
    }
    memcpy(slot, moved, (size_t)n_next * sizeof *slot);
    n_live = n_next;
  }
}
