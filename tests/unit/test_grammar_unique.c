/* uniqueItems checked exactly by the matcher (grammar_unique.h, issue 38):
 * repeats refused by value (strings decoded, numbers as a validator reads
 * them), every array of the allowed lengths reachable and nothing else, no
 * dead end (an exhaustive walk of small vocabularies through the mask),
 * the mask equal to the reference walk, a refused token undone, clones
 * independent, paths through properties and items, and the places outside
 * the subset keeping the earlier handling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"
#include "grammar/grammar_state.h"
#include "schema_test_util.h"

/* The schema's error through the whole-output compile. */
static const char *refuse_doc(const char *schema) {
  static nucleus_error err;
  memset(&err, 0, sizeof err);
  char *gbnf = NULL;
  assert_int_not_equal(
      nucleus_json_schema_to_gbnf_doc(schema, strlen(schema), &gbnf, &err),
      NUCLEUS_OK);
  assert_null(gbnf);
  return err.message;
}

static const char *k_str =
    "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"type\":\"string\"}}";
static const char *k_num =
    "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"type\":\"number\"}}";

static void test_repeats_refused(void **state) {
  (void)state;
  assert_true(accepts(k_str, "[\"a\",\"b\",\"ab\",\"\"]"));
  assert_false(accepts(k_str, "[\"a\",\"a\"]"));
  assert_false(accepts(k_str, "[\"a\",\"b\",\"a\"]"));
  /* decoded: escapes are the characters they stand for */
  assert_false(accepts(k_str, "[\"a\",\"\\u0061\"]"));
  assert_false(accepts(k_str, "[\"\\/\",\"/\"]"));
  assert_false(accepts(k_str, "[\"\\ud83d\\ude00\",\"\xf0\x9f\x98\x80\"]"));
  assert_false(accepts(k_str, "[\"\xc3\xa9\",\"\\u00e9\"]"));
  assert_true(accepts(k_str, "[\"\\ud83d\",\"\\ude00\"]"));
  assert_true(accepts(k_str, "[\"a\",\"A\",\"a \"]"));
  /* numbers by value: 1, 1.0 and 10e-1 are one value */
  assert_true(accepts(k_num, "[1,2,1.5,-1,0.1]"));
  assert_false(accepts(k_num, "[1,1.0]"));
  assert_false(accepts(k_num, "[1,10e-1]"));
  assert_false(accepts(k_num, "[0.5,5e-1]"));
  assert_false(accepts(k_num, "[0,-0]"));
  assert_false(accepts(k_num, "[100,1e2]"));
  /* an integer literal is exact, another number a double */
  assert_true(accepts(k_num, "[9007199254740993,9007199254740992.0]"));
  assert_false(accepts(k_num, "[9007199254740992,9007199254740992.0]"));
  assert_false(accepts(k_num, "[0.1,0.10]"));
  /* integers too, and minItems above 1 is no longer refused */
  const char *i = "{\"type\":\"array\",\"uniqueItems\":true,\"minItems\":3,"
                  "\"items\":{\"type\":\"integer\"}}";
  assert_true(accepts(i, "[3,1,2]"));
  assert_false(accepts(i, "[3,1,3]"));
  assert_false(accepts(i, "[3,1]"));
  /* 1,024 items recorded at most: the ',' after the last is refused */
  char *big = malloc(8 * 1100);
  assert_non_null(big);
  size_t n = 0;
  for (int v = 0; v < 1024; v++)
    n += (size_t)sprintf(big + n, "%c%d", v ? ',' : '[', v);
  nucleus_grammar *h = compile(k_num);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, big, n, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, ",", 1, &ok, NULL), NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "]", 1, &ok, NULL), NC_OK);
  assert_true(ok && nc_grammar_matcher_accepting(m));
  nc_grammar_matcher_free(m);
  nucleus_grammar_free(h);
  free(big);
}

