/* Beam search bookkeeping on hand-made distributions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampling/beam.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-5)

static void row_of(const double *p, int32_t n, float *out) {
  for (int32_t i = 0; i < n; i++)
    out[i] = p[i] > 0 ? (float)log(p[i]) : -INFINITY;
}

static nc_beam *make(int32_t width, int32_t n_return, float lp, bool early,
                     const int32_t *eog, int32_t n_eog) {
  nc_beam_params p = {width, n_return, lp, early, eog, n_eog};
  nc_beam *b = NULL;
  nc_error err = {0};
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_OK);
  return b;
}

static void validation(void **state) {
  (void)state;
  nc_beam *b = NULL;
  nc_error err = {0};
  nc_beam_params p = {0, 1, 1.0f, false, NULL, 0};
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "beam width = 0"));
  p.width = 65;
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_ERR_INVALID_ARGUMENT);
  p.width = 2, p.n_return = 3;
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "n_return = 3"));
  p.n_return = 2, p.length_penalty = NAN;
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_ERR_INVALID_ARGUMENT);
  p.length_penalty = 1.0f, p.n_eog = 2;
  assert_int_equal(nc_beam_create(&p, &b, &err), NC_ERR_INVALID_ARGUMENT);
  assert_null(b);
}

/* Two steps checked by hand (width 2, eog = 3). */
static void two_steps_by_hand(void **state) {
  (void)state;
  const int32_t eog[1] = {3};
  nc_beam *b = make(2, 2, 1.0f, false, eog, 1);
  assert_int_equal(nc_beam_n_live(b), 1);
  float r0[4];
  row_of((const double[]){0.5, 0.3, 0.15, 0.05}, 4, r0);
  const float *rows[2] = {r0};
  nc_beam_next next[2];
  int32_t n = 0;
  assert_int_equal(nc_beam_step(b, rows, 4, next, &n, NULL), NC_OK);
  /* best 4: t0 .5, t1 .3, t2 .15, eog .05 (rank 3 >= width: not kept) */
  assert_int_equal(n, 2);
  assert_int_equal(next[0].parent, 0);
  assert_int_equal(next[0].token, 0);
  NEAR(next[0].cum_logprob, log(0.5));
  assert_int_equal(next[1].token, 1);
  assert_int_equal(nc_beam_n_finished(b), 0);
  /* beam 0 (.5): [.1 .1 .1 .7]; beam 1 (.3): [.6 .2 .1 .1] */
  float a[4], c[4];
  row_of((const double[]){0.1, 0.1, 0.1, 0.7}, 4, a);
  row_of((const double[]){0.6, 0.2, 0.1, 0.1}, 4, c);
  rows[0] = a, rows[1] = c;
  assert_int_equal(nc_beam_step(b, rows, 4, next, &n, NULL), NC_OK);
  /* ranked: b0+eog .35 (finished), b1+t0 .18, b1+t1 .06, b0+t0 .05 */
  assert_int_equal(nc_beam_n_finished(b), 1);
  assert_int_equal(n, 2);
  assert_int_equal(next[0].parent, 1);
  assert_int_equal(next[0].token, 0);
  NEAR(next[0].cum_logprob, log(0.18));
  assert_int_equal(next[1].parent, 1);
  assert_int_equal(next[1].token, 1);
  NEAR(next[1].cum_logprob, log(0.06));
  int32_t len;
  const int32_t *toks = nc_beam_live_tokens(b, 0, &len);
  assert_int_equal(len, 2);
  assert_int_equal(toks[0], 1);
  assert_int_equal(toks[1], 0);
  const int32_t *ft;
  float score, cum;
  assert_int_equal(nc_beam_result(b, 0, &ft, &len, &score, &cum, NULL), NC_OK);
  assert_int_equal(len, 2); /* 0, eog */
  assert_int_equal(ft[0], 0);
  assert_int_equal(ft[1], 3);
  NEAR(cum, log(0.35));
  NEAR(score, log(0.35) / 2.0); /* length counts the eog */
  assert_false(nc_beam_done(b));
  nc_beam_finish(b);
  assert_true(nc_beam_done(b));
  assert_int_equal(nc_beam_n_finished(b), 2);
  /* best two of {.35, .18, .06} (all length 2): .35 then .18 */
  assert_int_equal(nc_beam_result(b, 1, &ft, &len, &score, &cum, NULL), NC_OK);
  NEAR(cum, log(0.18));
  assert_int_equal(nc_beam_result(b, 2, &ft, &len, &score, &cum, NULL),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_beam_step(b, rows, 4, next, &n, NULL),
                   NC_ERR_INVALID_ARGUMENT);
  nc_beam_free(b);
}

