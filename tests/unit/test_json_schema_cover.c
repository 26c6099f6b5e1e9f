/* The JSON Schema converter on the keywords real schemas use (issue 38):
 * numeric ranges as exact grammars (checked value by value), format and
 * pattern with lengths, keywords beside $ref/anyOf/allOf, objects'
 * patternProperties, further keys, min/maxProperties, dependentRequired,
 * uniqueItems, oneOf, $ref by JSON pointer and in a resource with an $id,
 * and unknown keywords ignored with a note. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"
#include "schema_test_util.h"

static const char *refuse(const char *schema) {
  static nucleus_error err;
  memset(&err, 0, sizeof err);
  char *gbnf = NULL;
  assert_int_not_equal(
      nucleus_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &err),
      NUCLEUS_OK);
  assert_null(gbnf);
  return err.message;
}

/* Every integer in [from, to] is taken exactly when lo <= v <= hi. */
static void integer_range_exact(const char *schema, long lo, long hi, long from,
                                long to) {
  nucleus_grammar *h = compile(schema);
  char t[32];
  for (long v = from; v <= to; v++) {
    snprintf(t, sizeof t, "%ld", v);
    if (takes(h, t) != (v >= lo && v <= hi)) fail_msg("%s: %ld", schema, v);
  }
  nucleus_grammar_free(h);
}

static void test_integer_ranges(void **state) {
  (void)state;
  integer_range_exact("{\"type\":\"integer\",\"minimum\":17,\"maximum\":4321}",
                      17, 4321, -20, 5000);
  integer_range_exact("{\"type\":\"integer\",\"minimum\":-1234,\"maximum\":-7}",
                      -1234, -7, -1500, 10);
  integer_range_exact("{\"type\":\"integer\",\"exclusiveMinimum\":-101,"
                      "\"exclusiveMaximum\":99}",
                      -100, 98, -300, 300);
  /* one side only: the other up to 16 digits */
  integer_range_exact("{\"type\":\"integer\",\"minimum\":995}", 995, 99999, 0,
                      2000);
  assert_true(
      accepts("{\"type\":\"integer\",\"minimum\":995}", "1234567890123456"));
  integer_range_exact("{\"type\":\"integer\",\"maximum\":-3}", -99999, -3,
                      -2000, 50);
  /* draft 4 exclusive flags */
  integer_range_exact("{\"type\":\"integer\",\"minimum\":0,"
                      "\"exclusiveMinimum\":true,\"maximum\":9,"
                      "\"exclusiveMaximum\":true}",
                      1, 8, -5, 20);
  /* no leading zeros, no "-0" */
  assert_false(
      accepts("{\"type\":\"integer\",\"minimum\":0,\"maximum\":99}", "07"));
  assert_false(
      accepts("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":5}", "-0"));
  /* multipleOf: a range enumerated; no maximum: the remainder automaton */
  integer_range_exact("{\"type\":\"integer\",\"multipleOf\":1,\"minimum\":3,"
                      "\"maximum\":9}",
                      3, 9, 0, 12);
  const char *m7 = "{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":0}";
  nucleus_grammar *h = compile(m7);
  char t[32];
  for (long v = -20; v <= 800; v++) {
    snprintf(t, sizeof t, "%ld", v);
    assert_true(takes(h, t) == (v >= 0 && v % 7 == 0));
  }
  nucleus_grammar_free(h);
  /* fractional multipleOf: whole numbers */
  const char *cents = "{\"type\":\"number\",\"multipleOf\":0.01,"
                      "\"minimum\":0}";
  assert_true(accepts(cents, "42"));
  assert_false(accepts(cents, "4.2"));
  assert_false(accepts(cents, "1000000"));
  assert_true(accepts("{\"type\":\"number\",\"multipleOf\":0.5}", "-3"));
  assert_non_null(strstr(refuse("{\"type\":\"number\",\"multipleOf\":0.3}"),
                         "'multipleOf' 0.3"));
  assert_non_null(strstr(refuse("{\"type\":\"integer\",\"multipleOf\":7,"
                                "\"minimum\":0,\"maximum\":100000000}"),
                         "'multipleOf'"));
}

/* Decimals: each of texts taken exactly when its value is in range. */
static void number_range_exact(const char *schema, double lo, bool lo_x,
                               double hi, bool hi_x) {
  static const char *const texts[] = {
      "-13",     "-12",          "-3.6",    "-3.51",  "-3.5",  "-3.50",
      "-3.4999", "-3",           "-1",      "-0.5",   "-0.01", "-0",
      "0",       "0.0",          "0.00",    "0.01",   "0.1",   "0.5",
      "0.999",   "0.9999999999", "1",       "1.0",    "1.000", "1.0001",
      "1.01",    "1.5",          "2",       "2.25",   "2.5",   "2.50",
      "2.5001",  "9.99",         "11.9999", "12",     "12.0",  "12.01",
      "13",      "100",          "100.25",  "1000000"};
  nucleus_grammar *h = compile(schema);
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    double v = strtod(texts[i], NULL);
    bool in = (lo_x ? v > lo : v >= lo) && (hi_x ? v < hi : v <= hi);
    /* "-0" is 0, and not made: a subset is fine */
    bool took = takes(h, texts[i]);
    if (took != in && !(in && !strcmp(texts[i], "-0")))
      fail_msg("%s: %s", schema, texts[i]);
  }
  nucleus_grammar_free(h);
}

