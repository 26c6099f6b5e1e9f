/* The JSON Schema converter through its public calls
 * (nucleus_json_schema_to_gbnf, nucleus_grammar_from_json_schema): what the
 * grammars accept, the errors (the keyword named), the bounds on what a
 * schema may make, and the fuzz corpus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_corpus.h"
#include "grammar/grammar.h"
#include "schema_test_util.h"

/* The message of a schema that must be refused with code want (by both
 * calls, with the same message). */
static const char *refuse(const char *schema, size_t len, nucleus_status want) {
  static nucleus_error err;
  memset(&err, 0, sizeof err);
  char *gbnf = (char *)"untouched";
  assert_int_equal(nucleus_json_schema_to_gbnf(schema, len, &gbnf, &err), want);
  assert_null(gbnf);
  nucleus_error err2 = {0};
  nucleus_grammar *h = (nucleus_grammar *)&err2;
  assert_int_equal(nucleus_grammar_from_json_schema(schema, len, &h, &err2),
                   want);
  assert_null(h);
  assert_string_equal(err.message, err2.message);
  assert_int_equal(err.code, want);
  return err.message;
}
#define REFUSE(s, want) refuse((s), strlen(s), (want))

static void test_gbnf_text_and_objects(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                  "\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":"
                  "[\"a\"]}";
  char *gbnf = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_json_schema_to_gbnf(s, strlen(s), &gbnf, &err),
                   NUCLEUS_OK);
  assert_non_null(strstr(gbnf, "\nroot ::= r"));
  /* The text is what the grammar handle compiles. */
  nucleus_grammar *h = NULL;
  assert_int_equal(nucleus_grammar_create(gbnf, strlen(gbnf), NULL, &h, &err),
                   NUCLEUS_OK);
  nucleus_grammar_free(h);
  nucleus_free(gbnf);
  assert_true(accepts(s, "{\"a\":1}"));
  assert_true(accepts(s, "{\"a\":-7,\"b\":\"x\"}"));
  assert_false(accepts(s, "{\"b\":\"x\"}"));
  assert_false(accepts(s, "{\"a\":1,\"c\":2}"));
  assert_false(accepts(s, "{ \"a\":1}")); /* compact: no whitespace */
  /* A boolean schema, and one given as a string with its length. */
  assert_true(accepts("true", "[1,{\"k\":null}]"));
  char buf[] = "{\"const\":\"x\"}garbage";
  nucleus_grammar *hc = NULL;
  assert_int_equal(nucleus_grammar_from_json_schema(buf, 13, &hc, &err),
                   NUCLEUS_OK);
  nucleus_grammar_free(hc);
}

