/* Stop strings over streamed text: hold-back, matches across piece
 * boundaries, and the append-only property. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/stop_matcher.h"

typedef struct stream_result {
  char text[4096];
  size_t len;
  int match;
  /* The longest released prefix seen after each push (to check that
   * nothing released is revised). */
} stream_result;

/* Feeds `pieces` (NULL-terminated) and collects the released text. */
static stream_result run_pieces(const char *const *stops, size_t n_stops,
                                bool include, const char *const *pieces) {
  stream_result r = {.len = 0, .match = -1};
  nc_stop_matcher *m = NULL;
  nc_error err = {0};
  assert_int_equal(nc_stop_matcher_create(stops, n_stops, include, &m, &err),
                   NC_OK);
  for (size_t i = 0; pieces[i] && r.match < 0; i++) {
    const char *out;
    size_t out_len;
    r.match =
        nc_stop_matcher_push(m, pieces[i], strlen(pieces[i]), &out, &out_len);
    memcpy(r.text + r.len, out, out_len);
    r.len += out_len;
  }
  if (r.match < 0) {
    const char *out;
    size_t out_len;
    nc_stop_matcher_flush(m, &out, &out_len);
    memcpy(r.text + r.len, out, out_len);
    r.len += out_len;
  }
  r.text[r.len] = '\0';
  nc_stop_matcher_free(m);
  return r;
}

static void test_match_within_one_piece(void **state) {
  (void)state;
  const char *stops[] = {"STOP"};
  const char *pieces[] = {"hello STOP world", NULL};
  stream_result r = run_pieces(stops, 1, false, pieces);
  assert_int_equal(r.match, 0);
  assert_string_equal(r.text, "hello ");
}

static void test_include_stop_string(void **state) {
  (void)state;
  const char *stops[] = {"STOP"};
  const char *pieces[] = {"hello ST", "OP world", NULL};
  stream_result r = run_pieces(stops, 1, true, pieces);
  assert_int_equal(r.match, 0);
  assert_string_equal(r.text, "hello STOP");
}

static void test_holdback_released_when_impossible(void **state) {
  (void)state;
  nc_stop_matcher *m = NULL;
  const char *stops[] = {"</end>"};
  assert_int_equal(nc_stop_matcher_create(stops, 1, false, &m, NULL), NC_OK);
  const char *out;
  size_t len;
  assert_int_equal(nc_stop_matcher_push(m, "a </e", 5, &out, &len), -1);
  assert_int_equal(len, 2); /* "a " released, "</e" held back */
  assert_memory_equal(out, "a ", 2);
  assert_int_equal(nc_stop_matcher_push(m, "x", 1, &out, &len), -1);
  assert_int_equal(len, 4); /* "</ex" can no longer become "</end>" */
  assert_memory_equal(out, "</ex", 4);
  nc_stop_matcher_free(m);
}

static void test_earliest_of_several(void **state) {
  (void)state;
  const char *stops[] = {"world", "lo w"};
  const char *pieces[] = {"hel", "lo", " wor", "ld", NULL};
  stream_result r = run_pieces(stops, 2, false, pieces);
  assert_int_equal(r.match, 1);
  assert_string_equal(r.text, "hel");
}

static void test_multibyte_stop(void **state) {
  (void)state;
  /* The stop string starts in the middle of what one token produced. */
  const char *stops[] = {"本語"};
  const char *pieces[] = {"日", "本", "語です", NULL};
  stream_result r = run_pieces(stops, 1, false, pieces);
  assert_int_equal(r.match, 0);
  assert_string_equal(r.text, "日");
}

static void test_disarmed_does_not_stop(void **state) {
  (void)state;
  nc_stop_matcher *m = NULL;
  const char *stops[] = {"x"};
  assert_int_equal(nc_stop_matcher_create(stops, 1, false, &m, NULL), NC_OK);
  nc_stop_matcher_arm(m, false);
  const char *out;
  size_t len;
  assert_int_equal(nc_stop_matcher_push(m, "axb", 3, &out, &len), -1);
  assert_int_equal(len, 3);
  nc_stop_matcher_arm(m, true);
  assert_int_equal(nc_stop_matcher_push(m, "cxd", 3, &out, &len), 0);
  assert_int_equal(len, 1);
  assert_memory_equal(out, "c", 1);
  nc_stop_matcher_free(m);
}

/* The stop-string rules (nc_stop_check, which submit applies and the
 * matcher asserts): one message per failure. */
