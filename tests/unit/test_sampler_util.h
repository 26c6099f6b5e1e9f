/* Helpers shared by the sampler tests: build a sampler, sample one row,
 * read one row's final distribution. */
#ifndef TEST_SAMPLER_UTIL_H
#define TEST_SAMPLER_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/sampler.h"

static inline nc_sampler *make_sampler(const nucleus_sampling_params *p,
                                       int32_t n_vocab, uint64_t seed) {
  nc_sampler *s = NULL;
  nc_error err = {0};
  nc_code rc = nc_sampler_create(p, n_vocab, seed, 0, &s, &err);
  if (rc) fprintf(stderr, "nc_sampler_create: %s\n", err.message);
  assert_int_equal(rc, NC_OK);
  return s;
}

static inline nc_sample_workspace *make_ws(int32_t n_vocab) {
  nc_sample_workspace *ws = NULL;
  assert_int_equal(nc_sample_workspace_create(n_vocab, &ws, NULL), NC_OK);
  return ws;
}

static inline nc_sample_result
sample_one(nc_sample_workspace *ws, const nc_sampler *s, const float *logits) {
  nc_sample_row row = {.sampler = s, .logits = logits};
  nc_sample_result res;
  nc_error err = {0};
  nc_code rc = nc_sample_batch(ws, &row, 1, &res, &err);
  if (rc) fprintf(stderr, "nc_sample_batch: %s\n", err.message);
  assert_int_equal(rc, NC_OK);
  return res;
}

typedef struct test_dist {
  int32_t n;
  int32_t ids[4096];
  double probs[4096];
} test_dist;

/* The final distribution of (params, logits); history from prompt. */
static inline void dist_of(const nucleus_sampling_params *p,
                           const float *logits, int32_t n_vocab,
                           const int32_t *prompt, size_t n_prompt,
                           test_dist *d) {
  nc_sampler *s = make_sampler(p, n_vocab, 1);
  nc_sampler_accept_prompt(s, prompt, n_prompt);
  nc_sample_workspace *ws = make_ws(n_vocab);
  nc_sample_row row = {.sampler = s, .logits = logits};
  nc_error err = {0};
  nc_code rc = nc_sample_distribution(ws, &row, d->ids, d->probs, &d->n, &err);
  if (rc) fprintf(stderr, "nc_sample_distribution: %s\n", err.message);
  assert_int_equal(rc, NC_OK);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static inline double dist_prob(const test_dist *d, int32_t id) {
  for (int32_t i = 0; i < d->n; i++)
    if (d->ids[i] == id) return d->probs[i];
  return 0.0;
}

/* Logits whose softmax is exactly probs (up to float rounding). */
static inline void logits_of_probs(const double *probs, int32_t n, float *out) {
  for (int32_t i = 0; i < n; i++)
    out[i] = (float)log(probs[i]);
}

#endif
