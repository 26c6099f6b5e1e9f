/* jinja_lex: splits template text into tokens exactly as jinja2's lexer does
 * with trim_blocks=True and lstrip_blocks=True (the settings of HF
 * transformers' apply_chat_template): newlines normalised to \n, one trailing
 * newline dropped, {%- -%} {{- -}} {#- -#} whitespace control, {%+ +%},
 * comments dropped, {% raw %} blocks kept verbatim. */
#ifndef NC_JINJA_LEX_H
#define NC_JINJA_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "jinja_arena.h"

typedef enum jtok_type {
  TK_EOF,
  TK_DATA,        /* template text (p, n) */
  TK_VAR_BEGIN,   /* {{ */
  TK_VAR_END,     /* }} */
  TK_BLOCK_BEGIN, /* {% */
  TK_BLOCK_END,   /* %} */
  TK_NAME,        /* identifier (p, n) */
  TK_STRING,      /* decoded string literal (p, n) */
  TK_INT,         /* i */
  TK_FLOAT,       /* f */
  TK_OP,          /* operator text (p, n), e.g. "==", "[", "|" */
} jtok_type;

typedef struct jtok {
  jtok_type t;
  int line;
  const char *p;
  size_t n;
  int64_t i;
  double f;
} jtok;

/* Tokenizes src into *toks (arena-owned, ending with TK_EOF). A syntax error
 * fails with NC_ERR_FORMAT and the template line. */
nc_code jinja_lex(jinja_arena *a, const char *src, size_t len, jtok **toks,
                  size_t *n_toks, nc_error *err);

#endif
