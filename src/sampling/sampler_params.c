/* sampler_params: the OpenAI defaults and the validation of every sampling
 * parameter against its allowed range. */
#include <math.h>

#include "sampler.h"
#include "sampler_contract.h"

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
      .inspect_top_n = 0,
  };
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
  /* Every scalar against the one contract (sampler_contract.c). */
  nc_code rc = nc_params_check_sampling(p, err);
  if (rc != NC_OK) return rc;
  if (p->inspect_top_n < 0 || p->inspect_top_n > NUCLEUS_MAX_INSPECT_TOP)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "inspect top_n = %d: allowed range [1, %d] (0 = off)",
                   p->inspect_top_n, NUCLEUS_MAX_INSPECT_TOP);
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
