/* The grammar engine: GBNF parsing and its errors, matching bytes (UTF-8
 * split across calls), the token mask against feeding every token to a
 * copy of the matcher (a small vocabulary and the default model's), the
 * memoized mask against the plain trie walk (long walks, multi-byte
 * characters, a memo too small for one walk, two vocabularies), and the
 * fuzz corpus. */
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
#include "grammar/grammar_internal.h"
#include "grammar/grammar_memo.h"
#include "grammar/grammar_trie.h"
#include "tokenizer/vocab.h"
#include "tokenizer_test_util.h"

static nc_grammar *compile(const char *text) {
  nc_grammar *g = NULL;
  nc_error err = {0};
  nc_code rc = nc_grammar_parse(text, strlen(text), NULL, &g, &err);
  if (rc != NC_OK) fprintf(stderr, "grammar error: %s\n", err.message);
  assert_int_equal(rc, NC_OK);
  return g;
}

/* The error message of a grammar that must not compile. */
static const char *refuse(const char *text, nc_code want) {
  static nc_error err;
  memset(&err, 0, sizeof err);
  nc_grammar *g = NULL;
  nc_code rc = nc_grammar_parse(text, strlen(text), NULL, &g, &err);
  assert_null(g);
  assert_int_equal(rc, want);
  return err.message;
}

/* Whether s (all of it) is a sentence: 1, a viable prefix only: 0,
 * refused: -1. */
static int run(const nc_grammar *g, const char *s, size_t len) {
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, s, len, &ok, NULL), NC_OK);
  int r = !ok ? -1 : nc_grammar_matcher_accepting(m) ? 1 : 0;
  nc_grammar_matcher_free(m);
  return r;
}

static int runs(const nc_grammar *g, const char *s) {
  return run(g, s, strlen(s));
}

static void test_literals_alternatives_groups(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= \"ab\" (\"c\" | \"d\" \"e\")? x\n"
                          "x ::= [0-9]+ # digits\n");
  assert_int_equal(runs(g, "ab1"), 1);
  assert_int_equal(runs(g, "abc12"), 1);
  assert_int_equal(runs(g, "abde9"), 1);
  assert_int_equal(runs(g, "abd"), 0);
  assert_int_equal(runs(g, "ab"), 0);
  assert_int_equal(runs(g, "abx"), -1);
  assert_int_equal(runs(g, "abdc1"), -1);
  nc_grammar_free(g);
}

static void test_repetition_counts(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= \"x\"{2,4} \"ab\"{2} [a-c]{1,}\n");
  assert_int_equal(runs(g, "xxababc"), 1);
  assert_int_equal(runs(g, "xxxxababa"), 1);
  assert_int_equal(runs(g, "xababa"), -1);
  assert_int_equal(runs(g, "xxxxxab"), -1);
  assert_int_equal(runs(g, "xxaba"), 0);
  assert_int_equal(runs(g, "xxabd"), -1);
  assert_int_equal(runs(g, "xxabab"), 0);
  nc_grammar_free(g);
  g = compile("root ::= [a]{0} \"b\" [c]{3,3}");
  assert_int_equal(runs(g, "bccc"), 1);
  assert_int_equal(runs(g, "abccc"), -1);
  nc_grammar_free(g);
}

static void test_classes_negation_escapes(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= [^\"\\\\\\n] [\\x41-\\x43] "
                          "[\\u00e9] \"\\t\" . [-a]\n");
  assert_int_equal(runs(g, "qB\xc3\xa9\t\xe2\x82\xac-"), 1);
  assert_int_equal(runs(g, "\"B"), -1);
  assert_int_equal(runs(g, "\nB"), -1);
  assert_int_equal(runs(g, "qD"), -1);
  nc_grammar_free(g);
}

static void test_utf8_split_across_calls(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= \"\xc3\xa9\" [\\u4e00-\\u9fff] \"x\"");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  bool ok;
  assert_int_equal(nc_grammar_matcher_accept(m, "\xc3", 1, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_false(nc_grammar_matcher_accepting(m));
  /* A continuation that makes another character is refused and the
   * matcher stays where it was. */
  assert_int_equal(nc_grammar_matcher_accept(m, "\xa8", 1, &ok, NULL), NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "\xa9\xe4", 2, &ok, NULL),
                   NC_OK);
  assert_true(ok);
  /* U+4E00..U+9FFF: E4 B8 80 .. E9 BF BF; E4 80 would be below it. */
  assert_int_equal(nc_grammar_matcher_accept(m, "\x80", 1, &ok, NULL), NC_OK);
  assert_false(ok);
  assert_int_equal(nc_grammar_matcher_accept(m, "\xb8\x80x", 3, &ok, NULL),
                   NC_OK);
  assert_true(ok);
  assert_true(nc_grammar_matcher_complete(m));
  nc_grammar_matcher_free(m);
  /* Invalid UTF-8 (overlong, surrogate, stray continuation) never fits. */
  nc_grammar *any = compile("root ::= .*");
  assert_int_equal(runs(any, "\xc0\x80"), -1);
  assert_int_equal(runs(any, "\xed\xa0\x80"), -1);
  assert_int_equal(runs(any, "\x80"), -1);
  assert_int_equal(runs(any, "\xf4\x90"), -1);
  assert_int_equal(runs(any, "\xf0\x9f\x98\x80 ok"), 1);
  nc_grammar_free(any);
  nc_grammar_free(g);
}