static void test_paths(void **state) {
  (void)state;
  const char *p = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                  "\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{"
                  "\"type\":\"string\",\"maxLength\":3},\"uniqueItems\":true,"
                  "\"minItems\":2}},\"required\":[\"tags\"]}";
  assert_true(accepts(p, "{\"n\":1,\"tags\":[\"x\",\"y\"]}"));
  assert_false(accepts(p, "{\"n\":1,\"tags\":[\"x\",\"x\"]}"));
  /* each object of a list has its own array */
  const char *l = "{\"type\":\"array\",\"items\":{\"type\":\"object\","
                  "\"properties\":{\"t\":{\"type\":\"array\",\"items\":{"
                  "\"type\":\"integer\"},\"uniqueItems\":true}}}}";
  assert_true(accepts(l, "[{\"t\":[1,2]},{\"t\":[1,2]}]"));
  assert_false(accepts(l, "[{\"t\":[1,2]},{\"t\":[2,2]}]"));
  /* a non-unique array beside: repeats allowed there */
  const char *b = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                  "\"array\",\"items\":{\"type\":\"string\"}},\"u\":{\"type\":"
                  "\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":"
                  "true}}}";
  assert_true(accepts(b, "{\"a\":[\"q\",\"q\"],\"u\":[\"q\",\"r\"]}"));
  assert_false(accepts(b, "{\"a\":[\"q\"],\"u\":[\"q\",\"q\"]}"));
  /* through a $ref (pydantic's nested models): each reference its own
   * array, checked */
  const char *r =
      "{\"$defs\":{\"U\":{\"type\":\"array\",\"items\":{\"type\":"
      "\"string\"},\"uniqueItems\":true},\"M\":{\"type\":"
      "\"object\",\"properties\":{\"u\":{\"$ref\":\"#/$defs/U\"}}}},"
      "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":"
      "\"#/$defs/M\"},\"b\":{\"$ref\":\"#/$defs/M\"}}}";
  assert_true(accepts(r, "{\"a\":{\"u\":[\"x\",\"y\"]},\"b\":{\"u\":[\"x\","
                         "\"y\"]}}"));
  assert_false(accepts(r, "{\"a\":{\"u\":[\"x\",\"y\"]},\"b\":{\"u\":[\"y\","
                          "\"y\"]}}"));
  assert_false(accepts(r, "{\"a\":{\"u\":[\"x\",\"x\"]}}"));
  /* a recursion: the root's own array is checked; the nested ones, one
   * rule at every depth, keep the earlier handling (one item at most) */
  const char *t = "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":"
                  "\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":"
                  "true},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":"
                  "\"#\"}}}}";
  assert_true(accepts(t, "{\"tags\":[\"a\",\"b\"],\"kids\":[{\"tags\":"
                         "[\"a\"]}]}"));
  assert_false(accepts(t, "{\"tags\":[\"a\",\"a\"]}"));
  assert_false(accepts(t, "{\"kids\":[{\"tags\":[\"a\",\"b\"]}]}"));
  const char *d = "{\"$defs\":{\"T\":{\"type\":\"object\",\"properties\":{"
                  "\"tags\":{\"type\":\"array\",\"items\":{\"type\":"
                  "\"integer\"},\"uniqueItems\":true},\"kids\":{\"type\":"
                  "\"array\",\"items\":{\"$ref\":\"#/$defs/T\"}}}}},\"$ref\":"
                  "\"#/$defs/T\"}";
  assert_true(accepts(d, "{\"tags\":[1],\"kids\":[{\"tags\":[2]}]}"));
  assert_false(accepts(d, "{\"tags\":[1,2]}"));
  /* a target first met in a recursion (converted without directives
   * there) and then by a plain reference: checked there */
  const char *w =
      "{\"$defs\":{\"U\":{\"type\":\"array\",\"items\":{\"type\":"
      "\"string\"},\"uniqueItems\":true},\"M\":{\"type\":\"object\","
      "\"properties\":{\"u\":{\"$ref\":\"#/$defs/U\"},\"kids\":{"
      "\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/M\"}}}}},"
      "\"type\":\"object\",\"properties\":{\"m\":{\"$ref\":"
      "\"#/$defs/M\"},\"w\":{\"$ref\":\"#/$defs/U\"}}}";
  assert_true(accepts(w, "{\"m\":{\"u\":[\"a\"]},\"w\":[\"a\",\"b\"]}"));
  assert_false(accepts(w, "{\"w\":[\"a\",\"a\"]}"));
  assert_false(accepts(w, "{\"m\":{\"u\":[\"a\",\"b\"]}}"));
  /* outside the subset: a branch, the earlier handling (a 400 with
   * minItems 2) */
  assert_non_null(strstr(
      refuse_doc("{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":"
                 "\"string\"},\"uniqueItems\":true,\"minItems\":2},{\"type\":"
                 "\"null\"}]}"),
      "'uniqueItems' with minItems 2 is not supported"));
  /* a grammar embedded in another (tools): no directive, the 400 */
  char *gbnf = NULL;
  nucleus_error err = {0};
  const char *two = "{\"type\":\"array\",\"uniqueItems\":true,\"minItems\":2,"
                    "\"items\":{\"type\":\"string\"}}";
  assert_int_not_equal(
      nucleus_json_schema_to_gbnf(two, strlen(two), &gbnf, &err), NUCLEUS_OK);
  assert_int_equal(
      nucleus_json_schema_to_gbnf_doc(two, strlen(two), &gbnf, &err),
      NUCLEUS_OK);
  assert_non_null(strstr(gbnf, "#@unique-items []\n"));
  nucleus_free(gbnf);
  /* too few distinct values for minItems: no array matches */
  assert_non_null(
      strstr(refuse_doc("{\"type\":\"array\",\"uniqueItems\":true,"
                        "\"minItems\":3,\"items\":{\"type\":\"string\","
                        "\"pattern\":\"^[ab]$\"}}"),
             "minItems 3 is more than the 2 distinct values"));
  assert_non_null(
      strstr(refuse_doc("{\"type\":\"array\",\"uniqueItems\":true,"
                        "\"minItems\":5,\"items\":{\"type\":\"integer\","
                        "\"minimum\":0,\"maximum\":3}}"),
             "minItems 5 is more than the 4 distinct values"));
  /* a malformed directive */
  nucleus_grammar *g = NULL;
  const char *bad = "#@unique-items [true]\nroot ::= \"x\"\n";
  assert_int_not_equal(nucleus_grammar_create(bad, strlen(bad), NULL, &g, &err),
                       NUCLEUS_OK);
}

