/* grammar_test_util: whether a grammar's matcher takes a text whole, the
 * check the grammar, JSON Schema and tool-call grammar tests share.
 * Header-only; include after cmocka.h. */
#ifndef NC_TEST_GRAMMAR_TEST_UTIL_H
#define NC_TEST_GRAMMAR_TEST_UTIL_H

#include <stdbool.h>
#include <string.h>

#include "grammar/grammar.h"

/* Whether g's matcher takes text whole (a sentence of the grammar). */
static inline bool takes(const nucleus_grammar *g, const char *text) {
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(g), &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, text, strlen(text), &ok, NULL),
                   NC_OK);
  bool whole = ok && nc_grammar_matcher_accepting(m);
  nc_grammar_matcher_free(m);
  return whole;
}

#endif