static void test_multiline_rules_and_comments(void **state) {
  (void)state;
  nc_grammar *g = compile("# a JSON-ish list\n"
                          "root ::=\n"
                          "  \"[\" (\n"
                          "    item\n"
                          "    (\",\" item)*\n"
                          "  )? \"]\"\n"
                          "item ::= \"true\" |\n"
                          "  \"null\"\n\n");
  assert_int_equal(runs(g, "[]"), 1);
  assert_int_equal(runs(g, "[true,null,true]"), 1);
  assert_int_equal(runs(g, "[true,]"), -1);
  nc_grammar_free(g);
}

static void test_completion(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= \"a\" \"b\"?");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  bool ok;
  assert_int_equal(nc_grammar_matcher_accept(m, "a", 1, &ok, NULL), NC_OK);
  assert_true(nc_grammar_matcher_accepting(m));
  assert_false(nc_grammar_matcher_complete(m));
  assert_int_equal(nc_grammar_matcher_accept(m, "b", 1, &ok, NULL), NC_OK);
  assert_true(nc_grammar_matcher_complete(m));
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
}

static void test_dead_alternatives_pruned(void **state) {
  (void)state;
  /* x never finishes: "a" is not a viable prefix. */
  nc_grammar *g = compile("root ::= \"a\" x | \"b\"\nx ::= \"c\" x");
  assert_int_equal(runs(g, "a"), -1);
  assert_int_equal(runs(g, "b"), 1);
  nc_grammar_free(g);
}

static void test_errors_name_line_and_column(void **state) {
  (void)state;
  const char *m =
      refuse("root ::= \"a\"\nx ::= \"b\" [c", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "line 2 column 13"));
  assert_non_null(strstr(m, "unterminated character class"));
  m = refuse("root ::= a b\na ::= \"x\"\n", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "undefined rule 'b'"));
  assert_non_null(strstr(m, "line 1 column 12"));
  m = refuse("root ::= \"a\" ) ", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "line 1 column 14"));
  m = refuse("root ::= \"a\"\nroot ::= \"b\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "defined twice"));
  m = refuse("root ::= * \"a\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "repetition without"));
  m = refuse("root ::= [z-a]", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "out of order"));
  m = refuse("root ::= \"\\q\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "unknown escape"));
  m = refuse("root ::= \"\\uD800\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "surrogate"));
  m = refuse("rot ::= \"a\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "no rule named 'root'"));
  m = refuse("root ::= \"\xff\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "invalid UTF-8"));
  m = refuse("root ::= \"a\"{2,1}", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "n < m"));
}

static void test_left_recursion_and_empty_language(void **state) {
  (void)state;
  const char *m =
      refuse("root ::= root \"a\" | \"a\"", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "left recursion"));
  m = refuse("root ::= x \"a\"\nx ::= y | \"b\"\ny ::= root",
             NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "left recursion"));
  /* Through a rule that matches "": */
  m = refuse("root ::= e root \"a\" | \"b\"\ne ::= \"x\"?",
             NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "left recursion"));
  /* A nullable group under a star is no left recursion (the star repeats
   * the group without ""), but a named rule that calls itself first is. */
  m = refuse("root ::= x \"a\" | \"b\"\nx ::= \"c\"? root",
             NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "left recursion"));
  m = refuse("root ::= \"a\" root", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "empty language"));
  m = refuse("root ::= [^\\x00-\\U0010FFFF]", NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(m, "empty language"));
  /* Right recursion is fine. */
  nc_grammar *g = compile("root ::= \"a\" root | \"b\"");
  assert_int_equal(runs(g, "aaab"), 1);
  nc_grammar_free(g);
}

/* Issue 38: the regexes (a*)* and ^(a?)*$ were refused as "left recursion
 * in rule '(group)'": a repetition of a term that can match "" repeats the
 * term without "" (the same language). Each shape, starred, plussed and
 * counted, matches what the regex does. */