static void test_invalid_stops_rejected(void **state) {
  (void)state;
  nc_error err = {0};
  assert_int_equal(nc_stop_check(0, "", 0, &err), NC_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "stop[0]: 0 bytes; each stop string must be 1 to 512 "
                      "bytes");
  char big[NUCLEUS_MAX_STOP_STRING_BYTES + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(nc_stop_check(3, big, strlen(big), &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "stop[3]: 513 bytes; each stop string must be 1 to 512 "
                      "bytes");
  assert_int_equal(nc_stop_check(0, "a\0b", 3, &err), NC_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "stop[0]: stop strings must not contain NUL bytes");
  assert_int_equal(nc_stop_check(NUCLEUS_MAX_STOP_STRINGS, "s", 1, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "stop: at most 16 stop strings are allowed");
  assert_int_equal(nc_stop_check(NUCLEUS_MAX_STOP_STRINGS - 1, "s", 1, &err),
                   NC_OK);
  assert_int_equal(nc_stop_check(0, big, NUCLEUS_MAX_STOP_STRING_BYTES, &err),
                   NC_OK);
}

/* Every way to split the text into pieces gives the same result. */
static void test_every_split(void **state) {
  (void)state;
  const char *text = "abc<|stop|>def";
  const char *stops[] = {"<|stop|>"};
  size_t n = strlen(text);
  for (unsigned mask = 0; mask < (1u << (n - 1)); mask++) {
    char buf[64][32];
    const char *pieces[65];
    size_t np = 0, start = 0;
    for (size_t i = 1; i <= n; i++) {
      if (i == n || (mask >> (i - 1)) & 1) {
        memcpy(buf[np], text + start, i - start);
        buf[np][i - start] = '\0';
        pieces[np] = buf[np];
        np++;
        start = i;
      }
    }
    pieces[np] = NULL;
    stream_result r = run_pieces(stops, 1, false, pieces);
    assert_int_equal(r.match, 0);
    assert_string_equal(r.text, "abc");
  }
}

/* Random streams and stop strings over a small alphabet: the released text
 * equals the reference answer computed on the whole text, and no partial
 * stop string ever leaks (released text never ends with one that then
 * completes). */
static void test_property_random(void **state) {
  (void)state;
  uint64_t x = 0x9E3779B97F4A7C15ull;
#define RNG() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
  for (int iter = 0; iter < 3000; iter++) {
    char text[80];
    size_t n = 1 + RNG() % 60;
    for (size_t i = 0; i < n; i++)
      text[i] = "abc"[RNG() % 3];
    text[n] = '\0';
    char stop_buf[3][8];
    const char *stops[3];
    size_t n_stops = 1 + RNG() % 3;
    for (size_t s = 0; s < n_stops; s++) {
      size_t sl = 1 + RNG() % 5;
      for (size_t i = 0; i < sl; i++)
        stop_buf[s][i] = "abc"[RNG() % 3];
      stop_buf[s][sl] = '\0';
      stops[s] = stop_buf[s];
    }
    bool include = RNG() % 2;
    /* Reference: the first end position at which some stop string is
     * complete; on a tie the longest one (earliest start). */
    long best = -1;
    size_t best_len = 0;
    for (size_t e = 1; e <= n && best < 0; e++) {
      for (size_t s = 0; s < n_stops; s++) {
        size_t sl = strlen(stops[s]);
        if (sl > e || memcmp(text + e - sl, stops[s], sl) != 0) continue;
        if (best < 0 || (long)(e - sl) < best) {
          best = (long)(e - sl);
          best_len = sl;
        }
      }
    }
    char expect[80];
    if (best < 0) {
      memcpy(expect, text, n + 1);
    } else {
      size_t keep = (size_t)best + (include ? best_len : 0);
      memcpy(expect, text, keep);
      expect[keep] = '\0';
    }
    /* Random pieces. */
    char buf[80][80];
    const char *pieces[81];
    size_t np = 0, start = 0;
    while (start < n) {
      size_t len = 1 + RNG() % 6;
      if (start + len > n) len = n - start;
      memcpy(buf[np], text + start, len);
      buf[np][len] = '\0';
      pieces[np] = buf[np];
      np++;
      start += len;
    }
    pieces[np] = NULL;
    stream_result r = run_pieces(stops, n_stops, include, pieces);
    if (strcmp(r.text, expect)) {
      fprintf(stderr, "text=%s include=%d stops:", text, include);
      for (size_t s = 0; s < n_stops; s++)
        fprintf(stderr, " [%s]", stops[s]);
      fprintf(stderr, " pieces:");
      for (size_t i = 0; i < np; i++)
        fprintf(stderr, " [%s]", pieces[i]);
      fprintf(stderr, "\n");
    }
    assert_string_equal(r.text, expect);
    assert_int_equal(r.match >= 0, best >= 0);
  }
#undef RNG
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_match_within_one_piece),
      cmocka_unit_test(test_include_stop_string),
      cmocka_unit_test(test_holdback_released_when_impossible),
      cmocka_unit_test(test_earliest_of_several),
      cmocka_unit_test(test_multibyte_stop),
      cmocka_unit_test(test_disarmed_does_not_stop),
      cmocka_unit_test(test_invalid_stops_rejected),
      cmocka_unit_test(test_every_split),
      cmocka_unit_test(test_property_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
