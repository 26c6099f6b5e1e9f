/* Properties of the sampler over many distributions and seeds: top-p's
 * minimal set, normalisation, limits of p and T, penalties' direction,
 * min-p's bound, reproducibility, batch invariance, and a chi-square test
 * that the draws follow the final distribution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/rng.h"
#include "sampling/sampler_math.h"
#include "test_sampler_util.h"

/* Deterministic test logits: normal-ish values from the rng. */
static void random_logits(uint64_t seed, float *out, int32_t n, float scale) {
  for (int32_t i = 0; i < n; i++) {
    double a = nc_rng_uniform(seed, 99, (uint64_t)i, 0);
    double b = nc_rng_uniform(seed, 99, (uint64_t)i, 1);
    out[i] = (float)(scale * (a + b + nc_rng_uniform(seed, 98, i, 0) - 1.5));
  }
}

/* softmax(logits / T) in double */
static void softmax(const float *x, int32_t n, double t, double *p) {
  double m = -INFINITY, z = 0.0;
  for (int32_t i = 0; i < n; i++)
    m = x[i] > m ? x[i] : m;
  for (int32_t i = 0; i < n; i++)
    z += p[i] = exp((x[i] - m) / t);
  for (int32_t i = 0; i < n; i++)
    p[i] /= z;
}

static void top_p_set_is_minimal_and_normalised(void **state) {
  (void)state;
  enum { V = 300 };
  float logits[V];
  double ref[V];
  const float ps[] = {0.05f, 0.3f, 0.5f, 0.8f, 0.9f, 0.99f};
  const float ts[] = {0.3f, 1.0f, 2.5f};
  for (uint64_t seed = 1; seed <= 8; seed++) {
    random_logits(seed, logits, V, 4.0f);
    for (size_t ti = 0; ti < 3; ti++) {
      softmax(logits, V, ts[ti], ref);
      for (size_t pi = 0; pi < 6; pi++) {
        nucleus_sampling_params p = nucleus_sampling_default_params();
        p.temperature = ts[ti], p.top_p = ps[pi];
        test_dist d;
        dist_of(&p, logits, V, NULL, 0, &d);
        double sum = 0.0, kept = 0.0, smallest = 1.0;
        for (int32_t i = 0; i < d.n; i++) {
          sum += d.probs[i];
          kept += ref[d.ids[i]];
          smallest = ref[d.ids[i]] < smallest ? ref[d.ids[i]] : smallest;
          if (i > 0) assert_true(d.probs[i] <= d.probs[i - 1]);
        }
        assert_true(fabs(sum - 1.0) < 1e-6);
        /* reaches p, and without its smallest member it would not */
        assert_true(kept >= ps[pi] - 1e-6);
        assert_true(kept - smallest < ps[pi] + 1e-6);
        /* a prefix: nothing dropped is more likely than something kept */
        for (int32_t i = 0; i < V; i++)
          if (dist_prob(&d, i) == 0.0) assert_true(ref[i] <= smallest + 1e-9);
      }
    }
  }
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

/* top-p then min-p (no top-k) against a plain sort-based reference */
static void top_p_then_min_p_matches_a_reference(void **state) {
  (void)state;
  enum { V = 400 };
  float logits[V];
  double ref[V], sorted[V];
  const float ps[] = {0.3f, 0.7f, 0.95f};
  const float mps[] = {0.01f, 0.1f, 0.5f};
  for (uint64_t seed = 20; seed < 24; seed++) {
    random_logits(seed, logits, V, seed % 2 ? 8.0f : 2.0f);
    softmax(logits, V, 0.9, ref);
    memcpy(sorted, ref, sizeof ref);
    qsort(sorted, V, sizeof *sorted, cmp_desc);
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        /* reference: the prefix reaching p, then p_i >= min_p * p_max */
        int32_t n_top = 0;
        double acc = 0.0;
        while (n_top < V && acc < ps[a] - 1e-7)
          acc += sorted[n_top++];
        int32_t expect = 0;
        for (int32_t i = 0; i < n_top; i++)
          expect += sorted[i] >= mps[b] * sorted[0];
        nucleus_sampling_params p = nucleus_sampling_default_params();
        p.temperature = 0.9f, p.top_p = ps[a], p.min_p = mps[b];
        test_dist d;
        dist_of(&p, logits, V, NULL, 0, &d);
        if (abs(d.n - expect) > 1)
          fail_msg("seed %d p %g min_p %g: kept %d, reference %d", (int)seed,
                   (double)ps[a], (double)mps[b], d.n, expect);
        for (int32_t i = 0; i < d.n; i++)
          assert_true(fabs(ref[d.ids[i]] - sorted[i]) < 1e-6);
      }
  }
}