static void test_nullable_repetitions(void **state) {
  (void)state;
  const struct {
    const char *gbnf;
    const char *yes[4], *no[3];
  } cases[] = {
      {"root ::= (\"a\"*)*", {"", "a", "aaaa"}, {"b", "ab"}},
      {"root ::= (\"a\"?)*", {"", "a", "aaa"}, {"b"}},
      {"root ::= (\"a\" | \"\")*", {"", "aa"}, {"b"}},
      {"root ::= (\"a\"* \"b\"*)*", {"", "ab", "bbaab", "ba"}, {"c", "abc"}},
      {"root ::= (\"a\"?)+", {"", "a", "aa"}, {"b"}},
      {"root ::= (\"a\"? \"b\"?)* \"c\"",
       {"c", "abc", "bac", "bbc"},
       {"", "ca", "abd"}},
      {"root ::= x* \"!\"\nx ::= y \"z\"? | \"\"\ny ::= \"q\"?",
       {"!", "qz!", "zzq!", "qqq!"},
       {"q", "a!"}},
      {"root ::= (\"\")* \"a\"", {"a"}, {"", "aa"}},
      {"root ::= (\"a\"?){2,4} \".\"", {".", "a.", "aaaa."}, {"aaaaa."}},
      {"root ::= (\"ab\"? [0-9]?){0,3} \";\"",
       {";", "ab1ab;", "123;", "ab2ab3ab4;"},
       {"1234;", "abababab;"}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nc_grammar *g = compile(cases[i].gbnf);
    for (int k = 0; k < 4 && cases[i].yes[k]; k++) {
      if (runs(g, cases[i].yes[k]) != 1)
        fprintf(stderr, "%s: '%s'\n", cases[i].gbnf, cases[i].yes[k]);
      assert_int_equal(runs(g, cases[i].yes[k]), 1);
    }
    for (int k = 0; k < 3 && cases[i].no[k]; k++) {
      if (runs(g, cases[i].no[k]) == 1)
        fprintf(stderr, "%s: '%s'\n", cases[i].gbnf, cases[i].no[k]);
      assert_int_not_equal(runs(g, cases[i].no[k]), 1);
    }
    nc_grammar_free(g);
  }
  /* A long count of a nullable term stays cheap: its steps are not all
   * expanded through "" at every character. */
  nc_grammar *g = compile("root ::= (\"x\"? [.,]?){0,1000} \"!\"");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  assert_true(m->work.spent < 100);
  bool ok;
  for (int i = 0; i < 200; i++) {
    assert_int_equal(nc_grammar_matcher_accept(m, "x.", 2, &ok, NULL), NC_OK);
    assert_true(ok);
    assert_true(m->work.spent < 100);
  }
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
}

/* An alternation of n JSON string literals, value i written by put(i). */
static char *enum_gbnf(int n, void (*put)(int, char *)) {
  size_t cap = (size_t)n * 48 + 64, len = 0;
  char *s = malloc(cap);
  len += (size_t)snprintf(s, cap, "root ::= ");
  for (int i = 0; i < n; i++) {
    char v[32];
    put(i, v);
    len += (size_t)snprintf(s + len, cap - len, "%s\"\\\"%s\\\"\"",
                            i ? " | " : "", v);
  }
  snprintf(s + len, cap - len, "\n");
  return s;
}

static void put_numbered(int i, char *v) {
  snprintf(v, 32, "v%d", i);
}

static void put_cjk(int i, char *v) { /* U+4E00 + i, 3 bytes of UTF-8 */
  unsigned c = 0x4E00u + (unsigned)i;
  v[0] = (char)(0xE0 | (c >> 12));
  v[1] = (char)(0x80 | ((c >> 6) & 0x3F));
  v[2] = (char)(0x80 | (c & 0x3F));
  v[3] = '\0';
}

static void put_word(int i, char *v) { /* distinct words of 1-12 letters */
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 7;
  int len = 1 + (int)(x % 12), k = 0;
  for (; k < len - 1; k++, x /= 26)
    v[k] = (char)('a' + x % 26);
  snprintf(v + k, 32 - (size_t)k, "%d", i); /* the number keeps it unique */
}

/* Issue 38: enums of 2,049-4,096 strings passed validation, then failed at
 * the first step ("too many parse stacks": one stack per value). The
 * alternatives are factored (a shared beginning once, one-class
 * alternatives with the same rest as one class), so the documented 4,096
 * holds: each value is accepted whole, a prefix is no sentence, others
 * are refused, and the first state holds one stack. */
static void test_enum_of_4096_strings(void **state) {
  (void)state;
  void (*puts_[])(int, char *) = {put_numbered, put_cjk, put_word};
  for (size_t k = 0; k < 3; k++) {
    char *text = enum_gbnf(4096, puts_[k]);
    nc_grammar *g = compile(text);
    nc_grammar_matcher *m = NULL;
    nc_error err = {0};
    nc_code rc = nc_grammar_matcher_create(g, &m, &err);
    if (rc != NC_OK) fprintf(stderr, "shape %zu: %s\n", k, err.message);
    assert_int_equal(rc, NC_OK);
    assert_int_equal(m->cur.st.count, 1);
    nc_grammar_matcher_free(m);
    for (int i = 0; i < 4096; i += 97) {
      char v[32], q[40];
      puts_[k](i, v);
      snprintf(q, sizeof q, "\"%s\"", v);
      assert_int_equal(runs(g, q), 1);
      q[strlen(q) - 1] = '\0';
      assert_int_equal(runs(g, q), 0);
      snprintf(q, sizeof q, "\"%s!\"", v);
      assert_int_equal(runs(g, q), -1);
    }
    nc_grammar_free(g);
    free(text);
  }
  /* Factoring keeps the language: shared heads, a value that is the
   * prefix of another, classes merged beside alternatives that differ. */
  nc_grammar *g = compile("root ::= \"ab\" | \"ac\" | \"a\" | \"b\" | "
                          "[x-y] \"!\" | [z] \"!\" | [q] \"?\" | \"ab\" \"d\"");
  const char *yes[] = {"ab", "ac", "a", "b", "x!", "y!", "z!", "q?", "abd"};
  const char *no[] = {"", "q!", "x?", "abc", "ad", "bb"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    assert_int_equal(runs(g, yes[i]), 1);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    assert_int_not_equal(runs(g, no[i]), 1);
  nc_grammar_free(g);
}

/* x{m,n} of one term share one chain of steps (Rk does not depend on n):
 * twenty strings of at most 1,024 characters cost ~1,024 rules, not
 * 20,480 (past the 16,384 bound: a JSON Schema of twenty such strings was
 * refused as "grammar too large"), and each count still holds. */
static void test_bounded_repetitions_share_steps(void **state) {
  (void)state;
  char text[2048];
  size_t len = (size_t)snprintf(text, sizeof text, "root ::=");
  for (int i = 0; i < 20; i++)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            " \"<\" c{0,1024} \">\"");
  snprintf(text + len, sizeof text - len, "\nc ::= [a-z] | \"\\\\\" [nt]\n");
  nc_grammar *g = compile(text);
  assert_true(nc_grammar_n_rules(g) < 1100);
  nc_grammar_free(g);
  g = compile("root ::= [a-c]{0,3} \"|\" [a-c]{1,5} \"|\" [abc]{2}");
  assert_true(nc_grammar_n_rules(g) < 10);
  assert_int_equal(runs(g, "abc|aaaaa|cc"), 1);
  assert_int_equal(runs(g, "|a|ab"), 1);
  assert_int_equal(runs(g, "abca|a|ab"), -1);
  assert_int_equal(runs(g, "a||ab"), -1);
  assert_int_equal(runs(g, "a|aaaaaa|ab"), -1);
  nc_grammar_free(g);
}

static void test_bounds(void **state) {
  (void)state;
  const char *m = refuse("root ::= \"a\"{2000}", NC_ERR_LIMIT);
  assert_non_null(strstr(m, "repetition count"));
  char deep[300];
  memset(deep, '(', 100);
  memcpy(deep + 100, "\"a\"", 3);
  memset(deep + 103, ')', 100);
  deep[203] = '\0';
  char text[400];
  snprintf(text, sizeof text, "root ::= %s", deep);
  m = refuse(text, NC_ERR_LIMIT);
  assert_non_null(strstr(m, "nested too deeply"));
  /* Repeating a group repeats a reference to it: nested counts stay
   * linear in size (10^12 characters, a few thousand symbols). */
  nc_grammar *big = compile("root ::= ((((\"ab\"{1000}){1000}){1000}){1000})");
  assert_true(nc_grammar_n_rules(big) < 5000);
  assert_int_equal(runs(big, "ababab"), 0);
  nc_grammar_free(big);
  /* Exponentially many parses of one prefix: refused at match time. */
  nc_grammar *g = compile("root ::= x*\nx ::= \"a\" | \"a\" \"a\" | "
                          "\"a\" \"a\" \"a\"\n");
  nc_grammar_matcher *mt = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &mt, NULL), NC_OK);
  bool ok;
  nc_error err = {0};
  nc_code rc = NC_OK;
  for (int i = 0; i < 100 && rc == NC_OK; i++)
    rc = nc_grammar_matcher_accept(mt, "a", 1, &ok, &err);
  assert_int_equal(rc, NC_OK); /* stacks are deduplicated: this stays small */
  nc_grammar_matcher_free(mt);
  nc_grammar_free(g);
}