/* A toy model where the greedy path is not the most likely sequence:
 * after 0 the next token is spread thin, after 1 it is certain. */
static void model(const int32_t *prefix, int32_t n, float *row) {
  double p[4] = {0.0, 0.0, 0.0, 0.0};
  if (n == 0)
    p[0] = 0.6, p[1] = 0.4;
  else if (n == 1 && prefix[0] == 0)
    p[0] = 0.3, p[1] = 0.3, p[2] = 0.4;
  else if (n == 1)
    p[2] = 0.95, p[0] = 0.05;
  else
    p[3] = 1.0; /* eog */
  row_of(p, 4, row);
}

static void finds_the_better_sequence_than_greedy(void **state) {
  (void)state;
  const int32_t eog[1] = {3};
  nc_beam *b = make(2, 2, 0.0f, false, eog, 1);
  float rows_buf[2][4];
  for (int step = 0; step < 5 && !nc_beam_done(b); step++) {
    const float *rows[2];
    for (int32_t i = 0; i < nc_beam_n_live(b); i++) {
      int32_t n;
      const int32_t *t = nc_beam_live_tokens(b, i, &n);
      model(t, n, rows_buf[i]);
      rows[i] = rows_buf[i];
    }
    nc_beam_next next[2];
    int32_t n_next;
    assert_int_equal(nc_beam_step(b, rows, 4, next, &n_next, NULL), NC_OK);
  }
  assert_true(nc_beam_done(b));
  const int32_t *t;
  int32_t n;
  float score, cum;
  assert_int_equal(nc_beam_result(b, 0, &t, &n, &score, &cum, NULL), NC_OK);
  /* 1, 2, eog: 0.4 * 0.95 = 0.38 beats greedy's 0.6 * 0.4 = 0.24 */
  assert_int_equal(n, 3);
  assert_int_equal(t[0], 1);
  assert_int_equal(t[1], 2);
  assert_int_equal(t[2], 3);
  NEAR(cum, log(0.38));
  NEAR(score, log(0.38)); /* length_penalty 0: the plain sum */
  assert_int_equal(nc_beam_result(b, 1, &t, &n, &score, &cum, NULL), NC_OK);
  NEAR(cum, log(0.24));
  nc_beam_free(b);
}

static void length_penalty_and_early_stopping(void **state) {
  (void)state;
  /* Width 1 keeps one live beam; eog ends hypotheses of different
   * lengths. A short one (cum log .2, length 1) vs a long one (cum log .1,
   * length 4): penalty 0 prefers short, penalty 2 prefers long. */
  const int32_t eog[1] = {9};
  for (int pass = 0; pass < 2; pass++) {
    float lp = pass == 0 ? 0.0f : 2.0f;
    nc_beam *b = make(2, 2, lp, false, eog, 1);
    nc_beam_candidate c0[2] = {{9, logf(0.2f)}, {1, logf(0.8f)}};
    const nc_beam_candidate *cs[2] = {c0};
    int32_t nc[2] = {2, 0};
    nc_beam_next next[2];
    int32_t n;
    assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
    assert_int_equal(nc_beam_n_finished(b), 1); /* rank 1 < width 2 */
    assert_int_equal(n, 1);
    /* two more certain-ish steps, then eog at total .1 */
    nc_beam_candidate c1[1] = {{1, logf(0.5f)}};
    cs[0] = c1, nc[0] = 1;
    assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
    nc_beam_candidate c2[1] = {{1, 0.0f}};
    cs[0] = c2;
    assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
    nc_beam_candidate c3[1] = {{9, logf(0.25f)}};
    cs[0] = c3;
    assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
    assert_true(nc_beam_done(b)); /* no live beam left */
    const int32_t *t;
    int32_t len;
    float score, cum;
    assert_int_equal(nc_beam_result(b, 0, &t, &len, &score, &cum, NULL), NC_OK);
    if (pass == 0) {
      assert_int_equal(len, 1);
      NEAR(score, log(0.2));
    } else {
      assert_int_equal(len, 4);
      NEAR(score, log(0.1) / 16.0);
    }
    nc_beam_free(b);
  }
  /* early stopping: done as soon as width hypotheses finished */
  nc_beam *b = make(1, 1, 1.0f, true, eog, 1);
  nc_beam_candidate c[2] = {{9, logf(0.6f)}, {1, logf(0.4f)}};
  const nc_beam_candidate *cs[1] = {c};
  int32_t nc[1] = {2};
  nc_beam_next next[1];
  int32_t n;
  assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
  assert_true(nc_beam_done(b));
  nc_beam_free(b);
  /* without early stopping the same continues: a live beam could win */
  b = make(1, 1, 1.0f, false, eog, 1);
  nc_beam_candidate d[2] = {{9, logf(0.1f)}, {1, logf(0.9f)}};
  cs[0] = d;
  assert_int_equal(nc_beam_step_candidates(b, cs, nc, next, &n, NULL), NC_OK);
  assert_false(nc_beam_done(b)); /* eog ranked 1 >= width 1: not kept */
  nc_beam_free(b);
}

