/* JSON Schemas as grammars of Gemma 4's call arguments
 * (nucleus_json_schema_to_gbnf_in, NUCLEUS_VALUE_SYNTAX_GEMMA4): random
 * walks of each grammar finish in texts that Gemma 4's argument reader
 * (tool_call_gemma4.c, what the server parses replies with) reads into
 * JSON that the JSON grammar of the same schema accepts; the texts the
 * model's template writes are accepted and JSON is not; what the syntax
 * cannot write is refused, naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat/tool_call.h"
#include "grammar/grammar.h"
#include "grammar_test_util.h"

static nucleus_grammar *compile(const char *schema, nucleus_value_syntax s) {
  char *gbnf = NULL;
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_json_schema_to_gbnf_in(schema, strlen(schema), s, &gbnf, &err);
  if (st != NUCLEUS_OK) fprintf(stderr, "schema error: %s\n", err.message);
  assert_int_equal(st, NUCLEUS_OK);
  nucleus_grammar *h = NULL;
  st = nucleus_grammar_create(gbnf, strlen(gbnf), NULL, &h, &err);
  if (st != NUCLEUS_OK)
    fprintf(stderr, "gbnf error: %s\n%s\n", err.message, gbnf);
  assert_int_equal(st, NUCLEUS_OK);
  nucleus_free(gbnf);
  return h;
}

/* A vocabulary of single bytes (printable ASCII, tab, newline), a
 * two-byte UTF-8 letter, Gemma 4's string mark and an end token. */
#define N_PIECES (95 + 5)
typedef struct {
  char pieces[N_PIECES][8];
  const char *ptr[N_PIECES];
  size_t lens[N_PIECES];
  uint8_t kinds[N_PIECES];
  nc_grammar_vocab *gv;
} vocab;

static void vocab_init(vocab *v) {
  memset(v, 0, sizeof *v);
  int n = 0;
  for (int c = 0x20; c < 0x7F; c++)
    v->pieces[n++][0] = (char)c;
  strcpy(v->pieces[n++], "\t");
  strcpy(v->pieces[n++], "\n");
  strcpy(v->pieces[n++], "\xc3\xa9");
  strcpy(v->pieces[n++], "<|\"|>");
  strcpy(v->pieces[n++], "END");
  for (int i = 0; i < n; i++) {
    v->ptr[i] = v->pieces[i];
    v->lens[i] = strlen(v->pieces[i]);
    v->kinds[i] = i == n - 1 ? NC_GRAMMAR_TOKEN_END : NC_GRAMMAR_TOKEN_TEXT;
  }
  assert_int_equal(n, N_PIECES);
  assert_int_equal(
      nc_grammar_vocab_create(n, v->ptr, v->lens, v->kinds, &v->gv, NULL),
      NC_OK);
}

static uint32_t next_rand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* One walk: each step a drawn allowed token (the end when allowed, half
 * the time; a closing or separating one, a third of the time). The text
 * (malloc'd) when it finished within max tokens, else NULL. */
static char *walk(const nucleus_grammar *h, vocab *v, uint32_t *seed, int max) {
  nc_grammar_matcher *m = NULL;
  assert_int_equal(
      nc_grammar_matcher_create(nc_grammar_handle_get(h), &m, NULL), NC_OK);
  char *out = calloc(1, (size_t)max * 8 + 1);
  size_t n = 0;
  uint64_t mask[(N_PIECES + 63) / 64];
  bool done = false;
  for (int step = 0; step < max && !done; step++) {
    assert_int_equal(nc_grammar_matcher_mask(m, v->gv, mask, NULL), NC_OK);
    int allowed[N_PIECES], na = 0, closers[N_PIECES], nc = 0;
    bool end = false;
    for (int i = 0; i < N_PIECES; i++) {
      if (!(mask[i / 64] >> (i % 64) & 1)) continue;
      if (v->kinds[i] == NC_GRAMMAR_TOKEN_END) {
        end = true;
        continue;
      }
      allowed[na++] = i;
      if (strchr("}],:", v->pieces[i][0]) || v->lens[i] == 5) closers[nc++] = i;
    }
    if (end && (na == 0 || next_rand(seed) % 2)) {
      done = true;
      break;
    }
    if (na == 0) fail_msg("dead end after '%.*s'", (int)n, out);
    assert_true(na > 0); /* a dead end: the grammar has a prefix no
                            continuation finishes */
    int pick = nc && next_rand(seed) % 3 == 0 ? closers[next_rand(seed) % nc]
                                              : allowed[next_rand(seed) % na];
    bool ok = false;
    assert_int_equal(nc_grammar_matcher_accept_token(m, v->gv, pick, &ok, NULL),
                     NC_OK);
    assert_true(ok);
    memcpy(out + n, v->pieces[pick], v->lens[pick]);
    n += v->lens[pick];
    done = nc_grammar_matcher_complete(m);
  }
  nc_grammar_matcher_free(m);
  if (!done) {
    free(out);
    return NULL;
  }
  return out;
}

/* Tool parameter schemas: every keyword family the syntax keeps. */
static const char *const k_schemas[] = {
    "{\"type\":\"object\",\"properties\":{"
    "\"city\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":12},"
    "\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":7},"
    "\"unit\":{\"enum\":[\"c\",\"f\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"maxItems\":3},"
    "\"exact\":{\"type\":\"boolean\"},"
    "\"at\":{\"type\":\"object\",\"properties\":{\"lat\":{\"type\":"
    "\"number\"},\"lon\":{\"type\":\"number\"}},\"required\":[\"lat\","
    "\"lon\"]}},\"required\":[\"city\"]}",
    /* a map: further keys */
    "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"},"
    "\"maxProperties\":3}",
    /* further keys beside declared ones */
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
    "\"additionalProperties\":{\"type\":\"string\",\"maxLength\":3},"
    "\"maxProperties\":2}",
    /* formats, any value, type lists, a const object in an anyOf */
    "{\"type\":\"object\",\"properties\":{"
    "\"when\":{\"type\":\"string\",\"format\":\"date\"},"
    "\"any\":{},"
    "\"n\":{\"type\":[\"integer\",\"null\"]},"
    "\"pick\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},"
    "{\"const\":{\"a\":[1,\"x y\"],\"b\":null}}]}},"
    "\"required\":[\"when\",\"any\",\"pick\"]}",
    /* uniqueItems over an enum, $ref */
    "{\"type\":\"object\",\"$defs\":{\"c\":{\"enum\":[\"red\",\"green\","
    "\"blue\"]}},\"properties\":{\"colors\":{\"type\":\"array\","
    "\"items\":{\"$ref\":\"#/$defs/c\"},\"uniqueItems\":true}},"
    "\"required\":[\"colors\"]}",
};

