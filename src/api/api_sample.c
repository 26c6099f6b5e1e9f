/* Public API: the sampling pipeline on a caller's logits row
 * (nucleus_sample_logits), for what-if tools such as the server's
 * POST /sample. */
#include <stdlib.h>

#include "nucleus.h"
#include "sampling/sampler.h"

#define MAX_LOGITS (1 << 20)
#define MAX_DRAWS 100000

nucleus_status nucleus_sample_logits(const nucleus_sampling_params *p,
                                     const float *logits, int32_t n_logits,
                                     int32_t n_draws, nucleus_inspect *inspect,
                                     int32_t *draws, nucleus_error *err) {
  if (!p || !logits || n_logits < 1 || n_logits > MAX_LOGITS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample: params or logits missing, or n_logits = %d out of "
                   "[1, %d]",
                   n_logits, MAX_LOGITS);
  if (n_draws < 0 || n_draws > MAX_DRAWS || (n_draws > 0 && !draws))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample: n_draws = %d must be in [0, %d] with room for "
                   "them",
                   n_draws, MAX_DRAWS);
  if (!p->has_seed)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample: a seed is required (the draws are replayable)");
  if (p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f ||
      p->frequency_penalty != 0.0f)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample: the penalties read a token history, which a "
                   "bare logits row does not have");
  if (p->logprobs || p->top_logprobs)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample: logprobs are not reported here");
  nucleus_sampling_params q = *p;
  q.inspect_top_n =
      n_logits < NUCLEUS_MAX_INSPECT_TOP ? n_logits : NUCLEUS_MAX_INSPECT_TOP;
  nc_sampler *s = NULL;
  nc_sample_workspace *ws = NULL;
  nc_code rc = nc_sampler_create(&q, n_logits, p->seed, 0, &s, err);
  if (!rc) rc = nc_sample_workspace_create(n_logits, &ws, err);
  int32_t steps = n_draws > 0 ? n_draws : 1;
  for (int32_t k = 0; !rc && k < steps; k++) {
    nc_sample_row row = {.sampler = s, .logits = logits};
    if (k == 0) row.inspect = inspect;
    nc_sample_result res;
    rc = nc_sample_batch(ws, &row, 1, &res, err);
    if (rc) break;
    if (k < n_draws) draws[k] = res.token;
    nc_sampler_accept(s, res.token); /* the next step; no history kept */
  }
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  return rc;
}