static void test_number_ranges(void **state) {
  (void)state;
  number_range_exact("{\"type\":\"number\",\"minimum\":0.0,\"maximum\":1.0}", 0,
                     false, 1, false);
  number_range_exact("{\"type\":\"number\",\"minimum\":-3.5,\"maximum\":12}",
                     -3.5, false, 12, false);
  number_range_exact("{\"type\":\"number\",\"exclusiveMinimum\":0,"
                     "\"exclusiveMaximum\":1}",
                     0, true, 1, true);
  number_range_exact("{\"type\":\"number\",\"minimum\":2.5}", 2.5, false, 1e300,
                     false);
  number_range_exact("{\"type\":\"number\",\"maximum\":-0.5}", -1e300, false,
                     -0.5, false);
  number_range_exact("{\"type\":\"number\",\"minimum\":-12,"
                     "\"exclusiveMaximum\":-3.5}",
                     -12, false, -3.5, true);
  /* pydantic's Field(ge=0.0, le=1.0), and a wide range */
  assert_true(accepts("{\"type\":\"number\",\"minimum\":0.0,\"maximum\":1.0}",
                      "0.123456789"));
  assert_false(accepts("{\"type\":\"number\",\"minimum\":0.0,\"maximum\":1.0}",
                       "1.000000001"));
  assert_true(accepts("{\"type\":\"number\",\"minimum\":-1e300,"
                      "\"maximum\":1e300}",
                      "-31.25"));
  assert_non_null(strstr(
      refuse("{\"type\":\"number\",\"minimum\":2,\"maximum\":1}"), "no value"));
}

