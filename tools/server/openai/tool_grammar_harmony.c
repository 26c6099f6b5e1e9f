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
#include "tool_grammar_text.h"

#define HEAD " <|constrain|>json<|message|>"

int tool_grammar_harmony(const json_t *tools, const tool_opts *o,
                         nucleus_grammar **out, api_error *e) {
  *out = NULL;
  gbnf_buf rules = {0}, alts = {0};
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
    gbnf_put_renamed(&rules, gbnf, prefix);
    nucleus_free(gbnf);
    gbnf_puts(&rules, "\n");
    gbnf_puts(&alts, n++ ? " | " : "");
    gbnf_put_literal(&alts, name);
    gbnf_puts(&alts, " \"" HEAD "\" ");
    gbnf_puts(&alts, prefix);
    gbnf_puts(&alts, "root");
  }
  gbnf_buf g = {0};
  gbnf_puts(&g, "root ::= \"<|channel|>commentary to=functions.\" ( ");
  if (alts.s) gbnf_puts(&g, alts.s);
  gbnf_puts(&g, " )\n");
  if (rules.s) gbnf_puts(&g, rules.s);
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
