/* jinja_parse: builds the syntax tree from tokens, following jinja2's
 * grammar and operator precedence. Nesting is limited so that a hostile
 * template cannot exhaust the stack. */
#ifndef NC_JINJA_PARSE_H
#define NC_JINJA_PARSE_H

#include "jinja_ast.h"
#include "jinja_lex.h"

#define JINJA_MAX_PARSE_DEPTH 256

/* Parses a whole template into a JN_BODY node (arena-owned). */
nc_code jinja_parse(jinja_arena *a, const jtok *toks, size_t n_toks,
                    jnode **out, nc_error *err);

#endif
