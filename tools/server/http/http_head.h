/* nucleus serve: checking the head of an HTTP/1.x request (request line and
 * header fields, plus the first chunk size of a chunked body when it has
 * arrived) before libmicrohttpd parses it, so that malformed framing is
 * answered with an OpenAI-shaped JSON error instead of libmicrohttpd's
 * HTML (which, for some cases, it sends malformed). Pure: bytes in,
 * verdict out. */
#ifndef NUCLEUS_SERVER_HTTP_HEAD_H
#define NUCLEUS_SERVER_HTTP_HEAD_H

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

/* Checks the first n bytes a client sent on a connection. A head longer
 * than max_head bytes is 431. */
http_head_result http_head_check(const char *buf, size_t n, size_t max_head,
                                 http_head_verdict *v);

#endif
