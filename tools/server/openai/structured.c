/* Structured output fields to one grammar (see structured.h). */
#include "structured.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char structured_json_object_gbnf[] =
    "root ::= object\n"
    "value ::= object | array | string | number | \"true\" | \"false\" | "
    "\"null\"\n"
    "object ::= \"{\" ( string \":\" value ( \",\" string \":\" value )* )? "
    "\"}\"\n"
    "array ::= \"[\" ( value ( \",\" value )* )? \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" "
    "( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\"\n"
    "number ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? "
    "( [eE] [-+]? [0-9]{1,3} )?\n";

#define MAX_CHOICES 256
#define MAX_CHOICE_BYTES 4096

static int compile(const char *text, size_t len, const char *param,
                   nucleus_grammar **out, api_error *e) {
  nucleus_error err = {0};
  if (nucleus_grammar_create(text, len, NULL, out, &err) != NUCLEUS_OK)
    return api_fail(e, 400, param, "'%s': %s", param, err.message);
  return 0;
}

/* guided_choice: root ::= "a" | "b" ..., each choice a GBNF literal. */
static int choice_grammar(const json_t *list, const char *param,
                          nucleus_grammar **out, api_error *e) {
  if (!json_is_array(list) || json_array_size(list) == 0 ||
      json_array_size(list) > MAX_CHOICES)
    return api_fail(e, 400, param, "'%s' must be a list of 1 to %d strings",
                    param, MAX_CHOICES);
  size_t cap = 16, n = 0;
  char *g = malloc(cap);
  if (!g) return api_fail(e, 500, NULL, "out of memory");
  memcpy(g, "root ::= ", 9);
  n = 9;
  size_t i;
  const json_t *c;
  json_array_foreach(list, i, c) {
    if (!json_is_string(c) || json_string_length(c) == 0 ||
        json_string_length(c) > MAX_CHOICE_BYTES) {
      free(g);
      return api_fail(e, 400, param,
                      "'%s[%zu]' must be a non-empty string of at most %d "
                      "bytes",
                      param, i, MAX_CHOICE_BYTES);
    }
    const unsigned char *s = (const unsigned char *)json_string_value(c);
    size_t len = json_string_length(c);
    size_t need = n + 8 * len + 8;
    if (need > cap) {
      while (cap < need)
        cap *= 2;
      char *ng = realloc(g, cap);
      if (!ng) {
        free(g);
        return api_fail(e, 500, NULL, "out of memory");
      }
      g = ng;
    }
    if (i) n += (size_t)sprintf(g + n, " | ");
    g[n++] = '"';
    for (size_t k = 0; k < len; k++) {
      if (s[k] == '"' || s[k] == '\\') {
        g[n++] = '\\';
        g[n++] = (char)s[k];
      } else if (s[k] < 0x20 || s[k] == 0x7F) {
        n += (size_t)sprintf(g + n, "\\x%02X", s[k]);
      } else {
        g[n++] = (char)s[k];
      }
    }
    g[n++] = '"';
  }
  int rc = compile(g, n, param, out, e);
  free(g);
  return rc;
}

static int text_grammar(const json_t *v, const char *param,
                        nucleus_grammar **out, api_error *e) {
  if (!json_is_string(v))
    return api_fail(e, 400, param, "'%s' must be a string of GBNF", param);
  return compile(json_string_value(v), json_string_length(v), param, out, e);
}

/* A schema (an object, a boolean, or a string holding JSON) to a grammar. */
static int schema_grammar(const json_t *v, const char *param,
                          nucleus_grammar **out, api_error *e) {
  char *dumped = NULL;
  const char *text;
  size_t len;
  if (json_is_string(v)) {
    text = json_string_value(v);
    len = json_string_length(v);
    json_error_t jerr;
    json_t *parsed = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    if (!parsed)
      return api_fail(e, 400, param, "'%s' is not JSON: %s", param, jerr.text);
    bool schema = json_is_object(parsed) || json_is_boolean(parsed);
    json_decref(parsed);
    if (!schema)
      return api_fail(e, 400, param, "'%s' must be a JSON Schema object",
                      param);
  } else if (json_is_object(v) || json_is_boolean(v)) {
    dumped = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!dumped) return api_fail(e, 500, NULL, "out of memory");
    text = dumped;
    len = strlen(dumped);
  } else {
    return api_fail(e, 400, param, "'%s' must be a JSON Schema object", param);
  }
  nucleus_error err = {0};
  char *gbnf = NULL;
  /* the whole output: uniqueItems checked exactly where it can be */
  nucleus_status st = nucleus_json_schema_to_gbnf_doc(text, len, &gbnf, &err);
  if (st == NUCLEUS_OK) {
    structured_log_schema_notes(gbnf, param);
    st = nucleus_grammar_create(gbnf, strlen(gbnf), NULL, out, &err);
    if (st == NUCLEUS_ERR_LIMIT && strstr(gbnf, "#@unique-items")) {
      /* too large with the $ref copies the checks took: without them */
      nucleus_free(gbnf);
      gbnf = NULL;
      err = (nucleus_error){0};
      st = nucleus_json_schema_to_gbnf(text, len, &gbnf, &err);
      if (st == NUCLEUS_OK)
        st = nucleus_grammar_create(gbnf, strlen(gbnf), NULL, out, &err);
    }
    nucleus_free(gbnf);
  }
  free(dumped);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, param, "'%s': %s",
                    param, err.message);
  return 0;
}