/* ------------------------------------------------ the exhaustive walk */
typedef struct walk {
  nc_grammar_vocab *gv;
  const char *const *pieces;
  int n;
  char out[256];
  size_t len;
  char **seen;
  int n_seen, cap_seen;
  long nodes;
} walk;

static void record(walk *w) {
  for (int i = 0; i < w->n_seen; i++)
    if (!strcmp(w->seen[i], w->out)) fail_msg("produced twice: %s", w->out);
  if (w->n_seen == w->cap_seen) {
    w->cap_seen = w->cap_seen ? w->cap_seen * 2 : 64;
    w->seen = realloc(w->seen, (size_t)w->cap_seen * sizeof *w->seen);
    assert_non_null(w->seen);
  }
  w->seen[w->n_seen++] = strdup(w->out);
}

/* Every token sequence the mask lets through, depth first; each node's
 * mask equals the reference's and lets something through (no dead end).
 * Outputs are recorded when END is allowed. Token sequences spelling the
 * same text are walked once (the first spelling). */
static void walk_from(walk *w, nc_grammar_matcher *m, int depth) {
  w->nodes++;
  assert_true(depth < 64);
  uint64_t mask[2] = {0}, ref[2] = {0};
  assert_int_equal(nc_grammar_matcher_mask(m, w->gv, mask, NULL), NC_OK);
  assert_int_equal(nc_grammar_mask_reference(m, w->gv, ref, NULL), NC_OK);
  assert_memory_equal(mask, ref, sizeof mask);
  if (!mask[0] && !mask[1]) fail_msg("dead end after %s", w->out);
  for (int t = 0; t < w->n; t++) {
    if (!(mask[t / 64] >> (t % 64) & 1)) continue;
    if (!w->pieces[t]) { /* END */
      record(w);
      continue;
    }
    size_t pl = strlen(w->pieces[t]);
    /* a multi-byte token spells what single ones do: walk it only at the
     * end of the text, as the last step (enough to test it) */
    if (pl > 1 && depth % 3) continue;
    nc_grammar_matcher *c = NULL;
    assert_int_equal(nc_grammar_matcher_clone(m, &c, NULL), NC_OK);
    bool ok = false;
    assert_int_equal(nc_grammar_matcher_accept_token(c, w->gv, t, &ok, NULL),
                     NC_OK);
    assert_true(ok);
    size_t was = w->len;
    memcpy(w->out + w->len, w->pieces[t], pl + 1);
    w->len += pl;
    if (pl == 1)
      walk_from(w, c, depth + 1);
    else { /* check its mask only */
      uint64_t mk[2] = {0};
      assert_int_equal(nc_grammar_matcher_mask(c, w->gv, mk, NULL), NC_OK);
      if (!mk[0] && !mk[1]) fail_msg("dead end after %s", w->out);
    }
    w->len = was;
    w->out[was] = '\0';
    nc_grammar_matcher_free(c);
  }
}

static int has(const walk *w, const char *s) {
  for (int i = 0; i < w->n_seen; i++)
    if (!strcmp(w->seen[i], s)) return 1;
  return 0;
}

/* The walk of schema over pieces (NULL: END); returns the walk (caller
 * frees seen). */
