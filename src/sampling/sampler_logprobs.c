/* sampler_logprobs: the chosen token's logprob and the top alternatives,
 * from the raw distribution or the processed one (see sampler.h). */
#include <math.h>

#include "sampler_row.h"

static float clamp_lp(double lp) {
  if (!(lp >= NC_LOGPROB_FLOOR)) return NC_LOGPROB_FLOOR; /* also NaN */
  return lp > 0.0 ? 0.0f : (float)lp;
}

/* Top n of the row by value with logprob = (v - m) * scale - log_z. */
static int32_t top_from_row(nc_sample_workspace *ws, const float *x, int32_t V,
                            int32_t n, float m, float scale, double log_z,
                            nucleus_token_logprob *top) {
  size_t got =
      nc_row_topn(x, (size_t)V, (size_t)n, false, ws->top_ids, ws->top_vals);
  for (size_t i = 0; i < got; i++)
    top[i] = (nucleus_token_logprob){
        ws->top_ids[i],
        clamp_lp((double)((ws->top_vals[i] - m) * scale) - log_z)};
  return (int32_t)got;
}

static bool kept_in(const nc_cand *c, size_t n, int32_t id) {
  for (size_t i = 0; i < n; i++)
    if (c[i].id == id) return true;
  return false;
}

/* Processed logprobs over the truncated set: the kept tokens by weight,
 * padded with the best dropped tokens at the floor. */
static int32_t top_from_cand(nc_sample_workspace *ws, const nc_row_state *st,
                             int32_t n_top, double log_mass,
                             nucleus_token_logprob *top) {
  const nc_cand *c = ws->cand;
  int32_t got = 0;
  nc_cand best[NUCLEUS_MAX_TOP_LOGPROBS];
  for (size_t i = 0; i < st->n; i++) {
    nc_cand v = c[i];
    v.key = -v.s;
    if (got == n_top) {
      nc_cand *worst = &best[got - 1];
      if (!(v.key < worst->key || (v.key == worst->key && v.id < worst->id)))
        continue;
      got--;
    }
    int32_t j = got++;
    while (j > 0 && (v.key < best[j - 1].key ||
                     (v.key == best[j - 1].key && v.id < best[j - 1].id))) {
      best[j] = best[j - 1];
      j--;
    }
    best[j] = v;
  }
  for (int32_t i = 0; i < got; i++)
    top[i] = (nucleus_token_logprob){best[i].id,
                                     clamp_lp((double)best[i].s - log_mass)};
  if (got < n_top) {
    size_t want = (size_t)n_top + st->n;
    size_t more = nc_row_topn(ws->x, (size_t)st->V, want, false, ws->top_ids,
                              ws->top_vals);
    for (size_t i = 0; i < more && got < n_top; i++)
      if (!kept_in(c, st->n, ws->top_ids[i]))
        top[got++] = (nucleus_token_logprob){ws->top_ids[i], NC_LOGPROB_FLOOR};
  }
  return got;
}

void nc_sample_logprobs(nc_sample_workspace *ws, const nc_row_state *st,
                        nc_sample_result *res) {
  const nucleus_sampling_params *p = &st->s->p;
  int32_t n_top = p->top_logprobs;
  res->logprob = 0.0f;
  res->n_top = 0;
  if (!p->logprobs && n_top == 0) return;
  int32_t tok = res->token;
  if (!p->processed_logprobs || st->greedy) {
    /* log-softmax of the raw (or, processed greedy: step 1-3) logits */
    const float *x = p->processed_logprobs ? ws->x : st->raw;
    bool bad;
    float m = x == ws->x ? st->m
              : st->raw_known
                  ? st->raw_max
                  : nc_row_copy_max_isa(x, NULL, (size_t)st->V, &bad, ws->simd);
    /* untouched logits at T = 1 without truncation: the sampling pass
     * already summed exactly this (same blocks, same order) */
    double z = st->pristine && st->full && st->scale == 1.0f
                   ? st->mass
                   : nc_row_exp_isa(x, (size_t)st->V, m, 1.0f, NULL, ws->simd);
    double log_z = log(z);
    res->logprob = clamp_lp((double)(x[tok] - m) - log_z);
    if (n_top > 0)
      res->n_top = top_from_row(ws, x, st->V, n_top, m, 1.0f, log_z, res->top);
    return;
  }
  double log_mass = log(st->mass);
  res->logprob =
      clamp_lp((double)((ws->x[tok] - st->m) * st->scale) - log_mass);
  if (n_top == 0) return;
  if (st->full)
    res->n_top = top_from_row(ws, ws->x, st->V, n_top, st->m, st->scale,
                              log_mass, res->top);
  else
    res->n_top = top_from_cand(ws, st, n_top, log_mass, res->top);
}

int32_t nc_row_logprobs(const float *x, int32_t V, int32_t tok, int32_t n_top,
                        int simd, float *logprob, nucleus_token_logprob *top) {
  bool bad = false;
  float m = nc_row_copy_max_isa(x, NULL, (size_t)V, &bad, simd);
  double log_z = log(nc_row_exp_isa(x, (size_t)V, m, 1.0f, NULL, simd));
  *logprob = clamp_lp((double)(x[tok] - m) - log_z);
  if (n_top <= 0) return 0;
  int32_t ids[NUCLEUS_MAX_TOP_LOGPROBS];
  float vals[NUCLEUS_MAX_TOP_LOGPROBS];
  if (n_top > NUCLEUS_MAX_TOP_LOGPROBS) n_top = NUCLEUS_MAX_TOP_LOGPROBS;
  size_t got = nc_row_topn(x, (size_t)V, (size_t)n_top, false, ids, vals);
  for (size_t i = 0; i < got; i++)
    top[i] = (nucleus_token_logprob){ids[i],
                                     clamp_lp((double)(vals[i] - m) - log_z)};
  return (int32_t)got;
}
