/* The draft length's choice (src/sampling/spec_policy.c): expected tokens
 * per verifying step, the length with the most tokens per cost (none
 * unless it beats a plain step by the margin), the acceptance estimate
 * following synthetic acceptance sequences (down to no drafts and back up
 * through free looks), and the row cost fitted from synthetic step times
 * (interpolated between timed row counts, a line past them; outliers
 * bounded; compute-bound: short drafts, memory-bound: long ones). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampling/spec_policy.h"

/* The best length at a fixed row cost beta. */
static int32_t best_at(double a, double beta, int32_t k_max) {
  double cost[33];
  nc_spec_linear_costs(beta, k_max, cost);
  return nc_spec_best_length(a, cost, k_max);
}

static void expected_tokens(void **state) {
  (void)state;
  assert_true(fabs(nc_spec_expected_tokens(0.5, 0) - 1) < 1e-12);
  assert_true(fabs(nc_spec_expected_tokens(0, 8) - 1) < 1e-12);
  assert_true(fabs(nc_spec_expected_tokens(1, 8) - 9) < 1e-12);
  /* 1 + 0.5 + 0.25 */
  assert_true(fabs(nc_spec_expected_tokens(0.5, 2) - 1.75) < 1e-12);
  /* grows with k, below 1 / (1 - a) */
  double prev = 1;
  for (int32_t k = 1; k <= 32; k++) {
    double v = nc_spec_expected_tokens(0.8, k);
    assert_true(v > prev && v < 5);
    prev = v;
  }
}

static void best_length(void **state) {
  (void)state;
  /* compute-bound (a row costs a quarter step): at 78% kept, 3 drafts give
   * 1.636 tokens per cost, 2 give 1.592, 4 give 1.617 */
  assert_int_equal(best_at(0.78, 0.25, 8), 3);
  assert_int_equal(best_at(0.78, 0.25, 2), 2);
  assert_int_equal(best_at(0.5, 0.25, 8), 1);
  /* 1.2 / 1.25 < 1: drafting would be slower */
  assert_int_equal(best_at(0.2, 0.25, 8), 0);
  /* the margin: 1.04 does not pay, 1.056 does */
  assert_int_equal(best_at(0.30, 0.25, 8), 0);
  assert_int_equal(best_at(0.32, 0.25, 8), 1);
  assert_false(nc_spec_pays(0.30, 1.25, 1));
  assert_true(nc_spec_pays(0.32, 1.25, 1));
  assert_false(nc_spec_pays(0.99, 1.0, 0));
  /* memory-bound (a row costs 2%): longer drafts at the same rate */
  assert_int_equal(best_at(0.5, 0.02, 8), 4);
  assert_int_equal(best_at(0.95, 0.01, 32), 32);
  assert_int_equal(best_at(1.0, 0.0, 7), 7);
  assert_int_equal(best_at(0.9, 0.1, 0), 0);
}

/* Steps until the best length (beta 0.25, at most 8) reaches want. */
static int32_t steps_until(nc_spec_accept *s, int32_t kept, int32_t drafted,
                           int32_t want, int32_t limit) {
  for (int32_t i = 1; i <= limit; i++) {
    nc_spec_accept_observe(s, kept, drafted);
    int32_t k = best_at(nc_spec_accept_rate(s), 0.25, 8);
    if (want == 0 ? k == 0 : k >= want) return i;
  }
  return -1;
}

