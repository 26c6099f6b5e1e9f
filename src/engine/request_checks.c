/* request_checks: stop token ids, the cache salt, n against beam_width,
 * speculative decoding's parameters, the fit in the KV pool. */
#include "request_checks.h"

#include <string.h>

nc_code nc_stop_token_id_check(size_t index, int32_t id, int32_t n_vocab,
                               nc_error *err) {
  if (index >= NUCLEUS_MAX_STOP_TOKEN_IDS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids: at most %d token ids are allowed",
                   NUCLEUS_MAX_STOP_TOKEN_IDS);
  if (id < 0 || (n_vocab > 0 && id >= n_vocab))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids[%zu]: token %d is not a token id: allowed "
                   "range [0, %d]",
                   index, id, n_vocab > 0 ? n_vocab - 1 : INT32_MAX);
  return NC_OK;
}

nc_code nc_cache_salt_check(const char *s, size_t len, nc_error *err) {
  if (len > NUCLEUS_MAX_CACHE_SALT_BYTES)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "cache_salt: %zu bytes; at most %d are allowed", len,
                   NUCLEUS_MAX_CACHE_SALT_BYTES);
  if (len && memchr(s, 0, len))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "cache_salt: must not contain NUL bytes");
  return NC_OK;
}

nc_code nc_beam_check(int32_t n, int32_t beam_width, nc_error *err) {
  if (beam_width > 1 && n > beam_width)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'n' (%d) must not exceed beam_width (%d): beam search "
                   "returns the best n of its beams",
                   n, beam_width);
  return NC_OK;
}

static const char *const spec_names[NUCLEUS_SPEC_TYPE_COUNT] = {
    "off", "ngram", "prediction", "draft", "mtp"};

const char *nc_spec_type_name(nucleus_spec_type t) {
  return (unsigned)t < NUCLEUS_SPEC_TYPE_COUNT ? spec_names[t] : NULL;
}

bool nc_spec_type_from_name(const char *name, nucleus_spec_type *out) {
  for (int t = 0; name && t < NUCLEUS_SPEC_TYPE_COUNT; t++)
    if (strcmp(name, spec_names[t]) == 0) {
      *out = (nucleus_spec_type)t;
      return true;
    }
  return false;
}

nc_code nc_spec_check(const nucleus_spec_params *s, int32_t beam_width,
                      int32_t n_vocab, nc_error *err) {
  if ((unsigned)s->type >= NUCLEUS_SPEC_TYPE_COUNT)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative.type: %d is not a drafter: allowed 0 (off), 1 "
                   "(ngram), 2 (prediction), 3 (draft), 4 (mtp)",
                   (int)s->type);
  if (s->draft_max < 1 || s->draft_max > NUCLEUS_MAX_DRAFT)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative.draft_max: %d must be in [1, %d]", s->draft_max,
                   NUCLEUS_MAX_DRAFT);
  if (s->draft_min < 0 || s->draft_min > s->draft_max)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative.draft_min: %d must be in [0, draft_max = %d]",
                   s->draft_min, s->draft_max);
  if (s->n_prediction > 0 && s->type != NUCLEUS_SPEC_PREDICTION)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative.prediction: %zu tokens given but the drafter "
                   "is '%s' (a prediction needs the 'prediction' drafter)",
                   s->n_prediction, spec_names[s->type]);
  if (s->n_prediction > NUCLEUS_MAX_PREDICTION_TOKENS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "prediction: %zu tokens; at most %d are allowed",
                   s->n_prediction, NUCLEUS_MAX_PREDICTION_TOKENS);
  if (s->n_prediction > 0 && !s->prediction)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "prediction: %zu tokens announced but the array is NULL",
                   s->n_prediction);
  for (size_t i = 0; i < s->n_prediction; i++)
    if (s->prediction[i] < 0 || (n_vocab > 0 && s->prediction[i] >= n_vocab))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "prediction[%zu]: token %d is not a token id: allowed "
                     "range [0, %d]",
                     i, s->prediction[i],
                     n_vocab > 0 ? n_vocab - 1 : INT32_MAX);
  if ((s->type == NUCLEUS_SPEC_DRAFT || s->type == NUCLEUS_SPEC_MTP) &&
      beam_width > 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "speculative '%s': not with beam search (beam_width %d): "
                   "beams draft by 'ngram' or 'prediction'",
                   spec_names[s->type], beam_width);
  return NC_OK;
}

