/* jinja_buf: a growable byte buffer with a hard size limit (malloc-owned). */
#ifndef NC_JINJA_BUF_H
#define NC_JINJA_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct jbuf {
  char *p;
  size_t n, cap, limit;
  bool over; /* set once an append was refused for the limit */
  bool oom;  /* set once an allocation failed */
} jbuf;

void jbuf_init(jbuf *b, size_t limit);
void jbuf_free(jbuf *b);
/* false (and over/oom set) when the bytes do not fit. */
bool jbuf_add(jbuf *b, const char *s, size_t n);
bool jbuf_addc(jbuf *b, char c);
bool jbuf_adds(jbuf *b, const char *s);
bool jbuf_printf(jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
