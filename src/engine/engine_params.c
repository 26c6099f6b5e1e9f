/* Defaults and validation of request and engine parameters. */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "engine_internal.h"
#include "engine_options.h"
#include "request_checks.h"
#include "sampling/sampler.h"
#include "sampling/sampler_contract.h"
#include "stop_matcher.h"

const char *nucleus_finish_reason_name(nucleus_finish_reason reason) {
  switch (reason) {
  case NUCLEUS_FINISH_NONE: return "none";
  case NUCLEUS_FINISH_STOP: return "stop";
  case NUCLEUS_FINISH_LENGTH: return "length";
  case NUCLEUS_FINISH_ABORT: return "abort";
  case NUCLEUS_FINISH_ERROR: return "error";
  }
  return "unknown";
}

nucleus_request_params nucleus_request_default_params(void) {
  nucleus_request_params p;
  memset(&p, 0, sizeof p);
  nc_params_apply_defaults(&p, NUCLEUS_SURFACE_LIBRARY); /* sampling too */
  p.speculative.draft_max = NUCLEUS_DEFAULT_DRAFT_MAX;
  p.reasoning.budget = -1;
  return p;
}

nucleus_engine_params nucleus_engine_default_params(void) {
  nucleus_engine_params p;
  memset(&p, 0, sizeof p);
  p.kv_block_tokens = 16;
  p.max_batch_tokens = 512;
  p.max_running = 64;
  p.max_queued = 256;
  return p;
}

nucleus_status nucleus_request_params_validate(const nucleus_model *model,
                                               const nucleus_request_params *p,
                                               nucleus_error *err) {
  int32_t n_vocab = nc_model_hparams(model)->n_vocab;
  nc_code rc = nc_sampling_validate(&p->sampling, n_vocab, err);
  if (rc != NC_OK) return rc;
  /* Every scalar against the one contract (sampler_contract.c), then what
   * relates one parameter to another. */
  if ((rc = nc_params_check_request(p, err)) != NC_OK) return rc;
  if (p->max_tokens >= 0 && p->min_tokens > p->max_tokens)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'min_tokens' (%d) must not exceed max_tokens (%d)",
                   p->min_tokens, p->max_tokens);
  if (p->n_stop > 0 && !p->stop)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop: %zu strings announced but the array is NULL",
                   p->n_stop);
  for (size_t i = 0; i < p->n_stop; i++)
    if ((rc = nc_stop_check(i, p->stop[i], p->stop[i] ? strlen(p->stop[i]) : 0,
                            err)) != NC_OK)
      return rc;
  if (p->cache_salt &&
      (rc = nc_cache_salt_check(
           p->cache_salt,
           strnlen(p->cache_salt, NUCLEUS_MAX_CACHE_SALT_BYTES + 1), err)) !=
          NC_OK)
    return rc;
  if (p->n_stop_token_ids > 0 && !p->stop_token_ids)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids: %zu ids announced but the array is NULL",
                   p->n_stop_token_ids);
  for (size_t i = 0; i < p->n_stop_token_ids; i++)
    if ((rc = nc_stop_token_id_check(i, p->stop_token_ids[i], n_vocab, err)) !=
        NC_OK)
      return rc;
  if ((rc = nc_beam_check(p->n, p->beam_width, err)) != NC_OK) return rc;
  if ((rc = nc_spec_check(&p->speculative, p->beam_width, n_vocab, err)) !=
      NC_OK)
    return rc;
  if ((rc = nc_reasoning_check(p, err)) != NC_OK) return rc;
  if (p->grammar_trigger) {
    size_t n =
        strnlen(p->grammar_trigger, NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES + 1);
    if (!p->grammar)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "grammar_trigger needs a grammar");
    if (n == 0 || n > NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "grammar_trigger must be 1 to %d bytes",
                     NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES);
  }
  if (p->beam_width > 1) {
    /* Beam search ranks raw log-probabilities and does not match stop
     * strings: what only sampling reads is refused, not ignored. */
    const nucleus_sampling_params *s = &p->sampling;
    const char *what =
        p->n_stop                               ? "stop strings"
        : s->logprobs || s->top_logprobs        ? "logprobs"
        : s->inspect_top_n                      ? "inspect"
        : s->n_logit_bias                       ? "logit_bias"
        : s->allowed_tokens || s->banned_tokens ? "allowed/banned tokens"
        : s->top_k > 0 || s->top_p < 1 || s->min_p > 0 || s->typical_p < 1
            ? "top_k/top_p/min_p/typical_p"
        : s->repetition_penalty != 1 || s->presence_penalty != 0 ||
                s->frequency_penalty != 0
            ? "penalties"
        : p->min_tokens ? "min_tokens"
        : p->grammar    ? "grammars"
                        : NULL;
    if (what)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "beam_width %d: %s do not apply to beam search, which "
                     "ranks the raw log-probabilities",
                     p->beam_width, what);
  }
  return NC_OK;
}

nc_code nc_engine_resolve_params(const nc_hparams *hp,
                                 const nucleus_engine_params *params,
                                 nucleus_engine_params *out, nc_error *err) {
  *out = params ? *params : nucleus_engine_default_params();
  /* One check per option, with the table's message (engine_options.c). */
  nc_code rc = nc_engine_options_check_all(hp, out, err);
  if (rc != NC_OK) return rc;
  nucleus_engine_params d = nucleus_engine_default_params();
  if (out->n_ctx == 0)
    out->n_ctx = hp->n_ctx_train < NC_ENGINE_N_CTX_CAP ? hp->n_ctx_train
                                                       : NC_ENGINE_N_CTX_CAP;
  if (out->kv_block_tokens == 0) out->kv_block_tokens = d.kv_block_tokens;
  if (out->max_batch_tokens == 0) out->max_batch_tokens = d.max_batch_tokens;
  if (out->max_running == 0) out->max_running = d.max_running;
  if (out->max_queued == 0) out->max_queued = d.max_queued;
  if (out->image_step_tokens == 0)
    out->image_step_tokens = out->max_batch_tokens;
  if (out->row_orders == NUCLEUS_ROW_ORDERS_AUTO)
    out->row_orders = NUCLEUS_ROW_ORDERS_REUSE;
  if (out->decode_stall == 0) out->decode_stall = NC_ENGINE_DECODE_STALL;
  if (out->kv_cache_tokens == 0)
    out->kv_cache_tokens =
        out->n_ctx > NC_ENGINE_KV_TOKENS ? out->n_ctx : NC_ENGINE_KV_TOKENS;
  if (out->kv_cache_tokens < out->kv_block_tokens)
    out->kv_cache_tokens = out->kv_block_tokens;
  return NC_OK;
}

void nucleus_engine_get_params(const nucleus_engine *e,
                               nucleus_engine_params *out) {
  if (out) *out = e ? e->params : nucleus_engine_default_params();
}
