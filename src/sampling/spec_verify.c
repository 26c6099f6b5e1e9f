/* spec_verify: accepting or replacing one drafted token (spec_verify.h). */
#include "spec_verify.h"

#include <string.h>

#include "base/rng.h"
#include "sampler_inspect.h"
#include "sampler_row.h"

/* The final distribution of a processed row, entry by entry: the argmax for
 * a greedy row, every token when nothing truncated, else the kept set. */
static size_t dist_size(const nc_row_state *st) {
  return st->greedy ? 1 : st->full ? (size_t)st->V : st->n;
}

static void dist_at(const nc_sample_workspace *ws, const nc_row_state *st,
                    size_t i, int32_t *id, double *weight) {
  if (st->greedy) {
    *id = st->argmax, *weight = 1.0;
  } else if (st->full) {
    *id = (int32_t)i, *weight = ws->w[i];
  } else {
    *id = ws->cand[i].id, *weight = ws->cand[i].w;
  }
}

/* p(x), the probability of x in the final distribution. */
static double prob_of(const nc_sample_workspace *ws, const nc_row_state *st,
                      int32_t x) {
  if (st->greedy) return x == st->argmax ? 1.0 : 0.0;
  if (st->full) return ws->w[x] / st->mass;
  for (size_t i = 0; i < st->n; i++)
    if (ws->cand[i].id == x) return ws->cand[i].w / st->mass;
  return 0.0;
}

/* A draw from the normalised residual max(0, p - q) at u, walking the
 * final distribution in its deterministic order. The residual is empty only
 * when p == q, where nothing is ever rejected; rounding could still get
 * here, and then the draw is from p. */
static int32_t residual_draw(const nc_sample_workspace *ws,
                             const nc_row_state *st, const float *q, double u) {
  const size_t n = dist_size(st);
  double total = 0.0;
  for (size_t i = 0; i < n; i++) {
    int32_t id;
    double w;
    dist_at(ws, st, i, &id, &w);
    double r = w / st->mass - (double)q[id];
    if (r > 0.0) total += r;
  }
  const bool from_p = !(total > 0.0);
  double target = u * (from_p ? 1.0 : total), acc = 0.0;
  int32_t last = -1;
  for (size_t i = 0; i < n; i++) {
    int32_t id;
    double w;
    dist_at(ws, st, i, &id, &w);
    double r = from_p ? w / st->mass : w / st->mass - (double)q[id];
    if (!(r > 0.0)) continue;
    acc += r;
    last = id;
    if (acc > target) return id;
  }
  return last >= 0 ? last : (st->greedy ? st->argmax : ws->cand[0].id);
}

static nc_code verify_q(nc_sample_workspace *ws, const nc_sample_row *row,
                        int32_t draft, const float *q, nc_sample_result *res,
                        bool *accepted, nc_error *err) {
  /* the record: the pipeline's stages and the emitted token (no draw of
   * the sampler's own: method NONE) */
  nc_row_state st;
  nc_code rc = nc_sample_process_row(ws, row, &st, err);
  if (rc) {
    res->token = -1;
    res->status = rc;
    return rc;
  }
  const nc_sampler *s = st.s;
  const double px = prob_of(ws, &st, draft), qx = q[draft];
  const double u = nc_rng_uniform(nc_sampler_seed(s), nc_sampler_stream(s),
                                  nc_sampler_step(s), NC_SPEC_DRAW_ACCEPT);
  /* u < p / q, without dividing (q(x) = 0: the draft was never proposed by
   * q; it stands if p has it at all) */
  *accepted = qx > 0.0 ? u * qx < px : px > 0.0;
  if (*accepted) {
    res->token = draft;
  } else {
    const double u2 = nc_rng_uniform(nc_sampler_seed(s), nc_sampler_stream(s),
                                     nc_sampler_step(s), NC_SPEC_DRAW_RESIDUAL);
    res->token = residual_draw(ws, &st, q, u2);
  }
  if (st.ins)
    nc_inspect_finish(st.ins, u, res->token, st.mass, st.full ? ws->w : NULL);
  res->n_kept = st.full ? st.V : (int32_t)st.n;
  res->p_top = nc_row_top_prob(ws, &st);
  res->status = NC_OK;
  nc_sample_logprobs(ws, &st, res);
  return NC_OK;
}

nc_code nc_spec_verify(nc_sample_workspace *ws, const nc_sample_row *row,
                       int32_t draft, const float *q, nc_spec_rule rule,
                       nc_sample_result *res, bool *accepted, nc_error *err) {
  memset(res, 0, sizeof *res);
  *accepted = false;
  if (!ws || !row || !row->sampler) {
    res->token = -1;
    res->status = NC_ERR_INVALID_ARGUMENT;
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "spec verify: workspace, row or sampler missing (NULL)");
  }
  const int32_t V = row->sampler->n_vocab;
  if (draft < 0 || draft >= V) {
    res->token = -1;
    res->status = NC_ERR_INVALID_ARGUMENT;
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "spec verify: draft token %d out of range [0, %d)", draft,
                   V);
  }
  if (q && rule == NC_SPEC_EXACT)
    return verify_q(ws, row, draft, q, res, accepted, err);
  /* A point mass (either rule), or the strict rule: the draw of decoding
   * without drafts, kept as the draft when it equals it. */
  nc_code rc = nc_sample_batch(ws, row, 1, res, err);
  if (rc) return rc;
  *accepted = res->token == draft;
  return NC_OK;
}

int32_t nc_spec_draft_token(nc_sample_workspace *ws, const nc_sample_row *row,
                            nc_spec_rule rule, int32_t *ids, double *probs,
                            float *q) {
  int32_t n = 0;
  if (nc_sample_distribution(ws, row, ids, probs, &n, NULL) != NC_OK || n < 1)
    return -1;
  if (rule == NC_SPEC_STRICT) return ids[0];
  nc_sample_result res;
  if (nc_sample_batch(ws, row, 1, &res, NULL) != NC_OK || res.token < 0)
    return -1;
  memset(q, 0, (size_t)row->sampler->n_vocab * sizeof *q);
  for (int32_t i = 0; i < n; i++)
    q[ids[i]] = (float)probs[i];
  return res.token;
}