/* The mask against feeding each token to a copy. */
static void check_mask(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                       uint64_t *mask, int32_t *allowed, int32_t *n_allowed) {
  assert_int_equal(nc_grammar_matcher_mask(m, gv, mask, NULL), NC_OK);
  int32_t n = nc_grammar_vocab_n_tokens(gv);
  *n_allowed = 0;
  for (int32_t t = 0; t < n; t++) {
    nc_grammar_matcher *c = NULL;
    assert_int_equal(nc_grammar_matcher_clone(m, &c, NULL), NC_OK);
    bool ok = false;
    assert_int_equal(nc_grammar_matcher_accept_token(c, gv, t, &ok, NULL),
                     NC_OK);
    nc_grammar_matcher_free(c);
    bool bit = (mask[t / 64] >> (t % 64)) & 1;
    if (ok != bit)
      fprintf(stderr, "token %d: fed %d, mask %d\n", (int)t, ok, bit);
    assert_int_equal(ok, bit);
    if (bit) allowed[(*n_allowed)++] = t;
  }
}

static void test_mask_small_vocab(void **state) {
  (void)state;
  const char *pieces[] = {"{",        "}",   "\"", "a",    "ab",
                          "\"a",      "\":", ":",  "\xc3", "\xa9",
                          "\xc3\xa9", "1",   "12", "",     "x}"};
  uint8_t kinds[15];
  size_t lens[15];
  for (int i = 0; i < 15; i++) {
    lens[i] = strlen(pieces[i]);
    kinds[i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  kinds[13] = NC_GRAMMAR_TOKEN_END;
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_create(15, pieces, lens, kinds, &gv, NULL),
                   NC_OK);
  nc_grammar *g = compile("root ::= \"{\" \"\\\"\" [a\\u00e9]+ \"\\\":\" "
                          "[0-9]{1,3} \"}\"");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  uint64_t mask[1];
  int32_t allowed[15], n;
  const int32_t path[] = {0, 5, 8, 9, 10, 6, 12, 11, 1};
  for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
    check_mask(m, gv, mask, allowed, &n);
    assert_true((mask[0] >> path[i]) & 1);
    bool ok;
    assert_int_equal(nc_grammar_matcher_accept_token(m, gv, path[i], &ok, NULL),
                     NC_OK);
    assert_true(ok);
  }
  check_mask(m, gv, mask, allowed, &n);
  assert_int_equal(n, 1); /* only the end */
  assert_int_equal(allowed[0], 13);
  assert_true(nc_grammar_matcher_complete(m));
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
  nc_grammar_vocab_free(gv);
}

