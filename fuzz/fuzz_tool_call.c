/* libFuzzer target for the tool-call scanner (src/chat/tool_call_parse.c).
 *
 * Byte 0 picks the format, byte 1 a split point; the rest is a reply. The
 * final scan must decide every byte; a stream scan of the prefix must
 * decide a prefix of the final content and of the final calls. Any crash,
 * sanitizer report, leak or broken invariant is a bug. Build:
 * make fuzz-tool-call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat/tool_call.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  nc_tool_format f = (nc_tool_format)(data[0] % NC_TOOL_FORMAT_COUNT);
  const char *reply = (const char *)data + 2;
  size_t len = size - 2;
  size_t cut = len ? (size_t)data[1] * len / 255 : 0;
  nc_error err = {0};
  nc_tool_scan_result fin = {0}, part = {0};
  if (nc_tool_scan(f, reply, len, true, &fin, &err)) return 0;
  if (fin.decided != len) abort();
  if (!nc_tool_scan(f, reply, cut, false, &part, &err)) {
    if (part.content_len > fin.content_len ||
        memcmp(part.content, fin.content, part.content_len) ||
        part.n_calls > fin.n_calls)
      abort();
    for (size_t i = 0; i < part.n_calls; i++)
      if (strcmp(part.calls[i].name, fin.calls[i].name) ||
          strcmp(part.calls[i].arguments, fin.calls[i].arguments))
        abort();
  }
  nc_tool_scan_result_clear(&part);
  nc_tool_scan_result_clear(&fin);
  return 0;
}