static void kept_probabilities_sum_to_one(void **state) {
  (void)state;
  enum { V = 2000 };
  static float logits[V];
  random_logits(5, logits, V, 6.0f);
  int32_t banned[3] = {1, 2, 3};
  for (int c = 0; c < 7; c++) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = 0.7f + 0.3f * c;
    if (c == 1) p.top_k = 50;
    if (c == 2) p.top_p = 0.9f;
    if (c == 3) p.min_p = 0.05f;
    if (c == 4) p.typical_p = 0.7f;
    if (c == 5) p.top_k = 500, p.top_p = 0.95f, p.min_p = 0.01f;
    if (c == 6) p.banned_tokens = banned, p.n_banned_tokens = 3;
    test_dist *d = malloc(sizeof *d);
    dist_of(&p, logits, V, NULL, 0, d);
    double sum = 0.0;
    for (int32_t i = 0; i < d->n; i++)
      sum += d->probs[i];
    assert_true(fabs(sum - 1.0) < 1e-6);
    if (c == 6) assert_int_equal(d->n, V - 3);
    free(d);
  }
}

static int32_t argmax(const float *x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

static void the_top_token_survives_p_to_zero(void **state) {
  (void)state;
  enum { V = 500 };
  float logits[V];
  for (uint64_t seed = 1; seed <= 10; seed++) {
    random_logits(seed, logits, V, 3.0f);
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.top_p = 1e-9f;
    test_dist d;
    dist_of(&p, logits, V, NULL, 0, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.ids[0], argmax(logits, V));
  }
}

static void temperature_to_zero_is_greedy(void **state) {
  (void)state;
  enum { V = 500 };
  float logits[V];
  nc_sample_workspace *ws = make_ws(V);
  for (uint64_t seed = 1; seed <= 10; seed++) {
    random_logits(seed, logits, V, 3.0f);
    nucleus_sampling_params p = nucleus_sampling_default_params();
    /* 1e-6, and a denormal whose inverse overflows to inf */
    p.temperature = seed % 2 ? 1e-6f : 1e-40f;
    p.typical_p = seed % 3 ? 1.0f : 0.5f;
    for (uint64_t s_seed = 0; s_seed < 20; s_seed++) {
      nc_sampler *s = make_sampler(&p, V, s_seed);
      assert_int_equal(sample_one(ws, s, logits).token, argmax(logits, V));
      nc_sampler_free(s);
    }
  }
  nc_sample_workspace_free(ws);
}

/* A fixed synthetic model: the next token's logits from the previous. */
enum { MV = 32 };
static void model_logits(int32_t prev, float *out) {
  for (int32_t j = 0; j < MV; j++)
    out[j] = (float)(3.0 * sin(prev * 1.7 + j * 0.9) + 0.1 * j);
}

static int generate(const nucleus_sampling_params *p, uint64_t seed,
                    nc_sample_workspace *ws, int32_t *out, int n) {
  nc_sampler *s = make_sampler(p, MV, seed);
  int32_t prev = 0;
  float logits[MV];
  for (int i = 0; i < n; i++) {
    model_logits(prev, logits);
    nc_sample_result r = sample_one(ws, s, logits);
    nc_sampler_accept(s, r.token);
    out[i] = prev = r.token;
  }
  nc_sampler_free(s);
  return n;
}

static int distinct_completions(float temperature, nc_sample_workspace *ws) {
  int32_t seqs[40][8];
  int distinct = 0;
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = temperature;
  for (uint64_t seed = 0; seed < 40; seed++) {
    generate(&p, seed * 7919 + 1, ws, seqs[distinct], 8);
    bool fresh = true;
    for (int j = 0; j < distinct && fresh; j++)
      fresh = memcmp(seqs[j], seqs[distinct], sizeof seqs[j]) != 0;
    distinct += fresh;
  }
  return distinct;
}

static void distinct_completions_grow_with_temperature(void **state) {
  (void)state;
  nc_sample_workspace *ws = make_ws(MV);
  const float ts[] = {0.0f, 0.05f, 0.3f, 1.0f, 3.0f};
  int counts[5];
  for (int i = 0; i < 5; i++)
    counts[i] = distinct_completions(ts[i], ws);
  printf("distinct 8-token completions of 40 seeds at T = 0, .05, .3, 1, 3:"
         " %d %d %d %d %d\n",
         counts[0], counts[1], counts[2], counts[3], counts[4]);
  assert_int_equal(counts[0], 1);
  for (int i = 1; i < 5; i++)
    assert_true(counts[i] >= counts[i - 1]);
  assert_true(counts[4] > counts[1]);
  assert_true(counts[4] >= 35);
  nc_sample_workspace_free(ws);
}

static void same_seed_reproduces(void **state) {
  (void)state;
  nc_sample_workspace *ws = make_ws(MV);
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 1.2f, p.top_p = 0.95f, p.repetition_penalty = 1.1f;
  int32_t a[64], b[64], c[64];
  generate(&p, 1234, ws, a, 64);
  generate(&p, 1234, ws, b, 64);
  generate(&p, 1235, ws, c, 64);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  nc_sample_workspace_free(ws);
}

static void repetition_penalty_lowers_seen_tokens(void **state) {
  (void)state;
  enum { V = 8 };
  const float logits[V] = {2.0f, -1.5f, 0.7f, -0.2f, 1.1f, -3.0f, 0.3f, 4.0f};
  nucleus_sampling_params base = nucleus_sampling_default_params();
  test_dist before;
  dist_of(&base, logits, V, NULL, 0, &before);
  const float rs[] = {1.1f, 1.5f, 3.0f};
  for (int32_t t = 0; t < V; t++)
    for (int ri = 0; ri < 3; ri++) {
      nucleus_sampling_params p = base;
      p.repetition_penalty = rs[ri];
      test_dist after;
      dist_of(&p, logits, V, &t, 1, &after);
      if (!(dist_prob(&after, t) < dist_prob(&before, t)))
        fail_msg("token %d (logit %g) r %g: %g -> %g", t, (double)logits[t],
                 (double)rs[ri], dist_prob(&before, t), dist_prob(&after, t));
      /* and the unseen tokens gain */
      for (int32_t u = 0; u < V; u++)
        if (u != t) assert_true(dist_prob(&after, u) > dist_prob(&before, u));
    }
}

static void min_p_bounds_the_set_at_high_temperature(void **state) {
  (void)state;
  enum { V = 1000 };
  static float logits[V];
  for (int32_t i = 0; i < V; i++)
    logits[i] = i % 200 == 0 ? 10.0f : 0.0f;
  for (float t = 1.0f; t <= 4.0f; t += 1.0f) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = t, p.min_p = 0.1f;
    test_dist *d = malloc(sizeof *d);
    dist_of(&p, logits, V, NULL, 0, d);
    /* kept: p >= 0.1 p_max <=> logit >= 10 + T ln 0.1 > 0 for T <= 4 */
    assert_int_equal(d->n, 5);
    p.min_p = 0.0f, p.top_p = 0.9f; /* top-p lets the tail in as T grows */
    dist_of(&p, logits, V, NULL, 0, d);
    if (t >= 3.0f) assert_true(d->n > 100);
    free(d);
  }
  /* in general: every kept token has p >= min_p * p_max */
  random_logits(3, logits, V, 5.0f);
  double ref[V];
  for (float t = 0.5f; t <= 8.0f; t *= 2.0f) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = t, p.min_p = 0.2f;
    test_dist *d = malloc(sizeof *d);
    dist_of(&p, logits, V, NULL, 0, d);
    softmax(logits, V, t, ref);
    double pmax = ref[argmax(logits, V)];
    int expect = 0;
    for (int32_t i = 0; i < V; i++)
      expect += ref[i] >= 0.2 * pmax * (1 + 1e-6);
    assert_true(d->n >= expect && d->n <= expect + 1);
    for (int32_t i = 0; i < d->n; i++)
      assert_true(ref[d->ids[i]] >= 0.2 * pmax * (1 - 1e-5));
    free(d);
  }
}