static const char *const k_grammars[] = {
    /* JSON (llama.cpp's json.gbnf, written here in the same shape). */
    "root ::= object\n"
    "value ::= object | array | string | number | (\"true\" | \"false\" | "
    "\"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws "
    "value)* )? \"}\" ws\n"
    "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" "
    "([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? "
    "([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n",
    "root ::= (\"yes\" | \"no\" | \"maybe so\") \".\"",
    "root ::= [A-Z] [a-z]{2,8} (\" \" [A-Z] [a-z]{2,8}){0,3} \"\\n\"",
    "root ::= \"<\" [^>\\u00e0-\\u00ff]* \">\" [0-9]+",
};

static void test_mask_model_vocab(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_from(v, &gv, NULL), NC_OK);
  int32_t n_tok = nc_grammar_vocab_n_tokens(gv);
  uint64_t *mask = malloc(((size_t)n_tok + 63) / 64 * sizeof *mask);
  int32_t *allowed = malloc((size_t)n_tok * sizeof *allowed);
  uint64_t seed = 12345;
  int checked = 0;
  for (size_t gi = 0; gi < sizeof k_grammars / sizeof k_grammars[0]; gi++) {
    nc_grammar *g = compile(k_grammars[gi]);
    for (int walk = 0; walk < 2; walk++) {
      nc_grammar_matcher *m = NULL;
      assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
      for (int step = 0; step < 6; step++) {
        int32_t n;
        check_mask(m, gv, mask, allowed, &n);
        checked++;
        assert_true(n > 0); /* a viable prefix always has a continuation */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int32_t t = allowed[(seed >> 33) % (uint64_t)n];
        if (nc_vocab_is_eog(v, t)) break;
        bool ok;
        assert_int_equal(nc_grammar_matcher_accept_token(m, gv, t, &ok, NULL),
                         NC_OK);
        assert_true(ok);
      }
      nc_grammar_matcher_free(m);
    }
    nc_grammar_free(g);
  }
  assert_true(checked >= 8);
  free(mask);
  free(allowed);
  nc_grammar_vocab_free(gv);
  nc_vocab_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Long random walks on the model's vocabulary: each step's memoized mask
 * equals the plain walk's (nc_grammar_mask_reference); the walks revisit
 * states (the kept masks), end tokens inside characters (the partial
 * root) and cross multi-byte characters (the code point table). */
static void test_mask_memo_matches_reference(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_from(v, &gv, NULL), NC_OK);
  int32_t n_tok = nc_grammar_vocab_n_tokens(gv);
  size_t words = ((size_t)n_tok + 63) / 64;
  uint64_t *mask = malloc(words * sizeof *mask);
  uint64_t *ref = malloc(words * sizeof *ref);
  int32_t *allowed = malloc((size_t)n_tok * sizeof *allowed);
  const char *extra[] = {
      "root ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [nt]){0,60} \"\\\"\"",
      "root ::= ([\\u4e00-\\u9fff\\u00c0-\\u017f] | [a-z ]){1,40} "
      "[\\U0001F600-\\U0001F64F]? \".\"",
      /* long bounded repetitions (the canonical map): of a rule, of a
       * class, of a literal, of a term that may be empty, nested */
      "root ::= \"{\\\"a\\\":\\\"\" c{0,200} \"\\\",\\\"b\\\":[\" "
      "(\"\\\"\" c{0,30} \"\\\"\" (\",\\\"\" c{0,30} \"\\\"\"){0,3})? \"]}\"\n"
      "c ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" [nt\"]\n",
      "root ::= [a-z ]{0,100} (\"ab\"{0,40} | [0-9]{3,90}) (\"x\"? "
      "[.,]?){0,50} "
      "\"!\"",
      "root ::= ([a-z]{0,25} \" \"){0,30} \"END\"",
  };
  uint64_t seed = 777;
  int steps = 0, partial_roots = 0;
  for (size_t gi = 0; gi < 9; gi++) {
    nc_grammar *g = compile(gi < 4 ? k_grammars[gi] : extra[gi - 4]);
    if (gi >= 6) assert_non_null(g->canon); /* the map is in use */
    for (int walk = 0; walk < (gi < 4 ? 2 : 1); walk++) {
      nc_grammar_matcher *m = NULL;
      assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
      for (int step = 0; step < 25; step++) {
        nc_error merr = {0};
        nc_code mrc = nc_grammar_matcher_mask(m, gv, mask, &merr);
        if (mrc != NC_OK)
          fprintf(stderr, "grammar %zu step %d: %s (fallbacks %u states %u)\n",
                  gi, step, merr.message, m->memo->fallbacks,
                  m->memo->n_states);
        assert_int_equal(mrc, NC_OK);
        assert_int_equal(nc_grammar_mask_reference(m, gv, ref, NULL), NC_OK);
        assert_memory_equal(mask, ref, words * sizeof *mask);
        steps++;
        partial_roots += m->cur.left > 0;
        int32_t n = 0;
        for (int32_t t = 0; t < n_tok; t++)
          if ((mask[t / 64] >> (t % 64)) & 1) allowed[n++] = t;
        assert_true(n > 0);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int32_t t = allowed[(seed >> 33) % (uint64_t)n];
        if (nc_grammar_vocab_kind(gv, t) == NC_GRAMMAR_TOKEN_END) break;
        bool ok;
        assert_int_equal(nc_grammar_matcher_accept_token(m, gv, t, &ok, NULL),
                         NC_OK);
        assert_true(ok);
        if (nc_grammar_matcher_complete(m)) break;
      }
      assert_true(m->memo->n_states <= NC_GMEMO_MAX_STATES);
      nc_grammar_matcher_free(m);
    }
    nc_grammar_free(g);
  }
  assert_true(steps >= 50);
  (void)partial_roots; /* counted for a debugger: random walks vary */
  free(mask);
  free(ref);
  free(allowed);
  nc_grammar_vocab_free(gv);
  nc_vocab_free(v);
}

