/* nucleus serve: the request-head checker (RFC 9112 framing). */
#include "http_head.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static http_head_result bad(http_head_verdict *v, unsigned status,
                            const char *fmt, ...) {
  v->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->message, sizeof v->message, fmt, ap);
  va_end(ap);
  return HTTP_HEAD_BAD;
}

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The line starting at off: its length without the line end, and where the
 * next one starts; false when no line end has arrived. */
static bool line_at(const char *b, size_t n, size_t off, size_t *len,
                    size_t *next) {
  const char *nl = memchr(b + off, '\n', n - off);
  if (!nl) return false;
  size_t end = (size_t)(nl - b);
  *next = end + 1;
  if (end > off && b[end - 1] == '\r') end--;
  *len = end - off;
  return true;
}

static http_head_result check_request_line(const char *s, size_t n,
                                           http_head_verdict *v) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)s[i]))
    i++;
  if (i == 0 || i == n || s[i] != ' ')
    return bad(v, 400,
               "malformed request line: expected METHOD SP target "
               "SP HTTP/1.1");
  size_t t = ++i;
  while (i < n && (unsigned char)s[i] > 0x20 && s[i] != 0x7f)
    i++;
  if (i == t || i == n || s[i] != ' ')
    return bad(v, 400,
               "malformed request line: expected METHOD SP target "
               "SP HTTP/1.1");
  const char *ver = s + i + 1;
  size_t vn = n - i - 1;
  if (vn != 8 || memcmp(ver, "HTTP/", 5) || ver[5] < '0' || ver[5] > '9' ||
      ver[6] != '.' || ver[7] < '0' || ver[7] > '9')
    return bad(v, 400, "malformed request line: bad HTTP version");
  if (ver[5] != '1' || (ver[7] != '0' && ver[7] != '1'))
    return bad(v, 505, "HTTP/%c.%c is not supported: use HTTP/1.1", ver[5],
               ver[7]);
  return HTTP_HEAD_OK;
}

/* A field value without its surrounding whitespace. */
static void trim(const char **p, size_t *n) {
  while (*n && (**p == ' ' || **p == '\t'))
    (*p)++, (*n)--;
  while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
    (*n)--;
}

http_head_result http_head_field(http_head_fields *f, const char *name,
                                 size_t name_len, const char *val, size_t vlen,
                                 http_head_verdict *v) {
  if (++f->n_fields > HTTP_HEAD_MAX_FIELDS)
    return bad(v, 431, "the request head has more than %d header fields",
               HTTP_HEAD_MAX_FIELDS);
  if (name_len == 4 && !strncasecmp(name, "Host", 4) && ++f->n_host > 1)
    return bad(v, 400, "more than one Host header");
  if (name_len == 14 && !strncasecmp(name, "Content-Length", 14)) {
    unsigned long long x = 0;
    if (vlen == 0 || vlen > 18)
      return bad(v, 400, "Content-Length must be a decimal byte count");
    for (size_t k = 0; k < vlen; k++) {
      if (val[k] < '0' || val[k] > '9')
        return bad(v, 400, "Content-Length must be a decimal byte count");
      x = x * 10 + (unsigned)(val[k] - '0');
    }
    if (f->has_length && x != f->length)
      return bad(v, 400, "conflicting Content-Length headers");
    f->has_length = true;
    f->length = x;
  } else if (name_len == 17 && !strncasecmp(name, "Transfer-Encoding", 17)) {
    if (vlen != 7 || strncasecmp(val, "chunked", 7) || f->chunked)
      return bad(v, 501,
                 "Transfer-Encoding '%.*s' is not supported (only "
                 "chunked)",
                 (int)(vlen > 64 ? 64 : vlen), val);
    f->chunked = true;
  }
  return HTTP_HEAD_OK;
}

http_head_result http_head_fields_end(const http_head_fields *f,
                                      http_head_verdict *v) {
  if (f->chunked && f->has_length)
    return bad(v, 400,
               "Content-Length and Transfer-Encoding together are "
               "not allowed");
  return HTTP_HEAD_OK;
}