static void test_strings_with_lengths(void **state) {
  (void)state;
  const char *e = "{\"type\":\"string\",\"format\":\"email\",\"maxLength\":12}";
  assert_true(accepts(e, "\"ab@cd.ef\""));
  assert_false(accepts(e, "\"abcdef@ghijk.lm\""));
  /* a format whose strings all fit: the format alone */
  assert_true(accepts("{\"type\":\"string\",\"format\":\"date\","
                      "\"maxLength\":10,\"minLength\":10}",
                      "\"2024-02-28\""));
  assert_false(
      accepts("{\"type\":\"string\",\"format\":\"date\"}", "\"2024-02-30\""));
  assert_non_null(strstr(refuse("{\"type\":\"string\",\"format\":\"uuid\","
                                "\"maxLength\":10}"),
                         "format 'uuid'"));
  /* pattern and lengths: quantifiers capped, sides padded */
  const char *p = "{\"type\":\"string\",\"pattern\":\"^[a-z]+$\","
                  "\"maxLength\":5}";
  assert_true(accepts(p, "\"abcde\""));
  assert_false(accepts(p, "\"abcdef\""));
  p = "{\"type\":\"string\",\"pattern\":\"^[a-z]+-[0-9]+$\",\"maxLength\":6}";
  assert_true(accepts(p, "\"ab-12\""));
  assert_false(accepts(p, "\"abc-123\""));
  /* anchored and shorter than minLength: a quantifier repeats more */
  p = "{\"type\":\"string\",\"pattern\":\"^[a-z][a-z0-9]*$\",\"minLength\":3,"
      "\"maxLength\":5}";
  assert_true(accepts(p, "\"abc\""));
  assert_true(accepts(p, "\"a1234\""));
  assert_false(accepts(p, "\"ab\""));
  assert_false(accepts(p, "\"abcdef\""));
  p = "{\"type\":\"string\",\"pattern\":\"ab\",\"minLength\":4,"
      "\"maxLength\":6}";
  assert_true(accepts(p, "\"xxab\""));
  assert_false(accepts(p, "\"ab\""));
  /* anchors in each alternative; escapes; '.' takes no newline */
  p = "{\"type\":\"string\",\"pattern\":\"^ab$|^c\\\\.d$\"}";
  assert_true(accepts(p, "\"ab\""));
  assert_true(accepts(p, "\"c.d\""));
  assert_false(accepts(p, "\"abc.d\""));
  /* anchors on some alternatives only: ^a|b$|c is (^a)|(b$)|c (these were
   * refused: "anchors only at the ends"; ^a|b was read as ^(a|b)) */
  p = "{\"type\":\"string\",\"pattern\":\"^[a-z]{2}|^[a-z]{2}-[A-Z]{2}?$\"}";
  assert_true(accepts(p, "\"en\""));
  assert_true(accepts(p, "\"en-US and more\""));
  assert_false(accepts(p, "\"1en\""));
  p = "{\"type\":\"string\",\"pattern\":\"^ab|cd$|ef\"}";
  assert_true(accepts(p, "\"abzz\""));
  assert_true(accepts(p, "\"zzcd\""));
  assert_true(accepts(p, "\"zefz\""));
  assert_false(accepts(p, "\"zabz\""));
  assert_false(accepts(p, "\"cdz\""));
  /* anchors inside groups without a quantifier: brought out */
  p = "{\"type\":\"string\",\"pattern\":\"^$|(^(?:\\\\S+\\\\s+){0,3}\\\\S+$)"
      "\"}";
  assert_true(accepts(p, "\"\""));
  assert_true(accepts(p, "\"two words\""));
  assert_false(accepts(p, "\"two words \""));
  p = "{\"type\":\"string\",\"pattern\":\"^([^,]|$)\"}";
  assert_true(accepts(p, "\"\""));
  assert_true(accepts(p, "\"a,b\""));
  assert_false(accepts(p, "\",a\""));
  p = "{\"type\":\"string\",\"pattern\":\"(^Hpt_|^Int_|_Armour_)\"}";
  assert_true(accepts(p, "\"Hpt_x\""));
  assert_true(accepts(p, "\"x_Armour_y\""));
  assert_false(accepts(p, "\"xHpt_\""));
  p = "{\"type\":\"string\",\"pattern\":\"(^[a-z]+$)\"}";
  assert_true(accepts(p, "\"abc\""));
  assert_false(accepts(p, "\"abc1\""));
  /* under a quantifier an inner anchor is still refused */
  assert_non_null(strstr(refuse("{\"type\":\"string\",\"pattern\":"
                                "\"^(a($|/))*$\"}"),
                         "anchors"));
  p = "{\"type\":\"string\",\"pattern\":\"^ab|cd\"}";
  assert_true(accepts(p, "\"xcdx\""));
  assert_false(accepts(p, "\"xab\""));
  /* with lengths: the pattern's strings of those lengths (an
   * intersection, json_schema_meet.c; this was refused) */
  p = "{\"type\":\"string\",\"pattern\":\"^ab|cd$\",\"maxLength\":5}";
  assert_true(accepts(p, "\"abxyz\""));
  assert_true(accepts(p, "\"xcd\""));
  assert_false(accepts(p, "\"abxyzw\""));
  assert_false(accepts(p, "\"xyz\""));
  p = "{\"type\":\"string\",\"pattern\":\"^[\\\\S]\\\\S\\\\u0041.$\"}";
  assert_true(accepts(p, "\"x!Az\""));
  assert_false(accepts(p, "\"x Az\""));
  assert_false(accepts(p, "\"x!A\\n\""));
  assert_true(accepts("{\"type\":\"string\",\"pattern\":\"^[a\\\\-\\\\#]+$\"}",
                      "\"a-#\""));
  /* duration and regex: made (they were refused) */
  const char *d = "{\"type\":\"string\",\"format\":\"duration\"}";
  assert_true(accepts(d, "\"P3DT4H\""));
  assert_true(accepts(d, "\"P2W\""));
  assert_true(accepts(d, "\"PT5M\""));
  assert_false(accepts(d, "\"P\""));
  assert_false(accepts(d, "\"3D\""));
  assert_false(accepts(d, "\"PT\""));
  const char *x = "{\"type\":\"string\",\"format\":\"regex\"}";
  assert_true(accepts(x, "\"abc 12_\""));
  assert_false(accepts(x, "\"a(\""));
  assert_true(accepts("{\"type\":\"string\",\"format\":\"ipv4\"}",
                      "\"192.168.0.255\""));
  assert_false(
      accepts("{\"type\":\"string\",\"format\":\"ipv4\"}", "\"256.1.1.1\""));
}

