/* nucleus serve: checking the head of an HTTP/1.x request (request line and
 * header fields, plus the first chunk size of a chunked body when it has
 * arrived) before libmicrohttpd parses it, so that malformed framing is
 * answered with an OpenAI-shaped JSON error instead of libmicrohttpd's
 * HTML (which, for some cases, it sends malformed). Pure: bytes in,
 * verdict out. */
#ifndef NUCLEUS_SERVER_HTTP_HEAD_H
#define NUCLEUS_SERVER_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>

typedef enum http_head_result {
  HTTP_HEAD_INCOMPLETE, /* a well-formed prefix: wait for more bytes */
  HTTP_HEAD_OK,         /* a whole, well-formed head */
  HTTP_HEAD_BAD,        /* malformed: answer status with message */
} http_head_result;

typedef struct http_head_verdict {
  unsigned status; /* HTTP_HEAD_BAD: 400, 414, 431, 501 or 505 */
  char message[200];
} http_head_verdict;

/* A request head longer than this is 431 (414 for a request line). */
#define HTTP_HEAD_MAX_BYTES 32768

/* A head with more header fields than this is 431 (each field costs
 * libmicrohttpd memory beyond its bytes: thousands of tiny ones ran it out
 * and it answered with its own HTML page). */
#define HTTP_HEAD_MAX_FIELDS 128

/* Checks the first n bytes a client sent on a connection. A head longer
 * than max_head bytes is 431. */
http_head_result http_head_check(const char *buf, size_t n, size_t max_head,
                                 http_head_verdict *v);

/* A whole head's framing (http_head_frame). */
typedef struct http_head_info {
  size_t head_len; /* bytes up to and with the blank line ending the head */
  bool chunked;    /* the body is chunked (http_body.h) */
  unsigned long long length; /* else its Content-Length (0: none) */
} http_head_info;

/* http_head_check of the head at the start of buf, without the look at the
 * body's first chunk; on HTTP_HEAD_OK *info says where the head ends and
 * how its body is framed. */
http_head_result http_head_frame(const char *buf, size_t n, size_t max_head,
                                 http_head_verdict *v, http_head_info *info);

/* The framing fields of one request seen so far (http_head_field). */
typedef struct http_head_fields {
  bool has_length, chunked;
  unsigned long long length;
  int n_host, n_fields;
} http_head_fields;

/* One header field (name, value without its surrounding blanks) of a
 * request already split into fields (libmicrohttpd's, for the requests
 * after the first on a kept-alive connection): the same rules as
 * http_head_check's. HTTP_HEAD_OK or HTTP_HEAD_BAD with *v. */
http_head_result http_head_field(http_head_fields *f, const char *name,
                                 size_t name_len, const char *val,
                                 size_t val_len, http_head_verdict *v);

/* After the last field: the rules across fields (Content-Length with
 * Transfer-Encoding). */
http_head_result http_head_fields_end(const http_head_fields *f,
                                      http_head_verdict *v);

#endif