static void acceptance_follows(void **state) {
  (void)state;
  nc_spec_accept s;
  nc_spec_accept_init(&s);
  assert_true(fabs(nc_spec_accept_rate(&s) - NC_SPEC_PRIOR_RATE) < 1e-12);
  /* the prior drafts at once */
  assert_true(best_at(nc_spec_accept_rate(&s), 0.25, 8) > 0);
  /* every draft kept: the longest drafts soon */
  int32_t up = steps_until(&s, 8, 8, 8, 20);
  assert_true(up > 0 && up <= 4);
  /* then nothing kept (a step of 8 drafts ends at the first): no drafts
   * within a few steps */
  int32_t down = steps_until(&s, 0, 8, 0, 20);
  assert_true(down > 0 && down <= 6);
  /* plain steps' free looks that hit bring drafting back */
  int32_t back = steps_until(&s, 1, 1, 1, 20);
  assert_true(back > 0 && back <= 6);
  /* invalid observations change nothing */
  double a = nc_spec_accept_rate(&s);
  nc_spec_accept_observe(&s, 3, 2);
  nc_spec_accept_observe(&s, 0, 0);
  nc_spec_accept_observe(&s, -1, 2);
  assert_true(nc_spec_accept_rate(&s) == a);
}

static void acceptance_converges(void **state) {
  (void)state;
  /* drafts kept independently with probability 0.6 (a fixed LCG): the
   * estimate, averaged over the steps after a warm-up, is near 0.6 */
  const double rates[] = {0.3, 0.6, 0.9};
  for (size_t r = 0; r < 3; r++) {
    nc_spec_accept s;
    nc_spec_accept_init(&s);
    uint64_t x = 12345;
    double sum = 0;
    int32_t n = 0;
    for (int32_t step = 0; step < 4000; step++) {
      int32_t kept = 0;
      for (; kept < 4; kept++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        if ((double)(x >> 11) / 9007199254740992.0 >= rates[r]) break;
      }
      nc_spec_accept_observe(&s, kept, 4);
      if (step >= 100) {
        sum += nc_spec_accept_rate(&s);
        n++;
      }
    }
    assert_true(fabs(sum / n - rates[r]) < 0.05);
  }
}

/* A part's estimate (a match class) follows the whole until it has a
 * record of its own, then its record: two classes drawn at 0.95 and 0.1
 * in turn end near their own rates, where one shared estimate sits
 * between them. */
static void parts_follow_their_record(void **state) {
  (void)state;
  nc_spec_accept whole, hi, lo;
  nc_spec_accept_init(&whole);
  nc_spec_accept_clear(&hi);
  nc_spec_accept_clear(&lo);
  /* unseen: the whole's rate (the prior) */
  assert_true(fabs(nc_spec_accept_rate_in(&hi, &whole) - 0.8) < 1e-12);
  nc_spec_accept_observe(&whole, 4, 4);
  nc_spec_accept_observe(&hi, 4, 4);
  /* one kept run: above the whole's rate, and an unseen part follows the
   * whole up */
  assert_true(nc_spec_accept_rate_in(&hi, &whole) >
              nc_spec_accept_rate(&whole));
  assert_true(nc_spec_accept_rate_in(&lo, &whole) > 0.8);
  uint64_t x = 777;
  for (int32_t step = 0; step < 400; step++) {
    nc_spec_accept *part = step % 2 ? &lo : &hi;
    const double p = step % 2 ? 0.1 : 0.95;
    int32_t kept = 0;
    for (; kept < 4; kept++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      if ((double)(x >> 11) / 9007199254740992.0 >= p) break;
    }
    nc_spec_accept_observe(part, kept, 4);
    nc_spec_accept_observe(&whole, kept, 4);
  }
  const double a_hi = nc_spec_accept_rate_in(&hi, &whole);
  const double a_lo = nc_spec_accept_rate_in(&lo, &whole);
  assert_true(a_hi > 0.75);
  assert_true(a_lo < 0.35);
  assert_true(a_lo < nc_spec_accept_rate(&whole));
  assert_true(a_hi > nc_spec_accept_rate(&whole));
}

/* cost[k] of a step feeding `base` rows, from c. */
static double cost_of(const nc_spec_cost *c, int32_t base, int32_t k) {
  double cost[33];
  nc_spec_measured_costs(c, base, 32, cost);
  return cost[k];
}

