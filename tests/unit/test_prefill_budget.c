/* The prefill budget (src/engine/prefill_budget.c) from made-up step
 * times: the prompt rows' fit (a time per token and per attended key, the
 * fallbacks where the steps cannot tell them apart), the decode step's
 * estimate, the untimed row counts that run alone to be timed, and the
 * most prompt tokens within decode_stall decode steps, at depth, with more
 * sequences to come, with the floor, without a bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/prefill_budget.h"

/* Decode steps of n rows taking base + per_row n ms, each timed twice. */
static void time_decode(nc_spec_cost *c, const int32_t *rows, int n,
                        double base, double per_row) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++)
      nc_spec_cost_observe(c, rows[i], base + per_row * rows[i]);
}

/* Prompt steps whose rows take a ms a token and b ms a key, chunks of
 * several sizes at several depths. */
static void time_prompts(nc_prompt_cost *c, double a, double b) {
  const int32_t sizes[] = {512, 64, 200, 16, 333};
  const int32_t depths[] = {0, 1500, 300, 1900, 40};
  for (int i = 0; i < 5; i++) {
    const double keys = nc_prompt_keys(depths[i], sizes[i]);
    nc_prompt_cost_observe(c, sizes[i], keys, a * sizes[i] + b * keys);
  }
}

static void prompt_keys(void **state) {
  (void)state;
  assert_true(nc_prompt_keys(0, 1) == 1);
  assert_true(nc_prompt_keys(0, 3) == 1 + 2 + 3);
  assert_true(nc_prompt_keys(10, 2) == 11 + 12);
  assert_true(nc_prompt_keys(10, 0) == 0);
}

static void prompt_fit(void **state) {
  (void)state;
  nc_prompt_cost c;
  memset(&c, 0, sizeof c);
  assert_true(nc_prompt_cost_ms(&c, 100, 5000) == 0); /* nothing seen */
  time_prompts(&c, 1.25, 0.002);
  for (int32_t p = 0; p <= 2000; p += 250) {
    const double keys = nc_prompt_keys(p, 100);
    const double want = 1.25 * 100 + 0.002 * keys;
    assert_true(fabs(nc_prompt_cost_ms(&c, 100, keys) - want) < 1e-6 * want);
  }
  /* steps that follow a new machine speed move the fit there */
  for (int i = 0; i < 40; i++)
    time_prompts(&c, 2.5, 0.004);
  const double keys = nc_prompt_keys(1000, 64);
  const double want = 2.5 * 64 + 0.004 * keys;
  assert_true(fabs(nc_prompt_cost_ms(&c, 64, keys) - want) < 1e-3 * want);

  /* every step alike (the keys in proportion to the tokens): a time per
   * token alone, the steps' own times */
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 4; i++)
    nc_prompt_cost_observe(&c, 100, nc_prompt_keys(0, 100), 130);
  assert_true(fabs(nc_prompt_cost_ms(&c, 100, nc_prompt_keys(0, 100)) - 130) <
              1e-9);
  assert_true(fabs(nc_prompt_cost_ms(&c, 50, nc_prompt_keys(0, 50)) - 65) <
              1e-9);

  /* deeper chunks cost less (noise): the keys count for nothing, never
   * below 0 */
  memset(&c, 0, sizeof c);
  nc_prompt_cost_observe(&c, 100, nc_prompt_keys(0, 100), 150);
  nc_prompt_cost_observe(&c, 100, nc_prompt_keys(1000, 100), 100);
  const double shallow = nc_prompt_cost_ms(&c, 100, nc_prompt_keys(0, 100));
  const double deep = nc_prompt_cost_ms(&c, 100, nc_prompt_keys(1000, 100));
  assert_true(shallow > 0 && fabs(shallow - deep) < 1e-9);

  /* a step whose residual came out below 0 leaves no negative cost */
  memset(&c, 0, sizeof c);
  nc_prompt_cost_observe(&c, 16, nc_prompt_keys(0, 16), -3);
  assert_true(nc_prompt_cost_ms(&c, 16, nc_prompt_keys(0, 16)) == 0);
}