static http_head_result check_field(const char *s, size_t n,
                                    http_head_fields *f, http_head_verdict *v) {
  if (s[0] == ' ' || s[0] == '\t')
    return bad(v, 400, "malformed header: folded lines are not allowed");
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)s[i]))
    i++;
  if (i == 0 || i == n || s[i] != ':')
    return bad(v, 400, "malformed header line: expected NAME: value");
  const char *name = s;
  size_t name_len = i;
  const char *val = s + i + 1;
  size_t vlen = n - i - 1;
  for (size_t k = 0; k < vlen; k++) {
    unsigned char c = (unsigned char)val[k];
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return bad(v, 400, "malformed header: control character in %.*s",
                 (int)(name_len > 64 ? 64 : name_len), name);
  }
  trim(&val, &vlen);
  return http_head_field(f, name, name_len, val, vlen, v);
}

/* The first chunk-size line of a chunked body, when it has arrived. */
static http_head_result check_first_chunk(const char *b, size_t n, size_t off,
                                          http_head_verdict *v) {
  size_t len, next;
  if (!line_at(b, n, off, &len, &next)) {
    if (off < n && (!b[off] || !strchr("0123456789abcdefABCDEF", b[off])))
      return bad(v, 400, "malformed chunked body: bad chunk size");
    return HTTP_HEAD_OK; /* the rest is libmicrohttpd's to check */
  }
  size_t k = 0;
  while (k < len && b[off + k] && strchr("0123456789abcdefABCDEF", b[off + k]))
    k++;
  if (k == 0 || k > 16 ||
      (k < len && b[off + k] != ';' && b[off + k] != ' ' && b[off + k] != '\t'))
    return bad(v, 400, "malformed chunked body: bad chunk size");
  return HTTP_HEAD_OK;
}

http_head_result http_head_frame(const char *b, size_t n, size_t max_head,
                                 http_head_verdict *v, http_head_info *info) {
  size_t off = 0, len, next;
  /* RFC 9112 2.2: ignore empty lines before the request line. */
  while (off < n && line_at(b, n, off, &len, &next) && len == 0)
    off = next;
  if (off >= n) return HTTP_HEAD_INCOMPLETE;
  if (!line_at(b, n, off, &len, &next)) {
    /* No line end yet: what has arrived must still be able to become a
     * request line, and be short enough. */
    if (n > max_head)
      return bad(v, 414, "the request line is longer than %zu bytes", max_head);
    size_t i = off;
    while (i < n && is_tchar((unsigned char)b[i]))
      i++;
    if (i < n && b[i] != ' ')
      return bad(v, 400,
                 "malformed request line: expected METHOD SP target "
                 "SP HTTP/1.1");
    return HTTP_HEAD_INCOMPLETE;
  }
  if (next > max_head)
    return bad(v, 414, "the request line is longer than %zu bytes", max_head);
  http_head_result r = check_request_line(b + off, len, v);
  if (r != HTTP_HEAD_OK) return r;
  http_head_fields f = {0};
  off = next;
  for (;;) {
    if (!line_at(b, n, off, &len, &next)) {
      if (n > max_head)
        return bad(v, 431, "the request head is larger than %zu bytes",
                   max_head);
      return HTTP_HEAD_INCOMPLETE;
    }
    if (next > max_head)
      return bad(v, 431, "the request head is larger than %zu bytes", max_head);
    if (len == 0) break; /* the blank line ends the head */
    r = check_field(b + off, len, &f, v);
    if (r != HTTP_HEAD_OK) return r;
    off = next;
  }
  r = http_head_fields_end(&f, v);
  if (r != HTTP_HEAD_OK) return r;
  info->head_len = next;
  info->chunked = f.chunked;
  info->length = f.has_length ? f.length : 0;
  return HTTP_HEAD_OK;
}

http_head_result http_head_check(const char *b, size_t n, size_t max_head,
                                 http_head_verdict *v) {
  http_head_info info;
  http_head_result r = http_head_frame(b, n, max_head, v, &info);
  if (r == HTTP_HEAD_OK && info.chunked)
    r = check_first_chunk(b, n, info.head_len, v);
  return r;
}