static void cost_fit(void **state) {
  (void)state;
  nc_spec_cost c = {0};
  /* one row count only: the prior */
  for (int32_t i = 0; i < 10; i++)
    nc_spec_cost_observe(&c, 1, 10.0);
  assert_true(nc_spec_cost_ms(&c, 5) == 0);
  assert_true(fabs(cost_of(&c, 1, 3) - (1 + 3 * NC_SPEC_PRIOR_BETA)) < 1e-12);
  /* t(r) = 10 + 1.75 (r - 1) ms timed at 1 and 5 rows: 2..4 interpolated,
   * past 5 on the line */
  for (int32_t i = 0; i < 10; i++)
    nc_spec_cost_observe(&c, 5, 17.0);
  assert_true(fabs(nc_spec_cost_ms(&c, 3) - 13.5) < 1e-9);
  assert_true(fabs(nc_spec_cost_ms(&c, 9) - 24.0) < 1e-9);
  assert_true(fabs(cost_of(&c, 1, 4) - 1.7) < 1e-9);
  assert_true(fabs(cost_of(&c, 1, 2) - 1.35) < 1e-9);
  /* a step of 8 decode rows: 2 drafts against the cost per row of those,
   * 1 + 3.5 / (22.25 / 8) */
  assert_true(fabs(cost_of(&c, 8, 2) - (1 + 3.5 / (22.25 / 8))) < 1e-9);
  /* a preempted step (100x) moves its estimate at most by the bound */
  nc_spec_cost_observe(&c, 5, 1700.0);
  assert_true(c.ms[5] <= 17.0 * 1.2 + 1e-9);
  assert_true(cost_of(&c, 1, 4) < 2.1);
  /* ignored: no rows, too many, no time */
  nc_spec_cost_observe(&c, 0, 5.0);
  nc_spec_cost_observe(&c, NC_SPEC_COST_ROWS + 1, 5.0);
  nc_spec_cost_observe(&c, 3, 0.0);
  nc_spec_cost_observe(&c, 3, NAN);
  assert_int_equal(c.n[0] + c.n[3], 0);
  /* times falling with rows: never below the fewer rows' cost */
  nc_spec_cost d = {0};
  nc_spec_cost_observe(&d, 1, 10.0);
  nc_spec_cost_observe(&d, 4, 9.0);
  assert_true(cost_of(&d, 1, 3) == 1 && cost_of(&d, 1, 8) == 1);
  /* absurdly dear rows: capped */
  nc_spec_cost f = {0};
  nc_spec_cost_observe(&f, 1, 1.0);
  nc_spec_cost_observe(&f, 2, 100.0);
  assert_true(cost_of(&f, 1, 1) == 1 + NC_SPEC_MAX_BETA);
}

/* A kernel that changes at 5 rows (the measured shape of the default
 * model at one thread: 4 rows 2.3 steps, 5 rows 3.75): the policy drafts 3
 * even at 95% kept, where a line through the times would say more; with
 * only counts past the change timed, it drafts nothing until one row is
 * timed. */
