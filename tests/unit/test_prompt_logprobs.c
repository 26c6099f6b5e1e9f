/* nucleus_prompt_logprobs (a completion's echo with logprobs): a prompt
 * position's logprob and alternatives depend only on the tokens up to it
 * (the reuse orders), so the chunks of 64 rows it holds at once change
 * nothing; the first position has none; each entry's alternatives are
 * sorted and hold the token when it is among the best; bad arguments are
 * refused with a message. The e2e test (tests/e2e/test_completions_echo.py)
 * checks them bit for bit against a completion's own logprobs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nucleus.h"
#include "test_require.h"

enum { N = 150, TOP = 5 };

static nucleus_model *load(void) {
  char full[1024], why[1400];
  const char *path = getenv("NUCLEUS_MODEL");
  const char *root = getenv("NUCLEUS_ROOT");
  if (!path || !*path) NC_MODEL_UNAVAILABLE("NUCLEUS_MODEL is not set");
  snprintf(full, sizeof full, "%s%s%s", path[0] != '/' && root ? root : "",
           path[0] != '/' && root ? "/" : "", path);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_model *m = NULL;
  nucleus_error err = {0};
  if (nucleus_model_load(full, &mp, &m, &err) != NUCLEUS_OK) {
    snprintf(why, sizeof why, "cannot load %s: %s", full, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return m;
}

static void test_positions_depend_only_on_their_prefix(void **state) {
  (void)state;
  nucleus_model *m = load();
  int32_t tokens[N];
  for (int32_t i = 0; i < N; i++)
    tokens[i] = 200 + (i * 37) % 3000;
  nucleus_prompt_logprob *all = calloc(N, sizeof *all);
  nucleus_prompt_logprob *part = calloc(N, sizeof *part);
  nucleus_error err = {0};
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, N, TOP, all, &err),
                   NUCLEUS_OK);
  assert_true(all[0].logprob == 0.0f && all[0].n_top == 0);
  for (int32_t i = 1; i < N; i++) {
    assert_int_equal(all[i].n_top, TOP);
    assert_true(all[i].logprob <= 0.0f && all[i].logprob >= -9999.0f);
    for (int32_t k = 1; k < TOP; k++)
      assert_true(all[i].top[k - 1].logprob >= all[i].top[k].logprob);
    bool in_top = false;
    for (int32_t k = 0; k < TOP; k++)
      if (all[i].top[k].token == tokens[i]) {
        in_top = true;
        assert_true(all[i].top[k].logprob == all[i].logprob);
      }
    if (!in_top) assert_true(all[i].top[TOP - 1].logprob >= all[i].logprob);
    double mass = 0; /* the best few hold part of one distribution */
    for (int32_t k = 0; k < TOP; k++)
      mass += exp(all[i].top[k].logprob);
    assert_true(mass > 0.0 && mass <= 1.0 + 1e-5);
  }
  /* prefixes across the 64-row chunks: the same bits */
  const int32_t cuts[] = {1, 2, 63, 64, 65, 100};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    int32_t n = cuts[c];
    memset(part, 0xff, N * sizeof *part);
    assert_int_equal(
        nucleus_prompt_logprobs(m, tokens, (size_t)n, TOP, part, &err),
        NUCLEUS_OK);
    assert_memory_equal(part, all, (size_t)n * sizeof *part);
  }
  /* no alternatives asked: the logprobs alone, the same */
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 80, 0, part, &err),
                   NUCLEUS_OK);
  for (int32_t i = 0; i < 80; i++) {
    assert_int_equal(part[i].n_top, 0);
    assert_true(part[i].logprob == all[i].logprob);
  }
  free(part);
  free(all);
  nucleus_model_free(m);
}

static void test_bad_arguments_are_refused(void **state) {
  (void)state;
  nucleus_model *m = load();
  int32_t tokens[3] = {1, 2, 3};
  nucleus_prompt_logprob out[3];
  nucleus_error err = {0};
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 3, 21, out, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "[0, 20]"));
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 3, -1, out, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 0, 1, out, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  tokens[1] = nucleus_model_n_vocab(m);
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 3, 1, out, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "tokens[1]"));
  tokens[1] = -1;
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 3, 1, out, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_int_equal(nucleus_prompt_logprobs(m, tokens, 3, 1, NULL, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  nucleus_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_positions_depend_only_on_their_prefix),
      cmocka_unit_test(test_bad_arguments_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
