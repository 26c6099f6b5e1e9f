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

#include <stdlib.h>

#define HEAD " <|constrain|>json<|message|>"

int tool_grammar_harmony(const json_t *tools, const tool_opts *o,
                         nucleus_grammar **out, api_error *e) {
  *out = NULL;
  gbnf_buf rules = {0}, alts = {0};
  if (tool_grammar_named(tools, o, NUCLEUS_VALUE_SYNTAX_JSON, "\"" HEAD "\" ",
                         &rules, &alts, e)) {
    free(rules.s);
    free(alts.s);
    return -1;
  }
  gbnf_buf g = {0};
  gbnf_puts(&g, "root ::= \"<|channel|>commentary to=functions.\" ( ");
  gbnf_puts(&g, alts.s);
  gbnf_puts(&g, " )\n");
  gbnf_puts(&g, rules.s);
  free(rules.s);
  free(alts.s);
  return tool_grammar_compile(&g, out, e);
}