static void decode_estimate(void **state) {
  (void)state;
  nc_spec_cost c;
  memset(&c, 0, sizeof c);
  assert_true(nc_decode_step_ms(&c, 4) == 0);
  assert_true(nc_decode_step_untimed(&c, NULL, 0, 1));
  nc_spec_cost_observe(&c, 1, 12);
  /* one timed count: itself, and below every larger count */
  assert_true(nc_decode_step_ms(&c, 1) == 12);
  assert_true(nc_decode_step_ms(&c, 5) == 12);
  assert_true(!nc_decode_step_untimed(&c, NULL, 0, 1));
  assert_true(nc_decode_step_untimed(&c, NULL, 0, 2));
  const int32_t rows[] = {2, 3, 6};
  time_decode(&c, rows, 3, 10, 5);
  /* within a quarter of a timed count below: timed enough */
  assert_true(!nc_decode_step_untimed(&c, NULL, 0, 4));
  assert_true(!nc_decode_step_untimed(&c, NULL, 0, 8));
  assert_true(nc_decode_step_untimed(&c, NULL, 0, 9)); /* [7, 9] */
  assert_true(nc_decode_step_untimed(&c, NULL, 0, 64));
  assert_true(
      !nc_decode_step_untimed(&c, NULL, 0, 65)); /* past the timed counts */
  /* with the steps each count was timed at: stale after
   * NC_PREFILL_RETIME_STEPS steps */
  int64_t at[NC_SPEC_COST_ROWS + 1] = {0};
  at[1] = 10;
  at[2] = at[3] = 40;
  at[6] = 100;
  assert_true(nc_decode_step_untimed(&c, at, 100, 1)); /* 90 steps ago */
  assert_true(!nc_decode_step_untimed(&c, at, 72, 2)); /* 32 ago */
  assert_true(nc_decode_step_untimed(&c, at, 73, 2));
  assert_true(!nc_decode_step_untimed(&c, at, 72, 3));
  assert_true(!nc_decode_step_untimed(&c, at, 120, 8)); /* 6, in [6, 8] */
  assert_true(nc_decode_step_untimed(&c, at, 133, 8));
  /* between timed counts, on their line */
  assert_true(fabs(nc_decode_step_ms(&c, 4) - 30) < 1e-9);
}

/* The most P whose prompt rows fit in room, by counting. */
static int32_t most_within(const nc_prompt_cost *c, int32_t depth, double room,
                           int32_t max_tokens) {
  int32_t p = 0;
  while (p < max_tokens &&
         nc_prompt_cost_ms(c, p + 1, nc_prompt_keys(depth, p + 1)) <= room)
    p++;
  return p;
}

static void budget(void **state) {
  (void)state;
  nc_spec_cost d;
  nc_prompt_cost pc;
  memset(&d, 0, sizeof d);
  memset(&pc, 0, sizeof pc);
  const int32_t rows[] = {1, 2, 3, 4, 6, 8, 12, 16};
  time_decode(&d, rows, 8, 10, 5); /* t(n) = 10 + 5 n */
  nc_prefill_query q = {.n_decoding = 4,
                        .depth = 0,
                        .pending = 5000,
                        .max_tokens = 512,
                        .floor = 16,
                        .stall = 3};

  /* no prompt step timed yet: a prompt token as dear as a decode row's
   * share of the step (30 / 4 ms): 2 x 30 ms of room, 8 tokens, the floor */
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 16);
  q.floor = 1;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 8);
  q.floor = 16;

  time_prompts(&pc, 0.5, 0.0005);
  /* 2 x 30 ms of room at depth 0 */
  int32_t p0 = nc_prefill_budget(&d, &pc, &q);
  assert_int_equal(p0, most_within(&pc, 0, 60, 512));
  assert_true(p0 > 16 && p0 < 120);
  /* deeper in a prompt each token attends more keys: fewer */
  q.depth = 1800;
  int32_t deep = nc_prefill_budget(&d, &pc, &q);
  assert_int_equal(deep, most_within(&pc, 1800, 60, 512));
  assert_true(deep < p0);
  q.depth = 0;
  /* more decode rows: a dearer decode step, more room */
  q.n_decoding = 16; /* t = 90: 180 ms */
  int32_t p16 = nc_prefill_budget(&d, &pc, &q);
  assert_int_equal(p16, most_within(&pc, 0, 180, 512));
  assert_true(p16 > p0);
  /* few decode, more to come (running and waiting): a step of them all
   * bounds it, t(12) = 70 ms: 3 x 70 - 30 ms of room */
  q.n_decoding = 4;
  q.n_coming = 12;
  int32_t coming = nc_prefill_budget(&d, &pc, &q);
  assert_int_equal(coming, most_within(&pc, 0, 180, 512));
  assert_true(coming > p0);
  q.n_coming = 3; /* (fewer than decode: the decode rows) */
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), p0);
  q.n_coming = 0;
  q.n_decoding = 16;
  /* a larger stall: more; one decode step: the floor */
  q.stall = 1000 - 1;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 0); /* 512 fit */
  q.stall = 1;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 16);
  q.floor = 300; /* an image a running prompt feeds */
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 300);
  q.floor = 16;
  q.stall = 3;

  /* an untimed decode row count runs alone to be timed */
  q.n_decoding = 24; /* [18, 24]: nothing timed */
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), NC_PREFILL_NONE);
  nc_spec_cost_observe(&d, 20, 110);
  assert_true(nc_prefill_budget(&d, &pc, &q) > 0);

  /* no bound: no more prompt tokens pending than the floor (not even to
   * time an untimed count), nothing decoding, a stall of 1000 */
  q.n_decoding = 40;
  q.pending = 16;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 0);
  q.pending = 17;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), NC_PREFILL_NONE);
  q.pending = 5000;
  q.n_decoding = 0;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 0);
  q.n_decoding = 4;
  q.stall = 1000;
  assert_int_equal(nc_prefill_budget(&d, &pc, &q), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(prompt_keys),
      cmocka_unit_test(prompt_fit),
      cmocka_unit_test(decode_estimate),
      cmocka_unit_test(budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