static void test_walks_read_back_valid(void **state) {
  (void)state;
  vocab v;
  vocab_init(&v);
  uint32_t seed = 42;
  for (size_t s = 0; s < sizeof k_schemas / sizeof *k_schemas; s++) {
    nucleus_grammar *g = compile(k_schemas[s], NUCLEUS_VALUE_SYNTAX_GEMMA4);
    nucleus_grammar *j = compile(k_schemas[s], NUCLEUS_VALUE_SYNTAX_JSON);
    int finished = 0;
    for (int w = 0; w < 40; w++) {
      char *text = walk(g, &v, &seed, 300);
      if (!text) continue;
      finished++;
      char *json = nc_gemma4_args_json(text, strlen(text));
      if (!json || !takes(j, json))
        fail_msg("schema %zu: the walk '%s' reads back as '%s'", s, text,
                 json ? json : "(not arguments)");
      free(json);
      free(text);
    }
    if (finished < 10)
      fail_msg("schema %zu: %d of 40 walks finished", s, finished);
    nucleus_grammar_free(g);
    nucleus_grammar_free(j);
  }
  nc_grammar_vocab_free(v.gv);
}

static void test_template_text_accepted_json_not(void **state) {
  (void)state;
  nucleus_grammar *g = compile(k_schemas[0], NUCLEUS_VALUE_SYNTAX_GEMMA4);
  /* as the template's format_argument writes arguments */
  assert_true(takes(g, "{city:<|\"|>Paris<|\"|>}"));
  assert_true(takes(g, "{city:<|\"|>Saint \"Malo\"<|\"|>,days:3,unit:<|\"|>"
                       "c<|\"|>,tags:[<|\"|>a\\b<|\"|>],exact:false,at:{"
                       "lat:48.6,lon:-2.0}}"));
  assert_false(takes(g, "{\"city\":\"Paris\"}"));
  assert_false(takes(g, "{city:\"Paris\"}"));
  assert_false(takes(g, "{days:3}"));                        /* required */
  assert_false(takes(g, "{city:<|\"|><|\"|>}"));             /* minLength */
  assert_false(takes(g, "{city:<|\"|>a<b<|\"|>}"));          /* no '<' */
  assert_false(takes(g, "{city:<|\"|>Paris<|\"|>,days:8}")); /* maximum */
  nucleus_grammar_free(g);
  g = compile(k_schemas[3], NUCLEUS_VALUE_SYNTAX_GEMMA4);
  assert_true(takes(g, "{when:<|\"|>2026-12-06<|\"|>,any:[{k:null}],"
                       "pick:{a:[1,<|\"|>x y<|\"|>],b:null}}"));
  assert_false(takes(g, "{when:<|\"|>2026-12-06<|\"|>,any:1,"
                        "pick:{\"a\":[1,\"x y\"],\"b\":null}}"));
  nucleus_grammar_free(g);
}

static const char *refused(const char *schema, nucleus_value_syntax s) {
  static nucleus_error err;
  memset(&err, 0, sizeof err);
  char *gbnf = (char *)"untouched";
  assert_int_equal(
      nucleus_json_schema_to_gbnf_in(schema, strlen(schema), s, &gbnf, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_null(gbnf);
  return err.message;
}

static void test_refused_names_what(void **state) {
  (void)state;
  const char *pat = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":"
                    "\"string\",\"pattern\":\"^[a-z]+$\"}}}";
  char *gbnf = NULL;
  assert_int_equal(nucleus_json_schema_to_gbnf_in(pat, strlen(pat),
                                                  NUCLEUS_VALUE_SYNTAX_JSON,
                                                  &gbnf, NULL),
                   NUCLEUS_OK);
  nucleus_free(gbnf);
  const char *m = refused(pat, NUCLEUS_VALUE_SYNTAX_GEMMA4);
  assert_non_null(strstr(m, "'pattern'"));
  assert_non_null(strstr(m, "#/properties/id"));
  m = refused("{\"type\":\"object\",\"properties\":{\"a:b\":{}}}",
              NUCLEUS_VALUE_SYNTAX_GEMMA4);
  assert_non_null(strstr(m, "'a:b'"));
  m = refused("{\"enum\":[\"one <|\\\"|> two\"]}", NUCLEUS_VALUE_SYNTAX_GEMMA4);
  assert_non_null(strstr(m, "string mark"));
  m = refused("{}", (nucleus_value_syntax)2);
  assert_non_null(strstr(m, "value syntax 2"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_walks_read_back_valid),
      cmocka_unit_test(test_template_text_accepted_json_not),
      cmocka_unit_test(test_refused_names_what),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
