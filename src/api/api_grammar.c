/* Public grammar entry points (include/nucleus.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

nucleus_status nucleus_grammar_create(const char *gbnf, size_t len,
                                      const char *root, nucleus_grammar **out,
                                      nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "grammar: out is NULL");
  return nc_grammar_handle_create(gbnf, len, root, out, err);
}

void nucleus_grammar_free(nucleus_grammar *g) {
  nc_grammar_handle_unref(g);
}

nucleus_status nucleus_json_schema_to_gbnf(const char *schema_json, size_t len,
                                           char **gbnf_out,
                                           nucleus_error *err) {
  return nucleus_json_schema_to_gbnf_in(
      schema_json, len, NUCLEUS_VALUE_SYNTAX_JSON, gbnf_out, err);
}

static nucleus_status to_gbnf(const char *schema_json, size_t len,
                              nucleus_value_syntax syntax, unsigned flags,
                              char **gbnf_out, nucleus_error *err) {
  if (!gbnf_out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "json schema: out is NULL");
  *gbnf_out = NULL;
  if (syntax != NUCLEUS_VALUE_SYNTAX_JSON &&
      syntax != NUCLEUS_VALUE_SYNTAX_GEMMA4)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "json schema: value syntax %d is not one of %d (JSON) "
                   "and %d (Gemma 4)",
                   (int)syntax, NUCLEUS_VALUE_SYNTAX_JSON,
                   NUCLEUS_VALUE_SYNTAX_GEMMA4);
  if (!schema_json && len)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "json schema: text is NULL");
  /* The grammar can be no longer than this; a schema neither. */
  if (len > NC_GRAMMAR_MAX_TEXT)
    return nc_fail(err, NC_ERR_LIMIT, "a JSON Schema of more than %u bytes",
                   NC_GRAMMAR_MAX_TEXT);
  json_error_t jerr;
  json_t *schema =
      json_loadb(schema_json ? schema_json : "", len, JSON_DECODE_ANY, &jerr);
  if (!schema)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "not JSON: %s (line %d column %d)", jerr.text, jerr.line,
                   jerr.column);
  nc_code rc = NC_OK;
  if (!json_is_object(schema) && !json_is_boolean(schema))
    rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                 "a JSON Schema must be an object or a boolean");
  else
    rc = json_schema_to_gbnf_opts(schema,
                                  syntax == NUCLEUS_VALUE_SYNTAX_GEMMA4
                                      ? JS_SYNTAX_GEMMA4
                                      : JS_SYNTAX_JSON,
                                  flags, gbnf_out, err);
  json_decref(schema);
  return rc;
}

nucleus_status nucleus_json_schema_to_gbnf_in(const char *schema_json,
                                              size_t len,
                                              nucleus_value_syntax syntax,
                                              char **gbnf_out,
                                              nucleus_error *err) {
  return to_gbnf(schema_json, len, syntax, 0, gbnf_out, err);
}

nucleus_status nucleus_json_schema_to_gbnf_doc(const char *schema_json,
                                               size_t len, char **gbnf_out,
                                               nucleus_error *err) {
  return to_gbnf(schema_json, len, NUCLEUS_VALUE_SYNTAX_JSON, JS_DOC, gbnf_out,
                 err);
}

nucleus_status nucleus_grammar_from_json_schema(const char *schema_json,
                                                size_t len,
                                                nucleus_grammar **out,
                                                nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "grammar: out is NULL");
  *out = NULL;
  char *gbnf = NULL;
  nc_code rc = nucleus_json_schema_to_gbnf_doc(schema_json, len, &gbnf, err);
  if (rc != NC_OK) return rc;
  rc = nc_grammar_handle_create(gbnf, strlen(gbnf), NULL, out, err);
  if (rc == NC_ERR_LIMIT && strstr(gbnf, "#@unique-items")) {
    /* too large with the $ref copies the checks took: without them */
    free(gbnf);
    gbnf = NULL;
    rc = nucleus_json_schema_to_gbnf(schema_json, len, &gbnf, err);
    if (rc == NC_OK)
      rc = nc_grammar_handle_create(gbnf, strlen(gbnf), NULL, out, err);
  }
  free(gbnf);
  return rc;
}
