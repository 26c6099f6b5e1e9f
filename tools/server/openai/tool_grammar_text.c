/* nucleus serve: GBNF text for the tool-call grammars (see
 * tool_grammar_text.h). */
#include "tool_grammar_text.h"

#include <stdlib.h>
#include <string.h>

void gbnf_put(gbnf_buf *b, const char *p, size_t n) {
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

void gbnf_puts(gbnf_buf *b, const char *p) {
  gbnf_put(b, p, strlen(p));
}

static bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* gbnf with every rule name (a word that starts with a letter, outside
 * literals, character classes and comments) prefixed. */
void gbnf_put_renamed(gbnf_buf *b, const char *g, const char *prefix) {
  for (const char *p = g; *p;) {
    if (*p == '#') { /* a comment, to the end of its line */
      const char *e = strchr(p, '\n');
      e = e ? e : p + strlen(p);
      gbnf_put(b, p, (size_t)(e - p));
      p = e;
    } else if (*p == '"' || *p == '[') {
      const char close = *p == '"' ? '"' : ']';
      const char *e = p + 1;
      while (*e && *e != close)
        e += e[0] == '\\' && e[1] ? 2 : 1;
      if (*e) e++;
      gbnf_put(b, p, (size_t)(e - p));
      p = e;
    } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
      const char *e = p;
      while (word_char(*e))
        e++;
      gbnf_puts(b, prefix);
      gbnf_put(b, p, (size_t)(e - p));
      p = e;
    } else if (word_char(*p)) { /* digits (repetition counts) */
      const char *e = p;
      while (word_char(*e))
        e++;
      gbnf_put(b, p, (size_t)(e - p));
      p = e;
    } else {
      gbnf_put(b, p++, 1);
    }
  }
}

/* name as a GBNF string literal. */
void gbnf_put_literal(gbnf_buf *b, const char *name) {
  gbnf_puts(b, "\"");
  for (const char *p = name; *p; p++) {
    if (*p == '"' || *p == '\\') gbnf_puts(b, "\\");
    gbnf_put(b, p, 1);
  }
  gbnf_puts(b, "\"");
}