static void policy_follows_the_curve(void **state) {
  (void)state;
  const double ms[] = {0, 4.8, 7.0, 9.1, 10.9, 18.0, 19.6, 21.2, 24.0, 27.0};
  nc_spec_cost c = {0};
  for (int32_t rep = 0; rep < 4; rep++)
    for (int32_t r = 1; r <= 9; r++)
      nc_spec_cost_observe(&c, r, ms[r]);
  double cost[33];
  nc_spec_measured_costs(&c, 1, 8, cost);
  assert_int_equal(nc_spec_best_length(0.95, cost, 8), 3);
  assert_int_equal(nc_spec_best_length(0.6, cost, 8), 1);
  assert_int_equal(nc_spec_best_length(0.35, cost, 8), 0);
  /* timed at 1, 2 and 9 rows only: 3..8 look as cheap as the slope from 1
   * to 2 says (not the line to 9), so longer drafts get tried, and each
   * try times its row count: within a few steps the policy settles on 3 */
  nc_spec_cost t = {0};
  const int32_t timed[] = {1, 2, 9};
  for (int32_t i = 0; i < 3; i++)
    nc_spec_cost_observe(&t, timed[i], ms[timed[i]]);
  assert_true(fabs(nc_spec_cost_ms(&t, 4) - 11.4) < 1e-9);
  int32_t k = 0, tries = 0;
  for (; tries < 8; tries++) {
    nc_spec_measured_costs(&t, 1, 8, cost);
    int32_t next = nc_spec_best_length(0.95, cost, 8);
    if (next == k) break;
    k = next;
    nc_spec_cost_observe(&t, k + 1, ms[k + 1]);
  }
  assert_int_equal(k, 3);
  assert_true(tries <= 4);
  /* timed at 5 and 9 rows only (the first steps drafted 4, then 8): a
   * row count below them costs in proportion (one row 3.6 ms, not the
   * 9 ms a line through 18 and 27 ms gives, which made 8 drafts look
   * like 3 steps, 1.44 tokens per cost at 80% kept, where they cost 5.6
   * and give 0.77): nothing pays, and the plain step times one row; then
   * the curve as above */
  nc_spec_cost g = {0};
  nc_spec_cost_observe(&g, 5, ms[5]);
  nc_spec_cost_observe(&g, 9, ms[9]);
  assert_true(fabs(nc_spec_cost_ms(&g, 1) - 3.6) < 1e-9);
  assert_true(fabs(nc_spec_cost_ms(&g, 2) - 7.2) < 1e-9);
  nc_spec_measured_costs(&g, 1, 8, cost);
  assert_int_equal(nc_spec_best_length(0.8, cost, 8), 0);
  nc_spec_cost_observe(&g, 1, ms[1]);
  nc_spec_measured_costs(&g, 1, 8, cost);
  assert_true(nc_spec_best_length(0.95, cost, 8) > 0);
  assert_true(fabs(cost[8] - (1 + (27.0 - 4.8) / 4.8)) < 1e-9);
  /* memory-bound: every row 2% of a step: the longest */
  nc_spec_cost m = {0};
  for (int32_t rep = 0; rep < 4; rep++)
    for (int32_t r = 1; r <= 9; r++)
      nc_spec_cost_observe(&m, r, 10 + 0.2 * (r - 1));
  nc_spec_measured_costs(&m, 1, 8, cost);
  assert_int_equal(nc_spec_best_length(0.95, cost, 8), 8);
}

/* A drafter that runs a model pays its own time per draft: a draft model
 * half as dear as the target's step (the 135M default model at F16 drafted
 * by its Q4_0) makes drafting lose where the rows alone would pay, and the
 * policy drafts nothing then; a cheap one (a twentieth of a step) changes
 * little. */
static void drafter_costs(void **state) {
  (void)state;
  nc_spec_drafter_cost d = {0};
  nc_spec_drafter_observe(&d, 12.0, 4); /* 3 ms a draft */
  assert_true(fabs(d.ms - 3.0) < 1e-12);
  nc_spec_drafter_observe(&d, 8.0, 2); /* 4: moves by COST_WEIGHT */
  assert_true(fabs(d.ms - 3.2) < 1e-12);
  /* ignored: nothing drafted, no time */
  nc_spec_drafter_observe(&d, 5.0, 0);
  nc_spec_drafter_observe(&d, NAN, 3);
  nc_spec_drafter_observe(&d, -1.0, 3);
  assert_int_equal(d.n, 2);
  /* settled: a preempted batch (100x) moves it by the bound only */
  nc_spec_drafter_observe(&d, 3.2, 1);
  nc_spec_drafter_observe(&d, 320.0, 1);
  assert_true(d.ms < 3.2 * 1.2 + 1e-9);

  /* target: 10 ms a step, rows nearly free (memory-bound) */
  nc_spec_cost c = {0};
  for (int32_t rep = 0; rep < 4; rep++)
    for (int32_t r = 1; r <= 9; r++)
      nc_spec_cost_observe(&c, r, 10 + 0.2 * (r - 1));
  assert_true(fabs(nc_spec_row_ms(&c, 1) - 10.0) < 1e-9);
  assert_true(fabs(nc_spec_row_ms(&c, 4) - 10.6 / 4) < 1e-9);
  double cost[9], with[9];
  nc_spec_measured_costs(&c, 1, 8, cost);
  assert_true(nc_spec_best_length(0.5, cost, 8) > 0);
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(5.0 / nc_spec_row_ms(&c, 1), 8, with);
  for (int32_t k = 1; k <= 8; k++)
    assert_true(fabs(with[k] - cost[k] - 0.5 * k) < 1e-9);
  assert_true(with[0] == 1);
  assert_int_equal(nc_spec_best_length(0.5, with, 8), 0);
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(0.5 / nc_spec_row_ms(&c, 1), 8, with);
  assert_true(nc_spec_best_length(0.5, with, 8) > 0);
  /* nothing timed: no row cost, nothing added */
  nc_spec_cost none = {0};
  assert_true(nc_spec_row_ms(&none, 1) == 0);
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(0, 8, with);
  nc_spec_add_drafter_costs(NAN, 8, with);
  assert_memory_equal(with, cost, sizeof cost);
}