static void batch_invariance(void **state) {
  (void)state;
  enum { V = 1500, R = 64 };
  float *logits = malloc(sizeof(float) * V * R);
  nc_sampler *s[R];
  nc_sample_row rows[R];
  int32_t suppress[2] = {5, 6};
  for (int r = 0; r < R; r++) {
    random_logits(100 + r, logits + r * V, V, 1.0f + (float)(r % 5));
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = (r % 7 == 0) ? 0.0f : 0.3f + 0.1f * (r % 13);
    p.top_k = (r % 3 == 0) ? 0 : 5 + r;
    p.top_p = (r % 4 == 1) ? 0.8f : 1.0f;
    p.min_p = (r % 5 == 2) ? 0.05f : 0.0f;
    p.typical_p = (r % 11 == 3) ? 0.9f : 1.0f;
    p.repetition_penalty = (r % 2) ? 1.2f : 1.0f;
    p.frequency_penalty = (r % 6 == 1) ? 0.4f : 0.0f;
    p.logprobs = r % 2 == 0;
    p.top_logprobs = r % 21;
    p.processed_logprobs = r % 4 == 0;
    s[r] = make_sampler(&p, V, 1000 + r);
    int32_t prompt[3] = {r, r + 1, 2 * r};
    nc_sampler_accept_prompt(s[r], prompt, 3);
    for (int k = 0; k < r % 9; k++)
      nc_sampler_accept(s[r], (r * 31 + k) % V);
    rows[r] = (nc_sample_row){.sampler = s[r],
                              .logits = logits + r * V,
                              .suppress = suppress,
                              .n_suppress = r % 3};
  }
  nc_sample_workspace *ws = make_ws(V);
  nc_sample_result *all = calloc(R, sizeof *all);
  assert_int_equal(nc_sample_batch(ws, rows, R, all, NULL), NC_OK);
  /* alone, in reverse order, and in a workspace that saw other rows */
  nc_sample_workspace *ws2 = make_ws(4 * V);
  for (int r = R - 1; r >= 0; r--) {
    nc_sample_result alone;
    assert_int_equal(nc_sample_batch(ws2, &rows[r], 1, &alone, NULL), NC_OK);
    assert_memory_equal(&alone, &all[r], sizeof alone);
  }
  /* in a batch of 3 with different neighbours */
  for (int r = 1; r + 1 < R; r += 9) {
    nc_sample_row trio[3] = {rows[r + 1], rows[r], rows[r - 1]};
    nc_sample_result out[3];
    assert_int_equal(nc_sample_batch(ws2, trio, 3, out, NULL), NC_OK);
    assert_memory_equal(&out[1], &all[r], sizeof out[1]);
  }
  for (int r = 0; r < R; r++)
    nc_sampler_free(s[r]);
  free(all);
  free(logits);
  nc_sample_workspace_free(ws);
  nc_sample_workspace_free(ws2);
}

