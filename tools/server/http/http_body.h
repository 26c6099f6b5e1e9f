/* nucleus serve: following a request body's framing (RFC 9112 §6-7) as its
 * bytes arrive: Content-Length bytes, or chunks (size line, data, CRLF; a
 * zero size, then trailer fields up to a blank line), so that the relay
 * (http_relay.h) knows where each request on a kept-alive connection ends
 * and refuses a malformed chunk anywhere in the body. Pure: bytes in,
 * verdict out. */
#ifndef NUCLEUS_SERVER_HTTP_BODY_H
#define NUCLEUS_SERVER_HTTP_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include "http_head.h"

/* A chunk-size line (with extensions) or a trailer line longer than this
 * is malformed. */
#define HTTP_BODY_MAX_LINE 1024
/* More trailer fields than this: 431. */
#define HTTP_BODY_MAX_TRAILERS 64

typedef struct http_body {
  int state;
  unsigned long long left; /* bytes of the body or the chunk to come */
  size_t line;             /* bytes of the current line seen */
  bool line_cr;            /* the line's last byte was CR */
  bool line_bad;           /* the size line has a bad character */
  unsigned long long size; /* the chunk size being read */
  int digits;              /* its hex digits so far */
  bool blank;              /* blanks after the size */
  bool ext;                /* past the size's ";": extensions; in a
                              trailer line: its ':' was seen */
  int trailers;
} http_body;

/* Starts the body of a head (info from http_head_frame). */
void http_body_start(http_body *b, const http_head_info *info);

/* Whether the body has ended (the next bytes are the next request's). */
bool http_body_done(const http_body *b);

/* Reads bytes of buf[0..n) that belong to the body: *used of them (all, or
 * up to the body's end). HTTP_HEAD_OK, or HTTP_HEAD_BAD with *v (400, or
 * 431 for too many trailer fields) at the first malformed byte. */
http_head_result http_body_feed(http_body *b, const char *buf, size_t n,
                                size_t *used, http_head_verdict *v);

#endif