static void candidates_match_full_rows(void **state) {
  (void)state;
  enum { V = 50, W = 3 };
  const int32_t eog[2] = {7, 11};
  nc_beam *a = make(W, W, 1.0f, false, eog, 2);
  nc_beam *c = make(W, W, 1.0f, false, eog, 2);
  float rows_buf[W][V];
  nc_beam_candidate cands[W][V];
  for (int step = 0; step < 6 && !nc_beam_done(a); step++) {
    const float *rows[W];
    const nc_beam_candidate *cs[W];
    int32_t ncs[W];
    assert_int_equal(nc_beam_n_live(a), nc_beam_n_live(c));
    for (int32_t i = 0; i < nc_beam_n_live(a); i++) {
      double z = 0.0, p[V];
      for (int32_t t = 0; t < V; t++)
        z += p[t] = exp(sin(step * 3.1 + i * 1.7 + t * 0.37) * 3.0);
      for (int32_t t = 0; t < V; t++)
        p[t] /= z;
      row_of(p, V, rows_buf[i]);
      rows[i] = rows_buf[i];
      /* the same as candidates, in reverse order */
      for (int32_t t = 0; t < V; t++)
        cands[i][t] = (nc_beam_candidate){V - 1 - t, rows_buf[i][V - 1 - t]};
      cs[i] = cands[i], ncs[i] = V;
    }
    nc_beam_next na[W], nb[W];
    int32_t n1, n2;
    assert_int_equal(nc_beam_step(a, rows, V, na, &n1, NULL), NC_OK);
    assert_int_equal(nc_beam_step_candidates(c, cs, ncs, nb, &n2, NULL), NC_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(na, nb, (size_t)n1 * sizeof *na);
    assert_int_equal(nc_beam_done(a), nc_beam_done(c));
  }
  nc_beam_finish(a);
  nc_beam_finish(c);
  assert_int_equal(nc_beam_n_finished(a), W);
  float prev = INFINITY;
  for (int32_t r = 0; r < W; r++) {
    float s1, s2;
    assert_int_equal(nc_beam_result(a, r, NULL, NULL, &s1, NULL, NULL), NC_OK);
    assert_int_equal(nc_beam_result(c, r, NULL, NULL, &s2, NULL, NULL), NC_OK);
    assert_true(s1 == s2);
    assert_true(s1 <= prev); /* best first */
    prev = s1;
  }
  nc_beam_free(a);
  nc_beam_free(c);
}

static void bad_rows_are_refused(void **state) {
  (void)state;
  nc_beam *b = make(2, 1, 1.0f, false, NULL, 0);
  float row[3] = {-1.0f, NAN, -2.0f};
  const float *rows[1] = {row};
  nc_beam_next next[2];
  int32_t n;
  nc_error err = {0};
  assert_int_equal(nc_beam_step(b, rows, 3, next, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "token 1"));
  row[1] = 5.0f; /* not a log-probability */
  assert_int_equal(nc_beam_step(b, rows, 3, next, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  row[1] = -INFINITY; /* masked: fine, never chosen */
  assert_int_equal(nc_beam_step(b, rows, 3, next, &n, &err), NC_OK);
  assert_int_equal(n, 2);
  assert_int_equal(next[0].token, 0);
  assert_int_equal(next[1].token, 2);
  nc_beam_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(validation),
      cmocka_unit_test(two_steps_by_hand),
      cmocka_unit_test(finds_the_better_sequence_than_greedy),
      cmocka_unit_test(length_penalty_and_early_stopping),
      cmocka_unit_test(candidates_match_full_rows),
      cmocka_unit_test(bad_rows_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