static void test_combinators_with_siblings(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                  "\"integer\"},\"b\":{\"type\":\"string\"}},\"anyOf\":[{"
                  "\"required\":[\"a\"]},{\"required\":[\"b\"]}]}";
  assert_true(accepts(s, "{\"a\":1}"));
  assert_true(accepts(s, "{\"b\":\"x\"}"));
  assert_false(accepts(s, "{}"));
  s = "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
      "\"integer\"}},\"required\":[\"a\"]},{\"properties\":{\"b\":{\"type\":"
      "\"string\"},\"a\":{\"minimum\":3}},\"required\":[\"b\"]}]}";
  assert_true(accepts(s, "{\"a\":3,\"b\":\"x\"}"));
  assert_false(accepts(s, "{\"a\":2,\"b\":\"x\"}"));
  assert_false(accepts(s, "{\"a\":3}"));
  /* oneOf: disjoint branches are anyOf; overlapping ones are refused */
  assert_true(accepts("{\"oneOf\":[{\"type\":\"string\"},{\"type\":"
                      "\"integer\"}]}",
                      "7"));
  assert_true(accepts("{\"type\":\"object\",\"oneOf\":[{\"properties\":{"
                      "\"x\":{}},\"required\":[\"x\"]},{\"properties\":{"
                      "\"y\":{}},\"required\":[\"y\"]}]}",
                      "{\"y\":1}"));
  assert_non_null(strstr(refuse("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":"
                                "\"integer\",\"maximum\":3}]}"),
                         "'oneOf'"));
  /* overlapping string branches: each without the others' strings
   * (json_schema_oneof.c; these were refused) */
  s = "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\","
      "\"maxLength\":3}]}";
  assert_true(accepts(s, "\"abcd\""));
  assert_false(accepts(s, "\"abc\""));
  /* closed objects: a property one declares and the other refuses is
   * always written (these were refused) */
  const char *cl =
      "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"a\":"
      "{\"type\":\"string\"},\"x\":{\"type\":\"integer\"}},"
      "\"additionalProperties\":false},{\"type\":\"object\","
      "\"properties\":{\"b\":{\"type\":\"string\"},\"x\":{\"type\":"
      "\"integer\"}},\"additionalProperties\":false}]}";
  assert_true(accepts(cl, "{\"a\":\"u\",\"x\":1}"));
  assert_true(accepts(cl, "{\"b\":\"v\"}"));
  assert_false(accepts(cl, "{}"));        /* both would match */
  assert_false(accepts(cl, "{\"x\":2}")); /* both would match */
  /* a branch that cannot be kept apart from one made disjoint from it is
   * left out (with a note): the other's values only */
  const char *half = "{\"oneOf\":[{\"type\":\"object\",\"properties\":{"
                     "\"a\":{\"type\":\"string\"}}},{\"type\":\"object\","
                     "\"properties\":{\"b\":{\"type\":\"string\"}},"
                     "\"additionalProperties\":false}]}";
  assert_true(accepts(half, "{\"a\":\"u\"}"));
  assert_false(accepts(half, "{\"b\":\"v\"}")); /* valid under both */
  assert_false(accepts(half, "{}"));
  /* oneOf branches narrowed to be disjoint: what one requires the other
   * never writes; a discriminator both declare becomes required */
  s = "{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"string\"},"
      "\"q\":{\"type\":\"string\"}},\"oneOf\":[{\"required\":[\"p\"]},{"
      "\"required\":[\"q\"]}]}";
  assert_true(accepts(s, "{\"p\":\"x\"}"));
  assert_true(accepts(s, "{\"q\":\"y\"}"));
  assert_false(accepts(s, "{\"p\":\"x\",\"q\":\"y\"}"));
  s = "{\"type\":\"object\",\"oneOf\":[{\"properties\":{\"country\":{"
      "\"enum\":[\"CAN\"]},\"state\":{\"type\":\"string\"}}},{\"properties\":"
      "{\"country\":{\"enum\":[\"MEX\"]}}}]}";
  assert_true(accepts(s, "{\"country\":\"CAN\",\"state\":\"ON\"}"));
  assert_true(accepts(s, "{\"country\":\"MEX\"}"));
  assert_false(accepts(s, "{}"));
  s = "{\"oneOf\":[{\"type\":\"null\"},{\"enum\":[\"GET\",\"POST\"]}]}";
  assert_true(accepts(s, "null"));
  assert_true(accepts(s, "\"GET\""));
  /* a branch no value matches is left out of anyOf */
  assert_true(accepts("{\"type\":\"string\",\"anyOf\":[{\"type\":"
                      "\"integer\"},{\"maxLength\":2}]}",
                      "\"ab\""));
}

