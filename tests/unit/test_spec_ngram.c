/* The lookup drafter (src/sampling/spec_ngram.c): prompt lookup takes the
 * longest match of the tail (past the 4-token keys, up to match_cap),
 * never the tail itself; positions with equal matches vote token by token
 * and the draft stops where they disagree (the top continuation under
 * twice the others); it drafts up to the limit and the source's end, a
 * continuation into the tokens so far going on with its own period;
 * match lengths fall in their classes; predicted outputs start at the
 * prediction's beginning, follow the cursor and rejoin after a detour
 * (keys_only: no cursor fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sampling/spec_ngram.h"

static int32_t lookup(const int32_t *h, int32_t n, int32_t max, int32_t *out,
                      int32_t *at, int32_t *match) {
  nc_ngram_query q = {.hist = h,
                      .n_hist = n,
                      .source = h,
                      .n_source = n,
                      .n_min = 2,
                      .n_max = 4,
                      .match_cap = 16,
                      .max_draft = max};
  return nc_ngram_draft(&q, out, at, match);
}

static void prompt_lookup_longest_match(void **state) {
  (void)state;
  int32_t out[8], at, m;
  /* the tail (7 3 4) matches 3 tokens before position 3 and 2 before 8
   * (0 3 4): the longer match wins over the later one */
  const int32_t h[] = {7, 3, 4, 5, 6, 0, 3, 4, 9, 8, 1, 7, 3, 4};
  int32_t k = lookup(h, 14, 3, out, &at, &m);
  assert_int_equal(k, 3);
  assert_int_equal(at, 3);
  assert_int_equal(m, 3);
  assert_int_equal(out[0], 5);
  assert_int_equal(out[1], 6);
  assert_int_equal(out[2], 0);
  /* a match past the old 4-token keys: 6 tokens (1 2 3 4 5 6) before 6,
   * against 4 before 13 */
  const int32_t h2[] = {1, 2, 3, 4, 5, 6, 7, 9, 0, 3,
                        4, 5, 6, 8, 1, 2, 3, 4, 5, 6};
  k = lookup(h2, 20, 2, out, &at, &m);
  assert_int_equal(k, 2);
  assert_int_equal(at, 6);
  assert_int_equal(m, 6);
  assert_int_equal(out[0], 7);
  assert_int_equal(out[1], 9);
  /* the match is measured up to match_cap: 16 of these 20 equal tokens */
  int32_t run[21];
  for (int32_t i = 0; i < 21; i++)
    run[i] = 5;
  k = lookup(run, 21, 4, out, &at, &m);
  assert_int_equal(m, 16);
  assert_int_equal(k, 4);
  assert_int_equal(at, 20);
}

static void prompt_lookup_votes(void **state) {
  (void)state;
  int32_t out[8], at, m;
  /* (3 4) is followed by 9, 9 and 8, each after a 2-token match: 9 has
   * twice the others' support; then 2 against 5 is a tie: the draft stops
   * there, from the latest 9 (position 7) */
  const int32_t h[] = {1, 3, 4, 9, 2, 3, 4, 9, 5, 3, 4, 8, 6, 3, 4};
  int32_t k = lookup(h, 15, 4, out, &at, &m);
  assert_int_equal(k, 1);
  assert_int_equal(out[0], 9);
  assert_int_equal(at, 7);
  assert_int_equal(m, 2);
  /* two matches of the same length that disagree at once: nothing */
  const int32_t h2[] = {1, 2, 3, 4, 5, 6, 0, 3, 4, 9, 8, 7, 3, 4};
  assert_int_equal(lookup(h2, 14, 3, out, &at, &m), 0);
  assert_int_equal(at, -1);
  assert_int_equal(m, 0);
  /* agreeing matches draft on together (3 4 -> 9 2 at 3 and at 9) up to
   * where they part (7 against 6) */
  const int32_t h3[] = {1, 3, 4, 9, 2, 6, 0, 3, 4, 9, 2, 7, 8, 3, 4};
  k = lookup(h3, 15, 8, out, &at, &m);
  assert_int_equal(k, 2);
  assert_int_equal(at, 9);
  assert_int_equal(out[0], 9);
  assert_int_equal(out[1], 2);
  /* two against one is enough: a third 9 2 7 goes on past 2 */
  const int32_t h4[] = {1, 3, 4, 9, 2, 6, 0, 3, 4, 9, 2, 7,
                        8, 5, 3, 4, 9, 2, 7, 8, 6, 3, 4};
  k = lookup(h4, 23, 4, out, &at, &m);
  assert_int_equal(k, 4);
  assert_int_equal(at, 16);
  assert_int_equal(out[2], 7);
  assert_int_equal(out[3], 8);
}

static void match_classes(void **state) {
  (void)state;
  const int32_t want[] = {0, 0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5};
  for (int32_t m = 0; m <= 16; m++)
    assert_int_equal(nc_ngram_match_class(m), want[m]);
  assert_int_equal(nc_ngram_match_class(1000), NC_NGRAM_CLASSES - 1);
}