/* One token of 1100 bytes walks through more states than the memo holds:
 * the walk falls back to the plain one (the masks stay exact, the memo
 * within its bounds), and the next masks use the memo again. A matcher
 * used with a second vocabulary gets that vocabulary's masks. */
static void test_mask_memo_bounded(void **state) {
  (void)state;
  static char longa[1101];
  memset(longa, 'a', 1100);
  const char *pieces[] = {longa, "a", "b", "ab", "", "aaa", "\xc3", "\xa9"};
  size_t lens[8];
  uint8_t kinds[8];
  for (int i = 0; i < 8; i++) {
    lens[i] = strlen(pieces[i]);
    kinds[i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  kinds[4] = NC_GRAMMAR_TOKEN_END;
  nc_grammar_vocab *gv = NULL, *gv2 = NULL;
  assert_int_equal(nc_grammar_vocab_create(8, pieces, lens, kinds, &gv, NULL),
                   NC_OK);
  assert_int_equal(
      nc_grammar_vocab_create(7, pieces + 1, lens + 1, kinds + 1, &gv2, NULL),
      NC_OK);
  nc_grammar *g =
      compile("root ::= \"a\"{0,1000} \"a\"{0,1000} (\"b\" | \"\\u00e9\")");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  uint64_t mask[1], ref[1];
  int32_t allowed[8], n;
  const int32_t path[] = {1, 5, 0, 1, 3};
  for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
    check_mask(m, gv, mask, allowed, &n);
    assert_int_equal(nc_grammar_mask_reference(m, gv, ref, NULL), NC_OK);
    assert_int_equal(mask[0], ref[0]);
    if (i <= 2) assert_true(mask[0] & 1); /* the long token fits */
    assert_true(m->memo->n_states <= NC_GMEMO_MAX_STATES);
    assert_true(m->memo->words <= NC_GMEMO_MAX_WORDS);
    if (i == 1) { /* the other vocabulary, then back */
      check_mask(m, gv2, mask, allowed, &n);
      assert_int_equal(n, 5); /* a, b, ab, aaa, the lead byte of U+00E9 */
      check_mask(m, gv, mask, allowed, &n);
    }
    bool ok;
    assert_int_equal(nc_grammar_matcher_accept_token(m, gv, path[i], &ok, NULL),
                     NC_OK);
    assert_true(ok);
  }
  assert_true(m->memo->fallbacks > 0);
  check_mask(m, gv, mask, allowed, &n);
  assert_int_equal(n, 1); /* after "b": only the end */
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
  nc_grammar_vocab_free(gv);
  nc_grammar_vocab_free(gv2);
}

/* Plain runs: the vocabulary's index of its plain tokens (printable ASCII
 * but '"' and '\\'), and masks inside strings that take it (a class that
 * holds every plain character, bounded or not), or not (a class that
 * holds some), each token checked by feeding it (check_mask). */
static void test_mask_plain_runs(void **state) {
  (void)state;
  const char *pieces[] = {"ab",       "abc", "a\"", "x y",  "\xc3\xa9", "\xc3",
                          "zzzzzzzz", "",    "\"",  "a\\n", "b\"}",     "\xa9"};
  enum { N = sizeof pieces / sizeof pieces[0] };
  size_t lens[N];
  uint8_t kinds[N];
  for (int i = 0; i < N; i++) {
    lens[i] = strlen(pieces[i]);
    kinds[i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  kinds[7] = NC_GRAMMAR_TOKEN_END;
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_create(N, pieces, lens, kinds, &gv, NULL),
                   NC_OK);
  assert_int_equal(gv->n_plain, 8); /* "zzzzzzzz" */
  assert_int_equal(gv->plain_le[0], 0);
  assert_int_equal(gv->plain_le[2], 1u << 0);                     /* ab */
  assert_int_equal(gv->plain_le[3], 1u << 0 | 1u << 1 | 1u << 3); /* x y */
  assert_int_equal(gv->plain_le[8], 1u << 0 | 1u << 1 | 1u << 3 | 1u << 6);
  for (uint32_t i = 1; i < gv->n_nodes; i++) {
    const fnode *f = &gv->flat[i];
    if (f->depth == 1 && f->byte == 'z') assert_int_equal(gv->fplain[i], 8);
    if (f->depth == 1 && f->byte == 'x') assert_int_equal(gv->fplain[i], 3);
    if (f->depth == 1 && f->byte == 'a') assert_int_equal(gv->fplain[i], 0);
    if (f->depth == 1 && f->byte == '"') assert_int_equal(gv->fplain[i], 0);
  }
  const char *grammars[] = {
      "root ::= \"\\\"\" c{0,9} \"\\\"\" \"}\"?\n"
      "c ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" [n\"]",
      "root ::= \"\\\"\" c* \"\\\"\" \"}\"\n"
      "c ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" [n\"]",
      "root ::= \"\\\"\" [a-z\\u00e9 ]{0,9} \"\\\"\"",
  };
  /* tokens fed in turn, each allowed: "ab", "x y", "\xc3", "\xa9",
   * "a\\n", "b\"}" (the last closes the string) */
  const int32_t path[] = {8, 0, 3, 5, 11, 9, 10};
  for (int gi = 0; gi < 3; gi++) {
    nc_grammar *g = compile(grammars[gi]);
    nc_grammar_matcher *m = NULL;
    assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
    uint64_t mask[1], ref[1];
    int32_t allowed[N], n;
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
      if (gi == 2 && path[i] == 11) break; /* "a\\n": no escapes there */
      check_mask(m, gv, mask, allowed, &n);
      assert_int_equal(nc_grammar_mask_reference(m, gv, ref, NULL), NC_OK);
      assert_int_equal(mask[0], ref[0]);
      assert_true((mask[0] >> path[i]) & 1);
      if (gi == 0 && i == 6) /* one character left: "ab" is too long */
        assert_int_equal(mask[0] & (1u << 0 | 1u << 1 | 1u << 6), 0);
      bool ok;
      assert_int_equal(
          nc_grammar_matcher_accept_token(m, gv, path[i], &ok, NULL), NC_OK);
      assert_true(ok);
    }
    if (gi < 2)
      assert_true(m->memo->plain_skips > 0);
    else /* the class holds some plain characters only */
      assert_int_equal(m->memo->plain_skips, 0);
    nc_grammar_matcher_free(m);
    nc_grammar_free(g);
  }
  nc_grammar_vocab_free(gv);
}

/* The canonical map: only chains longer than NC_GRAMMAR_CANON_DEPTH + 1
 * map, each step to the one D + 1 from the end, whoever wrote the chain;
 * a chain-shaped rule that refers to itself or to a later rule does not. */
static void test_canon_map(void **state) {
  (void)state;
  nc_grammar *g = compile("root ::= [a-z]{0,10} \".\"");
  assert_null(g->canon);
  nc_grammar_free(g);
  g = compile("root ::= [a-z]{0,17} \".\""); /* 17 steps: none maps */
  assert_null(g->canon);
  nc_grammar_free(g);
  g = compile("root ::= [a-z]{0,18} \".\"");
  assert_non_null(g->canon);
  nc_grammar_free(g);
  /* written out by hand: r1 ... r20, the same shape */
  char text[4096];
  size_t at = (size_t)snprintf(text, sizeof text,
                               "root ::= r20 \".\"\nr1 ::= [xy] | \"\"\n");
  for (int k = 2; k <= 20; k++)
    at += (size_t)snprintf(text + at, sizeof text - at,
                           "r%d ::= [xy] r%d | \"\"\n", k, k - 1);
  g = compile(text);
  assert_non_null(g->canon);
  uint32_t moved = 0;
  for (uint32_t e = 0; e < g->n_elems; e++)
    moved += g->canon[e] != e;
  assert_true(moved > 0);
  nc_grammar_free(g);
  g = compile("root ::= x \".\"\nx ::= [a-z] x | \"\""); /* unbounded */
  assert_null(g->canon);
  nc_grammar_free(g);
}

static void replay_one(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  LLVMFuzzerTestOneInput(data, len);
}

/* The step count of one mask and its stacks along a path of n tokens (a
 * seeded choice among the allowed ones, preferring long tokens so the
 * path goes deep): every mask within units and every state within
 * stacks. Returns the bytes fed. */
static size_t walk_within(const nc_grammar *g, const nc_grammar_vocab *gv,
                          int n, uint64_t units, uint32_t stacks) {
  int32_t n_tok = nc_grammar_vocab_n_tokens(gv);
  uint64_t *mask = malloc(((size_t)n_tok + 63) / 64 * sizeof *mask);
  int32_t *allowed = malloc((size_t)n_tok * sizeof *allowed);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  uint64_t seed = 99;
  size_t fed = 0;
  for (int step = 0; step < n; step++) {
    nc_error err = {0};
    nc_code rc = nc_grammar_matcher_mask(m, gv, mask, &err);
    if (rc != NC_OK) fprintf(stderr, "step %d: %s\n", step, err.message);
    assert_int_equal(rc, NC_OK);
    if (m->work.spent > units || m->cur.st.count > stacks)
      fprintf(stderr, "step %d (%zu bytes in): %llu units, %u stacks\n", step,
              fed, (unsigned long long)m->work.spent, m->cur.st.count);
    assert_true(m->work.spent <= units);
    assert_true(m->cur.st.count <= stacks);
    int32_t k = 0, best = -1;
    size_t best_len = 0;
    for (int32_t t = 0; t < n_tok; t++)
      if ((mask[t / 64] >> (t % 64)) & 1 &&
          nc_grammar_vocab_kind(gv, t) == NC_GRAMMAR_TOKEN_TEXT)
        allowed[k++] = t;
    if (k == 0) break;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < 4; i++) { /* the longest of four draws */
      int32_t t = allowed[(seed >> (33 + i)) % (uint64_t)k];
      size_t len = gv->off[t + 1] - gv->off[t];
      if (len > best_len) best = t, best_len = len;
    }
    bool ok;
    assert_int_equal(nc_grammar_matcher_accept_token(m, gv, best, &ok, NULL),
                     NC_OK);
    assert_true(ok);
    fed += best_len;
  }
  nc_grammar_matcher_free(m);
  free(mask);
  free(allowed);
  return fed;
}

/* Issue 38: eight bounded repetitions in a row (a 90-byte grammar) cost
 * ~124 ms per token at first, then ~27 s: x{0,n} kept one stack per count
 * so far, for each repetition. A lower step of the same repetition is
 * dropped beside a higher one (it matches a subset), so each repetition
 * holds one stack: the mask stays a few thousand steps per token, the
 * same for the JSON-string shape and for repetitions nested in one
 * another. */
static void test_bounded_repetitions_cost(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_from(v, &gv, NULL), NC_OK);
  const struct {
    const char *gbnf;
    uint32_t stacks;
  } cases[] = {
      {"root ::= .{0,1024} .{0,1024} .{0,1024} .{0,1024} .{0,1024} "
       ".{0,1024} .{0,1024} .{0,1024}",
       16},
      {"root ::= (\"\\\"\" c{0,1024} \"\\\" \"){8}\n"
       "c ::= [^\"\\\\] | \"\\\\\" [\"\\\\nt]",
       16},
      {"root ::= ([a-z ]{0,300} \".\"){0,40}", 16},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nc_grammar *g = compile(cases[i].gbnf);
    /* 1/8 of the budget per token; 300 tokens go deep into the counts */
    size_t fed =
        walk_within(g, gv, 300, NC_GRAMMAR_MAX_MASK_WORK / 8, cases[i].stacks);
    assert_true(fed > 600);
    nc_grammar_free(g);
  }
  nc_grammar_vocab_free(gv);
  nc_vocab_free(v);
}

/* The per-token budget ends the call (NC_ERR_LIMIT, a message naming it)
 * and the matcher stays usable; a set cancel flag stops a mask with
 * NC_ERR_CANCELLED. */
static void test_mask_budget_and_cancel(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_grammar_vocab *gv = NULL;
  assert_int_equal(nc_grammar_vocab_from(v, &gv, NULL), NC_OK);
  int32_t n_tok = nc_grammar_vocab_n_tokens(gv);
  size_t words = ((size_t)n_tok + 63) / 64;
  uint64_t *mask = malloc(words * sizeof *mask);
  uint64_t *ref = malloc(words * sizeof *ref);
  nc_grammar *g = compile("root ::= ([a-z]{0,50} [0-9]? \" \"){0,50}");
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  nc_grammar_matcher_set_budget(m, 500);
  nc_error err = {0};
  assert_int_equal(nc_grammar_matcher_mask(m, gv, mask, &err), NC_ERR_LIMIT);
  assert_non_null(strstr(err.message, "per-token budget"));
  bool ok;
  memset(&err, 0, sizeof err);
  /* A fed token counts against the budget too. */
  nc_grammar_matcher_set_budget(m, 1);
  assert_int_equal(nc_grammar_matcher_accept(m, "abc", 3, &ok, &err),
                   NC_ERR_LIMIT);
  nc_grammar_matcher_set_budget(m, 0); /* back to the default */
  assert_int_equal(nc_grammar_matcher_accept(m, "abc", 3, &ok, NULL), NC_OK);
  assert_true(ok);
  assert_int_equal(nc_grammar_matcher_mask(m, gv, mask, NULL), NC_OK);
  assert_int_equal(nc_grammar_mask_reference(m, gv, ref, NULL), NC_OK);
  assert_memory_equal(mask, ref, words * sizeof *mask);
  atomic_bool cancel;
  atomic_init(&cancel, true);
  nc_grammar_matcher *fresh = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &fresh, NULL), NC_OK);
  nc_grammar_matcher_set_cancel(fresh, &cancel);
  memset(&err, 0, sizeof err);
  assert_int_equal(nc_grammar_matcher_mask(fresh, gv, mask, &err),
                   NC_ERR_CANCELLED);
  atomic_store(&cancel, false);
  assert_int_equal(nc_grammar_matcher_mask(fresh, gv, mask, NULL), NC_OK);
  nc_grammar_matcher_free(fresh);
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
  free(mask);
  free(ref);
  nc_grammar_vocab_free(gv);
  nc_vocab_free(v);
}

