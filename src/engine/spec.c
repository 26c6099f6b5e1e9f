/* spec: speculative decoding in the step loop (docs/SPECULATIVE.md).
 *
 * A completion that feeds one generated token may feed drafts after it:
 * positions past it in the same batch, each row in the orders a plain
 * decode of that position takes (the engine's row orders: engine.c's
 * add_row), so each row's logits are the bits decoding without drafts
 * computes there. Verification walks the rows in order with the
 * completion's own sampler, grammar matcher, stop rules and budget, exactly
 * as plain steps would, emitting each token through the engine's one path
 * (nc_engine_handle_token): a draft is kept when the row's draw equals it
 * (spec_verify.h), and the first differing draw, or the draw after the last
 * draft, ends the step. Nothing is undone but the KV cache: positions past
 * the last fed token that was kept are truncated (never published to the
 * prefix cache: the step publishes only the completion's own tokens).
 *
 * The drafters: lookup in the prompt and output (spec_ngram.h), lookup
 * in the request's prediction, the draft model (spec_draft.c) or the
 * model's MTP head (spec_mtp.c), whose drafts come with their
 * distributions q for the verifier. The last two draft for every
 * completion of the step at once: nc_spec_propose sets aside their room,
 * nc_spec_draft_batch and nc_spec_mtp_batch draft.
 *
 * A model with recurrent state (qwen35) cannot take a position back: the
 * step checkpoints the sequence's state before it feeds drafts, and a
 * rejection rewinds to it (kv_cache.h), the fed token with it: the next
 * step feeds the token and the kept drafts again (their rows in the same
 * orders: the same bits), then the token after them.
 *
 * The draft length is chosen per step for the most tokens per cost
 * (spec_policy.h): from the completion's estimated acceptance and what k
 * drafts cost against a decode step (the engine's timed forward calls, or
 * engine params' spec_row_cost per row). When no length pays,
 * the step is plain: the n-gram and prediction drafters still look their
 * first draft up, and whether the model's token equals it updates the
 * acceptance for free; the draft model and beams, whose drafts are not
 * free to look at, try one draft now and then: every NC_SPEC_PROBE_EVERY
 * plain steps, less often while tries bring no drafting back
 * (nc_spec_probe_interval). */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "sampling/spec_ngram.h"
#include "sampling/spec_policy.h"
#include "sampling/spec_verify.h"

static int32_t min_i32(int32_t a, int32_t b) {
  return a < b ? a : b;
}

/* Drafts of at most max tokens from the completion's drafter. Predicted
 * outputs: the prediction where the output's last 4..2 tokens occur in it
 * (unless the prompt and output's lookup matches more of the output's
 * tail than the prediction does there);
 * where the output has left it (a different line, a name not renamed),
 * the prompt and output as the n-gram drafter looks them up (the text the
 * output copies may be the prompt's, as a code edit's unchanged lines);
 * else a one-token key in the prediction, or on from its cursor. */