/* The draft model's cost per draft is its forward call's time per row at
 * the step's row count (spec_draft.c times its calls by row count, as the
 * target's): its prompt's catch-up (40 rows) and a try's (8 rows after 8
 * plain steps) are timed at their own counts and leave the one-row time
 * alone, so the pair at T = 0 (95% kept, a draft at 0.4 of a target step)
 * drafts long; charged to its one draft, as stop 56's accounting did,
 * the same catch-up would make drafting never pay. */
static void draft_model_costs(void **state) {
  (void)state;
  nc_spec_cost target = {0}, draft = {0};
  for (int32_t rep = 0; rep < 4; rep++)
    for (int32_t r = 1; r <= 9; r++)
      nc_spec_cost_observe(&target, r, 10 + 0.2 * (r - 1));
  nc_spec_cost_observe(&draft, 40, 30.0); /* the prompt */
  for (int32_t rep = 0; rep < 6; rep++) {
    nc_spec_cost_observe(&draft, 2, 4.3); /* catch-up and first draft */
    nc_spec_cost_observe(&draft, 1, 4.0); /* the drafts after it */
  }
  nc_spec_cost_observe(&draft, 8, 6.0); /* a try's catch-up */
  assert_true(fabs(nc_spec_row_ms(&draft, 1) - 4.0) < 1e-9);
  double cost[9], with[9];
  nc_spec_measured_costs(&target, 1, 8, cost);
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(
      nc_spec_row_ms(&draft, 1) / nc_spec_row_ms(&target, 1), 8, with);
  const int32_t k = nc_spec_best_length(0.95, with, 8);
  assert_true(k >= 4);
  assert_true(nc_spec_expected_tokens(0.95, k) / with[k] > 1.5);
  /* a draft charged with the prompt's catch-up: nothing pays */
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(34.0 / nc_spec_row_ms(&target, 1), 8, with);
  assert_int_equal(nc_spec_best_length(0.95, with, 8), 0);
  /* at a high temperature (30% kept) the cheap draft does not pay either */
  memcpy(with, cost, sizeof cost);
  nc_spec_add_drafter_costs(0.4, 8, with);
  assert_int_equal(nc_spec_best_length(0.3, with, 8), 0);
}

/* Tries of a drafter whose drafts are not free to look at: every 8 plain
 * steps, then twice as far apart for each try after which no length paid
 * still, at most 64 (a try after 64 plain steps costs the draft model a
 * catch-up of 64 rows: about 2% of those steps for the pair). */
