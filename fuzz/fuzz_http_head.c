/* libFuzzer target: the request-head checker of nucleus serve. Any bytes
 * under any head limit get a verdict, and a refusal always carries an
 * error status and a message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "http/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  http_head_verdict v;
  size_t max_head = 1 + (size ? data[0] : 0) * 64;
  http_head_result r = http_head_check((const char *)data, size, max_head, &v);
  if (r == HTTP_HEAD_BAD && (v.status < 400 || v.status > 599)) abort();
  if (r == HTTP_HEAD_BAD && !v.message[0]) abort();
  return 0;
}