/* Regularised upper incomplete gamma Q(a, x) (Numerical-Recipes-style
 * series / continued fraction), for the chi-square tail. */
static double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  double lg = lgamma(a);
  if (x < a + 1.0) {
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 1000; n++) {
      term *= x / (a + n);
      sum += term;
      if (fabs(term) < fabs(sum) * 1e-15) break;
    }
    return 1.0 - sum * exp(-x + a * log(x) - lg);
  }
  double b = x + 1.0 - a, c = 1e300, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; i++) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    double delta = d * c;
    h *= delta;
    if (fabs(delta - 1.0) < 1e-15) break;
  }
  return exp(-x + a * log(x) - lg) * h;
}

static double chi2_pvalue(double chi2, int df) {
  return gamma_q(df / 2.0, chi2 / 2.0);
}

static void chi_square_cdf_is_right(void **state) {
  (void)state;
  /* textbook critical values */
  assert_true(fabs(chi2_pvalue(3.841459, 1) - 0.05) < 1e-5);
  assert_true(fabs(chi2_pvalue(18.307038, 10) - 0.05) < 1e-5);
  assert_true(fabs(chi2_pvalue(6.634897, 1) - 0.01) < 1e-5);
  assert_true(fabs(chi2_pvalue(2.0, 2) - exp(-1.0)) < 1e-9); /* df 2: e^-x/2 */
  assert_true(fabs(chi2_pvalue(100.0, 100) - 0.48119) < 1e-4);
}

