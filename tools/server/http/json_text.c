/* nucleus serve: UTF-8 validation and sanitizing for JSON strings. */
#include "json_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_sequence_length(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned min;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

json_t *json_text(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    size_t l = utf8_sequence_length(u + i, n - i);
    if (!l || u[i] == 0) break;
    i += l;
  }
  if (i == n) return json_stringn_nocheck(s, n);
  /* Slow path: copy, replacing each invalid byte (and NUL) by U+FFFD. */
  char *out = malloc(n * 3 + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (i = 0; i < n;) {
    size_t l = utf8_sequence_length(u + i, n - i);
    if (l && u[i] != 0) {
      memcpy(out + o, s + i, l);
      o += l;
      i += l;
    } else {
      memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  json_t *j = json_stringn_nocheck(out, o);
  free(out);
  return j;
}

json_t *json_finite(double v) {
  if (!isfinite(v)) v = -9999.0;
  return json_real(v);
}
