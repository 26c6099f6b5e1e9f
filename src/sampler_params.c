/* sampler_params: the OpenAI defaults and the validation of every sampling
 * parameter against its allowed range. */
#include <math.h>

#include "sampler.h"

nucleus_sampling_params nucleus_sampling_default_params(void) {
  return (nucleus_sampling_params){
      .temperature = 1.0f,
      .top_k = 0,
      .top_p = 1.0f,
      .min_p = 0.0f,
      .typical_p = 1.0f,
      .repetition_penalty = 1.0f,
      .presence_penalty = 0.0f,
      .frequency_penalty = 0.0f,
      .logit_bias = NULL,
      .n_logit_bias = 0,
      .allowed_tokens = NULL,
      .n_allowed_tokens = 0,
      .banned_tokens = NULL,
      .n_banned_tokens = 0,
      .has_seed = false,
      .seed = 0,
      .logprobs = false,
      .top_logprobs = 0,
      .processed_logprobs = false,
  };
}

static nc_code check_range(const char *name, float v, float lo, float hi,
                           bool lo_open, nc_error *err) {
  bool ok = isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (ok) return NC_OK;
  return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                 "%s = %g is out of range: %s%g, %g]", name, (double)v,
                 lo_open ? "(" : "[", (double)lo, (double)hi);
}

static nc_code check_ids(const char *name, const int32_t *ids, size_t n,
                         int32_t n_vocab, nc_error *err) {
  if (n > 0 && !ids)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "%s: %zu ids announced but the array is NULL", name, n);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "%s[%zu] = %d is not a token id: allowed range [0, %d]",
                     name, i, ids[i], n_vocab - 1);
  return NC_OK;
}

nc_code nc_sampling_validate(const nucleus_sampling_params *p, int32_t n_vocab,
                             nc_error *err) {
  if (!p)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "sampling parameters: NULL");
  if (n_vocab <= 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "n_vocab = %d: must be at least 1", n_vocab);
  nc_code rc;
  if ((rc = check_range("temperature", p->temperature, 0.0f, NC_TEMPERATURE_MAX,
                        false, err)))
    return rc;
  if (p->top_k < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "top_k = %d is out of range: 0 (off) or >= 1 (%d or more "
                   "keeps every token)",
                   p->top_k, n_vocab);
  if ((rc = check_range("top_p", p->top_p, 0.0f, 1.0f, true, err))) return rc;
  if ((rc = check_range("min_p", p->min_p, 0.0f, 1.0f, false, err))) return rc;
  if ((rc = check_range("typical_p", p->typical_p, 0.0f, 1.0f, true, err)))
    return rc;
  if ((rc = check_range("repetition_penalty", p->repetition_penalty, 0.0f,
                        NC_REPETITION_PENALTY_MAX, true, err)))
    return rc;
  if ((rc = check_range("presence_penalty", p->presence_penalty, -2.0f, 2.0f,
                        false, err)))
    return rc;
  if ((rc = check_range("frequency_penalty", p->frequency_penalty, -2.0f, 2.0f,
                        false, err)))
    return rc;
  if (p->top_logprobs < 0 || p->top_logprobs > NUCLEUS_MAX_TOP_LOGPROBS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "top_logprobs = %d is out of range: [0, %d]",
                   p->top_logprobs, NUCLEUS_MAX_TOP_LOGPROBS);
  if (p->n_logit_bias > 0 && !p->logit_bias)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias: %zu entries announced but the array is NULL",
                   p->n_logit_bias);
  for (size_t i = 0; i < p->n_logit_bias; i++) {
    const nucleus_logit_bias *b = &p->logit_bias[i];
    if (b->token < 0 || b->token >= n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "logit_bias[%zu]: token %d is not a token id: allowed "
                     "range [0, %d]",
                     i, b->token, n_vocab - 1);
    if (isnan(b->bias))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "logit_bias[%zu] (token %d): bias is NaN; allowed range "
                     "[-100, 100] (values beyond are clamped)",
                     i, b->token);
  }
  if ((rc = check_ids("allowed_tokens", p->allowed_tokens, p->n_allowed_tokens,
                      n_vocab, err)))
    return rc;
  if (p->allowed_tokens && p->n_allowed_tokens == 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "allowed_tokens is empty: give at least one token id or "
                   "NULL for all");
  if ((rc = check_ids("banned_tokens", p->banned_tokens, p->n_banned_tokens,
                      n_vocab, err)))
    return rc;
  return NC_OK;
}
