/* The sampler's contract: defaults, validation messages, copies, history
 * kept incrementally, clones, and rows that fail alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sampler_util.h"

static void defaults_are_openai(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  assert_true(p.temperature == 1.0f);
  assert_true(p.top_p == 1.0f);
  assert_int_equal(p.top_k, 0);
  assert_true(p.min_p == 0.0f);
  assert_true(p.typical_p == 1.0f);
  assert_true(p.repetition_penalty == 1.0f);
  assert_true(p.presence_penalty == 0.0f);
  assert_true(p.frequency_penalty == 0.0f);
  assert_false(p.has_seed);
  assert_false(p.logprobs);
  assert_int_equal(p.top_logprobs, 0);
  assert_null(p.logit_bias);
  assert_null(p.allowed_tokens);
  assert_int_equal(nc_sampling_validate(&p, 10, NULL), NC_OK);
}

/* Fails with a message that contains both needles. */
static void expect_invalid(const nucleus_sampling_params *p, int32_t n_vocab,
                           const char *name, const char *range) {
  nc_error err = {0};
  assert_int_equal(nc_sampling_validate(p, n_vocab, &err),
                   NC_ERR_INVALID_ARGUMENT);
  if (!strstr(err.message, name) || !strstr(err.message, range))
    fail_msg("message '%s' lacks '%s' or '%s'", err.message, name, range);
  nc_sampler *s = (nc_sampler *)0x1;
  assert_int_equal(nc_sampler_create(p, n_vocab, 1, 0, &s, NULL),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(s);
}

static void validation_names_parameter_and_range(void **state) {
  (void)state;
  nucleus_sampling_params d = nucleus_sampling_default_params(), p;
  p = d, p.temperature = NAN;
  expect_invalid(&p, 10, "'temperature'", "[0, 100]");
  p = d, p.temperature = -0.5f;
  expect_invalid(&p, 10, "'temperature'", "[0, 100], got -0.5");
  p = d, p.temperature = 100.5f;
  expect_invalid(&p, 10, "'temperature'", "[0, 100], got 100.5");
  p = d, p.temperature = INFINITY;
  expect_invalid(&p, 10, "'temperature'", "[0, 100]");
  p = d, p.top_p = 0.0f;
  expect_invalid(&p, 10, "'top_p'", "(0, 1], got 0");
  p = d, p.top_p = 1.5f;
  expect_invalid(&p, 10, "'top_p'", "(0, 1], got 1.5");
  p = d, p.top_k = -2; /* -1 and 0 are off */
  expect_invalid(&p, 10, "'top_k'", "[-1, 1073741824], got -2");
  p = d, p.min_p = 1.01f;
  expect_invalid(&p, 10, "min_p", "[0, 1]");
  p = d, p.typical_p = 0.0f;
  expect_invalid(&p, 10, "typical_p", "(0, 1]");
  p = d, p.repetition_penalty = 0.0f;
  expect_invalid(&p, 10, "'repetition_penalty'", "(0, 100]");
  p = d, p.presence_penalty = 2.5f;
  expect_invalid(&p, 10, "'presence_penalty'", "[-2, 2], got 2.5");
  p = d, p.frequency_penalty = -INFINITY;
  expect_invalid(&p, 10, "frequency_penalty", "[-2, 2]");
  p = d, p.top_logprobs = 21;
  expect_invalid(&p, 10, "'top_logprobs'", "[0, 20], got 21");
  nucleus_logit_bias bias[2] = {{3, 1.0f}, {10, 1.0f}};
  p = d, p.logit_bias = bias, p.n_logit_bias = 2;
  expect_invalid(&p, 10, "logit_bias[1]: token 10", "[0, 9]");
  bias[1] = (nucleus_logit_bias){2, NAN};
  expect_invalid(&p, 10, "logit_bias[1] (token 2): bias nan",
                 "must be a number in [-100, 100]");
  bias[1] = (nucleus_logit_bias){2, 100.5f}; /* OpenAI's range: refused */
  expect_invalid(&p, 10, "logit_bias[1] (token 2): bias 100.5",
                 "must be a number in [-100, 100]");
  int32_t ids[3] = {0, 4, -1};
  p = d, p.allowed_tokens = ids, p.n_allowed_tokens = 3;
  expect_invalid(&p, 10, "allowed_tokens[2] = -1", "[0, 9]");
  p = d, p.banned_tokens = ids, p.n_banned_tokens = 3;
  expect_invalid(&p, 10, "banned_tokens[2] = -1", "[0, 9]");
  p = d, p.allowed_tokens = ids, p.n_allowed_tokens = 0;
  expect_invalid(&p, 10, "allowed_tokens", "empty");
  p = d, p.n_banned_tokens = 2; /* NULL array */
  expect_invalid(&p, 10, "banned_tokens", "NULL");
  /* accepted: the edges of every range */
  bias[1] = (nucleus_logit_bias){2, -100.0f};
  p = d, p.logit_bias = bias, p.n_logit_bias = 2;
  p.temperature = 0.0f, p.top_p = 1e-9f, p.top_k = 10, p.min_p = 1.0f;
  p.presence_penalty = -2.0f, p.frequency_penalty = 2.0f, p.top_logprobs = 20;
  assert_int_equal(nc_sampling_validate(&p, 10, NULL), NC_OK);
}

static void logit_bias_at_the_edge(void **state) {
  (void)state;
  /* +100 (the most allowed): token 1 (0 + 100) loses to token 0 (150). */
  float logits[3] = {150.0f, 0.0f, 0.0f};
  nucleus_logit_bias bias[1] = {{1, 100.0f}};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.0f, p.logit_bias = bias, p.n_logit_bias = 1;
  nc_sampler *s = make_sampler(&p, 3, 1);
  nc_sample_workspace *ws = make_ws(3);
  assert_int_equal(sample_one(ws, s, logits).token, 0);
  logits[0] = 99.0f; /* now 0 + 100 wins */
  assert_int_equal(sample_one(ws, s, logits).token, 1);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static void create_copies_the_arrays(void **state) {
  (void)state;
  float logits[4] = {4.0f, 3.0f, 2.0f, 1.0f};
  int32_t banned[1] = {0};
  nucleus_logit_bias bias[1] = {{3, 10.0f}};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.0f;
  p.banned_tokens = banned, p.n_banned_tokens = 1;
  p.logit_bias = bias, p.n_logit_bias = 1;
  nc_sampler *s = make_sampler(&p, 4, 1);
  banned[0] = 3, bias[0] = (nucleus_logit_bias){1, -50.0f}; /* caller reuses */
  nc_sample_workspace *ws = make_ws(4);
  assert_int_equal(sample_one(ws, s, logits).token, 3); /* 1 + 10 */
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static void history_is_incremental_and_clones_are_deep(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.repetition_penalty = 1.3f, p.frequency_penalty = 0.5f;
  nc_sampler *s = make_sampler(&p, 100000, 9);
  int32_t prompt[5] = {7, 7, 8, -3, 100000}; /* bad ids ignored */
  nc_sampler_accept_prompt(s, prompt, 5);
  assert_int_equal(nc_sampler_count(s, 7), 0);
  assert_int_equal(nc_sampler_count(s, 8), 0);
  assert_int_equal(nc_sampler_count(s, 9), -1);
  assert_int_equal(nc_sampler_step(s), 0);
  /* many distinct tokens: the index grows */
  for (int32_t i = 0; i < 5000; i++)
    nc_sampler_accept(s, i * 17 % 100000);
  nc_sampler_accept(s, 7);
  assert_int_equal(nc_sampler_step(s), 5001);
  assert_int_equal(nc_sampler_count(s, 7), 1); /* 7 is no multiple of 17 */
  assert_int_equal(nc_sampler_count(s, 17 * 4999 % 100000), 1);
  nc_sampler *c = NULL;
  assert_int_equal(nc_sampler_clone(s, 5, &c, NULL), NC_OK);
  assert_int_equal(nc_sampler_stream(c), 5);
  assert_int_equal(nc_sampler_seed(c), 9);
  assert_int_equal(nc_sampler_step(c), 5001);
  nc_sampler_accept(c, 8);
  assert_int_equal(nc_sampler_count(c, 8), 1);
  assert_int_equal(nc_sampler_count(s, 8), 0); /* parent untouched */
  assert_int_equal(nc_sampler_step(s), 5001);
  nc_sampler_free(s); /* the clone owns its own copies */
  assert_int_equal(nc_sampler_count(c, 7), 1);
  nc_sampler_free(c);
}

static void a_clone_samples_like_its_parent(void **state) {
  (void)state;
  enum { V = 50 };
  float logits[V];
  for (int i = 0; i < V; i++)
    logits[i] = (float)((i * 37) % 11) * 0.3f;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.presence_penalty = 1.0f, p.repetition_penalty = 1.2f;
  p.logprobs = true, p.top_logprobs = 5, p.processed_logprobs = true;
  nc_sampler *s = make_sampler(&p, V, 77);
  for (int i = 0; i < 10; i++)
    nc_sampler_accept(s, i * 3);
  nc_sampler *c = NULL;
  assert_int_equal(nc_sampler_clone(s, nc_sampler_stream(s), &c, NULL), NC_OK);
  nc_sample_workspace *ws = make_ws(V);
  for (int step = 0; step < 20; step++) {
    nc_sample_result a = sample_one(ws, s, logits);
    nc_sample_result b = sample_one(ws, c, logits);
    assert_memory_equal(&a, &b, sizeof a);
    nc_sampler_accept(s, a.token);
    nc_sampler_accept(c, b.token);
  }
  nc_sampler_free(s);
  nc_sampler_free(c);
  nc_sample_workspace_free(ws);
}

/* The grammar's bitset (stage 0) over a vocabulary of 3 whole words and a
 * tail: a full word, an empty one, mixed ones; greedy draws the best
 * allowed token every time. */
static void grammar_mask_words_and_tail(void **state) {
  (void)state;
  enum { V = 200 };
  float x[V];
  uint64_t mask[4];
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0;
  nc_sampler *s = make_sampler(&p, V, 1);
  nc_sample_workspace *ws = make_ws(V);
  uint64_t r = 99;
  for (int trial = 0; trial < 64; trial++) {
    for (int i = 0; i < V; i++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      x[i] = (float)(r >> 40) / 16777216.0f;
    }
    for (int w = 0; w < 4; w++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      int kind = (trial + w) % 3;
      mask[w] = kind == 0 ? UINT64_MAX : kind == 1 ? 0 : r;
    }
    mask[3] &= (1ull << (V - 192)) - 1;     /* no bit past the vocabulary */
    mask[3] |= 1ull << (trial % (V - 192)); /* one allowed at least */
    int best = -1;
    for (int i = 0; i < V; i++)
      if ((mask[i / 64] >> (i % 64)) & 1 && (best < 0 || x[i] > x[best]))
        best = i;
    nc_sample_row row = {.sampler = s, .logits = x, .grammar = mask};
    nc_sample_result res;
    nc_error err = {0};
    assert_int_equal(nc_sample_batch(ws, &row, 1, &res, &err), NC_OK);
    assert_int_equal(res.token, best);
  }
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
}

static void bad_rows_fail_alone(void **state) {
  (void)state;
  enum { V = 8 };
  float good[V] = {0, 1, 2, 3, 4, 5, 6, 7};
  float nan_row[V] = {0, 1, NAN, 3, 4, 5, 6, 7};
  float inf_row[V] = {0, 1, 2, INFINITY, 4, 5, 6, 7};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  nc_sampler *s = make_sampler(&p, V, 1);
  int32_t allowed[1] = {2}, banned[1] = {2};
  nucleus_sampling_params q = p;
  q.allowed_tokens = allowed, q.n_allowed_tokens = 1;
  q.banned_tokens = banned, q.n_banned_tokens = 1;
  nc_sampler *masked = make_sampler(&q, V, 1);
  int32_t bad_suppress[1] = {V};
  nc_sample_row rows[5] = {
      {.sampler = s, .logits = good},
      {.sampler = s, .logits = nan_row},
      {.sampler = s, .logits = inf_row},
      {.sampler = masked, .logits = good},
      {.sampler = s, .logits = good, .suppress = bad_suppress, .n_suppress = 1},
  };
  nc_sample_result res[5];
  nc_error err = {0};
  nc_sample_workspace *ws = make_ws(V);
  assert_int_equal(nc_sample_batch(ws, rows, 5, res, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "row 1"));
  assert_non_null(strstr(err.message, "logits[2]"));
  assert_int_equal(res[0].status, NC_OK);
  assert_true(res[0].token >= 0 && res[0].token < V);
  for (int r = 1; r < 5; r++) {
    assert_int_equal(res[r].status, NC_ERR_INVALID_ARGUMENT);
    assert_int_equal(res[r].token, -1);
  }
  /* a logit pushed to +inf by a penalty below 1 fails the row */
  nucleus_sampling_params big = p;
  big.repetition_penalty = 0.01f;
  nc_sampler *sb = make_sampler(&big, V, 1);
  int32_t seen[1] = {3};
  nc_sampler_accept_prompt(sb, seen, 1);
  float huge[V] = {0, 0, 0, 3e38f, 0, 0, 0, 0};
  nc_sample_row hr = {.sampler = sb, .logits = huge};
  nc_sample_result hres;
  assert_int_equal(nc_sample_batch(ws, &hr, 1, &hres, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "+inf"));
  nc_sampler_free(sb);
  /* the good row alone gives the same token */
  assert_int_equal(sample_one(ws, s, good).token, res[0].token);
  /* a workspace too small for the sampler */
  nc_sample_workspace *small = make_ws(4);
  assert_int_equal(nc_sample_batch(small, rows, 1, res, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "workspace"));
  assert_int_equal(nc_sample_batch(ws, NULL, 1, res, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_sample_batch(ws, rows, 0, res, &err), NC_OK);
  nc_sample_workspace_free(small);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  nc_sampler_free(masked);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults_are_openai),
      cmocka_unit_test(validation_names_parameter_and_range),
      cmocka_unit_test(logit_bias_at_the_edge),
      cmocka_unit_test(create_copies_the_arrays),
      cmocka_unit_test(history_is_incremental_and_clones_are_deep),
      cmocka_unit_test(a_clone_samples_like_its_parent),
      cmocka_unit_test(bad_rows_fail_alone),
      cmocka_unit_test(grammar_mask_words_and_tail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
