/* sampler_params: the library's sampling defaults (the contract's) and the
 * validation of every sampling parameter. */
#include <math.h>
#include <string.h>

#include "sampler.h"
#include "sampler_contract.h"

nucleus_sampling_params nucleus_sampling_default_params(void) {
  /* Every scalar's default from the one contract (sampler_contract.c);
   * the rest is off: no bias, masks, seed, logprobs or inspection. */
  nucleus_request_params p;
  memset(&p, 0, sizeof p);
  nc_params_apply_defaults(&p, NUCLEUS_SURFACE_LIBRARY);
  return p.sampling;
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

nc_code nc_logit_bias_check(size_t index, nucleus_logit_bias b, int32_t n_vocab,
                            nc_error *err) {
  if (index >= NUCLEUS_MAX_LOGIT_BIAS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias: at most %d entries are allowed",
                   NUCLEUS_MAX_LOGIT_BIAS);
  if (b.token < 0 || (n_vocab > 0 && b.token >= n_vocab))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias[%zu]: token %d is not a token id: allowed "
                   "range [0, %d]",
                   index, b.token, n_vocab > 0 ? n_vocab - 1 : INT32_MAX);
  if (!(fabsf(b.bias) <= NUCLEUS_MAX_LOGIT_BIAS_VALUE))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias[%zu] (token %d): bias %g must be a number in "
                   "[-%d, %d]",
                   index, b.token, (double)b.bias, NUCLEUS_MAX_LOGIT_BIAS_VALUE,
                   NUCLEUS_MAX_LOGIT_BIAS_VALUE);
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
  if (p->n_logit_bias > 0 && !p->logit_bias)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias: %zu entries announced but the array is NULL",
                   p->n_logit_bias);
  for (size_t i = 0; i < p->n_logit_bias; i++)
    if ((rc = nc_logit_bias_check(i, p->logit_bias[i], n_vocab, err)))
      return rc;
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
