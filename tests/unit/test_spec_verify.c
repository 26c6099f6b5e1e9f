/* The verifier of speculative decoding (src/sampling/spec_verify.c): a
 * point-mass draft is kept exactly when the draw of decoding without drafts
 * equals it (so the emitted token is that draw, at every temperature); with
 * a draft distribution q the exact rule emits tokens distributed as p
 * (chi-square) and accepts at sum min(p, q), the strict rule also emits p
 * and accepts at sum p q; bad drafts fail with a message. What a drafter
 * with q proposes: a draw from q (written out) for the exact rule, q's mode
 * for the strict one; every row's p_top is its distribution's largest
 * probability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/rng.h"
#include "sampling/spec_verify.h"
#include "test_sampler_util.h"

enum { V = 12 };

static void test_logits(float *x) {
  static const double probs[V] = {0.30, 0.20, 0.12, 0.10,  0.08, 0.06,
                                  0.05, 0.04, 0.02, 0.015, 0.01, 0.005};
  logits_of_probs(probs, V, x);
}

/* A point mass: the verifier's token is nc_sample_batch's at every step,
 * kept exactly when it is the draft; over many steps the draft is kept at
 * the rate p(draft). */
static void point_mass_is_the_plain_draw(void **state) {
  (void)state;
  float x[V];
  test_logits(x);
  const float temps[] = {0.0f, 0.7f, 1.0f, 1.5f};
  for (size_t t = 0; t < sizeof temps / sizeof *temps; t++) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = temps[t];
    p.top_p = 0.9f;
    p.min_p = 0.02f;
    nc_sampler *plain = make_sampler(&p, V, 42);
    nc_sampler *spec = make_sampler(&p, V, 42);
    nc_sample_workspace *ws = make_ws(V);
    test_dist d;
    dist_of(&p, x, V, NULL, 0, &d);
    const int32_t draft = 1;
    const int n = 20000;
    int kept = 0;
    for (int i = 0; i < n; i++) {
      nc_sample_result want = sample_one(ws, plain, x), got;
      nc_sample_row row = {.sampler = spec, .logits = x};
      bool accepted = true;
      assert_int_equal(nc_spec_verify(ws, &row, draft, NULL, NC_SPEC_EXACT,
                                      &got, &accepted, NULL),
                       NC_OK);
      assert_int_equal(got.token, want.token);
      assert_true(accepted == (want.token == draft));
      kept += accepted;
      nc_sampler_accept(plain, want.token);
      nc_sampler_accept(spec, got.token);
    }
    double px = dist_prob(&d, draft), rate = (double)kept / n;
    double sd = sqrt(px * (1 - px) / n) + 1e-9;
    assert_true(fabs(rate - px) <= 5 * sd);
    nc_sampler_free(plain);
    nc_sampler_free(spec);
    nc_sample_workspace_free(ws);
  }
}

/* chi-square of observed counts against probabilities (bins with
 * expectation >= 5; the rest pooled), and its degrees of freedom. */
static double chi_square(const int *count, const double *p, int n, int total,
                         int *df) {
  double chi = 0.0, pool_e = 0.0, pool_o = 0.0;
  int bins = 0;
  for (int i = 0; i < n; i++) {
    double e = p[i] * total;
    if (e < 5.0) {
      pool_e += e, pool_o += count[i];
      if (e == 0.0) assert_int_equal(count[i], 0); /* never outside p */
      continue;
    }
    chi += (count[i] - e) * (count[i] - e) / e;
    bins++;
  }
  if (pool_e >= 5.0) {
    chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
    bins++;
  }
  *df = bins - 1;
  return chi;
}

/* The 0.999 quantile of chi-square for df in [1, 12]. */
static double chi_limit(int df) {
  static const double q[] = {0,     10.83, 13.82, 16.27, 18.47, 20.52, 22.46,
                             24.32, 26.12, 27.88, 29.59, 31.26, 32.91};
  assert_true(df >= 1 && df <= 12);
  return q[df];
}

/* Drafts drawn from q, verified by rule: the emitted tokens follow p and
 * the acceptance rate is the rule's. */