static void test_objects(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"patternProperties\":{\"^x-[a-z]+$\":"
                  "{\"type\":\"integer\"}},\"additionalProperties\":false}";
  assert_true(accepts(s, "{\"x-ab\":1,\"x-c\":2}"));
  assert_false(accepts(s, "{\"y\":1}"));
  assert_false(accepts(s, "{\"x-ab\":\"s\"}"));
  /* further keys: never a declared name */
  s = "{\"type\":\"object\",\"properties\":{\"ab\":{\"type\":\"integer\"}},"
      "\"additionalProperties\":{\"type\":\"string\"}}";
  assert_true(accepts(s, "{\"ab\":1,\"zz\":\"s\"}"));
  assert_true(accepts(s, "{\"a\":\"s\",\"abc\":\"t\"}"));
  assert_false(accepts(s, "{\"ab\":1,\"ab\":\"s\"}"));
  s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
      "\"b\":{\"type\":\"integer\"},\"c\":{\"type\":\"integer\"}},"
      "\"minProperties\":2,\"maxProperties\":2}";
  assert_true(accepts(s, "{\"a\":1,\"b\":2}"));
  assert_false(accepts(s, "{\"a\":1}"));
  assert_false(accepts(s, "{\"a\":1,\"b\":2,\"c\":3}"));
  s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
      "\"b\":{\"type\":\"integer\"}},\"dependentRequired\":{\"a\":[\"b\"]}}";
  assert_false(accepts(s, "{\"a\":1}"));
  assert_true(accepts(s, "{\"a\":1,\"b\":2}"));
  /* a property with a dependent schema is never written, nor is its
   * name a further key */
  s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
      "\"b\":{\"type\":\"integer\"}},\"dependentSchemas\":{\"a\":{"
      "\"required\":[\"c\"]}},\"additionalProperties\":{\"type\":\"string\"}}";
  assert_false(accepts(s, "{\"a\":1}"));
  assert_false(accepts(s, "{\"a\":\"x\"}"));
  assert_true(accepts(s, "{\"b\":1,\"ab\":\"x\"}"));
  assert_non_null(strstr(refuse("{\"type\":\"object\",\"properties\":{\"a\":"
                                "{}},\"required\":[\"a\"],\"dependencies\":{"
                                "\"a\":{\"required\":[\"c\"]}}}"),
                         "'dependencies'"));
  /* required names that properties lacks */
  assert_true(
      accepts("{\"type\":\"object\",\"required\":[\"k\"]}", "{\"k\":[1]}"));
  /* a plain object is any object */
  assert_true(accepts("{\"type\":\"object\"}", "{\"q\":{\"r\":null}}"));
  /* uniqueItems: at most one item */
  const char *u = "{\"type\":\"array\",\"uniqueItems\":true}";
  assert_true(accepts(u, "[1]"));
  assert_false(accepts(u, "[1,2]"));
  /* uniqueItems over a few values: every array without a repeat, of any
   * length (it made one item at most, and refused minItems 2) */
  u = "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"enum\":"
      "[\"a\",\"b\",\"c\"]}}";
  assert_true(accepts(u, "[]"));
  assert_true(accepts(u, "[\"c\",\"a\",\"b\"]"));
  assert_true(accepts(u, "[\"b\",\"c\"]"));
  assert_false(accepts(u, "[\"a\",\"a\"]"));
  assert_false(accepts(u, "[\"a\",\"b\",\"a\"]"));
  assert_false(accepts(u, "[\"d\"]"));
  u = "{\"type\":\"array\",\"uniqueItems\":true,\"minItems\":2,"
      "\"maxItems\":3,\"items\":{\"type\":\"integer\",\"enum\":[1,2,"
      "3,4,1.0,\"x\"]}}";
  assert_false(accepts(u, "[1]"));
  assert_true(accepts(u, "[4,1]"));
  assert_true(accepts(u, "[3,2,1]"));
  assert_false(accepts(u, "[1,2,3,4]"));
  assert_false(accepts(u, "[1,1.0]"));   /* one value: 1.0 is 1 */
  assert_false(accepts(u, "[1,\"x\"]")); /* not an integer */
  u = "{\"type\":\"array\",\"uniqueItems\":true,\"minItems\":2,"
      "\"items\":{\"type\":\"boolean\"}}";
  assert_true(accepts(u, "[true,false]"));
  assert_false(accepts(u, "[true,true]"));
  assert_false(accepts(u, "[false]"));
  /* more items than distinct values */
  assert_non_null(
      strstr(refuse("{\"type\":\"array\",\"uniqueItems\":true,"
                    "\"minItems\":3,\"items\":{\"type\":\"boolean\"}}"),
             "minItems 3"));
  /* items the grammar cannot compare: still one item at most, and
   * minItems 2 names the keyword, the items' type and why */
  assert_string_equal(
      refuse("{\"type\":\"array\",\"uniqueItems\":true,\"minItems\":2,"
             "\"items\":{\"type\":\"string\"}}"),
      "'uniqueItems' with minItems 2 is not supported over items of type "
      "'string': the grammar keeps items apart only when they take at most "
      "10 values (an enum, a const, booleans, null), as a rule per set of "
      "values used; it cannot remember which strings, numbers, arrays or "
      "objects an array already holds (with minItems 0 or 1 it makes arrays "
      "of one item at most) (at #)");
  assert_non_null(strstr(refuse("{\"type\":\"array\",\"uniqueItems\":true,"
                                "\"minItems\":3,\"items\":{\"$ref\":"
                                "\"#/$defs/n\"},\"$defs\":{\"n\":{"
                                "\"type\":\"number\"}}}"),
                         "over items of type 'number'"));
  assert_non_null(strstr(refuse("{\"type\":\"array\",\"uniqueItems\":true,"
                                "\"minItems\":2}"),
                         "over items of any value"));
}

static void test_refs_and_notes(void **state) {
  (void)state;
  assert_true(accepts("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                      "\"integer\"},\"b\":{\"$ref\":\"#/properties/a\"}}}",
                      "{\"a\":1,\"b\":2}"));
  /* a resource with an $id: its refs resolve in it (a tool's parameters
   * inside the call's wrapper) */
  const char *s = "{\"type\":\"object\",\"properties\":{\"args\":{\"$id\":"
                  "\"urn:x\",\"$defs\":{\"A\":{\"type\":\"integer\"}},"
                  "\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":"
                  "\"#/$defs/A\"}},\"required\":[\"n\"]}},\"required\":"
                  "[\"args\"]}";
  assert_true(accepts(s, "{\"args\":{\"n\":3}}"));
  assert_false(accepts(s, "{\"args\":{\"n\":\"x\"}}"));
  assert_non_null(
      strstr(refuse("{\"$ref\":\"https://example.com/s.json\"}"), "remote"));
  /* unknown keywords: ignored, each named in a note */
  const char *u = "{\"type\":\"string\",\"x-foo\":1,\"id\":\"a\",\"readonly\":"
                  "true,\"markdownDescription\":\"m\",\"_format\":\"q\"}";
  char *gbnf = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_json_schema_to_gbnf(u, strlen(u), &gbnf, &err),
                   NUCLEUS_OK);
  assert_non_null(strstr(gbnf, "# json-schema: ignored unknown keyword "
                               "'x-foo' (at #)"));
  assert_non_null(strstr(gbnf, "'markdownDescription'"));
  nucleus_free(gbnf);
  assert_true(accepts(u, "\"hello\""));
}

