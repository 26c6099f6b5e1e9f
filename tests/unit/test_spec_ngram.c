/* The lookup drafter (src/sampling/spec_ngram.c): prompt lookup takes the
 * longest key that matches and its latest earlier occurrence, never the
 * tail itself, and drafts what followed, up to the limit and the source's
 * end; predicted outputs start at the prediction's beginning, follow the
 * cursor and rejoin after a detour (keys_only: no cursor fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sampling/spec_ngram.h"

static int32_t lookup(const int32_t *h, int32_t n, int32_t max, int32_t *out,
                      int32_t *at) {
  nc_ngram_query q = {.hist = h,
                      .n_hist = n,
                      .source = h,
                      .n_source = n,
                      .n_min = 2,
                      .n_max = 4,
                      .max_draft = max};
  return nc_ngram_draft(&q, out, at);
}

static void prompt_lookup_latest_longest(void **state) {
  (void)state;
  int32_t out[8], at;
  /* key (3 4) occurs at 2 and 7: the latest (7) wins -> 9 ... */
  const int32_t h[] = {1, 2, 3, 4, 5, 6, 0, 3, 4, 9, 8, 7, 3, 4};
  int32_t k = lookup(h, 14, 3, out, &at);
  assert_int_equal(k, 3);
  assert_int_equal(at, 9);
  assert_int_equal(out[0], 9);
  assert_int_equal(out[1], 8);
  assert_int_equal(out[2], 7);
  /* a longer key (2 3 4) beats the latest 2-gram: (2 3 4) occurs at 1 */
  const int32_t h2[] = {1, 2, 3, 4, 5, 6, 0, 3, 4, 9, 8, 7, 2, 3, 4};
  k = lookup(h2, 15, 2, out, &at);
  assert_int_equal(k, 2);
  assert_int_equal(at, 4);
  assert_int_equal(out[0], 5);
  assert_int_equal(out[1], 6);
}

static void prompt_lookup_limits(void **state) {
  (void)state;
  int32_t out[8] = {0}, at;
  /* the draft stops at the source's end (it may run into the tail) */
  const int32_t h[] = {5, 6, 7, 5, 6};
  int32_t k = lookup(h, 5, 8, out, &at);
  assert_int_equal(k, 3);
  assert_int_equal(out[0], 7);
  assert_int_equal(out[1], 5);
  assert_int_equal(out[2], 6);
  /* no earlier occurrence: nothing; the tail alone never matches */
  const int32_t none[] = {1, 2, 3, 4, 5};
  assert_int_equal(lookup(none, 5, 8, out, &at), 0);
  assert_int_equal(at, -1);
  /* a single-token match is below n_min = 2 */
  const int32_t one[] = {1, 2, 3, 9, 4, 3};
  assert_int_equal(lookup(one, 6, 8, out, &at), 0);
  assert_int_equal(lookup(h, 5, 0, out, &at), 0); /* max 0 */
  assert_int_equal(lookup(h, 1, 8, out, &at), 0); /* too short */
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
  assert_int_equal(nc_ngram_draft(&q, out, &at), 4);
  assert_int_equal(at, 0);
  assert_int_equal(out[0], 10);
  /* output so far ends in 10 11: (10 11) occurs at 0 and 4; with the cursor
   * at 6 the second one is taken (keys of 2 at most: the 3-gram 13 10 11
   * is only at 3) */
  const int32_t hist1[] = {1, 2, 3, 10, 11, 12, 13, 10, 11};
  q.hist = hist1, q.n_hist = 9, q.n_output = 6, q.from = 6, q.n_max = 2;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 2);
  assert_int_equal(at, 6);
  assert_int_equal(out[0], 14);
  assert_int_equal(out[1], 15);
  /* cursor at 2: the first occurrence */
  q.from = 2;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 4);
  assert_int_equal(at, 2);
  assert_int_equal(out[0], 12);
  /* the longest key wins over the cursor: 13 10 11 is at 3 */
  q.n_max = 3;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 2);
  assert_int_equal(at, 6);
  /* a detour (99) then back on 13: rejoins after 13 */
  const int32_t hist2[] = {1, 2, 3, 10, 99, 13};
  q.hist = hist2, q.n_hist = 6, q.n_output = 3, q.from = 1;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 4);
  assert_int_equal(at, 4);
  assert_int_equal(out[0], 10);
  assert_int_equal(out[1], 11);
  /* no match at all: on from the cursor */
  const int32_t hist3[] = {1, 2, 3, 98, 99};
  q.hist = hist3, q.n_hist = 5, q.n_output = 2, q.from = 5;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 3);
  assert_int_equal(at, 5);
  assert_int_equal(out[0], 11);
  /* keys only: no match, no draft (the engine looks elsewhere) */
  q.keys_only = true;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 0);
  assert_int_equal(at, -1);
  q.hist = hist2, q.n_hist = 6, q.n_output = 3, q.from = 1;
  assert_int_equal(nc_ngram_draft(&q, out, &at), 4); /* a key still drafts */
  assert_int_equal(at, 4);
  q.hist = hist3, q.n_hist = 5, q.n_output = 2, q.keys_only = false;
  q.from = 8; /* past the end: nothing */
  assert_int_equal(nc_ngram_draft(&q, out, &at), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(prompt_lookup_latest_longest),
      cmocka_unit_test(prompt_lookup_limits),
      cmocka_unit_test(predicted_follows_the_prediction),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