static int64_t div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t nc_request_blocks_needed(size_t n_prompt,
                                 const nucleus_request_params *p, int32_t n_ctx,
                                 int32_t block_tokens) {
  int64_t prompt = (int64_t)n_prompt, room = (int64_t)n_ctx - prompt;
  bool ends_early =
      !p->ignore_eos || p->n_stop || p->n_stop_token_ids || p->grammar;
  /* Without max_tokens, one that may end at its first token needs only
   * its prompt's blocks; one that cannot runs to the full context. */
  int64_t generated = p->max_tokens < 0      ? (ends_early ? 1 : room)
                      : p->max_tokens > room ? room
                                             : (int64_t)p->max_tokens;
  if (generated < 0) generated = 0;
  int64_t bt = block_tokens > 0 ? block_tokens : 1;
  /* Fed: the prompt, then every generated token but the last. */
  int64_t final_len = prompt + (generated > 1 ? generated - 1 : 0);
  if (final_len == prompt) return div_up(prompt, bt); /* nothing diverges */
  int64_t seqs = p->beam_width > 1 ? p->beam_width : (p->n > 1 ? p->n : 1);
  int64_t shared = prompt / bt; /* full blocks; a partial one is copied */
  return shared + seqs * (div_up(final_len, bt) - shared);
}

nc_code nc_request_fit_check(size_t n_prompt, const nucleus_request_params *p,
                             int32_t n_ctx, int32_t block_tokens,
                             int64_t pool_blocks, nc_error *err) {
  int64_t need = nc_request_blocks_needed(n_prompt, p, n_ctx, block_tokens);
  if (need <= pool_blocks) return NC_OK;
  int32_t seqs = p->beam_width > 1 ? p->beam_width : p->n;
  return nc_fail(
      err, NC_ERR_LIMIT,
      "the request cannot fit the KV cache: its %zu prompt tokens "
      "(shared) and %d %s of up to %lld tokens each need %lld "
      "blocks of %d tokens, and the pool holds %lld "
      "(--kv-tokens): lower n or max_tokens",
      n_prompt, seqs, p->beam_width > 1 ? "beams" : "completions",
      (long long)(p->max_tokens < 0 || p->max_tokens > n_ctx - (int64_t)n_prompt
                      ? n_ctx - (int64_t)n_prompt
                      : p->max_tokens),
      (long long)need, block_tokens, (long long)pool_blocks);
}

/* A marker: NULL, or 1 to NUCLEUS_MAX_REASONING_MARKER_BYTES bytes. */
static nc_code marker_check(const char *what, const char *m, nc_error *err) {
  if (!m) return NC_OK;
  size_t n = strnlen(m, NUCLEUS_MAX_REASONING_MARKER_BYTES + 1);
  if (n == 0 || n > NUCLEUS_MAX_REASONING_MARKER_BYTES)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "reasoning.%s: %zu%s bytes; a marker must be 1 to %d bytes",
                   what, n, n > NUCLEUS_MAX_REASONING_MARKER_BYTES ? "+" : "",
                   NUCLEUS_MAX_REASONING_MARKER_BYTES);
  return NC_OK;
}

nc_code nc_reasoning_check(const nucleus_request_params *p, nc_error *err) {
  const nucleus_reasoning_params *r = &p->reasoning;
  nc_code rc;
  if ((rc = marker_check("open", r->open, err)) != NC_OK ||
      (rc = marker_check("close", r->close, err)) != NC_OK ||
      (rc = marker_check("force_close", r->force_close, err)) != NC_OK)
    return rc;
  const bool tracked = r->answer_grammar || r->open || r->force_close;
  if (tracked && !r->close)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "reasoning: an answer grammar or markers need the close "
                   "marker (reasoning.close)");
  if (!r->close) return NC_OK; /* nothing tracked: the budget is unused */
  if (r->budget < -1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "max_reasoning_tokens: %d must be -1 (no budget) or at "
                   "least 0",
                   r->budget);
  if (r->budget >= 0 && p->max_tokens >= 0 && r->budget > p->max_tokens)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "max_reasoning_tokens (%d) must not exceed max_tokens (%d): "
                   "the thinking budget is part of the completion",
                   r->budget, p->max_tokens);
  if (r->answer_grammar && !p->grammar)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "reasoning.answer_grammar needs a grammar");
  if (r->answer_grammar && r->open)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "reasoning.answer_grammar needs a reply that begins inside "
                   "the thinking block (open NULL): put the open marker at "
                   "the end of the prompt");
  if ((r->budget >= 0 || r->answer_grammar) &&
      (p->beam_width > 1 || p->speculative.type != NUCLEUS_SPEC_OFF))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "max_reasoning_tokens and a grammar after the thinking do "
                   "not combine with %s",
                   p->beam_width > 1 ? "beam search" : "speculative decoding");
  return NC_OK;
}