static void check_rule(nc_spec_rule rule, const nucleus_sampling_params *p,
                       const double *qd) {
  float x[V], q[V];
  test_logits(x);
  for (int i = 0; i < V; i++)
    q[i] = (float)qd[i];
  test_dist d;
  dist_of(p, x, V, NULL, 0, &d);
  double pd[V] = {0};
  for (int i = 0; i < V; i++)
    pd[i] = dist_prob(&d, i);
  double want_rate = 0.0;
  for (int i = 0; i < V; i++)
    want_rate += rule == NC_SPEC_EXACT ? fmin(pd[i], q[i]) : pd[i] * q[i];
  nc_sampler *s = make_sampler(p, V, 7);
  nc_sample_workspace *ws = make_ws(V);
  const int n = 40000;
  int count[V] = {0}, kept = 0;
  for (int i = 0; i < n; i++) {
    /* the drafter's own randomness: another key */
    double u = nc_rng_uniform(1234, 0, (uint64_t)i, 0), acc = 0.0;
    int32_t draft = V - 1;
    for (int t = 0; t < V; t++)
      if ((acc += q[t]) > u) {
        draft = t;
        break;
      }
    nc_sample_row row = {.sampler = s, .logits = x};
    nc_sample_result res;
    bool accepted;
    assert_int_equal(
        nc_spec_verify(ws, &row, draft, q, rule, &res, &accepted, NULL), NC_OK);
    assert_true(res.token >= 0 && res.token < V);
    if (accepted) assert_int_equal(res.token, draft);
    count[res.token]++;
    kept += accepted;
    nc_sampler_accept(s, res.token);
  }
  int df;
  double chi = chi_square(count, pd, V, n, &df);
  print_message("rule %d: chi2 %.2f (df %d), acceptance %.4f (want %.4f)\n",
                (int)rule, chi, df, (double)kept / n, want_rate);
  assert_true(chi < chi_limit(df));
  double sd = sqrt(want_rate * (1 - want_rate) / n) + 1e-9;
  assert_true(fabs((double)kept / n - want_rate) <= 5 * sd);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static const double q_flat[V] = {0.05, 0.30, 0.05, 0.05, 0.05, 0.05,
                                 0.05, 0.05, 0.05, 0.05, 0.05, 0.20};

static void exact_rule_keeps_p(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.0f;
  check_rule(NC_SPEC_EXACT, &p, q_flat);
  p.temperature = 0.7f; /* q has mass where top-k removed p's */
  p.top_k = 5;
  check_rule(NC_SPEC_EXACT, &p, q_flat);
  p.temperature = 1.5f;
  p.top_k = 0;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  check_rule(NC_SPEC_EXACT, &p, q_flat);
}

static void strict_rule_keeps_p_accepts_less(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.0f;
  check_rule(NC_SPEC_STRICT, &p, q_flat);
  p.temperature = 1.5f;
  p.top_p = 0.9f;
  check_rule(NC_SPEC_STRICT, &p, q_flat);
}

/* Greedy: a draft stands exactly when it is the argmax, whatever q says;
 * otherwise the argmax is emitted. */
static void greedy_keeps_the_argmax(void **state) {
  (void)state;
  float x[V], q[V];
  test_logits(x);
  for (int i = 0; i < V; i++)
    q[i] = (float)q_flat[i];
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.0f;
  nc_sampler *s = make_sampler(&p, V, 3);
  nc_sample_workspace *ws = make_ws(V);
  for (int32_t draft = 0; draft < V; draft++)
    for (int rule = 0; rule < 2; rule++) {
      nc_sample_row row = {.sampler = s, .logits = x};
      nc_sample_result res;
      bool accepted;
      assert_int_equal(nc_spec_verify(ws, &row, draft, rule ? NULL : q,
                                      (nc_spec_rule)rule, &res, &accepted,
                                      NULL),
                       NC_OK);
      assert_int_equal(res.token, 0);
      assert_true(accepted == (draft == 0));
    }
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

/* Logprobs of an emitted token are the target's (what nc_sample_batch
 * reports for the same token). */
static void logprobs_are_the_targets(void **state) {
  (void)state;
  float x[V], q[V];
  test_logits(x);
  for (int i = 0; i < V; i++)
    q[i] = (float)q_flat[i];
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.0f;
  p.logprobs = true;
  p.top_logprobs = 3;
  nc_sampler *s = make_sampler(&p, V, 5);
  nc_sample_workspace *ws = make_ws(V);
  nc_sample_result plain = sample_one(ws, s, x);
  for (int32_t draft = 0; draft < V; draft++) {
    nc_sample_row row = {.sampler = s, .logits = x};
    nc_sample_result res;
    bool accepted;
    assert_int_equal(nc_spec_verify(ws, &row, draft, q, NC_SPEC_EXACT, &res,
                                    &accepted, NULL),
                     NC_OK);
    /* raw logprobs: log softmax of x at the emitted token */
    assert_float_equal(res.logprob, x[res.token], 1e-5);
    assert_int_equal(res.n_top, 3);
    for (int k = 0; k < 3; k++) {
      assert_int_equal(res.top[k].token, plain.top[k].token);
      assert_float_equal(res.top[k].logprob, plain.top[k].logprob, 0);
    }
  }
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

/* nc_spec_draft_token: under the exact rule the sampler's own draw, q the
 * row's final distribution; under the strict rule q's mode (here token 0,
 * then token 3 once a bias lifts it above the rest), q untouched. */
static void proposal_is_a_draw_or_the_mode(void **state) {
  (void)state;
  float x[V];
  test_logits(x);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.2f;
  p.top_p = 0.95f;
  nc_sampler *s = make_sampler(&p, V, 9);
  nc_sample_workspace *ws = make_ws(V);
  int32_t ids[V];
  double probs[V];
  float q[V];
  test_dist d;
  dist_of(&p, x, V, NULL, 0, &d);
  int seen[V] = {0};
  for (int i = 0; i < 400; i++) {
    nc_sample_row row = {.sampler = s, .logits = x};
    nc_sample_result want = sample_one(ws, s, x);
    const int32_t tok =
        nc_spec_draft_token(ws, &row, NC_SPEC_EXACT, ids, probs, q);
    assert_int_equal(tok, want.token);
    seen[tok]++;
    double sum = 0;
    for (int32_t v = 0; v < V; v++) {
      assert_float_equal(q[v], dist_prob(&d, v), 1e-6);
      sum += q[v];
    }
    assert_float_equal(sum, 1.0, 1e-5);
    for (int32_t v = 0; v < V; v++)
      q[v] = -1.0f;
    assert_int_equal(
        nc_spec_draft_token(ws, &row, NC_SPEC_STRICT, ids, probs, q), 0);
    for (int32_t v = 0; v < V; v++)
      assert_true(q[v] == -1.0f);
    nc_sampler_accept(s, tok);
  }
  int distinct = 0;
  for (int32_t v = 0; v < V; v++)
    distinct += seen[v] > 0;
  assert_true(distinct >= 4); /* draws, not the mode */
  x[3] += 2.0f;
  nc_sample_row row = {.sampler = s, .logits = x};
  assert_int_equal(nc_spec_draft_token(ws, &row, NC_SPEC_STRICT, ids, probs, q),
                   3);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static double dist_top(const test_dist *d) {
  double top = 0;
  for (int32_t i = 0; i < d->n; i++)
    if (d->probs[i] > top) top = d->probs[i];
  return top;
}

/* p_top: the final distribution's largest probability, from the plain
 * draw and from the exact rule's verification alike; 1 for greedy; with
 * typical-p dropping the argmax, the largest of what is left. */
static void p_top_is_the_largest_probability(void **state) {
  (void)state;
  float x[V];
  test_logits(x);
  const float temps[] = {0.0f, 0.7f, 1.0f, 1.5f};
  for (size_t t = 0; t < sizeof temps / sizeof *temps; t++) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = temps[t];
    p.min_p = 0.02f;
    nc_sampler *s = make_sampler(&p, V, 3);
    nc_sample_workspace *ws = make_ws(V);
    test_dist d;
    dist_of(&p, x, V, NULL, 0, &d);
    const double top = dist_top(&d);
    nc_sample_result res = sample_one(ws, s, x);
    assert_float_equal(res.p_top, temps[t] == 0.0f ? 1.0 : top, 1e-5);
    float q[V];
    for (int32_t v = 0; v < V; v++)
      q[v] = 1.0f / V;
    nc_sample_row row = {.sampler = s, .logits = x};
    bool accepted;
    assert_int_equal(
        nc_spec_verify(ws, &row, 2, q, NC_SPEC_EXACT, &res, &accepted, NULL),
        NC_OK);
    assert_float_equal(res.p_top, temps[t] == 0.0f ? 1.0 : top, 1e-5);
    nc_sampler_free(s);
    nc_sample_workspace_free(ws);
  }
  /* one dominant token and many alike: typical-p keeps the alike ones */
  float y[V];
  for (int32_t v = 0; v < V; v++)
    y[v] = 0.0f;
  y[0] = 6.0f;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.0f;
  p.typical_p = 0.2f;
  nc_sampler *s = make_sampler(&p, V, 3);
  nc_sample_workspace *ws = make_ws(V);
  test_dist d;
  dist_of(&p, y, V, NULL, 0, &d);
  const double top = dist_top(&d);
  nc_sample_result res = sample_one(ws, s, y);
  assert_float_equal(res.p_top, top, 1e-5);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static void bad_draft_is_refused(void **state) {
  (void)state;
  float x[V];
  test_logits(x);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  nc_sampler *s = make_sampler(&p, V, 1);
  nc_sample_workspace *ws = make_ws(V);
  nc_sample_row row = {.sampler = s, .logits = x};
  nc_sample_result res;
  bool accepted = true;
  nc_error err = {0};
  assert_int_equal(
      nc_spec_verify(ws, &row, V, NULL, NC_SPEC_EXACT, &res, &accepted, &err),
      NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "draft token 12 out of range [0, 12)"));
  assert_false(accepted);
  assert_int_equal(res.token, -1);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(point_mass_is_the_plain_draw),
      cmocka_unit_test(exact_rule_keeps_p),
      cmocka_unit_test(strict_rule_keeps_p_accepts_less),
      cmocka_unit_test(greedy_keeps_the_argmax),
      cmocka_unit_test(logprobs_are_the_targets),
      cmocka_unit_test(bad_draft_is_refused),
      cmocka_unit_test(proposal_is_a_draw_or_the_mode),
      cmocka_unit_test(p_top_is_the_largest_probability),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