static void probe_interval(void **state) {
  (void)state;
  assert_int_equal(nc_spec_probe_interval(0), NC_SPEC_PROBE_EVERY);
  assert_int_equal(nc_spec_probe_interval(1), 2 * NC_SPEC_PROBE_EVERY);
  assert_int_equal(nc_spec_probe_interval(2), 4 * NC_SPEC_PROBE_EVERY);
  assert_int_equal(nc_spec_probe_interval(3), NC_SPEC_PROBE_MAX);
  assert_int_equal(nc_spec_probe_interval(4), NC_SPEC_PROBE_MAX);
  assert_int_equal(nc_spec_probe_interval(1 << 30), NC_SPEC_PROBE_MAX);
  assert_int_equal(nc_spec_probe_interval(-1), NC_SPEC_PROBE_EVERY);
}

/* The top-probability bound: 1 before any token, then the discounted mean
 * of the tokens' top probabilities (recent ones weigh more); unknown (<= 0)
 * ones teach nothing; a long flat stretch brings it down to where no
 * draft length pays with a draft model's costs, a confident one back up. */
static void top_bound(void **state) {
  (void)state;
  nc_spec_accept t;
  nc_spec_accept_clear(&t);
  assert_float_equal(nc_spec_top_bound(&t), 1.0, 0);
  nc_spec_top_observe(&t, 0.0);
  nc_spec_top_observe(&t, -1.0);
  assert_float_equal(nc_spec_top_bound(&t), 1.0, 0);
  nc_spec_top_observe(&t, 0.5);
  assert_float_equal(nc_spec_top_bound(&t), 0.5, 1e-12);
  nc_spec_top_observe(&t, 1.0);
  /* (0.9 * 0.5 + 1) / (0.9 + 1) */
  assert_float_equal(nc_spec_top_bound(&t), 1.45 / 1.9, 1e-12);
  nc_spec_top_observe(&t, 7.0); /* counted as 1 */
  assert_true(nc_spec_top_bound(&t) <= 1.0);
  double cost[9];
  nc_spec_linear_costs(0.45, 8, cost); /* a row plus a draft's forward */
  for (int i = 0; i < 40; i++)
    nc_spec_top_observe(&t, 0.3);
  assert_float_equal(nc_spec_top_bound(&t), 0.3, 0.01);
  assert_int_equal(nc_spec_best_length(nc_spec_top_bound(&t), cost, 8), 0);
  for (int i = 0; i < 40; i++)
    nc_spec_top_observe(&t, 0.95);
  assert_float_equal(nc_spec_top_bound(&t), 0.95, 0.01);
  assert_true(nc_spec_best_length(nc_spec_top_bound(&t), cost, 8) > 0);
}

/* Drafts past the default grow with the runs kept: a loop doubles its
 * draft while every draft is kept, a run's end falls back. */
static void length_cap_grows_with_runs(void **state) {
  (void)state;
  assert_int_equal(nc_spec_length_cap(0), NC_SPEC_GROW_FROM);
  assert_int_equal(nc_spec_length_cap(3), NC_SPEC_GROW_FROM);
  assert_int_equal(nc_spec_length_cap(NC_SPEC_GROW_FROM), 16);
  int32_t k = nc_spec_length_cap(0), steps = 0;
  while (k < 64) { /* every draft kept */
    k = nc_spec_length_cap(k);
    steps++;
  }
  assert_int_equal(steps, 3); /* 8, 16, 32, 64 */
  assert_int_equal(nc_spec_length_cap(5), 10); /* a run that ended */
  assert_int_equal(nc_spec_length_cap(INT32_MAX), INT32_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(expected_tokens),
      cmocka_unit_test(best_length),
      cmocka_unit_test(acceptance_follows),
      cmocka_unit_test(acceptance_converges),
      cmocka_unit_test(parts_follow_their_record),
      cmocka_unit_test(cost_fit),
      cmocka_unit_test(policy_follows_the_curve),
      cmocka_unit_test(drafter_costs),
      cmocka_unit_test(draft_model_costs),
      cmocka_unit_test(probe_interval),
      cmocka_unit_test(top_bound),
      cmocka_unit_test(length_cap_grows_with_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
