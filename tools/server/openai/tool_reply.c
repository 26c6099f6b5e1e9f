/* nucleus serve: tool calls out of chat replies. */
#include "tool_reply.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http/json_text.h"

/* "call_" and 24 random hex digits, or the id the model wrote. */
static json_t *call_id(const nucleus_tool_call *c) {
  if (c->id) return json_string(c->id);
  unsigned char rnd[12];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (size_t i = 0; i < sizeof rnd; i++)
      rnd[i] = (unsigned char)((uint64_t)ts.tv_nsec >> (i % 8 * 8)) ^
               (unsigned char)i;
  }
  char id[5 + 2 * sizeof rnd + 1] = "call_";
  for (size_t i = 0; i < sizeof rnd; i++)
    snprintf(id + 5 + 2 * i, 3, "%02x", rnd[i]);
  return json_string(id);
}

static json_t *call_json(const nucleus_tool_call *c, long index) {
  json_t *o = json_object();
  if (index >= 0) json_object_set_new(o, "index", json_integer(index));
  json_object_set_new(o, "id", call_id(c));
  json_object_set_new(o, "type", json_string("function"));
  json_object_set_new(
      o, "function",
      json_pack("{s:o,s:o}", "name", json_text(c->name, strlen(c->name)),
                "arguments", json_text(c->arguments, strlen(c->arguments))));
  return o;
}

/* A cut reply is scanned as unfinished: what it leaves undecided (a call
 * without its end, a partial opener) is what the cut broke. */
static nucleus_status scan(const nucleus_model *model,
                           const nucleus_reply_format *fmt, const char *reply,
                           size_t len, tool_reply_end end,
                           nucleus_tool_reply *r, nucleus_error *err) {
  return nucleus_reply_scan(model, fmt, reply, len, end == TOOL_REPLY_WHOLE, r,
                            err);
}

json_t *tool_reply_delta(const nucleus_model *model,
                         const nucleus_reply_format *fmt, tool_reply *t,
                         const char *reply, size_t len, tool_reply_end end) {
  nucleus_tool_reply r;
  nucleus_error err;
  if (scan(model, fmt, reply, len, end, &r, &err) != NUCLEUS_OK) return NULL;
  bool final = end == TOOL_REPLY_WHOLE;
  json_t *delta = NULL;
  if (r.reasoning_len > t->reasoning_sent) {
    delta = json_object();
    json_object_set_new(delta, "reasoning_content",
                        json_text(r.reasoning + t->reasoning_sent,
                                  r.reasoning_len - t->reasoning_sent));
    t->reasoning_sent = r.reasoning_len;
  }
  /* Blanks around calls are not content (the whole message's content is
   * null then): content is sent from its first non-blank byte on. */
  bool blank = t->content_sent == 0 && !(final && !r.n_calls);
  for (size_t i = 0; i < r.content_len && blank; i++)
    blank = strchr(" \t\r\n", r.content[i]) != NULL;
  if (!blank && r.content_len > t->content_sent) {
    if (!delta) delta = json_object();
    json_object_set_new(delta, "content",
                        json_text(r.content + t->content_sent,
                                  r.content_len - t->content_sent));
    t->content_sent = r.content_len;
  }
  if (r.n_calls > t->calls_sent) {
    if (!delta) delta = json_object();
    json_t *calls = json_array();
    for (size_t i = t->calls_sent; i < r.n_calls; i++)
      json_array_append_new(calls, call_json(&r.calls[i], (long)i));
    json_object_set_new(delta, "tool_calls", calls);
    t->calls_sent = r.n_calls;
  }
  nucleus_tool_reply_clear(&r);
  return delta;
}

json_t *tool_reply_message(const nucleus_model *model,
                           const nucleus_reply_format *fmt, const char *reply,
                           size_t len, tool_reply_end end, size_t *n_calls) {
  nucleus_tool_reply r;
  nucleus_error err;
  *n_calls = 0;
  if (scan(model, fmt, reply, len, end, &r, &err) != NUCLEUS_OK)
    return json_pack("{s:s,s:o}", "role", "assistant", "content",
                     json_text(reply, len));
  json_t *m = json_object();
  json_object_set_new(m, "role", json_string("assistant"));
  bool blank = true; /* content that is only the blanks around calls */
  for (size_t i = 0; i < r.content_len && blank; i++)
    blank = strchr(" \t\r\n", r.content[i]) != NULL;
  json_object_set_new(m, "content",
                      r.n_calls && blank ? json_null()
                                         : json_text(r.content, r.content_len));
  if (r.reasoning_len)
    json_object_set_new(m, "reasoning_content",
                        json_text(r.reasoning, r.reasoning_len));
  if (r.n_calls) {
    json_t *calls = json_array();
    for (size_t i = 0; i < r.n_calls; i++)
      json_array_append_new(calls, call_json(&r.calls[i], -1));
    json_object_set_new(m, "tool_calls", calls);
  }
  *n_calls = r.n_calls;
  nucleus_tool_reply_clear(&r);
  return m;
}
