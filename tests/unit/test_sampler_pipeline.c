/* Each stage of the pipeline on distributions small enough to check by
 * hand, in the documented order, and the logprobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sampler_util.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-6)

static nucleus_sampling_params greedy(void) {
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.0f;
  return p;
}

static int32_t greedy_token(const nucleus_sampling_params *p,
                            const float *logits, int32_t n) {
  nc_sampler *s = make_sampler(p, n, 1);
  nc_sample_workspace *ws = make_ws(n);
  int32_t t = sample_one(ws, s, logits).token;
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  return t;
}

static void greedy_ties_go_to_the_lowest_id(void **state) {
  (void)state;
  float logits[4] = {1.0f, 3.0f, 3.0f, -2.0f};
  nucleus_sampling_params p = greedy();
  assert_int_equal(greedy_token(&p, logits, 4), 1);
}

static void bias_and_masks(void **state) {
  (void)state;
  float logits[4] = {1.0f, 2.0f, 3.0f, 0.5f};
  nucleus_sampling_params p = greedy();
  nucleus_logit_bias bias[1] = {{0, 5.0f}};
  p.logit_bias = bias, p.n_logit_bias = 1;
  assert_int_equal(greedy_token(&p, logits, 4), 0); /* 1 + 5 */
  p = greedy();
  int32_t banned[1] = {2};
  p.banned_tokens = banned, p.n_banned_tokens = 1;
  assert_int_equal(greedy_token(&p, logits, 4), 1);
  p = greedy();
  int32_t allowed[2] = {3, 0};
  p.allowed_tokens = allowed, p.n_allowed_tokens = 2;
  assert_int_equal(greedy_token(&p, logits, 4), 0);
  /* allowed with sampling: only the allowed survive, renormalised */
  p.temperature = 1.0f;
  test_dist d;
  dist_of(&p, logits, 4, NULL, 0, &d);
  assert_int_equal(d.n, 2);
  NEAR(dist_prob(&d, 0), exp(1.0) / (exp(1.0) + exp(0.5)));
  NEAR(dist_prob(&d, 3), exp(0.5) / (exp(1.0) + exp(0.5)));
  /* a bias cannot revive a banned token */
  p = greedy();
  nucleus_logit_bias big[1] = {{2, 100.0f}};
  p.logit_bias = big, p.n_logit_bias = 1;
  p.banned_tokens = banned, p.n_banned_tokens = 1;
  assert_int_equal(greedy_token(&p, logits, 4), 1);
}

static void the_max_follows_every_edit(void **state) {
  (void)state;
  /* token 0 is the raw max, raised by its bias, then halved by the
   * repetition penalty below token 1 */
  float logits[3] = {3.0f, 2.9f, 0.0f};
  nucleus_sampling_params p = greedy();
  nucleus_logit_bias bias[1] = {{0, 1.0f}};
  p.logit_bias = bias, p.n_logit_bias = 1, p.repetition_penalty = 2.0f;
  nc_sampler *s = make_sampler(&p, 3, 1);
  int32_t prompt[1] = {0};
  nc_sampler_accept_prompt(s, prompt, 1);
  nc_sample_workspace *ws = make_ws(3);
  assert_int_equal(sample_one(ws, s, logits).token, 1); /* 2 < 2.9 */
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  /* sampling sees the same max: the distribution is exact */
  p.temperature = 1.0f;
  test_dist d;
  dist_of(&p, logits, 3, prompt, 1, &d);
  double z = exp(2.0) + exp(2.9) + 1.0;
  NEAR(dist_prob(&d, 0), exp(2.0) / z);
  NEAR(dist_prob(&d, 1), exp(2.9) / z);
  /* a banned max under top-k 1 leaves the next one */
  p = nucleus_sampling_default_params();
  int32_t banned[1] = {0};
  p.banned_tokens = banned, p.n_banned_tokens = 1, p.top_k = 1;
  dist_of(&p, logits, 3, NULL, 0, &d);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.ids[0], 1);
}

