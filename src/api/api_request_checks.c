/* Public API: the checks of the structured request parameters (stop
 * strings, logit bias), one message per failure on every surface, and the
 * setters that use them. The rules live with their users:
 * engine/stop_matcher.c (nc_stop_check), sampling/sampler_params.c
 * (nc_logit_bias_check), engine/request_checks.c (stop token ids, the
 * cache salt, n with beam search). */
#include <string.h>

#include "engine/request_checks.h"
#include "engine/stop_matcher.h"
#include "model/model.h"
#include "nucleus.h"
#include "sampling/sampler.h"

nucleus_status nucleus_stop_string_check(size_t index, const char *s,
                                         size_t len, nucleus_error *err) {
  return nc_stop_check(index, s, len, err);
}

nucleus_status nucleus_request_params_set_stop(nucleus_request_params *p,
                                               const char *const *stops,
                                               size_t n, nucleus_error *err) {
  if (!p || (n > 0 && !stops))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop: params or strings are NULL");
  for (size_t i = 0; i < n; i++) {
    nc_code rc =
        nc_stop_check(i, stops[i], stops[i] ? strlen(stops[i]) : 0, err);
    if (rc != NC_OK) return rc;
  }
  p->stop = n ? stops : NULL;
  p->n_stop = n;
  return NC_OK;
}

nucleus_status nucleus_logit_bias_check(size_t index, nucleus_logit_bias b,
                                        int32_t n_vocab, nucleus_error *err) {
  return nc_logit_bias_check(index, b, n_vocab, err);
}

nucleus_status nucleus_request_params_set_logit_bias(
    nucleus_request_params *p, const nucleus_model *model,
    const nucleus_logit_bias *bias, size_t n, nucleus_error *err) {
  if (!p || (n > 0 && !bias))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logit_bias: params or entries are NULL");
  for (size_t i = 0; i < n; i++) {
    nc_code rc = nc_logit_bias_check(
        i, bias[i], model ? nc_model_hparams(model)->n_vocab : 0, err);
    if (rc != NC_OK) return rc;
  }
  p->sampling.logit_bias = n ? bias : NULL;
  p->sampling.n_logit_bias = n;
  return NC_OK;
}

nucleus_status nucleus_stop_token_id_check(size_t index, int32_t id,
                                           int32_t n_vocab,
                                           nucleus_error *err) {
  return nc_stop_token_id_check(index, id, n_vocab, err);
}

nucleus_status nucleus_request_params_set_stop_token_ids(
    nucleus_request_params *p, const nucleus_model *model, const int32_t *ids,
    size_t n, nucleus_error *err) {
  if (!p || (n > 0 && !ids))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids: params or ids are NULL");
  for (size_t i = 0; i < n; i++) {
    nc_code rc = nc_stop_token_id_check(
        i, ids[i], model ? nc_model_hparams(model)->n_vocab : 0, err);
    if (rc != NC_OK) return rc;
  }
  p->stop_token_ids = n ? ids : NULL;
  p->n_stop_token_ids = n;
  return NC_OK;
}

nucleus_status nucleus_cache_salt_check(const char *s, size_t len,
                                        nucleus_error *err) {
  if (!s && len)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "cache_salt: NULL");
  return nc_cache_salt_check(s, len, err);
}

nucleus_status nucleus_beam_check(int32_t n, int32_t beam_width,
                                  nucleus_error *err) {
  return nc_beam_check(n, beam_width, err);
}

nucleus_status nucleus_speculative_check(const nucleus_spec_params *s,
                                         int32_t beam_width, int32_t n_vocab,
                                         nucleus_error *err) {
  if (!s)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "speculative: params NULL");
  return nc_spec_check(s, beam_width, n_vocab, err);
}

nucleus_status nucleus_reasoning_check(const nucleus_request_params *p,
                                       nucleus_error *err) {
  if (!p)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "reasoning: params NULL");
  return nc_reasoning_check(p, err);
}

const char *nucleus_spec_type_name(nucleus_spec_type t) {
  return nc_spec_type_name(t);
}

bool nucleus_spec_type_from_name(const char *name, nucleus_spec_type *out) {
  return nc_spec_type_from_name(name, out);
}
