/* nucleus serve: building GBNF text for the tool-call grammars: a growing
 * buffer, and a converted schema's rules renamed into a grammar of several
 * (tool_grammar_harmony.c, tool_grammar_gemma4.c). */
#ifndef NUCLEUS_SERVER_TOOL_GRAMMAR_TEXT_H
#define NUCLEUS_SERVER_TOOL_GRAMMAR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* s: NUL-terminated (malloc'd) once anything is put; oom: a put failed
 * (nothing more is added). */
typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} gbnf_buf;

void gbnf_put(gbnf_buf *b, const char *p, size_t n);
void gbnf_puts(gbnf_buf *b, const char *p);
/* gbnf with every rule name (a word that starts with a letter, outside
 * literals, character classes and comments) prefixed. */
void gbnf_put_renamed(gbnf_buf *b, const char *g, const char *prefix);
/* name as a GBNF string literal. */
void gbnf_put_literal(gbnf_buf *b, const char *name);

#endif