/* Draws n tokens at successive steps and returns the chi-square p-value of
 * the counts against the final distribution. */
static double draw_pvalue(const nucleus_sampling_params *p, const float *logits,
                          int32_t V, int n) {
  test_dist *d = malloc(sizeof *d);
  dist_of(p, logits, V, NULL, 0, d);
  nc_sampler *s = make_sampler(p, V, 2024);
  nc_sample_workspace *ws = make_ws(V);
  int *counts = calloc((size_t)V, sizeof *counts);
  for (int i = 0; i < n; i++) {
    nc_sample_result r = sample_one(ws, s, logits);
    counts[r.token]++;
    nc_sampler_accept(s, r.token);
  }
  double chi2 = 0.0;
  int in_set = 0;
  for (int32_t i = 0; i < d->n; i++) {
    double e = n * d->probs[i];
    double o = counts[d->ids[i]];
    chi2 += (o - e) * (o - e) / e;
    in_set += counts[d->ids[i]];
  }
  assert_int_equal(in_set, n); /* nothing drawn outside the kept set */
  double pv = chi2_pvalue(chi2, d->n - 1);
  printf("chi-square %.2f, df %d, p = %.4f\n", chi2, d->n - 1, pv);
  free(counts);
  free(d);
  nc_sample_workspace_free(ws);
  nc_sampler_free(s);
  return pv;
}

static void draws_follow_the_final_distribution(void **state) {
  (void)state;
  float logits[12] = {1.0f, 0.5f,  2.0f, -1.0f, 0.0f,  1.5f,
                      0.2f, -0.3f, 0.9f, 1.2f,  -2.0f, 0.1f};
  nucleus_sampling_params p = nucleus_sampling_default_params();
  p.temperature = 0.8f, p.top_k = 10, p.top_p = 0.95f;
  assert_true(draw_pvalue(&p, logits, 12, 100000) > 0.001);
  /* the untruncated path over a vocabulary spanning several blocks */
  enum { V = 3000 };
  static float big[V];
  for (int32_t i = 0; i < V; i++)
    big[i] = -200.0f; /* weight 0 */
  for (int32_t k = 0; k < 12; k++)
    big[k * 249 + 3] = logits[k];
  p = nucleus_sampling_default_params();
  p.temperature = 1.3f;
  assert_true(draw_pvalue(&p, big, V, 100000) > 0.001);
}

