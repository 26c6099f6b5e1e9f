/* reply_scan: a reply read whole (reasoning.h's nc_reply_scan): the
 * thinking split off first, then the answer scanned for calls. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reasoning.h"

static char *dup_n(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    if (n) memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

/* The answer reply[at, len): calls and content, or all content. */
static nc_code scan_answer(const nc_reply_format *f, const char *reply,
                           size_t len, size_t at, bool final,
                           nc_tool_scan_result *out, nc_error *err) {
  if (f->calls) {
    nc_code rc = nc_tool_scan(f->tools, reply + at, len - at, final, out, err);
    if (rc == NC_OK) out->decided += at;
    return rc;
  }
  nc_tool_scan_result_clear(out);
  out->content = dup_n(reply + at, len - at);
  out->content_len = len - at;
  out->decided = len;
  return out->content
             ? NC_OK
             : nc_fail(err, NC_ERR_NOMEM, "out of memory reading a reply");
}

nc_code nc_reply_scan(const nc_reply_format *f, const char *reply, size_t len,
                      bool final, nc_tool_scan_result *out, nc_error *err) {
  if (f->tools == NC_TOOL_FORMAT_HARMONY)
    return nc_harmony_scan(reply, len, final,
                           f->reasoning != NC_REASONING_HARMONY, out, err);
  if (f->reasoning != NC_REASONING_THINK && f->reasoning != NC_REASONING_GEMMA4)
    return scan_answer(f, reply, len, 0, final, out, err);
  nc_reasoning_split s;
  nc_reasoning_split_of(f->reasoning, f->inside, reply, len, final, &s);
  nc_code rc;
  if (s.answer_at == SIZE_MAX) { /* still thinking: no answer yet */
    nc_tool_scan_result_clear(out);
    out->content = dup_n("", 0);
    out->decided = s.reasoning_at + s.reasoning_len;
    rc = out->content
             ? NC_OK
             : nc_fail(err, NC_ERR_NOMEM, "out of memory reading a reply");
  } else {
    rc = scan_answer(f, reply, len, s.answer_at, final, out, err);
  }
  if (rc != NC_OK || !s.reasoning_len) return rc;
  out->reasoning = dup_n(reply + s.reasoning_at, s.reasoning_len);
  out->reasoning_len = s.reasoning_len;
  if (!out->reasoning) {
    nc_tool_scan_result_clear(out);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory reading a reply");
  }
  return NC_OK;
}
