/* Speculative decoding keeps the model's distribution, on the real default
 * model: for T in {0.7, 1.0, 1.5} with top-p and min-p, the first three
 * generated tokens of 5,008 seeded runs with n-gram drafts, and of 5,008
 * with predicted outputs, follow the distribution of 5,008 runs without
 * drafts (a two-sample chi-square test of the joint (t1, t2, t3), at the
 * 0.001 level); also with a draft model (the default model drafting for
 * itself, so q = p: the exact rule keeps every draft, the strict one only
 * those its own draw repeats; test_spec_verify proves the residual with
 * q != p). The runs with drafts take other seeds than those without,
 * so the test compares distributions, not the same draws. Runs go through
 * the public API on a threaded engine, 16 completions per request
 * (n = 16: each drafts for itself). The short tier (NUCLEUS_TEST_SHORT)
 * runs 1,008 per arm; the sanitizer build skips it (test_engine_spec covers
 * the same paths there). */
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

enum { N_PER_REQ = 16, WAVE = 8, MAX_BINS = 1 << 16 };

static nucleus_model *g_model;
static char g_why[640];

static const char k_prompt[] =
    "Monday, Tuesday, Wednesday, Thursday, Friday. Monday, Tuesday, "
    "Wednesday, Thursday, Friday. Monday,";
static const char k_prediction[] = " Tuesday, Wednesday, Thursday, Friday.";

