/* nucleus serve: the grammar that forces a harmony (gpt-oss) call: the
 * header of a commentary message to functions.NAME, then a JSON object of
 * NAME's parameter schema as its body:
 *
 *   root ::= "<|channel|>commentary to=functions." ( "NAME0" HEAD t0-root
 *            | "NAME1" HEAD t1-root | ... )
 *   HEAD  = " <|constrain|>json<|message|>"
 *
 * (the name is written in the header, not in the JSON, so each tool's
 * schema is converted on its own and its rules renamed t<i>-...). The reply
 * then ends with the model's end of a call (<|call|>, an end of
 * generation). One call per reply: harmony writes one per message. */
#include "tool_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured.h"

#define HEAD " <|constrain|>json<|message|>"

typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} buf;

static void put(buf *b, const char *p, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->n, p, n);
  b->n += n;
  b->s[b->n] = '\0';
}

static void puts_(buf *b, const char *p) {
  put(b, p, strlen(p));
}

static bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* gbnf with every rule name (a word that starts with a letter, outside
 * literals, character classes and comments) prefixed. */
static void put_renamed(buf *b, const char *g, const char *prefix) {
  for (const char *p = g; *p;) {
    if (*p == '#') { /* a comment, to the end of its line */
      const char *e = strchr(p, '\n');
      e = e ? e : p + strlen(p);
      put(b, p, (size_t)(e - p));
      p = e;
    } else if (*p == '"' || *p == '[') {
      const char close = *p == '"' ? '"' : ']';
      const char *e = p + 1;
      while (*e && *e != close)
        e += e[0] == '\\' && e[1] ? 2 : 1;
      if (*e) e++;
      put(b, p, (size_t)(e - p));
      p = e;
    } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
      const char *e = p;
      while (word_char(*e))
        e++;
      puts_(b, prefix);
      put(b, p, (size_t)(e - p));
      p = e;
    } else if (word_char(*p)) { /* digits (repetition counts) */
      const char *e = p;
      while (word_char(*e))
        e++;
      put(b, p, (size_t)(e - p));
      p = e;
    } else {
      put(b, p++, 1);
    }
  }
}

/* name as a GBNF string literal. */
static void put_literal(buf *b, const char *name) {
  puts_(b, "\"");
  for (const char *p = name; *p; p++) {
    if (*p == '"' || *p == '\\') puts_(b, "\\");
    put(b, p, 1);
  }
  puts_(b, "\"");
}

int tool_grammar_harmony(const json_t *tools, const tool_opts *o,
                         nucleus_grammar **out, api_error *e) {
  *out = NULL;
  buf rules = {0}, alts = {0};
  size_t i, n = 0;
  const json_t *t;
  json_array_foreach(tools, i, t) {
    const json_t *fn = json_object_get(t, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (!name || (o->choice == TOOL_CHOICE_NAMED && strcmp(name, o->name)))
      continue;
    const json_t *params = json_object_get(fn, "parameters");
    char *schema = params ? json_dumps(params, JSON_COMPACT)
                          : strdup("{\"type\":\"object\"}");
    char *gbnf = NULL;
    nucleus_error jerr = {0};
    nucleus_status st =
        schema
            ? nucleus_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &jerr)
            : NUCLEUS_ERR_NOMEM;
    free(schema);
    if (st != NUCLEUS_OK) {
      free(rules.s);
      free(alts.s);
      return st == NUCLEUS_ERR_NOMEM
                 ? api_fail(e, 500, NULL, "out of memory")
                 : api_fail(e, 400, "tools",
                            "a tool's parameters are outside the supported "
                            "JSON Schema subset: %s",
                            jerr.message);
    }
    structured_log_schema_notes(gbnf, "tools");
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%zu-", i);
    put_renamed(&rules, gbnf, prefix);
    nucleus_free(gbnf);
    puts_(&rules, "\n");
    puts_(&alts, n++ ? " | " : "");
    put_literal(&alts, name);
    puts_(&alts, " \"" HEAD "\" ");
    puts_(&alts, prefix);
    puts_(&alts, "root");
  }
  buf g = {0};
  puts_(&g, "root ::= \"<|channel|>commentary to=functions.\" ( ");
  if (alts.s) puts_(&g, alts.s);
  puts_(&g, " )\n");
  if (rules.s) puts_(&g, rules.s);
  free(rules.s);
  free(alts.s);
  if (g.oom || rules.oom || alts.oom) {
    free(g.s);
    return api_fail(e, 500, NULL, "out of memory");
  }
  if (!n) {
    free(g.s);
    return api_fail(e, 400, "tool_choice", "no tool to call");
  }
  nucleus_error err = {0};
  nucleus_status st = nucleus_grammar_create(g.s, g.n, NULL, out, &err);
  free(g.s);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, "tools",
                    "the tools' call grammar: %s", err.message);
  return 0;
}