static int32_t draft_tokens(const group *g, completion *c, int32_t max) {
  const nucleus_spec_params *sp = &g->req->params.speculative;
  nc_ngram_query q = {.hist = c->tokens,
                      .n_hist = c->n_tokens,
                      .source = c->tokens,
                      .n_source = c->n_tokens,
                      .n_min = NC_NGRAM_MIN_DEFAULT,
                      .n_max = NC_NGRAM_MAX_DEFAULT,
                      .match_cap = NC_NGRAM_MATCH_CAP,
                      .max_draft = max};
  c->spec.match_class = -1;
  if (sp->type != NUCLEUS_SPEC_PREDICTION) {
    int32_t match;
    const int32_t n =
        nc_ngram_draft(&q, c->spec.draft, &c->spec.pred_at, &match);
    if (n > 0) c->spec.match_class = nc_ngram_match_class(match);
    return n;
  }
  nc_ngram_query p = q;
  p.source = sp->prediction;
  p.n_source = (int32_t)sp->n_prediction;
  p.predicted = true;
  p.keys_only = true;
  p.n_output = c->n_generated;
  p.from = c->spec.pred_from;
  int32_t n = nc_ngram_draft(&p, c->spec.draft, &c->spec.pred_at, NULL);
  if (n > 0 && c->n_generated > 0) {
    /* the prompt and output's own lookup where it matches longer: the
     * output has left the prediction for text of its own (a loop, a line
     * the prediction lacks) whose key the prediction happens to hold too
     * (before any output the prediction's start stands) */
    int32_t own[NUCLEUS_MAX_DRAFT], at, match;
    const int32_t m = nc_ngram_draft(&q, own, &at, &match);
    if (m > 0 &&
        match > nc_ngram_match_before(p.source, c->spec.pred_at, c->tokens,
                                      c->n_tokens, q.match_cap)) {
      memcpy(c->spec.draft, own, (size_t)m * sizeof(int32_t));
      c->spec.pred_at = -1; /* the prediction's cursor stays */
      return m;
    }
  }
  if (n > 0) return n;
  /* the output's last token is the prediction's at the cursor: on after it */
  const int32_t f = c->spec.pred_from;
  if (f >= 0 && f + 1 < p.n_source && c->n_tokens > 0 &&
      c->tokens[c->n_tokens - 1] == p.source[f]) {
    n = min_i32(max, p.n_source - f - 1);
    memcpy(c->spec.draft, p.source + f + 1, (size_t)n * sizeof(int32_t));
    c->spec.pred_at = f + 1;
    return n;
  }
  int32_t at;
  n = nc_ngram_draft(&q, c->spec.draft, &at, NULL);
  if (n > 0) {
    c->spec.pred_at = -1; /* the prediction's cursor stays */
    return n;
  }
  p.n_min = p.n_max = 1;
  p.keys_only = false;
  return nc_ngram_draft(&p, c->spec.draft, &c->spec.pred_at, NULL);
}

/* The n-gram drafter's match class of this step's drafts (or shadow), or
 * NULL: its estimate (spec_policy.h's parts) refines the completion's. */
static nc_spec_accept *match_part(const group *g, nc_spec_state *sp) {
  if (g->req->params.speculative.type == NUCLEUS_SPEC_NGRAM &&
      sp->match_class >= 0 && sp->match_class < NC_NGRAM_CLASSES)
    return &sp->by_match[sp->match_class];
  return NULL;
}

/* The step's acceptance estimate: its match class's where it has one (a
 * long match is copied text, kept more often than a two-token one). */
static double spec_rate(const group *g, nc_spec_state *sp) {
  const nc_spec_accept *part = match_part(g, sp);
  return part ? nc_spec_accept_rate_in(part, &sp->accept)
              : nc_spec_accept_rate(&sp->accept);
}

static void spec_observe(const group *g, nc_spec_state *sp, int32_t kept,
                         int32_t drafted) {
  nc_spec_accept *part = match_part(g, sp);
  if (part) nc_spec_accept_observe(part, kept, drafted);
  nc_spec_accept_observe(&sp->accept, kept, drafted);
}