static void vector_exp_matches_the_scalar_one(void **state) {
  (void)state;
  /* whichever row pass runs (AVX2, SSE2, C), each weight is bit-identical
   * to the scalar function and the sum is within rounding of it */
  enum { V = 1000 + 13 };
  float x[V], w[V];
  random_logits(11, x, V, 20.0f);
  x[5] = -INFINITY, x[6] = -1000.0f;
  bool bad;
  float m = nc_row_max(x, V, &bad);
  assert_false(bad);
  double sum = nc_row_exp(x, V, m, 0.7f, w), ref = 0.0;
  for (int i = 0; i < V; i++) {
    float e = nc_expf_neg((x[i] - m) * 0.7f);
    assert_true(memcmp(&e, &w[i], sizeof e) == 0);
    double want = exp((double)((x[i] - m) * 0.7f)); /* same argument */
    assert_true(fabs(e - want) <= 2.5e-7 * want + 1.3e-38);
    ref += e;
  }
  assert_true(w[5] == 0.0f && w[6] == 0.0f);
  assert_true(fabs(sum - ref) < 1e-6 * ref);
  assert_true(nc_row_exp(x, V, m, 0.7f, NULL) == sum);
  /* every SIMD level gives the very same bits */
  for (int simd = NC_SIMD_PORTABLE; simd <= NC_SIMD_AVX512; simd++) {
    float w2[V], copy[V];
    assert_true(nc_row_exp_isa(x, V, m, 0.7f, w2, simd) == sum);
    assert_memory_equal(w, w2, sizeof w);
    assert_true(nc_row_copy_max_isa(x, copy, V, &bad, simd) == m);
    assert_memory_equal(copy, x, sizeof x);
    float keep = x[V - 20];
    x[V - 20] = NAN; /* in the vector part */
    nc_row_copy_max_isa(x, copy, V, &bad, simd);
    assert_true(bad);
    x[V - 20] = keep;
  }
  x[700] = NAN;
  nc_row_max(x, V, &bad);
  assert_true(bad);
  x[700] = INFINITY;
  nc_row_max(x, V, &bad);
  assert_true(bad);
  x[700] = 0.0f, x[V - 1] = NAN; /* in the tail */
  nc_row_max(x, V, &bad);
  assert_true(bad);
}

/* The shortcuts (raw max and sum reused when nothing was edited) give the
 * same bits as the long way (forced here by a zero bias). */
static void logprob_shortcuts_change_nothing(void **state) {
  (void)state;
  enum { V = 3000 };
  static float logits[V];
  random_logits(31, logits, V, 4.0f);
  nucleus_logit_bias zero[1] = {{17, 0.0f}};
  for (int c = 0; c < 4; c++) {
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.logprobs = true, p.top_logprobs = 7;
    p.temperature = c == 1 ? 0.0f : c == 2 ? 0.7f : 1.0f;
    p.processed_logprobs = c == 3;
    if (c == 3) p.top_k = 30;
    nc_sampler *a = make_sampler(&p, V, 5);
    p.logit_bias = zero, p.n_logit_bias = 1;
    nc_sampler *b = make_sampler(&p, V, 5);
    nc_sample_workspace *ws = make_ws(V);
    for (int step = 0; step < 5; step++) {
      nc_sample_result ra = sample_one(ws, a, logits);
      nc_sample_result rb = sample_one(ws, b, logits);
      assert_memory_equal(&ra, &rb, sizeof ra);
      nc_sampler_accept(a, ra.token);
      nc_sampler_accept(b, rb.token);
    }
    nc_sample_workspace_free(ws);
    nc_sampler_free(a);
    nc_sampler_free(b);
  }
}

/* Random valid settings on random rows (with -inf, ties, tiny vocabs):
 * never a crash, a token of the kept set, finite logprobs in [-9999, 0],
 * probabilities that sum to 1. */
