/* libFuzzer target for the JSON Schema converter (src/grammar/json_schema.c):
 * the input up to its first NUL byte is a schema (JSON text); it goes through
 * nucleus_json_schema_to_gbnf, and the GBNF it gives must compile (or be
 * refused for a bound, left recursion or an empty language: the schema's
 * own faults; a syntax error is the converter's). The bytes after the NUL
 * are fed to a matcher of that grammar one at a time (a refused byte is
 * skipped); what it accepts as a sentence must parse as JSON. The schema
 * in Gemma 4's call syntax (NUCLEUS_VALUE_SYNTAX_GEMMA4) must compile or
 * be refused alike. The JSON compile is the whole-output one (the server's
 * response_format): a root array with a "#@unique-items []" directive
 * accepted as a sentence holds no two equal items (json_equal: a subset of
 * the repeats the check refuses). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

/* A grammar the converter made may be refused only for these. */
static bool schema_fault(const nc_error *err) {
  return err->code == NC_ERR_LIMIT || strstr(err->message, "left recursion") ||
         strstr(err->message, "empty language");
}

/* The schema's grammar in Gemma 4's syntax compiles, or either step
 * says why not. */
static void gemma4_syntax(const char *schema, size_t len) {
  char *gbnf = NULL;
  nucleus_error err = {0};
  if (nucleus_json_schema_to_gbnf_in(schema, len, NUCLEUS_VALUE_SYNTAX_GEMMA4,
                                     &gbnf, &err) != NUCLEUS_OK) {
    if (gbnf || !err.message[0]) abort();
    return;
  }
  nc_grammar *g = NULL;
  nc_error gerr = {0};
  if (nc_grammar_parse(gbnf, strlen(gbnf), NULL, &g, &gerr) != NC_OK &&
      !schema_fault(&gerr))
    abort();
  nc_grammar_free(g);
  free(gbnf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  const uint8_t *nul = memchr(data, 0, size);
  size_t slen = nul ? (size_t)(nul - data) : size;
  gemma4_syntax((const char *)data, slen);
  char *gbnf = NULL;
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_json_schema_to_gbnf_doc((const char *)data, slen, &gbnf, &err);
  if (st != NUCLEUS_OK) {
    if (gbnf || !err.message[0]) abort(); /* every refusal says why */
    return 0;
  }
  if (!gbnf) abort();
  nc_grammar *g = NULL;
  nc_error gerr = {0};
  if (nc_grammar_parse(gbnf, strlen(gbnf), NULL, &g, &gerr) != NC_OK) {
    if (!schema_fault(&gerr)) abort(); /* the converter wrote bad GBNF */
    free(gbnf);                        /* nucleus_free, without api_model */
    return 0;
  }
  bool unique_root = strstr(gbnf, "#@unique-items []\n") != NULL;
  free(gbnf); /* nucleus_free, without api_model */
  nc_grammar_matcher *m = NULL;
  if (nc_grammar_matcher_create(g, &m, &gerr) == NC_OK) {
    const uint8_t *in = nul ? nul + 1 : data + size;
    size_t n = nul ? size - slen - 1 : 0;
    if (n > 256) n = 256;
    char text[256];
    size_t t = 0;
    for (size_t i = 0; i < n; i++) {
      bool ok = false;
      if (nc_grammar_matcher_accept(m, (const char *)in + i, 1, &ok, &gerr) !=
          NC_OK)
        break;
      if (ok) text[t++] = (char)in[i];
    }
    if (nc_grammar_matcher_complete(m) && !nc_grammar_matcher_accepting(m))
      abort();
    if (t && nc_grammar_matcher_accepting(m)) {
      json_error_t jerr;
      json_t *v = json_loadb(text, t, JSON_DECODE_ANY, &jerr);
      /* jansson refuses numbers beyond a double (1e999): still JSON. */
      if (!v && !strstr(jerr.text, "overflow")) abort();
      for (size_t i = 0;
           unique_root && json_is_array(v) && i < json_array_size(v); i++)
        for (size_t j = 0; j < i; j++)
          if (json_equal(json_array_get(v, i), json_array_get(v, j))) abort();
      json_decref(v);
    }
    nc_grammar_matcher_free(m);
  }
  nc_grammar_free(g);
  return 0;
}