static void test_fuzz_corpus(void **state) {
  (void)state;
  assert_true(fuzz_corpus_replay("grammar", replay_one, NULL) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_literals_alternatives_groups),
      cmocka_unit_test(test_repetition_counts),
      cmocka_unit_test(test_classes_negation_escapes),
      cmocka_unit_test(test_utf8_split_across_calls),
      cmocka_unit_test(test_multiline_rules_and_comments),
      cmocka_unit_test(test_completion),
      cmocka_unit_test(test_dead_alternatives_pruned),
      cmocka_unit_test(test_errors_name_line_and_column),
      cmocka_unit_test(test_left_recursion_and_empty_language),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_mask_small_vocab),
      cmocka_unit_test(test_mask_model_vocab),
      cmocka_unit_test(test_mask_memo_matches_reference),
      cmocka_unit_test(test_mask_memo_bounded),
      cmocka_unit_test(test_mask_plain_runs),
      cmocka_unit_test(test_canon_map),
      cmocka_unit_test(test_bounded_repetitions_cost),
      cmocka_unit_test(test_nullable_repetitions),
      cmocka_unit_test(test_enum_of_4096_strings),
      cmocka_unit_test(test_bounded_repetitions_share_steps),
      cmocka_unit_test(test_mask_budget_and_cancel),
      cmocka_unit_test(test_fuzz_corpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
