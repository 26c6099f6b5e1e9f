/* jinja_buf: growable byte buffer with a limit. */
#include "jinja_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(jbuf *b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->limit = limit;
}

void jbuf_free(jbuf *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

bool jbuf_add(jbuf *b, const char *s, size_t n) {
  if (b->over || b->oom) return false;
  if (n > b->limit || b->n > b->limit - n) {
    b->over = true;
    return false;
  }
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return false;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
  return true;
}

bool jbuf_addc(jbuf *b, char c) {
  return jbuf_add(b, &c, 1);
}

bool jbuf_adds(jbuf *b, const char *s) {
  return jbuf_add(b, s, strlen(s));
}

bool jbuf_printf(jbuf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return false;
  if ((size_t)n < sizeof tmp) return jbuf_add(b, tmp, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return false;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  bool ok = jbuf_add(b, big, (size_t)n);
  free(big);
  return ok;
}