/* A part no value satisfies: an optional property, a branch, a type of a
 * list, further items are left out; a required one is an error. */
static void test_unsatisfiable_parts(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                  "\"object\",\"enum\":[\"x\"]},\"b\":{\"type\":\"integer\"}}}";
  assert_true(accepts(s, "{\"b\":1}"));
  assert_false(accepts(s, "{\"a\":\"x\",\"b\":1}"));
  assert_true(accepts("{\"anyOf\":[{\"type\":\"integer\",\"minimum\":5,"
                      "\"maximum\":1},{\"type\":\"string\"}]}",
                      "\"x\""));
  s = "{\"type\":[\"integer\",\"string\"],\"minimum\":5,\"maximum\":1}";
  assert_true(accepts(s, "\"s\""));
  assert_false(accepts(s, "3"));
  assert_true(accepts("{\"type\":\"array\",\"items\":false}", "[]"));
  assert_true(accepts("{\"type\":\"array\",\"items\":{\"enum\":[1],"
                      "\"type\":\"string\"}}",
                      "[]"));
  assert_non_null(strstr(refuse("{\"type\":\"object\",\"properties\":{\"a\":"
                                "false},\"required\":[\"a\"]}"),
                         "matches nothing (at #/properties/a)"));
}

/* not: narrowed by required names and types; beside enum, the values */
static void test_not(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},"
                  "\"not\":{\"required\":[\"a\",\"b\"]}}";
  assert_false(accepts(s, "{\"a\":1,\"b\":2}"));
  assert_true(accepts(s, "{\"b\":2}"));
  s = "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"not\":{"
      "\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}}";
  assert_true(accepts(s, "{}"));
  assert_false(accepts(s, "{\"a\":1}"));
  s = "{\"type\":[\"string\",\"integer\"],\"not\":{\"type\":[\"string\","
      "\"null\"]}}";
  assert_true(accepts(s, "5"));
  assert_false(accepts(s, "\"x\""));
  s = "{\"enum\":[\"a\",\"b\"],\"not\":{\"const\":\"a\"}}";
  assert_true(accepts(s, "\"b\""));
  assert_false(accepts(s, "\"a\""));
  assert_non_null(
      strstr(refuse("{\"type\":\"object\",\"properties\":{\"a\":{}},"
                    "\"required\":[\"a\"],\"not\":{\"required\":"
                    "[\"a\"]}}"),
             "'not'"));
  assert_non_null(
      strstr(refuse("{\"type\":\"string\",\"not\":{\"minLength\":3}}"),
             "'not' is supported for"));
  /* not a pattern: the strings without a match (json_schema_meet.c) */
  s = "{\"type\":\"string\",\"not\":{\"pattern\":\"x\"}}";
  assert_true(accepts(s, "\"ab\""));
  assert_false(accepts(s, "\"axb\""));
  /* not an enum of strings: every other string (these were refused) */
  const char *e = "{\"type\":\"string\",\"not\":{\"enum\":[\"ab\",\"a\","
                  "\"a.c\",\"x]y\",\"ab\"]}}";
  assert_true(accepts(e, "\"\""));
  assert_true(accepts(e, "\"abc\""));
  assert_true(accepts(e, "\"b\""));
  assert_true(accepts(e, "\"aXc\""));
  assert_true(accepts(e, "\"x]\""));
  assert_false(accepts(e, "\"ab\""));
  assert_false(accepts(e, "\"a\""));
  assert_false(accepts(e, "\"a.c\""));
  assert_false(accepts(e, "\"x]y\""));
  assert_false(accepts(e, "1"));
  e = "{\"not\":{\"type\":\"string\",\"const\":\"up\"},\"minLength\":1}";
  assert_false(accepts(e, "\"\""));
  assert_false(accepts(e, "\"up\""));
  assert_true(accepts(e, "\"upx\""));
  assert_true(accepts(e, "\"u\""));
  /* not a run of one class: a character outside it */
  e = "{\"type\":\"string\",\"minLength\":1,\"not\":{\"pattern\":"
      "\"^[\\\\.\\\\-\\\\s]+$\"}}";
  assert_true(accepts(e, "\"a\"")); /* with lengths: the core alone */
  assert_false(accepts(e, "\".\""));
  assert_false(accepts(e, "\"-\""));
  assert_false(accepts(e, "\"\""));
  e = "{\"type\":\"string\",\"not\":{\"pattern\":\"^\\\\d+$\"}}";
  assert_true(accepts(e, "\"\""));
  assert_true(accepts(e, "\"12a\""));
  assert_false(accepts(e, "\"123\""));
}

