/* schema_test_util: what the JSON Schema tests share (test_json_schema,
 * test_json_schema_cover, test_json_schema_meet, test_grammar_unique): a schema
 * compiled into a grammar (a failure fails the test), whether it takes a text
 * whole (grammar_test_util.h), a token vocabulary of small pieces. Header-only;
 * include after cmocka.h. */
#ifndef NC_TEST_SCHEMA_TEST_UTIL_H
#define NC_TEST_SCHEMA_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar_test_util.h"

static inline nucleus_grammar *compile(const char *schema) {
  nucleus_grammar *h = NULL;
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_grammar_from_json_schema(schema, strlen(schema), &h, &err);
  if (st != NUCLEUS_OK) fprintf(stderr, "schema error: %s\n", err.message);
  assert_int_equal(st, NUCLEUS_OK);
  assert_non_null(h);
  return h;
}

static inline bool accepts(const char *schema, const char *text) {
  nucleus_grammar *h = compile(schema);
  bool r = takes(h, text);
  nucleus_grammar_free(h);
  return r;
}

/* A vocabulary of n (at most 128) tokens: pieces[i]'s text, or END where
 * pieces[i] is NULL (nc_grammar_vocab_free). */
static inline nc_grammar_vocab *test_vocab(const char *const *pieces, int n) {
  size_t lens[128];
  uint8_t kinds[128];
  const char *p[128];
  assert_true(n <= 128);
  for (int i = 0; i < n; i++) {
    p[i] = pieces[i] ? pieces[i] : "";
    lens[i] = strlen(p[i]);
    kinds[i] = pieces[i] ? NC_GRAMMAR_TOKEN_TEXT : NC_GRAMMAR_TOKEN_END;
  }
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_create(n, p, lens, kinds, &gv, NULL),
                   NC_OK);
  return gv;
}

#endif
