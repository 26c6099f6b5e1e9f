/* libFuzzer target: arbitrary sampling parameters (NaN, inf, huge, out of
 * range ids included) and arbitrary logits through validation, sampling and
 * the final distribution; and arbitrary rows through beam search. Checks
 * that nothing crashes and every promise holds: a valid token or a failed
 * row, logprobs in [-9999, 0], probabilities summing to 1. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/beam.h"
#include "sampling/sampler.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static uint32_t take_u32(reader *r) {
  uint32_t v = 0;
  size_t k = r->n < 4 ? r->n : 4;
  memcpy(&v, r->p, k);
  r->p += k, r->n -= k;
  return v;
}

static float take_f32(reader *r) {
  uint32_t u = take_u32(r);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* A float that is either a raw bit pattern or a small sane value. */
static float take_param(reader *r, float lo, float hi) {
  uint32_t sel = take_u32(r);
  if (sel % 4 == 0) return take_f32(r);
  return lo + (hi - lo) * (float)(sel >> 8) / (float)(1u << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  int32_t V = 1 + (int32_t)(take_u32(&r) % 300);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = take_param(&r, 0.0f, 3.0f);
  p.top_k = (int32_t)take_u32(&r) % (2 * V + 2) - 1;
  p.top_p = take_param(&r, 0.0f, 1.0f);
  p.min_p = take_param(&r, 0.0f, 1.0f);
  p.typical_p = take_param(&r, 0.0f, 1.0f);
  p.repetition_penalty = take_param(&r, 0.0f, 3.0f);
  p.presence_penalty = take_param(&r, -2.0f, 2.0f);
  p.frequency_penalty = take_param(&r, -2.0f, 2.0f);
  p.logprobs = take_u32(&r) & 1;
  p.top_logprobs = (int32_t)(take_u32(&r) % 24);
  p.processed_logprobs = take_u32(&r) & 1;
  nucleus_logit_bias bias[4];
  int32_t allowed[4], banned[4];
  size_t nb = take_u32(&r) % 5, na = take_u32(&r) % 5, nn = take_u32(&r) % 5;
  for (size_t i = 0; i < 4; i++) {
    bias[i].token = (int32_t)(take_u32(&r) % (uint32_t)(V + 2)) - 1;
    bias[i].bias = take_param(&r, -200.0f, 200.0f);
    allowed[i] = (int32_t)(take_u32(&r) % (uint32_t)(V + 1));
    banned[i] = (int32_t)(take_u32(&r) % (uint32_t)(V + 1));
  }
  p.logit_bias = nb ? bias : NULL, p.n_logit_bias = nb;
  p.allowed_tokens = na ? allowed : NULL, p.n_allowed_tokens = na;
  p.banned_tokens = nn ? banned : NULL, p.n_banned_tokens = nn;

  float *logits = malloc(sizeof(float) * (size_t)V);
  float *row = malloc(sizeof(float) * (size_t)V);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)V);
  double *probs = malloc(sizeof(double) * (size_t)V);
  for (int32_t i = 0; i < V; i++)
    logits[i] = take_param(&r, -30.0f, 30.0f);

  nc_sampler *s = NULL;
  nc_sample_workspace *ws = NULL;
  nc_error err;
  if (nc_sampler_create(&p, V, take_u32(&r), 0, &s, &err) == NC_OK &&
      nc_sample_workspace_create(V, &ws, &err) == NC_OK) {
    int32_t hist[8];
    for (int i = 0; i < 8; i++)
      hist[i] = (int32_t)take_u32(&r) % (V + 3) - 1;
    nc_sampler_accept_prompt(s, hist, 4);
    for (int i = 4; i < 8; i++)
      nc_sampler_accept(s, hist[i]);
    int32_t suppress[2] = {(int32_t)(take_u32(&r) % (uint32_t)V), 0};
    nc_sample_row rows[2] = {
        {.sampler = s, .logits = logits, .suppress = suppress, .n_suppress = 1},
        {.sampler = s, .logits = logits}};
    nc_sample_result res[2];
    nc_sample_batch(ws, rows, 2, res, &err);
    for (int k = 0; k < 2; k++) {
      if (res[k].status != NC_OK) {
        if (res[k].token != -1) abort();
        continue;
      }
      if (res[k].token < 0 || res[k].token >= V) abort();
      if (!(res[k].logprob <= 0.0f && res[k].logprob >= NC_LOGPROB_FLOOR))
        abort();
      for (int32_t t = 0; t < res[k].n_top; t++)
        if (!(res[k].top[t].logprob <= 0.0f &&
              res[k].top[t].logprob >= NC_LOGPROB_FLOOR))
          abort();
      int32_t n = 0;
      if (nc_sample_distribution(ws, &rows[k], ids, probs, &n, &err) != NC_OK)
        abort(); /* it just succeeded */
      double sum = 0.0;
      bool found = false;
      for (int32_t i = 0; i < n; i++) {
        sum += probs[i];
        found |= ids[i] == res[k].token;
      }
      if (n < 1 || fabs(sum - 1.0) > 1e-5 || !found) abort();
    }
  }
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);

  /* beam search over rows made from the same bytes */
  int32_t eog[2] = {(int32_t)(take_u32(&r) % (uint32_t)V), -5};
  nc_beam_params bp = {(int32_t)(take_u32(&r) % 5),
                       1,
                       take_param(&r, -2.0f, 2.0f),
                       take_u32(&r) & 1,
                       eog,
                       2};
  bp.n_return =
      bp.width > 0 ? 1 + (int32_t)(take_u32(&r) % (uint32_t)bp.width) : 1;
  nc_beam *b = NULL;
  if (nc_beam_create(&bp, &b, &err) == NC_OK) {
    for (int step = 0; step < 6 && !nc_beam_done(b); step++) {
      const float *rows_p[NC_BEAM_MAX_WIDTH];
      for (int32_t i = 0; i < V; i++)
        row[i] = -fabsf(take_param(&r, 0, 20));
      for (int32_t i = 0; i < nc_beam_n_live(b); i++)
        rows_p[i] = row;
      nc_beam_next next[NC_BEAM_MAX_WIDTH];
      int32_t n_next = 0;
      if (nc_beam_step(b, rows_p, V, next, &n_next, &err) != NC_OK) break;
      for (int32_t i = 0; i < n_next; i++)
        if (next[i].token < 0 || next[i].token >= V || next[i].parent < 0)
          abort();
    }
    nc_beam_finish(b);
    const int32_t *toks;
    int32_t nt;
    float score, cum;
    for (int32_t k = 0; k < bp.n_return; k++)
      nc_beam_result(b, k, &toks, &nt, &score, &cum, &err);
    nc_beam_free(b);
  }
  free(logits);
  free(row);
  free(ids);
  free(probs);
  return 0;
}