static void run_walk(const char *schema, const char *const *pieces, int n,
                     walk *w) {
  memset(w, 0, sizeof *w);
  w->gv = test_vocab(pieces, n);
  w->pieces = pieces;
  w->n = n;
  nucleus_grammar *h = compile(schema);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  walk_from(w, m, 0);
  nc_grammar_matcher_free(m);
  nucleus_grammar_free(h);
  nc_grammar_vocab_free(w->gv);
}

static void walk_free(walk *w) {
  for (int i = 0; i < w->n_seen; i++)
    free(w->seen[i]);
  free(w->seen);
}

/* All orderings of k distinct values of vals[0..n), as JSON arrays. */
static int arrays(const char *const *vals, int n, int k, char used,
                  char *prefix, int depth, walk *w, int *missing) {
  if (depth == k) {
    char t[256];
    snprintf(t, sizeof t, "[%s]", prefix);
    if (!has(w, t)) {
      fprintf(stderr, "not reached: %s\n", t);
      (*missing)++;
    }
    return 1;
  }
  int count = 0;
  for (int i = 0; i < n; i++) {
    if (used >> i & 1) continue;
    size_t was = strlen(prefix);
    sprintf(prefix + was, "%s%s", depth ? "," : "", vals[i]);
    count += arrays(vals, n, k, (char)(used | 1 << i), prefix, depth + 1, w,
                    missing);
    prefix[was] = '\0';
  }
  return count;
}

static void test_walk_strings(void **state) {
  (void)state;
  /* items "a", "b", "c" by a pattern (not an enum: the check, not the
   * enum's rules), two or three of them */
  const char *schema = "{\"type\":\"array\",\"uniqueItems\":true,"
                       "\"minItems\":2,\"maxItems\":3,\"items\":{\"type\":"
                       "\"string\",\"pattern\":\"^[abc]$\"}}";
  const char *const pieces[] = {
      "[", "]", ",",  "\"",    "a",   "b",   "c",        "\\",  "u",   "0",
      "6", "1", NULL, "\",\"", "\"a", "a\"", "\"a\",\"", "\"]", "[\"", "aa"};
  walk w;
  run_walk(schema, pieces, (int)(sizeof pieces / sizeof *pieces), &w);
  const char *const vals[] = {"\"a\"", "\"b\"", "\"c\""};
  char prefix[256] = "";
  int missing = 0;
  int want = arrays(vals, 3, 2, 0, prefix, 0, &w, &missing) +
             arrays(vals, 3, 3, 0, prefix, 0, &w, &missing);
  assert_int_equal(missing, 0);
  assert_int_equal(w.n_seen, want); /* nothing else (no repeats) */
  walk_free(&w);
}

static void test_walk_integers(void **state) {
  (void)state;
  const char *schema = "{\"type\":\"array\",\"uniqueItems\":true,"
                       "\"minItems\":3,\"maxItems\":4,\"items\":{\"type\":"
                       "\"integer\",\"minimum\":0,\"maximum\":3}}";
  const char *const pieces[] = {"[", "]",  ",",  "0",  "1",  "2",
                                "3", NULL, "1,", ",2", "3]", "12"};
  walk w;
  run_walk(schema, pieces, (int)(sizeof pieces / sizeof *pieces), &w);
  const char *const vals[] = {"0", "1", "2", "3"};
  char prefix[256] = "";
  int missing = 0;
  int want = arrays(vals, 4, 3, 0, prefix, 0, &w, &missing) +
             arrays(vals, 4, 4, 0, prefix, 0, &w, &missing);
  assert_int_equal(missing, 0);
  assert_int_equal(w.n_seen, want);
  walk_free(&w);
}