int32_t nc_spec_propose(nucleus_engine *e, group *g, completion *c,
                        int32_t kv_len, const double *cost, int32_t *spare_rows,
                        int64_t *spare_blocks) {
  nc_spec_state *sp = &c->spec;
  const nucleus_request_params *p = &g->req->params;
  sp->n_draft = 0;
  sp->shadow = -1;
  /* a generated token (the prompt's rows take the prompt's orders), fed
   * alone, by a sampling completion or a beam (n-gram or prediction
   * drafts: engine_beam.c) */
  /* (beams cut their drafts by truncation: not on a state model) */
  if (kv_len + 1 != c->n_tokens || kv_len < g->req->n_prompt ||
      (!c->sampler && !g->beam) ||
      (g->beam && (p->speculative.type == NUCLEUS_SPEC_DRAFT ||
                   p->speculative.type == NUCLEUS_SPEC_MTP ||
                   nc_kv_state_floats(e->kv) > 0)))
    return 0;
  int32_t max = g->beam ? nc_spec_beam_draft_max(p) : p->speculative.draft_max;
  /* the fed positions stay below n_ctx - 1, as without drafts; the
   * emitted tokens within max_tokens */
  max = min_i32(max, e->params.n_ctx - 2 - kv_len);
  if (p->max_tokens >= 0)
    max = min_i32(max, p->max_tokens - c->n_generated - 1);
  max = min_i32(max, *spare_rows);
  max = nc_kv_rollback_room(e->kv, kv_len + 1, max);
  max = min_i32(max, nc_spec_length_cap(sp->last_kept));
  if (max <= 0) return 0;
  const bool model = p->speculative.type == NUCLEUS_SPEC_DRAFT ||
                     p->speculative.type == NUCLEUS_SPEC_MTP;
  /* drafts free to look at: a plain step learns from its first one */
  const bool shadows = !model && !g->beam;
  /* lookups first (free): the length is chosen among what they found,
   * with the estimate of their match's class */
  const int32_t found = model ? max : draft_tokens(g, c, max);
  if (found <= 0) return 0;
  double a = spec_rate(g, sp);
  /* strictly verified, a model's draft is kept with p(x) <= max p: where
   * not even the model's top token would pay, its forward calls (and a
   * try's catch-up) are spent for nothing */
  bool may_pay = true;
  if (model && nc_spec_rule_of(g) == NC_SPEC_STRICT) {
    const double top = nc_spec_top_bound(&sp->top);
    if (top < a) a = top;
    may_pay = nc_spec_best_length(top, cost, found) > 0;
  }
  int32_t k = nc_spec_best_length(a, cost, found);
  if (k > 0) {
    sp->probes = 0;
  } else if (!shadows && ++sp->idle >= nc_spec_probe_interval(sp->probes) &&
             may_pay) {
    k = 1; /* a try: fewer while tries do not bring drafting back */
    if (sp->probes < NC_SPEC_PROBE_MAX) sp->probes++;
  }
  /* the draft model and the MTP head draft later, for every completion at
   * once: room for k drafts is set aside now */
  int32_t n = k;
  if (n == 0 || n < p->speculative.draft_min) {
    if (shadows) sp->shadow = sp->draft[0];
    return 0;
  }
  const int64_t base = nc_kv_blocks_needed(e->kv, c->kv_seq, kv_len + 1);
  while (n > 0 && nc_kv_blocks_needed(e->kv, c->kv_seq, kv_len + 1 + n) - base >
                      *spare_blocks)
    n--;
  if (n <= 0 || n < p->speculative.draft_min) return 0;
  *spare_blocks -= nc_kv_blocks_needed(e->kv, c->kv_seq, kv_len + 1 + n) - base;
  *spare_rows -= n;
  sp->idle = 0;
  if (model) {
    sp->draft_room = n;
    return 0;
  }
  sp->n_draft = n;
  return n;
}

int32_t nc_spec_beam_draft_max(const nucleus_request_params *p) {
  return min_i32(p->speculative.draft_max, NC_SPEC_BEAM_DRAFT_MAX);
}

bool nc_spec_q_reserve(nucleus_engine *e, completion *c, int32_t rows) {
  nc_spec_state *sp = &c->spec;
  if (sp->q && sp->q_rows >= rows) return true;
  float *q = realloc(sp->q, (size_t)rows * (size_t)e->n_vocab * sizeof *q);
  if (!q) return false;
  sp->q = q;
  sp->q_rows = rows;
  return true;
}

nc_spec_rule nc_spec_rule_of(const group *g) {
  return g->req->params.speculative.strict ? NC_SPEC_STRICT : NC_SPEC_EXACT;
}

