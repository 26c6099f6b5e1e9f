/* nucleus serve: a Messages API job streamed as Anthropic's events:
 * message_start, ping, then per content block content_block_start, its
 * deltas (thinking_delta, text_delta, input_json_delta) and
 * content_block_stop, then message_delta (stop_reason, stop_sequence,
 * usage) and message_stop; an error event when the job fails. */
#include "messages_stream.h"

#include <stdlib.h>
#include <string.h>

#include "http/json_text.h"
#include "messages_reply.h"

typedef enum block_kind {
  BLOCK_NONE,
  BLOCK_THINKING,
  BLOCK_TEXT,
} block_kind;

/* The stream's own state (the job's ext). */
typedef struct messages_stream {
  job *j;
  block_kind open; /* the block being streamed, if any */
  int32_t index;   /* its index (the next one's when none is open) */
} messages_stream;

/* event: TYPE, data: {"type": TYPE, ...obj}; takes obj. */
static int put(sse_stream *b, const char *type, json_t *obj) {
  json_t *event = obj ? json_pack("{s:s}", "type", type) : NULL;
  if (!event || json_object_update(event, obj)) {
    json_decref(obj);
    json_decref(event);
    return -1;
  }
  json_decref(obj);
  return sse_put(b, type, event);
}

static int close_block(messages_stream *s, sse_stream *b) {
  if (s->open == BLOCK_NONE) return 0;
  if (s->open == BLOCK_THINKING &&
      put(b, "content_block_delta",
          json_pack("{s:i,s:{s:s,s:s}}", "index", s->index, "delta", "type",
                    "signature_delta", "signature", "")))
    return -1;
  s->open = BLOCK_NONE;
  return put(b, "content_block_stop", json_pack("{s:i}", "index", s->index++));
}

/* Text of a thinking or text block, opening it (and closing another). */
static int put_text(messages_stream *s, sse_stream *b, block_kind kind,
                    const char *text, size_t len) {
  if (!len) return 0;
  const char *name = kind == BLOCK_THINKING ? "thinking" : "text";
  if (s->open != kind) {
    if (close_block(s, b)) return -1;
    json_t *block = json_pack("{s:s,s:s}", "type", name, name, "");
    if (block && kind == BLOCK_THINKING)
      json_object_set_new(block, "signature", json_string(""));
    if (put(b, "content_block_start",
            json_pack("{s:i,s:o}", "index", s->index, "content_block", block)))
      return -1;
    s->open = kind;
  }
  return put(b, "content_block_delta",
             json_pack("{s:i,s:{s:s,s:o}}", "index", s->index, "delta", "type",
                       kind == BLOCK_THINKING ? "thinking_delta" : "text_delta",
                       name, json_text(text, len)));
}

/* A whole call: its tool_use block, its input as one input_json_delta. */
static int put_call(messages_stream *s, sse_stream *b, const json_t *call) {
  const char *args = json_string_value(
      json_object_get(json_object_get(call, "function"), "arguments"));
  if (close_block(s, b) ||
      put(b, "content_block_start",
          json_pack("{s:i,s:o}", "index", s->index, "content_block",
                    messages_tool_use(call, false))) ||
      put(b, "content_block_delta",
          json_pack("{s:i,s:{s:s,s:s}}", "index", s->index, "delta", "type",
                    "input_json_delta", "partial_json", args ? args : "{}")))
    return -1;
  s->open = BLOCK_TEXT; /* any open kind: closed next */
  return close_block(s, b);
}

/* A chat delta {"reasoning_content", "content", "tool_calls"} as blocks. */
static int put_delta(messages_stream *s, sse_stream *b, json_t *delta) {
  if (!delta) return 0;
  const json_t *r = json_object_get(delta, "reasoning_content");
  const json_t *c = json_object_get(delta, "content");
  int rc = (r && put_text(s, b, BLOCK_THINKING, json_string_value(r),
                          json_string_length(r))) ||
           (c && put_text(s, b, BLOCK_TEXT, json_string_value(c),
                          json_string_length(c)));
  size_t i;
  const json_t *call;
  json_array_foreach(json_object_get(delta, "tool_calls"), i, call) {
    if (rc || (rc = put_call(s, b, call))) break;
  }
  json_decref(delta);
  return rc ? -1 : 0;
}