/* A refused repeat leaves the matcher as it was; clones go their ways. */
static void test_rollback_and_clone(void **state) {
  (void)state;
  nucleus_grammar *h = compile(k_str);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, "[\"ab\",\"a", 8, &ok, NULL),
                   NC_OK);
  assert_true(ok);
  nc_grammar_matcher *c = NULL;
  assert_int_equal(nc_grammar_matcher_clone(m, &c, NULL), NC_OK);
  /* "ab" again: refused, whole, in one call or a byte at a time */
  assert_int_equal(nc_grammar_matcher_accept(m, "b\"]", 3, &ok, NULL), NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "b", 1, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "\"", 1, &ok, NULL), NC_OK);
  assert_false(ok);
  /* the matcher goes on from where it was */
  assert_int_equal(nc_grammar_matcher_accept(m, "c\"]", 3, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_true(nc_grammar_matcher_accepting(m));
  /* the clone: its own record ("ab" there, not "abc") */
  assert_int_equal(nc_grammar_matcher_accept(c, "bc\"", 3, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_accept(c, ",\"ab\"", 5, &ok, NULL),
                   NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(c, ",\"a\"]", 5, &ok, NULL),
                   NC_OK);
  assert_true(ok);
  assert_true(nc_grammar_matcher_accepting(c));
  nc_grammar_matcher_free(c);
  nc_grammar_matcher_free(m);
  nucleus_grammar_free(h);
}

/* The mask after a prefix: a token spelling a repeat is dropped, and one
 * whose only completions are repeats (items of two values). */
static void test_mask_dead_ends(void **state) {
  (void)state;
  const char *schema = "{\"type\":\"array\",\"uniqueItems\":true,"
                       "\"minItems\":2,\"items\":{\"type\":\"string\","
                       "\"pattern\":\"^(ab|b)$\"}}";
  const char *const pieces[] = {"a",  "b",   "\"",  ",",     "]",
                                "ab", "b\"", "\"a", "\",\"", "\",\"ab"};
  nc_grammar_vocab *gv = test_vocab(pieces, 10);
  nucleus_grammar *h = compile(schema);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, "[\"ab", 4, &ok, NULL), NC_OK);
  assert_true(ok);
  uint64_t mask = 0;
  assert_int_equal(nc_grammar_matcher_mask(m, gv, &mask, NULL), NC_OK);
  /* '"' closes "ab"; '","' leads on to "b" only; '","ab' is the repeat */
  assert_true(mask >> 2 & 1);
  assert_true(mask >> 8 & 1);
  assert_false(mask >> 9 & 1);
  assert_false(mask >> 4 & 1);
  assert_int_equal(nc_grammar_matcher_accept(m, "\",\"", 3, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_mask(m, gv, &mask, NULL), NC_OK);
  assert_false(mask >> 0 & 1); /* 'a': only "ab" follows, a repeat */
  assert_false(mask >> 5 & 1); /* 'ab' */
  assert_true(mask >> 1 & 1);  /* 'b' */
  assert_true(mask >> 6 & 1);  /* 'b"' */
  /* accept refuses what the mask leaves out, and is undone */
  assert_int_equal(nc_grammar_matcher_accept(m, "a", 1, &ok, NULL), NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "b\"]", 3, &ok, NULL), NC_OK);
  assert_true(ok && nc_grammar_matcher_accepting(m));
  nc_grammar_matcher_free(m);
  nucleus_grammar_free(h);
  nc_grammar_vocab_free(gv);
}

/* Near 2^53 a number's longer forms read back as the recorded double
 * (8112233997422380.1 is 8112233997422380): the search tries the closest
 * numbers first (8112233997422380.6 is another value), within budget. */
static void test_mask_numbers_near_2_53(void **state) {
  (void)state;
  const char *const pieces[] = {"0", "1", ".", ",", "]", "6"};
  nc_grammar_vocab *gv = test_vocab(pieces, 6);
  nucleus_grammar *h = compile(k_num);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  const char *t = "[8112233997422380,811223399742238";
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, t, strlen(t), &ok, NULL),
                   NC_OK);
  assert_true(ok);
  uint64_t mask = 0;
  nc_error err = {0};
  assert_int_equal(nc_grammar_matcher_mask(m, gv, &mask, &err), NC_OK);
  assert_true(mask & 1); /* "0": then ".6" */
  assert_int_equal(nc_grammar_matcher_accept(m, "0", 1, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_mask(m, gv, &mask, &err), NC_OK);
  assert_false(mask >> 3 & 1); /* ',' closes the repeat */
  assert_false(mask >> 4 & 1);
  assert_true(mask >> 2 & 1); /* '.' */
  assert_int_equal(nc_grammar_matcher_accept(m, ".1]", 3, &ok, NULL), NC_OK);
  assert_false(ok); /* 8112233997422380.1 is the same double */
  assert_int_equal(nc_grammar_matcher_accept(m, ".6]", 3, &ok, NULL), NC_OK);
  assert_true(ok);
  nc_grammar_matcher_free(m);
  nucleus_grammar_free(h);
  nc_grammar_vocab_free(gv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repeats_refused),
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_walk_strings),
      cmocka_unit_test(test_walk_integers),
      cmocka_unit_test(test_rollback_and_clone),
      cmocka_unit_test(test_mask_dead_ends),
      cmocka_unit_test(test_mask_numbers_near_2_53),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
