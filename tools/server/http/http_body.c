/* nucleus serve: a request body's framing, byte by byte (http_body.h). */
#include "http_body.h"

#include <stdarg.h>
#include <stdio.h>

enum {
  BODY_DONE,
  BODY_LENGTH,     /* Content-Length bytes */
  BODY_CHUNK_SIZE, /* the chunk-size line */
  BODY_CHUNK_DATA, /* size bytes of data */
  BODY_CHUNK_CR,   /* the CR after the data */
  BODY_CHUNK_LF,   /* its LF */
  BODY_TRAILER,    /* a trailer line, or the blank line ending the body */
};

static http_head_result bad(http_head_verdict *v, unsigned status,
                            const char *fmt, ...) {
  v->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->message, sizeof v->message, fmt, ap);
  va_end(ap);
  return HTTP_HEAD_BAD;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void new_line(http_body *b, int state) {
  b->state = state;
  b->line = 0;
  b->line_cr = false;
  b->line_bad = false;
  b->size = 0;
  b->digits = 0;
  b->ext = false;
  b->blank = false;
}

void http_body_start(http_body *b, const http_head_info *info) {
  *b = (http_body){0};
  if (info->chunked)
    new_line(b, BODY_CHUNK_SIZE);
  else if (info->length) {
    b->state = BODY_LENGTH;
    b->left = info->length;
  } else {
    b->state = BODY_DONE;
  }
}

bool http_body_done(const http_body *b) {
  return b->state == BODY_DONE;
}

/* One byte of the chunk-size line: hex digits, then optional blanks and
 * ";" extensions up to CRLF. */
static http_head_result size_byte(http_body *b, char c, http_head_verdict *v) {
  if (++b->line > HTTP_BODY_MAX_LINE)
    return bad(v, 400,
               "malformed chunked body: a chunk-size line longer "
               "than %d bytes",
               HTTP_BODY_MAX_LINE);
  if (b->line_cr && c != '\n')
    return bad(v, 400,
               "malformed chunked body: CR without LF in a chunk "
               "size");
  if (c == '\r') {
    b->line_cr = true;
    return HTTP_HEAD_OK;
  }
  if (c == '\n') {
    if (!b->digits || b->line_bad)
      return bad(v, 400, "malformed chunked body: bad chunk size");
    if (b->size == 0) {
      new_line(b, BODY_TRAILER);
    } else {
      unsigned long long size = b->size;
      new_line(b, BODY_CHUNK_DATA);
      b->left = size;
    }
    return HTTP_HEAD_OK;
  }
  int h = hex_value(c);
  if (!b->ext && !b->blank && h >= 0) {
    if (++b->digits > 16)
      return bad(v, 400,
                 "malformed chunked body: a chunk size of more than "
                 "16 hex digits");
    b->size = b->size << 4 | (unsigned)h;
    return HTTP_HEAD_OK;
  }
  if (!b->digits) return bad(v, 400, "malformed chunked body: bad chunk size");
  if (!b->ext) { /* after the size: blanks, then ";" and extensions */
    if (c == ';')
      b->ext = true;
    else if (c == ' ' || c == '\t')
      b->blank = true;
    else
      return bad(v, 400, "malformed chunked body: bad chunk size");
    return HTTP_HEAD_OK;
  }
  if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f) b->line_bad = true;
  return HTTP_HEAD_OK;
}

/* One byte of a trailer section line; an empty line ends the body. */
static http_head_result trailer_byte(http_body *b, char c,
                                     http_head_verdict *v) {
  if (++b->line > HTTP_BODY_MAX_LINE)
    return bad(v, 400,
               "malformed chunked body: a trailer line longer than "
               "%d bytes",
               HTTP_BODY_MAX_LINE);
  if (b->line_cr && c != '\n')
    return bad(v, 400, "malformed chunked body: CR without LF in a trailer");
  if (c == '\r') {
    b->line_cr = true;
    return HTTP_HEAD_OK;
  }
  if (c == '\n') {
    size_t content = b->line - 1 - (b->line_cr ? 1 : 0);
    if (content == 0) {
      b->state = BODY_DONE;
      return HTTP_HEAD_OK;
    }
    if (!b->ext)
      return bad(v, 400, "malformed chunked body: a trailer line without ':'");
    if (++b->trailers > HTTP_BODY_MAX_TRAILERS)
      return bad(v, 431, "more than %d trailer fields", HTTP_BODY_MAX_TRAILERS);
    int trailers = b->trailers;
    new_line(b, BODY_TRAILER);
    b->trailers = trailers;
    return HTTP_HEAD_OK;
  }
  if (b->line == 1 && (c == ' ' || c == '\t'))
    return bad(v, 400,
               "malformed chunked body: folded trailer lines are not "
               "allowed");
  if (c == ':') b->ext = true; /* ext: the line has its colon */
  if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f)
    return bad(v, 400,
               "malformed chunked body: control character in a "
               "trailer");
  return HTTP_HEAD_OK;
}

http_head_result http_body_feed(http_body *b, const char *buf, size_t n,
                                size_t *used, http_head_verdict *v) {
  size_t i = 0;
  http_head_result r = HTTP_HEAD_OK;
  while (i < n && b->state != BODY_DONE && r == HTTP_HEAD_OK) {
    switch (b->state) {
    case BODY_LENGTH:
    case BODY_CHUNK_DATA: {
      size_t take = n - i < b->left ? n - i : (size_t)b->left;
      i += take;
      b->left -= take;
      if (!b->left)
        b->state = b->state == BODY_LENGTH ? BODY_DONE : BODY_CHUNK_CR;
      break;
    }
    case BODY_CHUNK_CR:
      if (buf[i++] != '\r')
        r = bad(v, 400,
                "malformed chunked body: a chunk's data is not "
                "followed by CRLF");
      b->state = BODY_CHUNK_LF;
      break;
    case BODY_CHUNK_LF:
      if (buf[i++] != '\n')
        r = bad(v, 400,
                "malformed chunked body: a chunk's data is not "
                "followed by CRLF");
      new_line(b, BODY_CHUNK_SIZE);
      break;
    case BODY_CHUNK_SIZE: r = size_byte(b, buf[i++], v); break;
    case BODY_TRAILER: r = trailer_byte(b, buf[i++], v); break;
    }
  }
  *used = i;
  return r;
}