static void random_settings_keep_every_promise(void **state) {
  (void)state;
  nc_sample_workspace *ws = make_ws(300);
  test_dist *d = malloc(sizeof *d);
  for (uint64_t it = 0; it < 3000; it++) {
    double u[12];
    for (int k = 0; k < 12; k++)
      u[k] = nc_rng_uniform(77, it, (uint64_t)k, 0);
    int32_t V = 1 + (int32_t)(u[0] * 299);
    float logits[300];
    random_logits(it, logits, V, (float)(u[1] * 20));
    for (int32_t i = 0; i < V; i++) {
      if ((i * 7 + (int32_t)it) % 5 == 0 && u[2] < 0.3) logits[i] = -INFINITY;
      if (u[3] < 0.2) logits[i] = (float)(int)logits[i]; /* many ties */
    }
    logits[(int32_t)(u[4] * V)] = 1.0f; /* at least one finite */
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = u[5] < 0.2 ? 0.0f : (float)(u[5] * 3);
    p.top_k = u[6] < 0.5 ? 0 : 1 + (int32_t)(u[6] * 2 * V);
    p.top_p = u[7] < 0.5 ? 1.0f : (float)(0.01 + u[7] * 0.99);
    p.min_p = u[8] < 0.5 ? 0.0f : (float)(u[8] - 0.5) * 2;
    p.typical_p = u[9] < 0.7 ? 1.0f : (float)(0.05 + u[9] * 0.95);
    p.repetition_penalty = u[10] < 0.5 ? 1.0f : (float)(0.5 + u[10] * 2);
    p.presence_penalty = (float)(u[11] * 4 - 2);
    p.frequency_penalty = (float)(u[1] * 4 - 2);
    p.logprobs = true, p.top_logprobs = (int32_t)(u[2] * 21);
    p.processed_logprobs = u[3] < 0.5;
    nc_sampler *s = make_sampler(&p, V, it);
    for (int k = 0; k < 5; k++)
      nc_sampler_accept(s, (int32_t)((it + k) % V));
    nc_sample_row row = {.sampler = s, .logits = logits};
    nc_sample_result r;
    nc_code rc = nc_sample_batch(ws, &row, 1, &r, NULL);
    assert_int_equal(rc, NC_OK);
    assert_int_equal(
        nc_sample_distribution(ws, &row, d->ids, d->probs, &d->n, NULL), NC_OK);
    double sum = 0.0;
    for (int32_t i = 0; i < d->n; i++)
      sum += d->probs[i];
    assert_true(fabs(sum - 1.0) < 1e-6);
    if (!(dist_prob(d, r.token) > 0.0))
      fail_msg("iteration %d: token %d drawn outside the kept set", (int)it,
               r.token);
    assert_true(r.logprob <= 0.0f && r.logprob >= NC_LOGPROB_FLOOR);
    assert_true(r.n_top <= p.top_logprobs && r.n_top <= V);
    for (int32_t k = 0; k < r.n_top; k++) {
      assert_true(r.top[k].logprob <= 0.0f);
      assert_true(r.top[k].logprob >= NC_LOGPROB_FLOOR);
      assert_true(r.top[k].token >= 0 && r.top[k].token < V);
      if (k > 0) assert_true(r.top[k].logprob <= r.top[k - 1].logprob);
    }
    nc_sampler_free(s);
  }
  free(d);
  nc_sample_workspace_free(ws);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(top_p_set_is_minimal_and_normalised),
      cmocka_unit_test(top_p_then_min_p_matches_a_reference),
      cmocka_unit_test(kept_probabilities_sum_to_one),
      cmocka_unit_test(the_top_token_survives_p_to_zero),
      cmocka_unit_test(temperature_to_zero_is_greedy),
      cmocka_unit_test(distinct_completions_grow_with_temperature),
      cmocka_unit_test(same_seed_reproduces),
      cmocka_unit_test(repetition_penalty_lowers_seen_tokens),
      cmocka_unit_test(min_p_bounds_the_set_at_high_temperature),
      cmocka_unit_test(batch_invariance),
      cmocka_unit_test(chi_square_cdf_is_right),
      cmocka_unit_test(draws_follow_the_final_distribution),
      cmocka_unit_test(vector_exp_matches_the_scalar_one),
      cmocka_unit_test(logprob_shortcuts_change_nothing),
      cmocka_unit_test(random_settings_keep_every_promise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