static void test_recursive_refs(void **state) {
  (void)state;
  const char *s =
      "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
      "\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/"
      "$defs/n\"}}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/n\"}";
  assert_true(
      accepts(s, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}"));
  assert_false(accepts(s, "{\"v\":1,\"kids\":[{}]}"));
  /* A cycle with no way out converts; the grammar engine refuses it (a
   * language with no finite string). */
  const char *c = "{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":"
                  "{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}";
  nucleus_grammar *h = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_grammar_from_json_schema(c, strlen(c), &h, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_null(h);
  assert_non_null(strstr(err.message, "empty language"));
}

static void test_integer_bounds(void **state) {
  (void)state;
  /* Exclusive bounds below zero: -3 and -2 only. */
  const char *s = "{\"type\":\"integer\",\"exclusiveMinimum\":-3.5,"
                  "\"exclusiveMaximum\":-1.5}";
  assert_true(accepts(s, "-3"));
  assert_true(accepts(s, "-2"));
  assert_false(accepts(s, "-4"));
  assert_false(accepts(s, "-1"));
  /* Fractional inclusive bounds; both kinds together (the tighter holds). */
  s = "{\"type\":\"integer\",\"minimum\":-2.5,\"maximum\":-0.5}";
  assert_true(accepts(s, "-2"));
  assert_true(accepts(s, "-1"));
  assert_false(accepts(s, "-3"));
  assert_false(accepts(s, "0"));
  s = "{\"type\":\"integer\",\"minimum\":1,\"exclusiveMinimum\":4,"
      "\"maximum\":9,\"exclusiveMaximum\":7}";
  assert_false(accepts(s, "4"));
  assert_true(accepts(s, "5"));
  assert_true(accepts(s, "6"));
  assert_false(accepts(s, "7"));
  /* Bounds past a 64-bit integer are an error or no bound, never
   * undefined behaviour. */
  REFUSE("{\"type\":\"integer\",\"exclusiveMinimum\":1e300,"
         "\"exclusiveMaximum\":-1e300}",
         NUCLEUS_ERR_INVALID_ARGUMENT);
  s = "{\"type\":\"integer\",\"minimum\":-1e300,\"maximum\":1e300}";
  assert_true(accepts(s, "-123456789012345"));
  assert_true(accepts(s, "0"));
  assert_false(accepts(s, "1.5"));
}

static void test_patterns(void **state) {
  (void)state;
  const char *s = "{\"type\":\"string\",\"pattern\":\"^a{2,3}b{1,}$\"}";
  assert_true(accepts(s, "\"aab\""));
  assert_true(accepts(s, "\"aaabbb\""));
  assert_false(accepts(s, "\"ab\""));
  assert_false(accepts(s, "\"aaaab\""));
  assert_true(
      accepts("{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\"}", "\"12345\""));
  assert_non_null(
      strstr(REFUSE("{\"type\":\"string\",\"pattern\":\"^a{1,2,3}$\"}",
                    NUCLEUS_ERR_INVALID_ARGUMENT),
             "bad {m,n}"));
  assert_non_null(
      strstr(REFUSE("{\"type\":\"string\",\"pattern\":\"^a{3,2}$\"}",
                    NUCLEUS_ERR_INVALID_ARGUMENT),
             "n < m"));
  REFUSE("{\"type\":\"string\",\"pattern\":\"^a{2000}$\"}", NUCLEUS_ERR_LIMIT);
  REFUSE("{\"type\":\"string\",\"pattern\":\"^a{99999999}$\"}",
         NUCLEUS_ERR_LIMIT);
  /* A class of only '"' (JSON escapes it) would be an empty GBNF class. */
  assert_non_null(
      strstr(REFUSE("{\"type\":\"string\",\"pattern\":\"^[\\\"]$\"}",
                    NUCLEUS_ERR_INVALID_ARGUMENT),
             "class"));
  /* Nested groups: up to the converter's bound the grammar compiles. */
  char p[256] = "{\"type\":\"string\",\"pattern\":\"^";
  for (int i = 0; i < 28; i++)
    strcat(p, "(");
  strcat(p, "a");
  for (int i = 0; i < 28; i++)
    strcat(p, ")");
  strcat(p, "$\"}");
  assert_true(accepts(p, "\"a\""));
  char *q = strstr(p, "a)");
  memmove(q + 1, q, strlen(q) + 1); /* one more group */
  memmove(p + 31, p + 30, strlen(p + 30) + 1);
  p[30] = '(';
  q[1] = ')';
  REFUSE(p, NUCLEUS_ERR_LIMIT);
}

static void test_errors_name_the_keyword(void **state) {
  (void)state;
  /* A keyword that constrains and cannot be enforced: named, with where. */
  assert_string_equal(
      REFUSE("{\"type\":\"object\",\"properties\":{\"a/b\":{\"if\":{}}}}",
             NUCLEUS_ERR_INVALID_ARGUMENT),
      "JSON Schema keyword 'if' is not supported (it changes what "
      "validates and the grammar cannot enforce it) (at #/properties/a~1b)");
  assert_non_null(strstr(REFUSE("{\"type\":\"array\",\"uniqueItems\":true,"
                                "\"minItems\":2}",
                                NUCLEUS_ERR_INVALID_ARGUMENT),
                         "'uniqueItems'"));
  assert_non_null(strstr(REFUSE("{\"type\":\"string\",\"format\":\"iri\"}",
                                NUCLEUS_ERR_INVALID_ARGUMENT),
                         "format 'iri'"));
  assert_non_null(
      strstr(REFUSE("{\"type\":", NUCLEUS_ERR_INVALID_ARGUMENT), "not JSON"));
  assert_non_null(
      strstr(REFUSE("5", NUCLEUS_ERR_INVALID_ARGUMENT), "object or a boolean"));
  /* What a schema says beside $ref, const, enum or a combinator holds
   * too: the value must match both. */
  const char *r = "{\"$ref\":\"#/$defs/a\",\"minimum\":5,"
                  "\"$defs\":{\"a\":{\"type\":\"integer\"}}}";
  assert_true(accepts(r, "5"));
  assert_false(accepts(r, "4"));
  assert_false(accepts(r, "\"x\""));
  assert_true(accepts("{\"enum\":[\"a\",\"abcd\"],\"maxLength\":3}", "\"a\""));
  assert_false(
      accepts("{\"enum\":[\"a\",\"abcd\"],\"maxLength\":3}", "\"abcd\""));
  /* Annotations beside them are fine; enum values of another type than
   * the one given are left out (they cannot validate). */
  const char *e = "{\"type\":\"string\",\"enum\":[\"a\",1,\"b\"],"
                  "\"title\":\"t\",\"description\":\"d\"}";
  assert_true(accepts(e, "\"a\""));
  assert_true(accepts(e, "\"b\""));
  assert_false(accepts(e, "1"));
  assert_true(accepts("{\"anyOf\":[{\"type\":\"string\"},{\"type\":"
                      "\"null\"}],\"default\":null,\"title\":\"x\"}",
                      "null"));
  REFUSE("{\"type\":\"string\",\"enum\":[1,2]}", NUCLEUS_ERR_INVALID_ARGUMENT);
  REFUSE("", NUCLEUS_ERR_INVALID_ARGUMENT);
  REFUSE("false", NUCLEUS_ERR_INVALID_ARGUMENT); /* matches nothing */
  nucleus_error err = {0};
  assert_int_equal(nucleus_json_schema_to_gbnf("{}", 2, NULL, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_int_equal(nucleus_grammar_from_json_schema("{}", 2, NULL, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
}

/* Each keyword's JSON type is checked over the whole document first (as a
 * validator checks a schema against its metaschema): a 400 naming the
 * keyword, what it must be, and where. The allOf merge's own list of
 * patterns is not a form a user can give. */
static void test_keyword_types(void **state) {
  (void)state;
  static const struct {
    const char *schema, *message;
  } cases[] = {
      {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
       "\"pattern\":[\"^a\",\"b$\"]}}}",
       "'pattern' must be a string, not a list (at #/properties/a)"},
      {"{\"pattern\":{\"not\":\"a\"}}",
       "'pattern' must be a string, not an object (at #)"},
      {"{\"type\":\"string\",\"pattern\":5}",
       "'pattern' must be a string, not a number (at #)"},
      {"{\"type\":\"string\",\"format\":true}",
       "'format' must be a string, not a boolean (at #)"},
      {"{\"enum\":{\"a\":1}}", "'enum' must be a list, not an object (at #)"},
      {"{\"type\":\"object\",\"required\":true}",
       "'required' must be a list of strings, not a boolean (at #)"},
      {"{\"type\":\"object\",\"required\":[\"a\",1]}",
       "'required' must be a list of strings, not a list (at #)"},
      {"{\"items\":{\"type\":\"string\",\"minLength\":-1}}",
       "'minLength' must be an integer of at least 0, not -1 (at #/items)"},
      {"{\"type\":\"string\",\"maxLength\":1.5}",
       "'maxLength' must be an integer of at least 0, not 1.5 (at #)"},
      {"{\"type\":\"array\",\"minItems\":\"2\"}",
       "'minItems' must be an integer of at least 0, not a string (at #)"},
      {"{\"type\":\"integer\",\"multipleOf\":0}",
       "'multipleOf' must be a number above 0, not 0 (at #)"},
      {"{\"type\":\"number\",\"maximum\":\"9\"}",
       "'maximum' must be a number, not a string (at #)"},
      {"{\"type\":[\"string\",3]}",
       "'type' must be a string or a list of strings, not a list (at #)"},
      {"{\"type\":\"array\",\"uniqueItems\":1}",
       "'uniqueItems' must be a boolean, not a number (at #)"},
      {"{\"anyOf\":[{\"type\":\"string\"},\"x\"]}",
       "a schema must be an object or a boolean, not a string (at #/anyOf/1)"},
      {"{\"oneOf\":[]}", "'oneOf' must not be empty (at #)"},
      {"{\"$ref\":5}", "'$ref' must be a string, not a number (at #)"},
      {"{\"dependentRequired\":{\"a\":\"b\"}}",
       "'dependentRequired' must be an object of lists of strings, not a "
       "string (at #/dependentRequired/a)"},
      /* where nothing refers to it too */
      {"{\"type\":\"string\",\"$defs\":{\"x\":{\"pattern\":[\"a\"]}}}",
       "'pattern' must be a string, not a list (at #/$defs/x)"},
      /* a $ref into a place the document's check does not walk */
      {"{\"$ref\":\"#/x-lib/s\",\"x-lib\":{\"s\":{\"pattern\":[\"a\","
       "\"b\"]}}}",
       "'pattern' must be a string, not a list (at #/x-lib/s)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    assert_string_equal(REFUSE(cases[i].schema, NUCLEUS_ERR_INVALID_ARGUMENT),
                        cases[i].message);
  /* The merge's lists still work: two patterns of an allOf, a pattern and
   * a not-pattern. */
  const char *two = "{\"allOf\":[{\"type\":\"string\",\"pattern\":\"^a\"},"
                    "{\"pattern\":\"b$\"}]}";
  assert_true(accepts(two, "\"ab\""));
  assert_false(accepts(two, "\"a\""));
  assert_false(accepts(two, "\"b\""));
  const char *nt = "{\"allOf\":[{\"type\":\"string\",\"pattern\":\"^a\"},"
                   "{\"pattern\":\"b\"}],\"not\":{\"pattern\":\"c\"}}";
  assert_true(accepts(nt, "\"ab\""));
  assert_false(accepts(nt, "\"abc\""));
  /* Values of annotations and unknown keywords are not schemas. */
  assert_true(accepts("{\"type\":\"string\",\"x-pattern\":[1],"
                      "\"examples\":[{\"pattern\":3}]}",
                      "\"q\""));
}

/* oneOf whose branches are themselves anyOf/oneOf (or become so when an
 * allOf of two oneOfs is distributed): taken apart, the branches within
 * are proven pairwise disjoint like plain ones; where those within overlap
 * but the whole does not, the oneOf is taken as written. */
static void test_oneof_nested(void **state) {
  (void)state;
  /* an allOf of two oneOfs: each product with disjoint consts is no
   * branch (the required property's values cannot meet) */
  const char *prod =
      "{\"allOf\":[{\"oneOf\":[{\"type\":\"object\",\"required\":[\"a\"],"
      "\"properties\":{\"a\":{\"const\":1}}},{\"type\":\"object\","
      "\"required\":[\"a\"],\"properties\":{\"a\":{\"const\":2}}}]},"
      "{\"oneOf\":[{\"type\":\"object\",\"required\":[\"a\"],\"properties\":"
      "{\"a\":{\"const\":1}},\"additionalProperties\":false},{\"type\":"
      "\"object\",\"required\":[\"a\"],\"properties\":{\"a\":{\"const\":2}},"
      "\"additionalProperties\":false}]}]}";
  assert_true(accepts(prod, "{\"a\":1}"));
  assert_true(accepts(prod, "{\"a\":2}"));
  assert_false(accepts(prod, "{\"a\":3}"));
  assert_false(accepts(prod, "{}"));
  const char *inner =
      "{\"oneOf\":[{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"object\","
      "\"required\":[\"k\"],\"properties\":{\"k\":{\"type\":\"string\"}}}]},"
      "{\"type\":\"null\"}]}";
  assert_true(accepts(inner, "\"x\""));
  assert_true(accepts(inner, "{\"k\":\"v\"}"));
  assert_true(accepts(inner, "null"));
  assert_false(accepts(inner, "{}"));
  /* required sets inside an anyOf branch, keywords beside it merged in */
  const char *req =
      "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"}},"
      "\"oneOf\":[{\"required\":[\"a\"],\"properties\":{\"a\":{\"type\":"
      "\"integer\"}}},{\"anyOf\":[{\"required\":[\"b\"]},{\"required\":"
      "[\"c\"]}],\"properties\":{\"b\":{\"type\":\"integer\"},\"c\":{"
      "\"type\":\"boolean\"}}}]}";
  assert_true(accepts(req, "{\"a\":1}"));
  assert_true(accepts(req, "{\"b\":1}"));
  assert_true(accepts(req, "{\"c\":true}"));
  assert_false(accepts(req, "{\"a\":1,\"b\":2}")); /* both branches */
  assert_false(accepts(req, "{\"s\":\"x\"}"));     /* neither */
  /* overlapping branches within an anyOf, the whole disjoint by type */
  const char *whole = "{\"oneOf\":[{\"type\":\"string\",\"anyOf\":[{"
                      "\"minLength\":1},{\"maxLength\":3}]},{\"type\":"
                      "\"integer\"}]}";
  assert_true(accepts(whole, "\"ab\""));
  assert_true(accepts(whole, "7"));
  /* a branch within one the same as another branch: an integer matches
   * both, so only the strings are made (this was refused) */
  const char *same = "{\"oneOf\":[{\"anyOf\":[{\"type\":\"string\"},{"
                     "\"type\":\"integer\"}]},{\"type\":\"integer\"}]}";
  assert_true(accepts(same, "\"x\""));
  assert_false(accepts(same, "7"));
  /* branches within that overlap, the whole too: named by the outer
   * indices */
  assert_string_equal(
      REFUSE("{\"oneOf\":[{\"anyOf\":[{\"type\":\"string\"},{\"type\":"
             "\"integer\"}]},{\"type\":\"integer\",\"minimum\":0}]}",
             NUCLEUS_ERR_INVALID_ARGUMENT),
      "'oneOf' whose branches 0 and 1 may both match a value is not "
      "supported (exactly one must; with 'anyOf' any may) (at #)");
}

/* A declared name tested against a patternProperties pattern whose
 * grammar has rules of its own (a lookahead's): the test grammar holds
 * them (it failed with "undefined rule"), the schema's does not. */
static void test_pattern_names_with_rules(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"properties\":{\"zed\":{\"type\":"
                  "\"integer\"},\"aliases\":{\"type\":\"integer\"}},"
                  "\"required\":[\"zed\",\"aliases\"],"
                  "\"patternProperties\":{\"^(?!aliases|audio)\":{"
                  "\"minimum\":3}}}";
  assert_true(accepts(s, "{\"zed\":5,\"aliases\":1}"));
  assert_false(accepts(s, "{\"zed\":2,\"aliases\":1}")); /* both schemas */
}

/* A growing text for big schemas. */
typedef struct {
  char *s;
  size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (t->n + (size_t)n + 1 > t->cap) {
    t->cap = (t->cap + (size_t)n + 1) * 2;
    t->s = realloc(t->s, t->cap);
    assert_non_null(t->s);
  }
  memcpy(t->s + t->n, tmp, (size_t)n + 1);
  t->n += (size_t)n;
}

static void test_bounds(void **state) {
  (void)state;
  text t = {0};
  /* Deep nesting. */
  for (int i = 0; i < 100; i++)
    add(&t, "{\"type\":\"array\",\"items\":");
  add(&t, "{\"type\":\"null\"}");
  for (int i = 0; i < 100; i++)
    add(&t, "}");
  assert_non_null(
      strstr(refuse(t.s, t.n, NUCLEUS_ERR_LIMIT), "nested too deeply"));
  /* A huge enum. */
  t.n = 0;
  add(&t, "{\"enum\":[");
  for (int i = 0; i < 5000; i++)
    add(&t, "%s\"v%d\"", i ? "," : "", i);
  add(&t, "]}");
  assert_non_null(strstr(refuse(t.s, t.n, NUCLEUS_ERR_LIMIT), "'enum'"));
  /* Too many properties. */
  t.n = 0;
  add(&t, "{\"type\":\"object\",\"properties\":{");
  for (int i = 0; i < 3000; i++)
    add(&t, "%s\"k%d\":{\"type\":\"boolean\"}", i ? "," : "", i);
  add(&t, "}}");
  assert_non_null(strstr(refuse(t.s, t.n, NUCLEUS_ERR_LIMIT), "properties"));
  /* Small schemas whose grammar would be huge: many enums. */
  t.n = 0;
  add(&t, "{\"type\":\"object\",\"properties\":{");
  for (int i = 0; i < 1000; i++) {
    add(&t, "%s\"p%d\":{\"enum\":[", i ? "," : "", i);
    for (int j = 0; j < 60; j++)
      add(&t, "%s\"value%d\"", j ? "," : "", j);
    add(&t, "]}");
  }
  add(&t, "}}");
  assert_non_null(strstr(refuse(t.s, t.n, NUCLEUS_ERR_LIMIT), "longer than"));
  /* Repetition bounds past the engine's. */
  /* (a maximum past them allows what the grammar makes) */
  assert_true(accepts("{\"type\":\"array\",\"maxItems\":1000000000000}", "[]"));
  REFUSE("{\"type\":\"string\",\"minLength\":1025}",
         NUCLEUS_ERR_INVALID_ARGUMENT);
  /* Counts at their bounds, nested, still compile (a grammar, not its
   * expansion). */
  assert_true(accepts("{\"type\":\"array\",\"items\":{\"type\":\"array\","
                      "\"items\":{\"type\":\"integer\"},\"maxItems\":1024},"
                      "\"minItems\":0,\"maxItems\":1024}",
                      "[[1,2],[]]"));
  /* A schema text past 1 MiB. */
  size_t big = (1u << 20) + 16;
  char *huge = malloc(big);
  assert_non_null(huge);
  memset(huge, ' ', big);
  huge[0] = '{';
  huge[big - 1] = '}';
  refuse(huge, big, NUCLEUS_ERR_LIMIT);
  free(huge);
  free(t.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void replay_one(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  LLVMFuzzerTestOneInput(data, len);
}

static void test_fuzz_corpus(void **state) {
  (void)state;
  assert_true(fuzz_corpus_replay("json_schema", replay_one, NULL) >= 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gbnf_text_and_objects),
      cmocka_unit_test(test_recursive_refs),
      cmocka_unit_test(test_integer_bounds),
      cmocka_unit_test(test_patterns),
      cmocka_unit_test(test_errors_name_the_keyword),
      cmocka_unit_test(test_keyword_types),
      cmocka_unit_test(test_oneof_nested),
      cmocka_unit_test(test_pattern_names_with_rules),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_fuzz_corpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
