/* nucleus serve: the grammar that forces Gemma 4 calls, written as its
 * template writes them (format_argument with bare keys):
 *
 *   root ::= one                     (a named function; parallel off)
 *          | one one{0,K-1}          (required, parallel: K calls at most)
 *   one  ::= "<|tool_call>call:" ( "NAME0" t0-root | "NAME1" t1-root | ... )
 *            "<tool_call|>"
 *
 * each tool's parameters a grammar of Gemma 4's argument syntax
 * (NUCLEUS_VALUE_SYNTAX_GEMMA4: {key:value}, strings between <|"|>), read
 * back into JSON by tool_call_gemma4.c. */
#include "tool_grammar.h"

#include <stdio.h>
#include <stdlib.h>

int tool_grammar_gemma4(const json_t *tools, const tool_opts *o,
                        nucleus_grammar **out, api_error *e) {
  *out = NULL;
  gbnf_buf rules = {0}, alts = {0};
  if (tool_grammar_named(tools, o, NUCLEUS_VALUE_SYNTAX_GEMMA4, "", &rules,
                         &alts, e)) {
    free(rules.s);
    free(alts.s);
    return -1;
  }
  size_t max_calls =
      o->n_tools < TOOL_GRAMMAR_MAX_CALLS ? o->n_tools : TOOL_GRAMMAR_MAX_CALLS;
  gbnf_buf g = {0};
  char head[96];
  if (o->parallel && o->choice == TOOL_CHOICE_REQUIRED && max_calls > 1)
    snprintf(head, sizeof head, "root ::= one one{0,%zu}\n", max_calls - 1);
  else
    snprintf(head, sizeof head, "root ::= one\n");
  gbnf_puts(&g, head);
  gbnf_puts(&g, "one ::= \"<|tool_call>call:\" ( ");
  gbnf_puts(&g, alts.s);
  gbnf_puts(&g, " ) \"<tool_call|>\"\n");
  gbnf_puts(&g, rules.s);
  free(rules.s);
  free(alts.s);
  return tool_grammar_compile(&g, out, e);
}
