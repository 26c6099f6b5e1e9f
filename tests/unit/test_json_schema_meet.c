/* Strings of several patterns (json_schema_meet.c, json_schema_lookahead.c):
 * two patterns of an allOf, lookaheads, a format with a pattern. Where the
 * grammar can be exact, every string over a small alphabet up to a length
 * is taken exactly when PCRE2 matches each pattern (the oracle: a search,
 * as JSON Schema's pattern is); the refusals name what they refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "grammar/grammar.h"
#include "schema_test_util.h"

/* Whether h takes the JSON string "s" whole. */
static bool takes_string(nucleus_grammar *h, const char *s) {
  char text[64];
  snprintf(text, sizeof text, "\"%s\"", s);
  return takes(h, text);
}

static bool pcre_search(const char *pattern, const char *s) {
  int code;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0,
                                 &code, &off, NULL);
  assert_non_null(re);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return rc >= 0;
}

/* Every string over alphabet of at most max_len characters: the schema's
 * grammar takes it exactly when each pattern matches it (one_of: exactly
 * one of them does) and it is at most len_bound characters long. */
static void check_all(const char *schema, const char *const *patterns, int n,
                      bool one_of, const char *alphabet, int max_len,
                      int len_bound) {
  nucleus_grammar *h = compile(schema);
  int k = (int)strlen(alphabet), checked = 0, taken = 0;
  char s[16];
  for (int len = 0; len <= max_len; len++) {
    long total = 1;
    for (int i = 0; i < len; i++)
      total *= k;
    for (long x = 0; x < total; x++) {
      long y = x;
      for (int i = 0; i < len; i++, y /= k)
        s[i] = alphabet[y % k];
      s[len] = '\0';
      int matched = 0;
      for (int p = 0; p < n; p++)
        matched += pcre_search(patterns[p], s);
      bool want = len <= len_bound && (one_of ? matched == 1 : matched == n);
      bool got = takes_string(h, s);
      if (got != want)
        fprintf(stderr, "%s: \"%s\" taken %d, PCRE2 %d\n", schema, s, got,
                want);
      assert_int_equal(got, want);
      checked++;
      taken += got;
    }
  }
  assert_true(taken > 0 && taken < checked); /* the check tells apart */
  nucleus_grammar_free(h);
}

static void exact(const char *schema, const char *const *patterns, int n,
                  const char *alphabet, int max_len, int len_bound) {
  check_all(schema, patterns, n, false, alphabet, max_len, len_bound);
}

static const char *refuse(const char *schema, nucleus_status want) {
  static nucleus_error err;
  memset(&err, 0, sizeof err);
  char *gbnf = NULL;
  assert_int_equal(
      nucleus_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &err), want);
  assert_null(gbnf);
  return err.message;
}

static void test_two_patterns(void **state) {
  (void)state;
  const char *p[] = {"^[ab]*$", "ba"};
  exact("{\"type\":\"string\",\"allOf\":[{\"pattern\":\"^[ab]*$\"},"
        "{\"pattern\":\"ba\"}]}",
        p, 2, "abc", 6, 99);
  const char *q[] = {"^a", "b$", "c"};
  exact("{\"allOf\":[{\"type\":\"string\",\"pattern\":\"^a\"},{\"allOf\":["
        "{\"pattern\":\"b$\"},{\"pattern\":\"c\"}]}],\"maxLength\":5}",
        q, 3, "abc", 7, 5);
  /* lengths the pattern's own rewriting does not take (an anchored
   * pattern too short for minLength; anchors inside alternatives) */
  const char *r[] = {"^(a|b)c?$", "^.{2,}$"}; /* the second: minLength */
  exact("{\"type\":\"string\",\"pattern\":\"^(a|b)c?$\",\"minLength\":2}", r, 2,
        "abc", 4, 99);
  const char *t[] = {"^a|b$"};
  exact("{\"type\":\"string\",\"pattern\":\"^a|b$\",\"maxLength\":3}", t, 1,
        "abc", 5, 3);
  /* nothing matches both: the error says so */
  assert_non_null(strstr(refuse("{\"type\":\"string\",\"allOf\":[{\"pattern\":"
                                "\"^a+$\"},{\"pattern\":\"^b+$\"}]}",
                                NUCLEUS_ERR_INVALID_ARGUMENT),
                         "no string matches"));
}

