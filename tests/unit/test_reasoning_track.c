/* reasoning_track: the thinking block found in a completion's output
 * however the text is cut into tokens: a reply that opens the block (after
 * blanks) or one the prompt opened, the close marker split across pieces
 * (every cut), the offset of the answer in the closing piece, the tokens
 * counted (the budget's: those inside; usage: the block's with its
 * markers), a reply that opens none, and the partial close marker a forced
 * close completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/reasoning_track.h"

static nucleus_reasoning_params params(const char *open) {
  return (nucleus_reasoning_params){
      .open = open, .close = "</think>", .budget = -1};
}

/* Feeds text cut at `cut` (two pieces, the second maybe empty): returns
 * where the answer begins in the whole text (SIZE_MAX: not closed). */
static size_t feed_two(nc_reasoning_track *t, const char *text, size_t cut) {
  size_t n = strlen(text);
  size_t at = nc_reasoning_track_push(t, text, cut);
  if (at != SIZE_MAX) return at;
  at = nc_reasoning_track_push(t, text + cut, n - cut);
  return at == SIZE_MAX ? SIZE_MAX : cut + at;
}

static void test_every_cut(void **state) {
  (void)state;
  static const struct {
    const char *open, *text;
    size_t answer_at; /* SIZE_MAX: still inside or never opened */
    nc_think_phase end;
  } T[] = {
      {"<think>", "<think>ab</think>cd", 17, NC_THINK_AFTER},
      {"<think>", "\n <think>x</think>", 18, NC_THINK_AFTER},
      {NULL, "abc</think>\n\nyes", 11, NC_THINK_AFTER},
      {NULL, "a</thi b </think", SIZE_MAX, NC_THINK_INSIDE},
      {"<think>", "Hello <think>", SIZE_MAX, NC_THINK_AFTER},
      {"<think>", "<thinx>", SIZE_MAX, NC_THINK_AFTER},
  };
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
    for (size_t cut = 0; cut <= strlen(T[i].text); cut++) {
      nucleus_reasoning_params p = params(T[i].open);
      nc_reasoning_track t;
      nc_reasoning_track_init(&t, &p);
      size_t at = feed_two(&t, T[i].text, cut);
      if (at != T[i].answer_at || t.phase != T[i].end)
        fail_msg("\"%s\" cut at %zu: answer at %zu phase %d, want %zu and %d",
                 T[i].text, cut, at, (int)t.phase, T[i].answer_at,
                 (int)T[i].end);
    }
  }
}

static void test_token_counts(void **state) {
  (void)state;
  nucleus_reasoning_params p = params("<think>");
  nc_reasoning_track t;
  nc_reasoning_track_init(&t, &p);
  static const char *const toks[] = {"\n", "<",  "think", ">", "a",
                                     " b", "</", "think", ">", "ans"};
  size_t closed_at = 0;
  for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++)
    if (nc_reasoning_track_push(&t, toks[i], strlen(toks[i])) != SIZE_MAX)
      closed_at = i;
  assert_int_equal(closed_at, 8);
  assert_int_equal(t.inside, 5); /* "a" " b" "</" "think" ">" */
  assert_int_equal(t.tokens, 9); /* the block with its markers */
  /* a reply that opens no block counts none */
  nc_reasoning_track_init(&t, &p);
  nc_reasoning_track_push(&t, "<", 1);
  nc_reasoning_track_push(&t, "b>", 2);
  assert_int_equal(t.phase, NC_THINK_AFTER);
  assert_int_equal(t.tokens, 0);
  /* nothing tracked without a close marker */
  nucleus_reasoning_params off = {.budget = -1};
  nc_reasoning_track_init(&t, &off);
  assert_int_equal(t.phase, NC_THINK_OFF);
  assert_int_equal(nc_reasoning_track_push(&t, "</think>", 8), SIZE_MAX);
}

static void test_partial_close(void **state) {
  (void)state;
  nucleus_reasoning_params p = params(NULL);
  nc_reasoning_track t;
  nc_reasoning_track_init(&t, &p);
  nc_reasoning_track_push(&t, "so </th", 7);
  assert_int_equal(nc_reasoning_track_partial_close(&t), 4);
  nc_reasoning_track_push(&t, "e", 1);
  assert_int_equal(nc_reasoning_track_partial_close(&t), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_cut),
      cmocka_unit_test(test_token_counts),
      cmocka_unit_test(test_partial_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