static void prompt_lookup_limits(void **state) {
  (void)state;
  int32_t out[8] = {0}, at;
  /* a continuation that runs into the tail goes on with the draft's own
   * tokens: the period (7 5 6) repeats up to the limit */
  const int32_t h[] = {5, 6, 7, 5, 6};
  int32_t k = lookup(h, 5, 8, out, &at, NULL);
  assert_int_equal(k, 8);
  const int32_t period[8] = {7, 5, 6, 7, 5, 6, 7, 5};
  for (int32_t i = 0; i < 8; i++)
    assert_int_equal(out[i], period[i]);
  /* a loop of period 4 drafts its period on from the match (1 2 at 4 and
   * at 0: the longer, at 6, wins) */
  const int32_t loop[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
  k = lookup(loop, 10, 6, out, &at, NULL);
  assert_int_equal(k, 6);
  assert_int_equal(at, 6);
  const int32_t want[6] = {3, 4, 1, 2, 3, 4};
  for (int32_t i = 0; i < 6; i++)
    assert_int_equal(out[i], want[i]);
  /* a source that is not the tokens so far (another text) ends where it
   * ends */
  const int32_t other[] = {9, 5, 6, 7, 5};
  const nc_ngram_query q = {.hist = h,
                            .n_hist = 5,
                            .source = other,
                            .n_source = 5,
                            .n_min = 2,
                            .n_max = 4,
                            .match_cap = 16,
                            .max_draft = 8};
  k = nc_ngram_draft(&q, out, &at, NULL);
  assert_int_equal(k, 2);
  assert_int_equal(out[0], 7);
  assert_int_equal(out[1], 5);
  /* no earlier occurrence: nothing; the tail alone never matches */
  const int32_t none[] = {1, 2, 3, 4, 5};
  assert_int_equal(lookup(none, 5, 8, out, &at, NULL), 0);
  assert_int_equal(at, -1);
  /* a single-token match is below n_min = 2 */
  const int32_t one[] = {1, 2, 3, 9, 4, 3};
  assert_int_equal(lookup(one, 6, 8, out, &at, NULL), 0);
  assert_int_equal(lookup(h, 5, 0, out, &at, NULL), 0); /* max 0 */
  assert_int_equal(lookup(h, 1, 8, out, &at, NULL), 0); /* too short */
}

static void predicted_follows_the_prediction(void **state) {
  (void)state;
  const int32_t pred[] = {10, 11, 12, 13, 10, 11, 14, 15};
  int32_t out[8], at;
  const int32_t hist0[] = {1, 2, 3}; /* prompt only */
  nc_ngram_query q = {.hist = hist0,
                      .n_hist = 3,
                      .source = pred,
                      .n_source = 8,
                      .n_min = 1,
                      .n_max = 3,
                      .predicted = true,
                      .n_output = 0,
                      .max_draft = 4};
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 4);
  assert_int_equal(at, 0);
  assert_int_equal(out[0], 10);
  /* output so far ends in 10 11: (10 11) occurs at 0 and 4; with the cursor
   * at 6 the second one is taken (keys of 2 at most: the 3-gram 13 10 11
   * is only at 3) */
  const int32_t hist1[] = {1, 2, 3, 10, 11, 12, 13, 10, 11};
  q.hist = hist1, q.n_hist = 9, q.n_output = 6, q.from = 6, q.n_max = 2;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 2);
  assert_int_equal(at, 6);
  assert_int_equal(out[0], 14);
  assert_int_equal(out[1], 15);
  /* cursor at 2: the first occurrence */
  q.from = 2;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 4);
  assert_int_equal(at, 2);
  assert_int_equal(out[0], 12);
  /* the longest key wins over the cursor: 13 10 11 is at 3 */
  q.n_max = 3;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 2);
  assert_int_equal(at, 6);
  /* a detour (99) then back on 13: rejoins after 13 */
  const int32_t hist2[] = {1, 2, 3, 10, 99, 13};
  q.hist = hist2, q.n_hist = 6, q.n_output = 3, q.from = 1;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 4);
  assert_int_equal(at, 4);
  assert_int_equal(out[0], 10);
  assert_int_equal(out[1], 11);
  /* no match at all: on from the cursor */
  const int32_t hist3[] = {1, 2, 3, 98, 99};
  q.hist = hist3, q.n_hist = 5, q.n_output = 2, q.from = 5;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 3);
  assert_int_equal(at, 5);
  assert_int_equal(out[0], 11);
  /* keys only: no match, no draft (the engine looks elsewhere) */
  q.keys_only = true;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 0);
  assert_int_equal(at, -1);
  q.hist = hist2, q.n_hist = 6, q.n_output = 3, q.from = 1;
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL),
                   4); /* a key still drafts */
  assert_int_equal(at, 4);
  q.hist = hist3, q.n_hist = 5, q.n_output = 2, q.keys_only = false;
  q.from = 8; /* past the end: nothing */
  assert_int_equal(nc_ngram_draft(&q, out, &at, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(prompt_lookup_longest_match),
      cmocka_unit_test(prompt_lookup_votes),
      cmocka_unit_test(match_classes),
      cmocka_unit_test(prompt_lookup_limits),
      cmocka_unit_test(predicted_follows_the_prediction),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