static void test_lookaheads(void **state) {
  (void)state;
  const char *a[] = {"^(?!ab)[abc]*$"};
  exact("{\"type\":\"string\",\"pattern\":\"^(?!ab)[abc]*$\"}", a, 1, "abc", 6,
        99);
  const char *b[] = {"^(?=.*c)(?!.*cc)[abc]+$"};
  exact("{\"type\":\"string\",\"pattern\":\"^(?=.*c)(?!.*cc)[abc]+$\"}", b, 1,
        "abc", 6, 99);
  const char *c[] = {"^((?!ab)(?!ca).)*$"};
  exact("{\"type\":\"string\",\"pattern\":\"^((?!ab)(?!ca).)*$\"}", c, 1, "abc",
        6, 99);
  const char *d[] = {"a(?=bc)"};
  exact("{\"type\":\"string\",\"pattern\":\"a(?=bc)\"}", d, 1, "abc", 6, 99);
  const char *e[] = {"^(?!^x|y)[xyz]{2,}"};
  exact("{\"type\":\"string\",\"pattern\":\"^(?!^x|y)[xyz]{2,}\","
        "\"maxLength\":4}",
        e, 1, "xyz", 6, 4);
  const char *f[] = {"^(?<y>[0-9]{2})-(?:[ab])$"};
  exact("{\"type\":\"string\",\"pattern\":\"^(?<y>[0-9]{2})-(?:[ab])$\"}", f, 1,
        "1a-", 5, 99);
  /* a lookahead pattern beside another pattern: an intersection inside
   * an intersection */
  const char *i2[] = {"^((?!ab).)*$", "c"};
  exact("{\"type\":\"string\",\"allOf\":[{\"pattern\":\"^((?!ab).)*$\"},"
        "{\"pattern\":\"c\"}]}",
        i2, 2, "abc", 6, 99);
  /* not: {pattern}: the strings that do not match it */
  nucleus_grammar *h =
      compile("{\"type\":\"string\",\"pattern\":"
              "\"^[abc]{1,3}$\",\"not\":{\"pattern\":\"b.\"}}");
  int taken = 0;
  for (const char *const *w =
           (const char *const[]){"a", "ab", "ba", "cbc", "abc", "cb", NULL};
       *w; w++) {
    bool want = pcre_search("^[abc]{1,3}$", *w) && !pcre_search("b.", *w);
    assert_int_equal(takes_string(h, *w), want);
    taken += want;
  }
  assert_int_equal(taken, 3); /* a, ab, cb */
  nucleus_grammar_free(h);
  assert_non_null(strstr(refuse("{\"type\":\"string\",\"pattern\":\"(?<=a)b\"}",
                                NUCLEUS_ERR_INVALID_ARGUMENT),
                         "lookbehind"));
  assert_non_null(
      strstr(refuse("{\"type\":\"string\",\"pattern\":\"^a(?!b)c$\"}",
                    NUCLEUS_ERR_INVALID_ARGUMENT),
             "lookahead ('(?=' or '(?!') is supported at the start"));
}

static void test_format_and_pattern(void **state) {
  (void)state;
  nucleus_grammar *h = compile("{\"type\":\"string\",\"format\":\"date\","
                               "\"pattern\":\"-0[1-3]-\"}");
  assert_true(takes_string(h, "2024-02-10"));
  assert_false(takes_string(h, "2024-05-10")); /* the pattern's */
  assert_false(takes_string(h, "2024-02-30")); /* the format's */
  nucleus_grammar_free(h);
  h = compile("{\"type\":\"string\",\"format\":\"uri\",\"pattern\":"
              "\"^(https|file)://\"}");
  assert_true(takes_string(h, "https://a.com/x"));
  assert_false(takes_string(h, "http://a.com/x"));
  assert_false(takes_string(h, "https://"));
  nucleus_grammar_free(h);
  /* more states than the bound: an error naming the intersection */
  assert_non_null(
      strstr(refuse("{\"type\":\"string\",\"allOf\":[{\"pattern\":"
                    "\"^[ab]{0,300}$\"},{\"pattern\":\"^[ab]*a[ab]{14}$\"}]}",
                    NUCLEUS_ERR_LIMIT),
             "pattern intersection: "));
}

/* oneOf of string branches that overlap: each without the others. */
static void test_one_of_strings(void **state) {
  (void)state;
  const char *p[] = {"^a", "b$"};
  check_all("{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^a\"},"
            "{\"type\":\"string\",\"pattern\":\"b$\"}]}",
            p, 2, true, "abc", 5, 99);
  const char *q[] = {"^[ab]+$", "a", "^.{0,3}$"};
  check_all("{\"type\":\"string\",\"oneOf\":[{\"pattern\":\"^[ab]+$\"},"
            "{\"pattern\":\"a\"},{\"maxLength\":3}]}",
            q, 3, true, "abc", 5, 99);
  nucleus_grammar *h =
      compile("{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"},"
              "{\"enum\":[\"abc\",\"x1\"]}]}");
  assert_false(takes_string(h, "abc")); /* both */
  assert_true(takes_string(h, "x1"));
  assert_true(takes_string(h, "ab"));
  nucleus_grammar_free(h);
  /* a branch inside another has no string of its own: left out */
  h = compile("{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^a+$\"},"
              "{\"type\":\"string\",\"pattern\":\"a\"}]}");
  assert_false(takes_string(h, "aa"));
  assert_true(takes_string(h, "ab"));
  nucleus_grammar_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_patterns),
      cmocka_unit_test(test_lookaheads),
      cmocka_unit_test(test_format_and_pattern),
      cmocka_unit_test(test_one_of_strings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