static int put_error(sse_stream *b, unsigned status, const char *msg) {
  api_error e;
  api_fail(&e, status, NULL, "%s", msg);
  e.shape = API_SHAPE_ANTHROPIC;
  return sse_put(b, "error", api_error_json(&e));
}

/* The reply's text so far, read for calls where chat would read it. */
static int put_reply(messages_stream *s, sse_stream *b, const nucleus_event *ev,
                     tool_reply_end end) {
  completion_out *out = &s->j->out;
  choice_state *c = &out->choices[0];
  if (out->tools)
    return put_delta(s, b,
                     tool_reply_delta(out->srv->model, &out->req->reply,
                                      &c->tools, c->text ? c->text : "", c->len,
                                      end));
  return put_text(s, b, BLOCK_TEXT, ev->text, ev->text_len);
}

/* 0 going on, 1 the stream is complete, -1 out of memory. */
static int on_finish(messages_stream *s, sse_stream *b,
                     const nucleus_event *ev) {
  if (ev->finish_reason == NUCLEUS_FINISH_ERROR)
    return put_error(b, api_status_for(ev->error.code), ev->error.message) ? -1
                                                                           : 1;
  if (ev->finish_reason == NUCLEUS_FINISH_ABORT)
    return put_error(b, 503,
                     "the request was cancelled: the server is shutting down")
               ? -1
               : 1;
  tool_reply_end end = ev->finish_reason == NUCLEUS_FINISH_LENGTH
                           ? TOOL_REPLY_CUT
                           : TOOL_REPLY_WHOLE;
  return put_reply(s, b, ev, end) || close_block(s, b) ? -1 : 0;
}

static int on_done(messages_stream *s, sse_stream *b) {
  const completion_out *out = &s->j->out;
  const choice_state *c = &out->choices[0];
  json_t *usage = messages_usage(out);
  json_t *delta =
      json_pack("{s:s,s:o}", "stop_reason",
                messages_stop_reason(c, c->tools.calls_sent), "stop_sequence",
                c->stop_string ? json_string(c->stop_string) : json_null());
  if (put(b, "message_delta",
          json_pack("{s:o,s:o}", "delta", delta, "usage", usage)) ||
      put(b, "message_stop", json_object()))
    return -1;
  return 1;
}

static int put_start(messages_stream *s, sse_stream *b) {
  const completion_out *out = &s->j->out;
  char id[64];
  messages_id(out, id, sizeof id);
  /* the cache reads are known at the end (message_delta's usage) */
  json_t *msg =
      json_pack("{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:{s:i,s:i,s:i,s:i}}", "id", id,
                "type", "message", "role", "assistant", "model", out->model,
                "content", "stop_reason", "stop_sequence", "usage",
                "input_tokens", out->prompt_tokens, "output_tokens", 0,
                "cache_creation_input_tokens", 0, "cache_read_input_tokens", 0);
  return put(b, "message_start", json_pack("{s:o}", "message", msg)) ||
         put(b, "ping", json_object());
}

static int open_stream(job *j, sse_stream *b) {
  return put_start(j->ext, b);
}

static int on_event(job *j, const nucleus_event *ev, sse_stream *b) {
  messages_stream *s = j->ext;
  if (completion_out_record(&j->out, ev, false)) return -1;
  switch (ev->kind) {
  case NUCLEUS_EVENT_TOKEN: return put_reply(s, b, ev, TOOL_REPLY_GOING);
  case NUCLEUS_EVENT_FINISH: return on_finish(s, b, ev);
  case NUCLEUS_EVENT_DONE: return on_done(s, b);
  }
  return 0;
}

static int on_failed(job *j, sse_stream *b) {
  (void)j;
  return put_error(b, 500, "the engine stopped delivering events");
}

static const job_stream_ops MESSAGES_EVENTS = {open_stream, on_event,
                                               on_failed};

enum MHD_Result messages_stream_start(server_ctx *srv,
                                      struct MHD_Connection *conn, job *j) {
  messages_stream *s = calloc(1, sizeof *s);
  if (!s) {
    job_free(j);
    return MHD_NO;
  }
  s->j = j;
  j->ext = s;
  j->ext_free = free;
  j->stream_ops = &MESSAGES_EVENTS;
  return sse_stream_start(srv, conn, j);
}
