/* The inspector's record (nc_sample_row.inspect): what each stage of the
 * real pipeline did to the top candidates, checked against the pipeline's
 * own outputs (nc_sample_distribution, the drawn token) and by hand; and
 * that asking for it changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/rng.h"
#include "test_sampler_util.h"

#define V 3000

static void random_logits(float *x, int32_t n, uint64_t seed) {
  for (int32_t i = 0; i < n; i++)
    x[i] = (float)(8.0 * nc_rng_uniform(seed, 7, (uint64_t)i, 0) - 4.0);
}

/* The settings each test walks: every stage alone and together. */
static nucleus_sampling_params combo(int k) {
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 8;
  switch (k) {
  case 0: break; /* untruncated */
  case 1: p.top_k = 20; break;
  case 2: p.top_p = 0.9f; break;
  case 3: p.top_p = 0.95f, p.min_p = 0.3f; break; /* min-p inside top-p */
  case 4: p.min_p = 0.05f, p.temperature = 0.7f; break;
  case 5: p.typical_p = 0.8f; break;
  case 6:
    p.repetition_penalty = 1.3f, p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f, p.top_k = 40, p.top_p = 0.8f;
    p.min_p = 0.01f, p.typical_p = 0.95f, p.temperature = 1.5f;
    break;
  case 7: p.temperature = 0.0f, p.repetition_penalty = 1.2f; break;
  case 8: p.top_p = 0.5f, p.temperature = 3.0f; break;
  }
  return p;
}
#define N_COMBOS 9

static const nucleus_logit_bias BIAS[2] = {{5, 3.0f}, {9, -100.0f}};

static nc_sampler *combo_sampler(int k, uint64_t seed) {
  nucleus_sampling_params p = combo(k);
  if (k == 6) p.logit_bias = BIAS, p.n_logit_bias = 2;
  nc_sampler *s = make_sampler(&p, V, seed);
  if (k == 6 || k == 7) {
    int32_t prompt[4] = {1, 2, 3, 4};
    nc_sampler_accept_prompt(s, prompt, 4);
    nc_sampler_accept(s, 2);
    nc_sampler_accept(s, 2);
    nc_sampler_accept(s, 11);
  }
  return s;
}

static void inspect_changes_nothing(void **state) {
  (void)state;
  static float x[V];
  nc_sample_workspace *a = make_ws(V), *b = make_ws(V);
  static nucleus_inspect rec;
  for (int k = 0; k < N_COMBOS; k++)
    for (uint64_t seed = 1; seed <= 12; seed++) {
      random_logits(x, V, seed * 31 + (uint64_t)k);
      nc_sampler *s = combo_sampler(k, seed);
      nc_sample_row row = {.sampler = s, .logits = x};
      nc_sample_result plain, seen;
      assert_int_equal(nc_sample_batch(a, &row, 1, &plain, NULL), NC_OK);
      row.inspect = &rec;
      assert_int_equal(nc_sample_batch(b, &row, 1, &seen, NULL), NC_OK);
      assert_memory_equal(&plain, &seen, sizeof plain);
      assert_int_equal(rec.token, plain.token);
      nc_sampler_free(s);
    }
  nc_sample_workspace_free(a);
  nc_sample_workspace_free(b);
}

static bool rel_near(double a, double b) {
  return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b)) + 1e-12;
}

