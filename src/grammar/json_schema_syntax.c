/* json_schema: the syntaxes values are written in (json_schema.h's
 * js_syntax): JSON, and Gemma 4's call arguments. Only strings, keys and
 * the shared rules differ; numbers, true, false, null and the punctuation
 * are the same text in both. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

#define GEMMA4_QUOTE "<|\"|>"

static const char k_json_values[] =
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" "
    "[0-9a-fA-F]{4} )\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ( string \":\" value ( \",\" string \":\" value )* )? "
    "\"}\"\n"
    "array ::= \"[\" ( value ( \",\" value )* )? \"]\"\n";

/* Strings hold no '<' (so never the closing mark) and no control
 * character but tab and newline; keys are names. */
static const char k_gemma4_values[] =
    "char ::= [^<\\x00-\\x08\\x0B-\\x1F\\x7F]\n"
    "string ::= \"<|\\\"|>\" char* \"<|\\\"|>\"\n"
    "key ::= [a-zA-Z0-9_\\-]{1,32}\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ( key \":\" value ( \",\" key \":\" value )* )? \"}\"\n"
    "array ::= \"[\" ( value ( \",\" value )* )? \"]\"\n";

const char *js_syntax_values(js_syntax s) {
  return s == JS_SYNTAX_GEMMA4 ? k_gemma4_values : k_json_values;
}

const char *js_quote(const ctx *c) {
  return c->syntax == JS_SYNTAX_GEMMA4 ? "\"<|\\\"|>\"" : "\"\\\"\"";
}

const char *js_key_quote(const ctx *c) {
  return c->syntax == JS_SYNTAX_GEMMA4 ? "\"\"" : "\"\\\"\"";
}

const char *js_key_rule(const ctx *c) {
  return c->syntax == JS_SYNTAX_GEMMA4 ? "key" : "string";
}

/* Whether Gemma 4's argument reader (tool_call_gemma4.c) reads name back
 * as a bare key: it ends a key at ':' and at the punctuation. */
static bool gemma4_bare_key(const char *name) {
  return name[0] && !strpbrk(name, ":,{}[]") &&
         strncmp(name, GEMMA4_QUOTE, strlen(GEMMA4_QUOTE));
}

int js_key_lit(ctx *c, sb *b, const char *name) {
  if (c->syntax == JS_SYNTAX_GEMMA4) {
    if (!gemma4_bare_key(name))
      return js_fail(c,
                     "the property name '%.64s' cannot be written as a key of "
                     "Gemma 4's call syntax (keys are bare: not empty, no "
                     "':' ',' '{' '}' '[' ']')",
                     name);
    js_sb_lit(b, name, strlen(name));
    return 0;
  }
  json_t *j = json_string(name);
  char *js = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  if (!js) return js_fail_oom(c);
  js_sb_lit(b, js, strlen(js));
  free(js);
  return 0;
}

/* x in Gemma 4's syntax into b; -1 when it cannot be written (c failed). */
static int gemma4_text(ctx *c, const json_t *x, sb *b, int depth) {
  if (depth > MAX_DEPTH) return js_fail_limit(c, "a value nested too deeply");
  if (json_is_string(x)) {
    const char *s = json_string_value(x);
    if (strstr(s, GEMMA4_QUOTE))
      return js_fail(
          c,
          "the string '%.64s' holds Gemma 4's string mark " GEMMA4_QUOTE
          " and cannot be written in its call syntax",
          s);
    js_sb_add(b, GEMMA4_QUOTE, strlen(GEMMA4_QUOTE));
    js_sb_add(b, s, json_string_length(x));
    js_sb_add(b, GEMMA4_QUOTE, strlen(GEMMA4_QUOTE));
    return 0;
  }
  if (json_is_object(x)) {
    const char *k;
    const json_t *v;
    bool first = true;
    js_sb_add(b, "{", 1);
    json_object_foreach((json_t *)x, k, v) {
      if (!gemma4_bare_key(k))
        return js_fail(c,
                       "the key '%.64s' cannot be written bare in Gemma 4's "
                       "call syntax",
                       k);
      if (!first) js_sb_add(b, ",", 1);
      first = false;
      js_sb_add(b, k, strlen(k));
      js_sb_add(b, ":", 1);
      if (gemma4_text(c, v, b, depth + 1)) return -1;
    }
    js_sb_add(b, "}", 1);
    return 0;
  }
  if (json_is_array(x)) {
    size_t i;
    const json_t *v;
    js_sb_add(b, "[", 1);
    json_array_foreach(x, i, v) {
      if (i) js_sb_add(b, ",", 1);
      if (gemma4_text(c, v, b, depth + 1)) return -1;
    }
    js_sb_add(b, "]", 1);
    return 0;
  }
  char *js = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!js) return js_fail_oom(c);
  js_sb_add(b, js, strlen(js));
  free(js);
  return 0;
}

char *js_value_text(ctx *c, const json_t *x) {
  if (c->syntax == JS_SYNTAX_JSON) {
    char *js = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!js) js_fail_oom(c);
    return js;
  }
  sb b = {0};
  if (gemma4_text(c, x, &b, 0)) {
    free(b.s);
    return NULL;
  }
  if (b.oom || b.big || !b.s) {
    free(b.s);
    b.big ? js_fail_big(c) : js_fail_oom(c);
    return NULL;
  }
  return b.s;
}