static int setup(void **state) {
  (void)state;
  const char *path = getenv("NUCLEUS_MODEL");
  if (!path || !*path) {
    snprintf(g_why, sizeof g_why, "NUCLEUS_MODEL is not set");
    return 0;
  }
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_error err = {0};
  if (nucleus_model_load(path, &mp, &g_model, &err) != NUCLEUS_OK) {
    snprintf(g_why, sizeof g_why, "cannot load the model: %s", err.message);
    g_model = NULL;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  nucleus_model_free(g_model);
  return 0;
}

/* The joint outcomes of one arm: (t1, t2, t3) triples, one per run. */
typedef struct arm {
  int32_t (*triples)[3];
  int n;
  int64_t drafted, accepted;
} arm;

static void run_arm(nucleus_engine *e, const int32_t *prompt, size_t n_prompt,
                    const nucleus_request_params *base, uint64_t seed0,
                    int n_runs, arm *out) {
  out->triples = calloc((size_t)n_runs, sizeof *out->triples);
  assert_non_null(out->triples);
  out->n = n_runs;
  int n_req = n_runs / N_PER_REQ;
  for (int w = 0; w < n_req; w += WAVE) {
    nucleus_request *reqs[WAVE] = {0};
    int in_wave = n_req - w < WAVE ? n_req - w : WAVE;
    for (int i = 0; i < in_wave; i++) {
      nucleus_request_params p = *base;
      p.sampling.has_seed = true;
      p.sampling.seed = seed0 + (uint64_t)(w + i);
      nucleus_error err = {0};
      nucleus_status st =
          nucleus_engine_submit(e, prompt, n_prompt, &p, &reqs[i], &err);
      if (st) fail_msg("submit: %s", err.message);
    }
    for (int i = 0; i < in_wave; i++) {
      int32_t got[N_PER_REQ] = {0};
      nucleus_event ev;
      while (nucleus_request_next_event(reqs[i], &ev, -1) == NUCLEUS_OK) {
        if (ev.kind == NUCLEUS_EVENT_DONE) {
          out->drafted += ev.usage.draft_tokens;
          out->accepted += ev.usage.accepted_draft_tokens;
          break;
        }
        if (ev.kind != NUCLEUS_EVENT_TOKEN) continue;
        assert_true(ev.index >= 0 && ev.index < N_PER_REQ);
        int k = got[ev.index]++;
        assert_true(k < 3);
        out->triples[(w + i) * N_PER_REQ + ev.index][k] = ev.token;
      }
      for (int c = 0; c < N_PER_REQ; c++)
        assert_int_equal(got[c], 3); /* ignore_eos: always 3 */
      nucleus_request_free(reqs[i]);
    }
  }
}

static int cmp_triple(const void *a, const void *b) {
  return memcmp(a, b, sizeof(int32_t[3]));
}

/* The 0.999 quantile of chi-square with df degrees of freedom
 * (Wilson-Hilferty; z = 3.0902). */
static double chi2_limit(int df) {
  double k = df, h = 2.0 / (9.0 * k);
  double c = 1.0 - h + 3.0902 * sqrt(h);
  return k * c * c * c;
}

/* Two-sample chi-square over the distinct triples of a and b (bins with
 * fewer than 10 runs in both together pooled); *df its degrees. */
static double chi2_two_sample(arm *a, arm *b, int *df) {
  qsort(a->triples, (size_t)a->n, sizeof *a->triples, cmp_triple);
  qsort(b->triples, (size_t)b->n, sizeof *b->triples, cmp_triple);
  double ra = sqrt((double)b->n / a->n), rb = sqrt((double)a->n / b->n);
  double chi = 0, pool_a = 0, pool_b = 0;
  int bins = 0, i = 0, j = 0;
  while (i < a->n || j < b->n) {
    int c;
    if (i == a->n)
      c = 1;
    else if (j == b->n)
      c = -1;
    else
      c = cmp_triple(a->triples[i], b->triples[j]);
    const int32_t *key = c <= 0 ? a->triples[i] : b->triples[j];
    double na = 0, nb = 0;
    while (i < a->n && !cmp_triple(a->triples[i], key))
      i++, na++;
    while (j < b->n && !cmp_triple(b->triples[j], key))
      j++, nb++;
    if (na + nb < 10) {
      pool_a += na, pool_b += nb;
      continue;
    }
    chi += (na * ra - nb * rb) * (na * ra - nb * rb) / (na + nb);
    bins++;
  }
  if (pool_a + pool_b > 0) {
    chi += (pool_a * ra - pool_b * rb) * (pool_a * ra - pool_b * rb) /
           (pool_a + pool_b);
    bins++;
  }
  *df = bins - 1;
  return chi;
}

static void test_first_tokens_follow_the_model(void **state) {
  (void)state;
  if (!g_model) NC_MODEL_UNAVAILABLE(g_why);
  if (NC_SANITIZED)
    NC_SKIP_BECAUSE("a statistic over 15,000+ completions: the release build "
                    "runs it; test_engine_spec takes the same paths under the "
                    "sanitizers");
  const int n_runs = (nc_test_short() ? 63 : 313) * N_PER_REQ;
  int32_t *prompt = NULL, *pred = NULL;
  size_t n_prompt = 0, n_pred = 0;
  assert_int_equal(nucleus_tokenize(g_model, k_prompt, strlen(k_prompt), true,
                                    false, &prompt, &n_prompt, NULL),
                   NUCLEUS_OK);
  assert_int_equal(nucleus_tokenize(g_model, k_prediction, strlen(k_prediction),
                                    false, false, &pred, &n_pred, NULL),
                   NUCLEUS_OK);
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 256;
  ep.max_running = WAVE * N_PER_REQ;
  ep.kv_cache_tokens = 2 * WAVE * N_PER_REQ * 64;
  /* cheap verify rows: every arm drafts, whatever the machine's step times
   * (with the measured cost, a wave of many sequences would draft little) */
  ep.spec_row_cost = 0.01f;
  nucleus_engine *e = NULL, *de = NULL;
  assert_int_equal(nucleus_engine_create(g_model, &ep, &e, NULL), NUCLEUS_OK);
  /* the draft model: the default model again (a second load) */
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_model *draft = NULL;
  assert_int_equal(
      nucleus_model_load(getenv("NUCLEUS_MODEL"), &mp, &draft, NULL),
      NUCLEUS_OK);
  ep.draft_model = draft;
  assert_int_equal(nucleus_engine_create(g_model, &ep, &de, NULL), NUCLEUS_OK);
  const float temps[] = {0.7f, 1.0f, 1.5f};
  for (int t = 0; t < 3; t++) {
    nucleus_request_params p = nucleus_request_default_params();
    p.sampling.temperature = temps[t];
    p.sampling.top_p = 0.95f;
    p.sampling.min_p = 0.02f;
    p.max_tokens = 3;
    p.ignore_eos = true;
    p.n = N_PER_REQ;
    arm plain = {0}, ngram = {0}, predicted = {0}, drafted_q = {0},
        strict = {0};
    run_arm(e, prompt, n_prompt, &p, 1000, n_runs, &plain);
    nucleus_request_params q = p;
    q.speculative.type = NUCLEUS_SPEC_NGRAM;
    q.speculative.draft_max = 4;
    run_arm(e, prompt, n_prompt, &q, 2000, n_runs, &ngram);
    q.speculative.type = NUCLEUS_SPEC_PREDICTION;
    q.speculative.prediction = pred;
    q.speculative.n_prediction = n_pred;
    run_arm(e, prompt, n_prompt, &q, 3000, n_runs, &predicted);
    q.speculative.type = NUCLEUS_SPEC_DRAFT;
    q.speculative.prediction = NULL;
    q.speculative.n_prediction = 0;
    run_arm(de, prompt, n_prompt, &q, 4000, n_runs, &drafted_q);
    q.speculative.strict = true;
    run_arm(de, prompt, n_prompt, &q, 5000, n_runs, &strict);
    arm *drafted[4] = {&ngram, &predicted, &drafted_q, &strict};
    const char *names[4] = {"ngram", "prediction", "draft", "draft strict"};
    for (int d = 0; d < 4; d++) {
      int df;
      double chi = chi2_two_sample(&plain, drafted[d], &df);
      fprintf(stderr,
              "  T %.1f %-12s: %d runs each, chi2 %.1f (df %d, limit %.1f), "
              "%lld of %lld drafts accepted\n",
              (double)temps[t], names[d], n_runs, chi, df, chi2_limit(df),
              (long long)drafted[d]->accepted, (long long)drafted[d]->drafted);
      assert_true(df >= 1);
      assert_true(chi < chi2_limit(df));
      /* the drafts were there to be judged */
      assert_true(drafted[d]->drafted > n_runs / 2);
      assert_true(drafted[d]->accepted > 0);
    }
    free(plain.triples);
    free(ngram.triples);
    free(predicted.triples);
    free(drafted_q.triples);
    free(strict.triples);
  }
  nucleus_engine_free(e);
  nucleus_engine_free(de);
  nucleus_model_free(draft);
  nucleus_free(prompt);
  nucleus_free(pred);
}

/* The test's own check: it tells apart two temperatures (the same
 * statistic over 0.7 and 1.0 without drafts is far over its limit). */
static void test_chi2_tells_temperatures_apart(void **state) {
  (void)state;
  if (!g_model) NC_MODEL_UNAVAILABLE(g_why);
  const int n_runs = 63 * N_PER_REQ;
  int32_t *prompt = NULL;
  size_t n_prompt = 0;
  assert_int_equal(nucleus_tokenize(g_model, k_prompt, strlen(k_prompt), true,
                                    false, &prompt, &n_prompt, NULL),
                   NUCLEUS_OK);
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 256;
  ep.max_running = WAVE * N_PER_REQ;
  ep.kv_cache_tokens = 2 * WAVE * N_PER_REQ * 64;
  nucleus_engine *e = NULL;
  assert_int_equal(nucleus_engine_create(g_model, &ep, &e, NULL), NUCLEUS_OK);
  nucleus_request_params p = nucleus_request_default_params();
  p.sampling.temperature = 1.0f;
  p.sampling.top_p = 0.95f;
  p.sampling.min_p = 0.02f;
  p.max_tokens = 3;
  p.ignore_eos = true;
  p.n = N_PER_REQ;
  arm hot = {0}, cold = {0};
  run_arm(e, prompt, n_prompt, &p, 1000, n_runs, &hot);
  p.sampling.temperature = 0.7f;
  run_arm(e, prompt, n_prompt, &p, 2000, n_runs, &cold);
  int df;
  double chi = chi2_two_sample(&hot, &cold, &df);
  fprintf(stderr, "  T 1.0 against T 0.7: chi2 %.1f (df %d, limit %.1f)\n", chi,
          df, chi2_limit(df));
  assert_true(chi > chi2_limit(df));
  free(hot.triples);
  free(cold.triples);
  nucleus_engine_free(e);
  nucleus_free(prompt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chi2_tells_temperatures_apart),
      cmocka_unit_test(test_first_tokens_follow_the_model),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