/* oneOf branches made disjoint exactly (issue 38 item 2): arrays whose
 * first items cannot meet make one item at least (the empty array matches
 * both, so it is no valid value); string branches beside branches of other
 * types; properties whose exact patterns share no string as
 * discriminators. What still overlaps is a 400 naming 'oneOf'. */
static void test_oneof_made_disjoint(void **state) {
  (void)state;
  const char *s = "{\"oneOf\":[{\"type\":\"array\",\"items\":{\"type\":"
                  "\"number\"}},{\"type\":\"array\",\"items\":{\"type\":"
                  "\"string\"}}]}";
  assert_true(accepts(s, "[1,2.5]"));
  assert_true(accepts(s, "[\"a\"]"));
  assert_false(accepts(s, "[]")); /* valid under both */
  assert_false(accepts(s, "[1,\"a\"]"));
  /* counts that cannot meet */
  s = "{\"oneOf\":[{\"type\":\"array\",\"maxItems\":0},{\"type\":\"array\","
      "\"minItems\":1,\"items\":{\"type\":\"integer\"}}]}";
  assert_true(accepts(s, "[]"));
  assert_true(accepts(s, "[3,4]"));
  /* items that are a union, each branch apart from the other's items */
  s = "{\"$defs\":{\"n\":{\"oneOf\":[{\"type\":\"number\"},{\"type\":"
      "\"null\"}]}},\"oneOf\":[{\"type\":\"array\",\"items\":{\"$ref\":"
      "\"#/$defs/n\"}},{\"type\":\"array\",\"items\":{\"type\":\"array\","
      "\"items\":{\"$ref\":\"#/$defs/n\"}}}]}";
  assert_true(accepts(s, "[null,1]"));
  assert_true(accepts(s, "[[1],[]]"));
  assert_false(accepts(s, "[]"));
  /* enum items with no value in common; first items of a tuple */
  s = "{\"oneOf\":[{\"type\":\"array\",\"items\":{\"enum\":[\"top\","
      "\"left\"]}},{\"type\":\"array\",\"prefixItems\":[{\"enum\":["
      "\"vertical\"]}],\"items\":{\"type\":\"string\"}}]}";
  assert_true(accepts(s, "[\"left\",\"top\"]"));
  assert_true(accepts(s, "[\"vertical\",\"top\"]"));
  assert_false(accepts(s, "[]"));
  /* items that may meet: still refused */
  assert_non_null(strstr(refuse("{\"oneOf\":[{\"type\":\"array\",\"items\":"
                                "{\"type\":\"string\"}},{\"type\":\"array\","
                                "\"items\":{\"type\":\"string\","
                                "\"maxLength\":2}}]}"),
                         "'oneOf' whose branches 0 and 1"));
  /* string branches (made without each other's strings) beside a null */
  s = "{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^[a-f0-9]{4}$\"},"
      "{\"type\":\"string\",\"enum\":[\"\"]},{\"type\":\"null\"}]}";
  assert_true(accepts(s, "\"ab12\""));
  assert_true(accepts(s, "\"\""));
  assert_true(accepts(s, "null"));
  assert_false(accepts(s, "\"xyz\""));
  s = "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\",\"maxLength\":"
      "0},{\"type\":[\"boolean\",\"integer\"]}]}";
  assert_true(accepts(s, "\"a\""));
  assert_false(accepts(s, "\"\"")); /* valid under both strings */
  assert_true(accepts(s, "true"));
  assert_true(accepts(s, "12"));
  /* a branch of another type whose rule was written before (a $ref used
   * twice): made after the strings' intersection, whose grammar holds
   * only the rules written since the string bodies began (it failed with
   * "undefined rule") */
  s = "{\"$defs\":{\"n\":{\"type\":\"integer\",\"minimum\":3}},\"type\":"
      "\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"},\"b\":{"
      "\"oneOf\":[{\"$ref\":\"#/$defs/n\"},{\"type\":\"string\",\"pattern\":"
      "\"^[0-9]+%$\"},{\"type\":\"string\",\"enum\":[\"off\",\"10%\"]}]}},"
      "\"required\":[\"a\",\"b\"]}";
  assert_true(accepts(s, "{\"a\":3,\"b\":4}"));
  assert_true(accepts(s, "{\"a\":3,\"b\":\"50%\"}"));
  assert_true(accepts(s, "{\"a\":3,\"b\":\"off\"}"));
  assert_false(accepts(s, "{\"a\":3,\"b\":\"10%\"}")); /* two branches */
  assert_false(accepts(s, "{\"a\":3,\"b\":2}"));
  /* other types that meet (an integer is a number), or a string branch
   * that takes what is no string (a pattern alone): refused */
  assert_non_null(strstr(refuse("{\"oneOf\":[{\"type\":\"string\"},{\"type\":"
                                "\"string\",\"maxLength\":1},{\"type\":"
                                "\"integer\"},{\"type\":\"number\"}]}"),
                         "'oneOf'"));
  assert_non_null(strstr(refuse("{\"oneOf\":[{\"pattern\":\"^a\"},{\"type\":"
                                "\"string\",\"maxLength\":1},{\"type\":"
                                "\"null\"}]}"),
                         "'oneOf'"));
  /* a discriminator of exact patterns that share no string */
  s = "{\"type\":\"object\",\"oneOf\":[{\"properties\":{\"status\":{"
      "\"type\":\"string\",\"pattern\":\"^success$\"},\"data\":{}},"
      "\"required\":[\"status\",\"data\"]},{\"properties\":{\"status\":{"
      "\"type\":\"string\",\"pattern\":\"^(fail|error)$\"},\"data\":{}},"
      "\"required\":[\"status\",\"data\"]}]}";
  assert_true(accepts(s, "{\"status\":\"success\",\"data\":1}"));
  assert_true(accepts(s, "{\"status\":\"error\",\"data\":1}"));
  assert_false(accepts(s, "{\"status\":\"x\",\"data\":1}"));
  /* patterns that share a string ("ab"), or one not made exactly (\d is
   * more than 0-9 to a validator): refused */
  const char *two = "{\"type\":\"object\",\"oneOf\":[{\"properties\":{\"k\":"
                    "{\"type\":\"string\",\"pattern\":\"%s\"}},\"required\":"
                    "[\"k\"],\"additionalProperties\":false},{\"properties\":"
                    "{\"k\":{\"type\":\"string\",\"pattern\":\"%s\"}},"
                    "\"required\":[\"k\"],\"additionalProperties\":false}]}";
  char buf[512];
  snprintf(buf, sizeof buf, two, "^a", "b$");
  assert_non_null(strstr(refuse(buf), "'oneOf'"));
  snprintf(buf, sizeof buf, two, "^\\\\d$", "^x$");
  assert_non_null(strstr(refuse(buf), "'oneOf'"));
  snprintf(buf, sizeof buf, two, "^[a-c]+$", "^[d-f]+$");
  assert_true(accepts(buf, "{\"k\":\"abc\"}"));
  assert_true(accepts(buf, "{\"k\":\"fed\"}"));
  assert_false(accepts(buf, "{\"k\":\"ad\"}"));
  /* closed objects whose keys (names, patterns) share none: only {}
   * matches both, so each writes one key at least (pyrseas-0.8.json) */
  s = "{\"oneOf\":[{\"type\":\"object\",\"additionalProperties\":false,"
      "\"patternProperties\":{\"^schema \":{\"type\":\"integer\"},\"^cast \":"
      "{\"type\":\"string\"}}},{\"type\":\"object\",\"additionalProperties\":"
      "false,\"properties\":{\"owner\":{\"type\":\"string\"}},"
      "\"patternProperties\":{\"^table \":{\"type\":\"boolean\"}}}]}";
  assert_true(accepts(s, "{\"schema a\":1,\"cast b\":\"x\"}"));
  assert_true(accepts(s, "{\"owner\":\"me\"}"));
  assert_false(accepts(s, "{}")); /* valid under both */
  assert_false(accepts(s, "{\"schema a\":1,\"owner\":\"me\"}"));
  assert_false(accepts(s, "{\"cast b\":1}"));
  /* keys one pattern of each takes: refused */
  assert_non_null(strstr(refuse("{\"oneOf\":[{\"type\":\"object\","
                                "\"additionalProperties\":false,"
                                "\"patternProperties\":{\"^s\":{}}},{\"type\":"
                                "\"object\",\"additionalProperties\":false,"
                                "\"patternProperties\":{\"^sc\":{}}}]}"),
                         "'oneOf' whose branches 0 and 1"));
}