void structured_log_schema_notes(const char *gbnf, const char *param) {
  static const char tag[] = "# json-schema: ";
  for (const char *p = gbnf; p && !strncmp(p, tag, sizeof tag - 1);) {
    const char *nl = strchr(p, '\n');
    int n = (int)(nl ? nl - p : (ptrdiff_t)strlen(p)) - (int)(sizeof tag - 1);
    fprintf(stderr, "nucleus: %s: JSON Schema: %.*s\n", param, n,
            p + sizeof tag - 1);
    p = nl ? nl + 1 : NULL;
  }
}

static const json_t *field(const json_t *root, const char *key) {
  const json_t *v = json_object_get(root, key);
  return json_is_null(v) ? NULL : v;
}

int structured_parse(const json_t *root, nucleus_grammar **out,
                     const char **param, api_error *e) {
  *out = NULL;
  *param = NULL;
  const json_t *rf = field(root, "response_format");
  const char *rf_type = NULL;
  if (rf) {
    const json_t *type = json_object_get(rf, "type");
    rf_type = json_is_string(type) ? json_string_value(type) : NULL;
    if (!json_is_object(rf) || !rf_type)
      return api_fail(e, 400, "response_format",
                      "'response_format' must be an object with a 'type'");
    if (strcmp(rf_type, "text") && strcmp(rf_type, "json_object") &&
        strcmp(rf_type, "json_schema"))
      return api_fail(e, 400, "response_format",
                      "'response_format.type' must be 'text', 'json_object' "
                      "or 'json_schema', got '%.64s'",
                      rf_type);
    if (!strcmp(rf_type, "text")) rf_type = NULL;
  }
  const json_t *so = field(root, "structured_outputs");
  if (so && !json_is_object(so))
    return api_fail(e, 400, "structured_outputs",
                    "'structured_outputs' must be an object");
  /* Every way of asking, by field name; at most one may be given. */
  const struct {
    const char *name;
    const json_t *v;
  } asks[] = {
      {"response_format", rf_type ? rf : NULL},
      {"grammar", field(root, "grammar")},
      {"json_schema", field(root, "json_schema")},
      {"guided_json", field(root, "guided_json")},
      {"guided_regex", field(root, "guided_regex")},
      {"guided_choice", field(root, "guided_choice")},
      {"guided_grammar", field(root, "guided_grammar")},
      {"structured_outputs.json", so ? field(so, "json") : NULL},
      {"structured_outputs.regex", so ? field(so, "regex") : NULL},
      {"structured_outputs.choice", so ? field(so, "choice") : NULL},
      {"structured_outputs.grammar", so ? field(so, "grammar") : NULL},
  };
  int which = -1;
  for (int i = 0; i < (int)(sizeof asks / sizeof asks[0]); i++) {
    if (!asks[i].v) continue;
    if (which >= 0)
      return api_fail(e, 400, asks[i].name,
                      "'%s' and '%s' both ask for structured output: give "
                      "one",
                      asks[which].name, asks[i].name);
    which = i;
  }
  if (so) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)so, key, v) {
      if (strcmp(key, "json") && strcmp(key, "regex") &&
          strcmp(key, "choice") && strcmp(key, "grammar"))
        return api_fail(e, 400, "structured_outputs",
                        "'structured_outputs.%.64s' is not supported (json, "
                        "regex, choice, grammar)",
                        key);
    }
  }
  if (which < 0) return 0;
  const char *name = asks[which].name;
  const json_t *v = asks[which].v;
  *param = name;
  if (!strcmp(name, "response_format")) {
    if (!strcmp(rf_type, "json_object"))
      return compile(structured_json_object_gbnf,
                     strlen(structured_json_object_gbnf), name, out, e);
    const json_t *js = json_object_get(v, "json_schema");
    if (!json_is_object(js))
      return api_fail(e, 400, name,
                      "'response_format.json_schema' must be an object "
                      "{\"name\", \"schema\", \"strict\"}");
    const json_t *strict = json_object_get(js, "strict");
    const json_t *nm = json_object_get(js, "name");
    if ((strict && !json_is_boolean(strict) && !json_is_null(strict)) ||
        (nm && !json_is_string(nm)))
      return api_fail(e, 400, name,
                      "'response_format.json_schema': 'name' must be a "
                      "string and 'strict' a boolean");
    const json_t *schema = json_object_get(js, "schema");
    /* No schema: any JSON object (OpenAI's default). The output always
     * follows the schema, strict or not. */
    if (!schema || json_is_null(schema))
      return compile(structured_json_object_gbnf,
                     strlen(structured_json_object_gbnf), name, out, e);
    return schema_grammar(schema, "response_format", out, e);
  }
  if (!strcmp(name, "json_schema") || !strcmp(name, "guided_json") ||
      !strcmp(name, "structured_outputs.json"))
    return schema_grammar(v, name, out, e);
  if (!strcmp(name, "grammar") || !strcmp(name, "guided_grammar") ||
      !strcmp(name, "structured_outputs.grammar"))
    return text_grammar(v, name, out, e);
  if (!strcmp(name, "guided_choice") ||
      !strcmp(name, "structured_outputs.choice"))
    return choice_grammar(v, name, out, e);
  return api_fail(e, 400, name,
                  "'%s' is not supported yet (regular expressions as a "
                  "whole output are not built; a JSON Schema 'pattern' is)",
                  name);
}