static void final_probs_are_the_pipelines(void **state) {
  (void)state;
  static float x[V];
  static test_dist d;
  static nucleus_inspect rec;
  nc_sample_workspace *ws = make_ws(V);
  for (int k = 0; k < N_COMBOS; k++)
    for (uint64_t seed = 1; seed <= 6; seed++) {
      random_logits(x, V, seed * 17 + (uint64_t)k);
      nc_sampler *s = combo_sampler(k, seed);
      nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
      nc_sample_result res;
      assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
      row.inspect = NULL;
      assert_int_equal(
          nc_sample_distribution(ws, &row, d.ids, d.probs, &d.n, NULL), NC_OK);
      assert_true(rec.n_candidates >= 8 && rec.n_candidates <= 9);
      /* the draw: the generator's key and u, the token drawn */
      assert_int_equal(rec.token, res.token);
      assert_true(rec.seed == seed && rec.step == nc_sampler_step(s));
      if (k != 7)
        assert_true(rec.uniform ==
                    nc_rng_uniform(seed, 0, nc_sampler_step(s), 0));
      bool drawn_seen = false;
      double raw_max = -INFINITY, raw_z = 0.0;
      for (int32_t i = 0; i < V; i++)
        raw_max = fmax(raw_max, x[i]);
      for (int32_t i = 0; i < V; i++)
        raw_z += exp(x[i] - raw_max);
      for (int32_t c = 0; c < rec.n_candidates; c++) {
        const nucleus_inspect_candidate *cd = &rec.candidates[c];
        if (c > 0 && c < 8) /* the top ones, descending */
          assert_true(rec.candidates[c - 1].raw_prob >= cd->raw_prob);
        assert_true(
            rel_near(cd->raw_prob, exp(x[cd->token] - raw_max) / raw_z));
        double want = 0.0;
        for (int32_t i = 0; i < d.n; i++)
          if (d.ids[i] == cd->token) want = d.probs[i];
        assert_true(rel_near(cd->final_prob, want));
        if (want > 0.0) assert_int_equal(cd->removed_by, -1);
        if (cd->removed_by >= 0) {
          assert_true(cd->final_prob == 0.0f);
          for (int32_t j = cd->removed_by; j < rec.n_stages; j++)
            assert_true(cd->stage_prob[j] == 0.0f);
          if (cd->removed_by > 0)
            assert_true(cd->stage_prob[cd->removed_by - 1] > 0.0f);
        }
        if (cd->token == res.token) {
          drawn_seen = true;
          assert_int_equal(cd->removed_by, -1);
        }
      }
      assert_true(drawn_seen);
      /* the last stage that ran is the distribution drawn from */
      if (rec.n_stages > 0 && k != 0)
        for (int32_t c = 0; c < rec.n_candidates; c++)
          assert_true(rel_near(rec.candidates[c].stage_prob[rec.n_stages - 1],
                               rec.candidates[c].final_prob));
      nc_sampler_free(s);
    }
  nc_sample_workspace_free(ws);
}

