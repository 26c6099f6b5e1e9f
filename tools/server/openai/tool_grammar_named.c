/* nucleus serve: the part the grammars of formats that write a call's
 * name outside its arguments share (harmony, Gemma 4; see
 * tool_grammar.h): each allowed tool's parameters converted on their own,
 * the rules renamed t<i>-..., and one alternative per tool. */
#include "tool_grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured.h"

int tool_grammar_named(const json_t *tools, const tool_opts *o,
                       nucleus_value_syntax syntax, const char *between,
                       gbnf_buf *rules, gbnf_buf *alts, api_error *e) {
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
        schema ? nucleus_json_schema_to_gbnf_in(schema, strlen(schema), syntax,
                                                &gbnf, &jerr)
               : NUCLEUS_ERR_NOMEM;
    free(schema);
    if (st != NUCLEUS_OK)
      return st == NUCLEUS_ERR_NOMEM
                 ? api_fail(e, 500, NULL, "out of memory")
                 : api_fail(e, 400, "tools",
                            "the parameters of tool '%s' are outside the "
                            "supported JSON Schema subset%s: %s",
                            name,
                            syntax == NUCLEUS_VALUE_SYNTAX_GEMMA4
                                ? " of Gemma 4's call syntax"
                                : "",
                            jerr.message);
    structured_log_schema_notes(gbnf, "tools");
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%zu-", i);
    gbnf_put_renamed(rules, gbnf, prefix);
    nucleus_free(gbnf);
    gbnf_puts(rules, "\n");
    gbnf_puts(alts, n++ ? " | " : "");
    gbnf_put_literal(alts, name);
    gbnf_puts(alts, " ");
    gbnf_puts(alts, between);
    gbnf_puts(alts, prefix);
    gbnf_puts(alts, "root");
  }
  if (rules->oom || alts->oom) return api_fail(e, 500, NULL, "out of memory");
  if (!n) return api_fail(e, 400, "tool_choice", "no tool to call");
  return 0;
}

int tool_grammar_compile(gbnf_buf *g, nucleus_grammar **out, api_error *e) {
  if (g->oom) {
    free(g->s);
    return api_fail(e, 500, NULL, "out of memory");
  }
  nucleus_error err = {0};
  nucleus_status st = nucleus_grammar_create(g->s, g->n, NULL, out, &err);
  free(g->s);
  *g = (gbnf_buf){0};
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, "tools",
                    "the tools' call grammar: %s", err.message);
  return 0;
}
