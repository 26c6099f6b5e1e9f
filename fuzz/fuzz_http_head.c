/* libFuzzer target: the request-head checker of nucleus serve and the body
 * framing after a head (http_body.h). Any bytes under any head limit get a
 * verdict, a refusal always carries an error status and a message, and a
 * body never reads past its bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "http/http_body.h"
#include "http/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  http_head_verdict v;
  size_t max_head = 1 + (size ? data[0] : 0) * 64;
  http_head_result r = http_head_check((const char *)data, size, max_head, &v);
  if (r == HTTP_HEAD_BAD && (v.status < 400 || v.status > 599)) abort();
  if (r == HTTP_HEAD_BAD && !v.message[0]) abort();
  http_head_info info;
  if (http_head_frame((const char *)data, size, max_head, &v, &info) !=
      HTTP_HEAD_OK)
    return 0;
  if (info.head_len > size) abort();
  http_body b;
  http_body_start(&b, &info);
  size_t used = 0;
  r = http_body_feed(&b, (const char *)data + info.head_len,
                     size - info.head_len, &used, &v);
  if (used > size - info.head_len) abort();
  if (r == HTTP_HEAD_BAD && (v.status < 400 || v.status > 599 || !v.message[0]))
    abort();
  return 0;
}