/* patternProperties of different schemas whose patterns no key matches
 * two of: each pattern's keys with its own values (they made no keys:
 * minProperties 1 was refused); patterns that meet still make none. */
static void test_pattern_properties_apart(void **state) {
  (void)state;
  const char *s = "{\"type\":\"object\",\"additionalProperties\":false,"
                  "\"minProperties\":1,\"patternProperties\":{\"^a_\":{"
                  "\"type\":\"integer\"},\"^b_\":{\"type\":\"string\"}}}";
  assert_true(accepts(s, "{\"a_x\":1,\"b_y\":\"s\"}"));
  assert_true(accepts(s, "{\"b_\":\"\"}"));
  assert_false(accepts(s, "{\"a_x\":\"s\"}"));
  assert_false(accepts(s, "{\"c\":1}"));
  assert_false(accepts(s, "{}"));
  assert_non_null(strstr(refuse("{\"type\":\"object\",\"minProperties\":1,"
                                "\"patternProperties\":{\"^a\":{\"type\":"
                                "\"integer\"},\"^ab\":{\"type\":"
                                "\"string\"}}}"),
                         "minProperties 1"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integer_ranges),
      cmocka_unit_test(test_number_ranges),
      cmocka_unit_test(test_strings_with_lengths),
      cmocka_unit_test(test_combinators_with_siblings),
      cmocka_unit_test(test_objects),
      cmocka_unit_test(test_refs_and_notes),
      cmocka_unit_test(test_unsatisfiable_parts),
      cmocka_unit_test(test_not),
      cmocka_unit_test(test_oneof_made_disjoint),
      cmocka_unit_test(test_pattern_properties_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