void nc_spec_shadow_check(const group *g, completion *c, int32_t token) {
  nc_spec_state *sp = &c->spec;
  if (sp->shadow < 0) return;
  const bool hit = token == sp->shadow;
  sp->shadow = -1;
  spec_observe(g, sp, hit ? 1 : 0, 1);
  if (g->req->params.speculative.type == NUCLEUS_SPEC_PREDICTION &&
      sp->pred_at >= 0)
    sp->pred_from = sp->pred_at + (hit ? 1 : 0);
}

void nc_spec_account(nucleus_engine *e, const group *g, nc_spec_state *sp,
                     int32_t kept, int32_t drafted) {
  const nucleus_spec_params *p = &g->req->params.speculative;
  e->stats.spec_drafted_total[p->type] += drafted;
  e->stats.spec_accepted_total[p->type] += kept;
  e->stats.spec_accepted_hist[kept]++;
  sp->drafted += drafted;
  sp->accepted += kept;
  sp->last_kept = kept;
  if (p->type == NUCLEUS_SPEC_PREDICTION && sp->pred_at >= 0)
    sp->pred_from = sp->pred_at + kept;
  spec_observe(g, sp, kept, drafted);
}

void nc_spec_verify_step(nucleus_engine *e, group *g, completion *c,
                         const float *logits) {
  nc_spec_state *sp = &c->spec;
  const nucleus_request_params *p = &g->req->params;
  const int32_t n_draft = sp->n_draft;
  const int32_t fed_len = c->n_tokens; /* positions [0, fed_len) written */
  int32_t kept = 0, emitted = 0;
  const bool draft_model = p->speculative.type == NUCLEUS_SPEC_DRAFT ||
                           p->speculative.type == NUCLEUS_SPEC_MTP;
  sp->n_draft = 0;
  for (int32_t j = 0; j <= n_draft && !c->finished; j++) {
    if (c->grammar && !nc_engine_grammar_mask(e, g, c)) break;
    bool masked = c->n_generated < p->min_tokens;
    nc_sample_row row = {
        .sampler = c->sampler,
        .logits = logits + (size_t)j * (size_t)e->n_vocab,
        .suppress = masked ? g->suppress : NULL,
        .n_suppress = masked ? g->n_suppress : 0,
        .inspect = c->inspect,
        .grammar = c->grammar ? c->grammar_mask : NULL,
    };
    nc_sample_result res;
    bool accepted = false;
    nc_error serr = {0};
    nc_code rc = j < n_draft /* a draft; after the last one, the plain draw */
                     ? nc_spec_verify(
                           e->ws, &row, sp->draft[j],
                           draft_model ? sp->q + (size_t)j * e->n_vocab : NULL,
                           nc_spec_rule_of(g), &res, &accepted, &serr)
                     : nc_sample_batch(e->ws, &row, 1, &res, &serr);
    if (rc != NC_OK || res.token < 0) {
      nc_fail(&serr, rc ? rc : NC_ERR_INTERNAL,
              "sampling failed (the logits hold NaN or every token is "
              "masked)");
      const nc_finish f = nc_finish_of(NUCLEUS_FINISH_ERROR, &serr);
      nc_engine_finish(e, g, c, &f);
      break;
    }
    if (c->inspect) c->inspect->draft_token = j < n_draft ? sp->draft[j] : -1;
    nc_engine_handle_token(e, g, c, &res);
    emitted++;
    if (j == n_draft || !accepted) break;
    kept++;
  }
  e->stats.generated_tokens_total += emitted;
  nc_spec_account(e, g, sp, kept, n_draft);
  /* the fed token and the kept drafts stay; a finished completion has
   * released its sequence already */
  if (!c->finished && c->kv_seq >= 0) {
    /* (a state model's rejection: back to the step's checkpoint; without
     * one, truncation recomputes the sequence from 0) */
    if (kept == n_draft || nc_kv_state_floats(e->kv) == 0 ||
        !nc_kv_seq_rewind(e->kv, c->kv_seq))
      nc_kv_seq_truncate(e->kv, c->kv_seq, fed_len + kept);
    nc_spec_draft_truncate(e, c, fed_len + kept);
  }
}