static void suppress_masks_one_step(void **state) {
  (void)state;
  float logits[3] = {1.0f, 2.0f, 3.0f};
  nucleus_sampling_params p = greedy();
  nc_sampler *s = make_sampler(&p, 3, 1);
  nc_sample_workspace *ws = make_ws(3);
  int32_t eos[1] = {2};
  nc_sample_row row = {s, logits, eos, 1, NULL};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(res.token, 1);
  row.n_suppress = 0;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(res.token, 2);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static void repetition_divides_positive_multiplies_negative(void **state) {
  (void)state;
  /* [2, -2, 1, 0.5] with r = 2 over the prompt {0, 1} -> [1, -4, 1, 0.5] */
  float logits[4] = {2.0f, -2.0f, 1.0f, 0.5f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.repetition_penalty = 2.0f;
  int32_t prompt[3] = {0, 1, 0};
  test_dist d;
  dist_of(&p, logits, 4, prompt, 3, &d);
  double z = exp(1.0) + exp(-4.0) + exp(1.0) + exp(0.5);
  NEAR(dist_prob(&d, 0), exp(1.0) / z);
  NEAR(dist_prob(&d, 1), exp(-4.0) / z);
  NEAR(dist_prob(&d, 2), exp(1.0) / z);
  NEAR(dist_prob(&d, 3), exp(0.5) / z);
  /* greedy sees the penalty too: tokens 0 and 2 tie at 1 -> token 0 */
  p.temperature = 0.0f;
  nc_sampler *s = make_sampler(&p, 4, 1);
  nc_sampler_accept_prompt(s, prompt, 3);
  nc_sampler_accept(s, 0); /* output too: 2 / 2 once, not per occurrence */
  nc_sample_workspace *ws = make_ws(4);
  assert_int_equal(sample_one(ws, s, logits).token, 0);
  nc_sampler_accept(s, 2); /* now 2 -> 0.5: token 0 (1) wins clearly */
  float l2[4] = {2.0f, -2.0f, 1.9f, 0.5f};
  assert_int_equal(sample_one(ws, s, l2).token, 0);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static void presence_and_frequency_use_output_counts(void **state) {
  (void)state;
  float logits[3] = {0.0f, 0.0f, 0.0f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.frequency_penalty = 0.5f, p.presence_penalty = 0.25f;
  nc_sampler *s = make_sampler(&p, 3, 1);
  int32_t prompt[2] = {0, 0}; /* the prompt does not count */
  nc_sampler_accept_prompt(s, prompt, 2);
  nc_sampler_accept(s, 1);
  nc_sampler_accept(s, 2);
  nc_sampler_accept(s, 2);
  /* -> [0, -(0.5 + 0.25), -(1 + 0.25)] */
  nc_sample_workspace *ws = make_ws(3);
  nc_sample_row row = {.sampler = s, .logits = logits};
  test_dist d;
  assert_int_equal(nc_sample_distribution(ws, &row, d.ids, d.probs, &d.n, NULL),
                   NC_OK);
  double z = 1.0 + exp(-0.75) + exp(-1.25);
  assert_int_equal(d.n, 3);
  assert_int_equal(d.ids[0], 0);
  assert_int_equal(d.ids[1], 1);
  assert_int_equal(d.ids[2], 2);
  NEAR(d.probs[0], 1.0 / z);
  NEAR(d.probs[1], exp(-0.75) / z);
  NEAR(d.probs[2], exp(-1.25) / z);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static void temperature_scales_logits(void **state) {
  (void)state;
  const double probs[3] = {1.0 / 7, 2.0 / 7, 4.0 / 7};
  float logits[3];
  logits_of_probs(probs, 3, logits);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 2.0f; /* probs ~ sqrt: 1, 1.414, 2 */
  test_dist d;
  dist_of(&p, logits, 3, NULL, 0, &d);
  double z = 1.0 + sqrt(2.0) + 2.0;
  NEAR(dist_prob(&d, 0), 1.0 / z);
  NEAR(dist_prob(&d, 1), sqrt(2.0) / z);
  NEAR(dist_prob(&d, 2), 2.0 / z);
}

static const double P4[4] = {0.5, 0.3, 0.15, 0.05};

static test_dist dist_p4(nucleus_sampling_params p) {
  float logits[4];
  logits_of_probs(P4, 4, logits);
  test_dist d;
  dist_of(&p, logits, 4, NULL, 0, &d);
  return d;
}

static void top_k_keeps_exactly_k(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.top_k = 2;
  test_dist d = dist_p4(p);
  assert_int_equal(d.n, 2);
  NEAR(dist_prob(&d, 0), 0.5 / 0.8);
  NEAR(dist_prob(&d, 1), 0.3 / 0.8);
  /* ties at the boundary go to the lower ids */
  float tied[5] = {3.0f, 1.0f, 3.0f, 3.0f, 0.0f};
  test_dist t;
  dist_of(&p, tied, 5, NULL, 0, &t);
  assert_int_equal(t.n, 2);
  assert_int_equal(t.ids[0], 0);
  assert_int_equal(t.ids[1], 2);
}

static void top_p_keeps_the_smallest_set_reaching_p(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.top_p = 0.75f; /* 0.5 < 0.75 <= 0.8 */
  test_dist d = dist_p4(p);
  assert_int_equal(d.n, 2);
  NEAR(dist_prob(&d, 0), 0.5 / 0.8);
  p.top_p = 0.85f; /* 0.8 < 0.85 <= 0.95 */
  d = dist_p4(p);
  assert_int_equal(d.n, 3);
  NEAR(dist_prob(&d, 2), 0.15 / 0.95);
  p.top_p = 0.4f;
  d = dist_p4(p);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.ids[0], 0);
  /* after top-k 3, top-p is measured on the renormalised 0.95 */
  p.top_k = 3, p.top_p = 0.83f; /* 0.8/0.95 = 0.842 >= 0.83 */
  d = dist_p4(p);
  assert_int_equal(d.n, 2);
}

static void min_p_is_relative_to_the_top(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.min_p = 0.25f; /* keeps p >= 0.125 */
  test_dist d = dist_p4(p);
  assert_int_equal(d.n, 3);
  NEAR(dist_prob(&d, 2), 0.15 / 0.95);
  p.min_p = 0.5f; /* keeps p >= 0.25 */
  d = dist_p4(p);
  assert_int_equal(d.n, 2);
}

static void typical_p_keeps_the_typical_tokens(void **state) {
  (void)state;
  /* H = 1.1422; |-ln p - H| = 0.449, 0.062, 0.755, 1.853 -> order 1,0,2,3 */
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.typical_p = 0.5f; /* 0.3 < 0.5 <= 0.8 */
  test_dist d = dist_p4(p);
  assert_int_equal(d.n, 2);
  NEAR(dist_prob(&d, 1), 0.3 / 0.8);
  p.typical_p = 0.2f; /* the most typical alone: token 1, not the top */
  d = dist_p4(p);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.ids[0], 1);
}

static void temperature_before_truncation_matters(void **state) {
  (void)state;
  /* logits [2, 1, 0, -1], T = 0.5, top_p = 0.8. Tempered first (ours):
   * [0.865, 0.117, ...] -> only token 0. Truncating first (llama.cpp's
   * order) measures top-p on [0.644, 0.237, ...] and keeps {0, 1}. */
  float logits[4] = {2.0f, 1.0f, 0.0f, -1.0f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.5f, p.top_p = 0.8f;
  test_dist ours;
  dist_of(&p, logits, 4, NULL, 0, &ours);
  assert_int_equal(ours.n, 1);
  assert_int_equal(ours.ids[0], 0);
  p.temperature = 1.0f; /* what top-p sees when temperature comes last */
  test_dist before;
  dist_of(&p, logits, 4, NULL, 0, &before);
  assert_int_equal(before.n, 2);
}

static void raw_logprobs(void **state) {
  (void)state;
  float logits[3] = {0.0f, logf(3.0f), -INFINITY};
  nucleus_sampling_params p = greedy();
  nucleus_logit_bias bias[1] = {{0, 5.0f}}; /* greedy picks 0 */
  p.logit_bias = bias, p.n_logit_bias = 1;
  p.logprobs = true, p.top_logprobs = 3;
  nc_sampler *s = make_sampler(&p, 3, 1);
  nc_sample_workspace *ws = make_ws(3);
  nc_sample_result r = sample_one(ws, s, logits);
  assert_int_equal(r.token, 0);
  NEAR(r.logprob, log(0.25)); /* raw: the bias does not show */
  assert_int_equal(r.n_top, 3);
  assert_int_equal(r.top[0].token, 1);
  NEAR(r.top[0].logprob, log(0.75));
  assert_int_equal(r.top[1].token, 0);
  NEAR(r.top[1].logprob, log(0.25));
  assert_int_equal(r.top[2].token, 2);
  assert_true(r.top[2].logprob == NC_LOGPROB_FLOOR); /* -inf, made finite */
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  /* no logprobs asked: none computed */
  p.logprobs = false, p.top_logprobs = 0;
  s = make_sampler(&p, 3, 1);
  ws = make_ws(3);
  r = sample_one(ws, s, logits);
  assert_int_equal(r.n_top, 0);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static void processed_logprobs(void **state) {
  (void)state;
  float logits[4];
  logits_of_probs(P4, 4, logits);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.top_k = 2, p.logprobs = true, p.top_logprobs = 3;
  p.processed_logprobs = true;
  nc_sampler *s = make_sampler(&p, 4, 3);
  nc_sample_workspace *ws = make_ws(4);
  nc_sample_result r = sample_one(ws, s, logits);
  assert_true(r.token == 0 || r.token == 1);
  NEAR(r.logprob, log((r.token == 0 ? 0.5 : 0.3) / 0.8));
  assert_int_equal(r.n_top, 3);
  assert_int_equal(r.top[0].token, 0);
  NEAR(r.top[0].logprob, log(0.625));
  assert_int_equal(r.top[1].token, 1);
  NEAR(r.top[1].logprob, log(0.375));
  assert_int_equal(r.top[2].token, 2); /* dropped by top-k: the floor */
  assert_true(r.top[2].logprob == NC_LOGPROB_FLOOR);
  assert_int_equal(r.n_kept, 2);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  /* greedy + processed: log-softmax after bias and penalties */
  p = greedy();
  nucleus_logit_bias bias[1] = {{3, (float)log(9.0)}}; /* 0.05 -> 0.45 */
  p.logit_bias = bias, p.n_logit_bias = 1;
  p.logprobs = true, p.processed_logprobs = true;
  s = make_sampler(&p, 4, 3);
  ws = make_ws(4);
  r = sample_one(ws, s, logits);
  assert_int_equal(r.token, 0);
  NEAR(r.logprob, log(0.5 / 1.4));
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(greedy_ties_go_to_the_lowest_id),
      cmocka_unit_test(bias_and_masks),
      cmocka_unit_test(the_max_follows_every_edit),
      cmocka_unit_test(suppress_masks_one_step),
      cmocka_unit_test(repetition_divides_positive_multiplies_negative),
      cmocka_unit_test(presence_and_frequency_use_output_counts),
      cmocka_unit_test(temperature_scales_logits),
      cmocka_unit_test(top_k_keeps_exactly_k),
      cmocka_unit_test(top_p_keeps_the_smallest_set_reaching_p),
      cmocka_unit_test(min_p_is_relative_to_the_top),
      cmocka_unit_test(typical_p_keeps_the_typical_tokens),
      cmocka_unit_test(temperature_before_truncation_matters),
      cmocka_unit_test(raw_logprobs),
      cmocka_unit_test(processed_logprobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