static void stages_in_pipeline_order(void **state) {
  (void)state;
  static float x[V];
  static nucleus_inspect rec;
  random_logits(x, V, 3);
  nc_sample_workspace *ws = make_ws(V);
  nc_sampler *s = combo_sampler(6, 1);
  nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  const char *want[] = {"logit_bias",
                        "repetition_penalty",
                        "presence_frequency_penalty",
                        "temperature",
                        "top_k",
                        "top_p",
                        "min_p",
                        "typical_p"};
  assert_int_equal(rec.n_stages, 8);
  for (int j = 0; j < 8; j++)
    assert_string_equal(rec.stages[j], want[j]);
  nc_sampler_free(s);
  /* nothing set: temperature alone */
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 3;
  s = make_sampler(&p, V, 1);
  row.sampler = s;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(rec.n_stages, 1);
  assert_string_equal(rec.stages[0], "temperature");
  assert_int_equal(rec.n_candidates >= 3, true);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

/* By hand on four tokens of probability 0.5, 0.3, 0.15, 0.05. */
static void top_k_cut_by_hand(void **state) {
  (void)state;
  float x[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 4, p.top_k = 2, p.min_p = 0.7f;
  nc_sampler *s = make_sampler(&p, 4, 5);
  nc_sample_workspace *ws = make_ws(4);
  nucleus_inspect rec;
  nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(rec.n_stages, 3);
  assert_string_equal(rec.stages[1], "top_k");
  assert_string_equal(rec.stages[2], "min_p");
  assert_int_equal(rec.n_candidates, 4);
  const nucleus_inspect_candidate *c = rec.candidates;
  assert_true(fabs(c[0].raw_prob - 0.5) < 1e-6);
  assert_true(fabs(c[0].stage_prob[0] - 0.5) < 1e-6); /* T = 1 */
  assert_true(fabs(c[0].stage_prob[1] - 0.5 / 0.8) < 1e-6);
  assert_true(fabs(c[1].stage_prob[1] - 0.3 / 0.8) < 1e-6);
  assert_int_equal(c[1].removed_by, 2); /* 0.3 < 0.7 * 0.5 */
  assert_int_equal(c[2].removed_by, 1);
  assert_int_equal(c[3].removed_by, 1);
  assert_true(c[0].final_prob == 1.0f && res.token == 0);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

/* The drawn token is listed even when it is not among the top ones. */
static void drawn_token_is_appended(void **state) {
  (void)state;
  float x[4] = {3.0f, 2.0f, 1.0f, 0.0f};
  int32_t allowed[1] = {3};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 1, p.allowed_tokens = allowed, p.n_allowed_tokens = 1;
  nc_sampler *s = make_sampler(&p, 4, 5);
  nc_sample_workspace *ws = make_ws(4);
  nucleus_inspect rec;
  nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(res.token, 3);
  assert_int_equal(rec.n_candidates, 2);
  assert_int_equal(rec.candidates[0].token, 0);
  assert_int_equal(rec.candidates[0].removed_by, 0);
  assert_string_equal(rec.stages[0], "logit_bias");
  assert_int_equal(rec.candidates[1].token, 3);
  assert_int_equal(rec.candidates[1].removed_by, -1);
  assert_true(rec.candidates[1].stage_prob[0] == 1.0f);
  assert_true(rec.candidates[1].final_prob == 1.0f);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static void greedy_cuts_at_temperature(void **state) {
  (void)state;
  float x[4] = {1.0f, 3.0f, 2.0f, 0.0f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 3, p.temperature = 0.0f;
  nc_sampler *s = make_sampler(&p, 4, 5);
  nc_sample_workspace *ws = make_ws(4);
  nucleus_inspect rec;
  nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(rec.n_stages, 1);
  assert_int_equal(rec.candidates[0].token, 1);
  assert_true(rec.candidates[0].final_prob == 1.0f);
  assert_int_equal(rec.candidates[1].removed_by, 0);
  assert_int_equal(rec.candidates[2].removed_by, 0);
  assert_true(rec.uniform == 0.0);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

/* top-p's set is wider than min-p's: tokens min-p cuts survive top-p. */
static void top_p_wider_than_min_p(void **state) {
  (void)state;
  float x[5] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.06f), logf(0.04f)};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.inspect_top_n = 5, p.top_p = 0.95f, p.min_p = 0.6f;
  nc_sampler *s = make_sampler(&p, 5, 5);
  nc_sample_workspace *ws = make_ws(5);
  nucleus_inspect rec;
  nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
  nc_sample_result res;
  assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
  assert_int_equal(rec.n_stages, 3);
  assert_string_equal(rec.stages[1], "top_p");
  const nucleus_inspect_candidate *c = rec.candidates;
  assert_int_equal(c[2].removed_by, 2); /* 0.2 < 0.6 * 0.4: min-p's */
  assert_int_equal(c[3].removed_by, 2); /* 0.9 < 0.95: kept by top-p */
  assert_int_equal(c[4].removed_by, 1); /* 0.96 >= 0.95 before it */
  assert_true(fabs(c[0].stage_prob[1] - 0.4 / 0.96) < 1e-5);
  assert_true(fabs(c[0].final_prob - 0.4 / 0.7) < 1e-5);
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
}

static void top_n_is_bounded(void **state) {
  (void)state;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  nc_error err = {0};
  p.inspect_top_n = NUCLEUS_MAX_INSPECT_TOP + 1;
  assert_int_equal(nc_sampling_validate(&p, 10, &err), NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "inspect"));
  p.inspect_top_n = -1;
  assert_int_equal(nc_sampling_validate(&p, 10, &err), NC_ERR_INVALID_ARGUMENT);
  p.inspect_top_n = NUCLEUS_MAX_INSPECT_TOP;
  assert_int_equal(nc_sampling_validate(&p, 10, &err), NC_OK);
}

/* The public what-if (nucleus_sample_logits): the same pipeline on a row,
 * its record and draws that replay, and what it refuses. */
static void sample_logits_replays(void **state) {
  (void)state;
  float x[6] = {2.0f, 1.5f, 1.0f, 0.2f, -1.0f, -3.0f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.has_seed = true, p.seed = 9, p.top_k = 3, p.temperature = 2.0f;
  nucleus_inspect rec;
  int32_t draws[300], again[300];
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 300, &rec, draws, NULL),
                   NUCLEUS_OK);
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 300, NULL, again, NULL),
                   NUCLEUS_OK);
  assert_memory_equal(draws, again, sizeof draws);
  assert_int_equal(rec.n_candidates, 6);
  assert_int_equal(rec.token, draws[0]);
  int counts[6] = {0};
  for (int k = 0; k < 300; k++) {
    assert_true(draws[k] >= 0 && draws[k] < 3); /* top-k keeps 0..2 */
    counts[draws[k]]++;
  }
  assert_true(counts[0] > counts[2] && counts[2] > 0);
  for (int c = 3; c < 6; c++)
    assert_int_equal(rec.candidates[c].removed_by, 1);
  /* each draw is the engine's: a sampler at that step draws the same */
  nc_sampler *s = make_sampler(&p, 6, 9);
  nc_sample_workspace *ws = make_ws(6);
  for (int k = 0; k < 300; k++) {
    assert_int_equal(sample_one(ws, s, x).token, draws[k]);
    nc_sampler_accept(s, draws[k]);
  }
  nc_sampler_free(s);
  nc_sample_workspace_free(ws);
  nucleus_error err = {0};
  p.presence_penalty = 0.5f;
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, NULL, draws, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  p.presence_penalty = 0.0f, p.has_seed = false;
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, NULL, draws, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  p.has_seed = true;
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, NULL, NULL, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_int_equal(nucleus_sample_logits(&p, x, 0, 0, NULL, NULL, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
}

/* The draw on the cumulative distribution of one inspected row: u fell in
 * the drawn token's interval by the very sums the sampler compared, the
 * walk lists every kept candidate with an interval as wide as its final
 * probability, in an order whose sums only grow, and no other listed
 * interval holds u. tol: the slack allowed to the intervals of tokens in a
 * block the draw added at once (its sum, not theirs, went on). */
static void check_draw(const nucleus_inspect *rec, int32_t token, double tol) {
  assert_int_equal(rec->method, NUCLEUS_DRAW_INVERSE_CDF);
  assert_true(rec->target == rec->uniform * rec->mass);
  assert_true(rec->mass > 0.0);
  if (!rec->clamped)
    assert_true(rec->cdf_lo <= rec->target && rec->target < rec->cdf_hi);
  else
    assert_true(rec->cdf_hi <= rec->target);
  assert_true(rec->n_walk >= 1 && rec->n_walk <= rec->n_candidates);
  int32_t drawn = -1;
  for (int32_t k = 0; k < rec->n_walk; k++) {
    const nucleus_inspect_walk *e = &rec->walk[k];
    assert_true(e->lo < e->hi);
    if (k > 0) assert_true(e->lo >= rec->walk[k - 1].hi - tol);
    if (e->token == token) {
      drawn = k;
      assert_true(e->lo == rec->cdf_lo && e->hi == rec->cdf_hi);
    } else if (!rec->clamped) {
      assert_true(rec->target < e->lo - tol || rec->target >= e->hi + tol);
    }
    if (rec->order == NUCLEUS_WALK_TOKEN_ID && k > 0)
      assert_true(e->token > rec->walk[k - 1].token);
  }
  assert_true(drawn >= 0);
  /* the walk's entries are exactly the kept candidates, each as wide as
   * its final probability */
  int32_t kept = 0;
  for (int32_t c = 0; c < rec->n_candidates; c++) {
    const nucleus_inspect_candidate *cd = &rec->candidates[c];
    int32_t at = -1;
    for (int32_t k = 0; k < rec->n_walk; k++)
      if (rec->walk[k].token == cd->token) at = k;
    if (cd->removed_by >= 0 || !(cd->final_prob > 0.0f)) {
      assert_int_equal(at, -1);
      continue;
    }
    kept++;
    assert_true(at >= 0);
    double width = (rec->walk[at].hi - rec->walk[at].lo) / rec->mass;
    assert_true(rel_near(width, cd->final_prob));
  }
  assert_int_equal(kept, rec->n_walk);
}

/* Many seeds and every combination of stages, on a row of three blocks of
 * the untruncated draw: the draw's interval holds u, greedy says so. */
static void draw_interval_holds_u(void **state) {
  (void)state;
  static float x[V];
  static nucleus_inspect rec;
  nc_sample_workspace *ws = make_ws(V);
  int n_full = 0, n_set = 0;
  for (int k = 0; k < N_COMBOS; k++)
    for (uint64_t seed = 1; seed <= 40; seed++) {
      random_logits(x, V, seed * 13 + (uint64_t)k);
      nc_sampler *s = combo_sampler(k, seed);
      nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
      nc_sample_result res;
      assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
      if (k == 7) { /* temperature 0 */
        assert_int_equal(rec.method, NUCLEUS_DRAW_GREEDY);
        assert_int_equal(rec.n_walk, 0);
        assert_true(rec.cdf_lo == 0.0 && rec.cdf_hi == 0.0);
        nc_sampler_free(s);
        continue;
      }
      check_draw(&rec, res.token, 1e-9 * rec.mass);
      if (k == 0) {
        /* nothing truncated: every token by id, so a listed token's lower
         * bound is the mass of the ids below it (summed here apart) */
        n_full++;
        assert_int_equal(rec.order, NUCLEUS_WALK_TOKEN_ID);
        double m = -INFINITY, z = 0.0;
        for (int32_t i = 0; i < V; i++)
          m = fmax(m, x[i]);
        for (int32_t i = 0; i < V; i++)
          z += exp(x[i] - m);
        for (int32_t e = 0; e < rec.n_walk; e++) {
          double below = 0.0;
          for (int32_t i = 0; i < rec.walk[e].token; i++)
            below += exp(x[i] - m);
          assert_true(fabs(rec.walk[e].lo / rec.mass - below / z) < 1e-5);
        }
      } else {
        n_set++;
        assert_int_equal(rec.order, NUCLEUS_WALK_KEPT_SET);
      }
      nc_sampler_free(s);
    }
  assert_true(n_full == 40 && n_set == 7 * 40);
  nc_sample_workspace_free(ws);
}

/* Rows small enough that every token is a candidate: the walk is the whole
 * kept set, its intervals tile [0, total) with no gap, and the drawn token
 * is the one (the only one) whose interval holds u. */
static void drawn_token_owns_u(void **state) {
  (void)state;
  enum { N = 40 };
  float x[N];
  static nucleus_inspect rec;
  nc_sample_workspace *ws = make_ws(N);
  int hits[N] = {0};
  for (uint64_t seed = 1; seed <= 600; seed++) {
    int k = (int)(seed % 7);
    nucleus_sampling_params p = combo(k == 6 ? 8 : k);
    p.inspect_top_n = N;
    random_logits(x, N, seed);
    nc_sampler *s = make_sampler(&p, N, seed);
    nc_sample_row row = {.sampler = s, .logits = x, .inspect = &rec};
    nc_sample_result res;
    assert_int_equal(nc_sample_batch(ws, &row, 1, &res, NULL), NC_OK);
    check_draw(&rec, res.token, 0.0);
    assert_true(rec.walk[0].lo == 0.0);
    int owners = 0;
    for (int32_t e = 0; e < rec.n_walk; e++) {
      const nucleus_inspect_walk *w = &rec.walk[e];
      if (e > 0) assert_true(w->lo == rec.walk[e - 1].hi);
      if (w->lo <= rec.target && rec.target < w->hi) {
        owners++;
        assert_int_equal(w->token, res.token);
      }
    }
    assert_int_equal(owners, rec.clamped ? 0 : 1);
    /* the walk ends at the kept set's mass (up to the order of the sums) */
    assert_true(rel_near(rec.walk[rec.n_walk - 1].hi, rec.mass));
    hits[res.token]++;
    nc_sampler_free(s);
  }
  int distinct = 0;
  for (int i = 0; i < N; i++)
    distinct += hits[i] > 0;
  assert_true(distinct > 10); /* u lands all over */
  nc_sample_workspace_free(ws);
}

/* The what-if's record carries the draw too, in row indices. */
static void sample_logits_records_the_draw(void **state) {
  (void)state;
  float x[6] = {2.0f, 1.5f, 1.0f, 0.2f, -1.0f, -3.0f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.has_seed = true, p.seed = 4, p.top_p = 0.9f;
  nucleus_inspect rec;
  int32_t draws[1];
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, &rec, draws, NULL),
                   NUCLEUS_OK);
  assert_int_equal(rec.token, draws[0]);
  check_draw(&rec, draws[0], 0.0);
  p.top_p = 1.0f;
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, &rec, draws, NULL),
                   NUCLEUS_OK);
  check_draw(&rec, draws[0], 0.0);
  assert_int_equal(rec.order, NUCLEUS_WALK_TOKEN_ID);
  assert_int_equal(rec.n_walk, 6);
  p.temperature = 0.0f;
  assert_int_equal(nucleus_sample_logits(&p, x, 6, 1, &rec, draws, NULL),
                   NUCLEUS_OK);
  assert_int_equal(rec.method, NUCLEUS_DRAW_GREEDY);
  assert_int_equal(rec.n_walk, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inspect_changes_nothing),
      cmocka_unit_test(final_probs_are_the_pipelines),
      cmocka_unit_test(stages_in_pipeline_order),
      cmocka_unit_test(top_k_cut_by_hand),
      cmocka_unit_test(drawn_token_is_appended),
      cmocka_unit_test(greedy_cuts_at_temperature),
      cmocka_unit_test(top_p_wider_than_min_p),
      cmocka_unit_test(top_n_is_bounded),
      cmocka_unit_test(sample_logits_replays),
      cmocka_unit_test(draw_interval_holds_u),
      cmocka_unit_test(drawn_token_owns_u),
      cmocka_unit_test(sample_logits_records_the_draw),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
